"""Does an even return time move the memory boundary? iid against permuted data order at equal
V, B and steps, across return time = Adam's memory.

Under iid sampling a symbol occurs in a step with probability about B / V: it returns every
V / B steps on average, with a geometric tail (a third of the gaps exceed the mean, and one in
twenty is three times it). Under `sampling = "permuted"` each epoch deals every symbol once, in a
fresh permutation, so the gaps are V / B steps on average and never above 2 V / B (at V = 4,096,
B = 32: mean 128, sd 52, 0.8% exactly 128); `sampling = "cyclic"` (sweeps/sampling_cyclic.py)
makes every gap exactly V / B. If the failure is Adam forgetting a symbol
between its appearances, the tail matters: the permuted runs should cross the boundary at a
memory near the return time, the iid runs need a longer memory to cover the tail.

  V       return time V / B (B = 32)   steps (16 updates per symbol)
  256         8                          128
  1,024      32                          512
  4,096     128                        2,048
crossed with b2 = 0.9, 0.95, 0.99, 0.999 (memory 10, 20, 100, 1,000 steps; the effective
memory min(1 / (1 - b2), steps) is in every result). Untied (the worse case at b2 = 0.95),
model `tiny` (D = 16), AdamW b1 0.9, weight decay 0.1 on matrices, 5% warmup then cosine to
0.1x, clipping at 1.0; 2 seeds; peak LRs 1e-2, 3e-2, 1e-1 with up to 2 more beyond an end of
the grid where a cell's best sits; L = 2; exact evaluation; every run saves symbols.npz, so
`spamlang plot recency` shows each symbol's final loss against the steps since it was last
seen. What else moves along V: the steps and the return time (the batch does not); along
`sampling`, only the order of the same multiset of symbols per epoch.

Read it with
  spamlang plot lines runs/sampling_order -o sampling_order.png --x adam_memory_steps \\
      --y final_eval_loss --color vocab_size --cols sampling
  spamlang plot recency runs/sampling_order -o recency.png --where vocab_size=4096 \\
      --where b2=0.95

Run: python sweeps/sampling_order.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

BATCH = 32
UPDATES = 16  # B x steps / V in every cell
SEQ_LEN = 2


def cell(vocab_size: int) -> list[int]:
    """(V, tokens) of one cell: UPDATES x V / B steps of B rows of SEQ_LEN tokens."""
    return [vocab_size, UPDATES * vocab_size * SEQ_LEN]


SWEEP = Sweep(
    name="sampling_order",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        tie_embeddings=False,
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        tokens=UPDATES * 1024 * SEQ_LEN,  # each cell sets its own
        log_every=16,
        checkpoint_every=0,
    ),
    axes={
        "vocab_size,tokens": [cell(256), cell(1024), cell(4096)],
        "sampling": ["iid", "permuted"],
        "b2": [0.9, 0.95, 0.99, 0.999],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
