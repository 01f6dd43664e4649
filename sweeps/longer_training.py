"""Does b2 = 0.95 learn slowly, or stay on a plateau? The failing default cell trained 4x and
16x longer.

V = 4,096, B = 32 (a symbol returns every 128 steps on average), AdamW at the LM default
b2 = 0.95 (memory 20 steps), at 16, 64 and 256 updates per symbol (2,048, 8,192 and 32,768
steps). If the failure is a slow rate, the loss keeps falling with the updates; if it is a
plateau set by the return time against the memory, more steps do not help. b2 = 0.999 at the
same budgets is the control that does learn. Tied and untied, model `tiny` (D = 16), b1 0.9,
weight decay 0.1 on matrices, 5% warmup then cosine to 0.1x (the schedule stretches with the
budget), clipping at 1.0, 2 seeds, peak LRs 1e-2, 3e-2, 1e-1 with up to 2 more beyond an end
where a cell's best sits; L = 2; exact evaluation. What else moves along the budget: the steps,
and with them the schedule's length and the effective memory of b2 = 0.999 (1,000 steps in
every cell, since every cell is longer than that).

Read it with
  spamlang plot lines runs/longer_training -o longer_training.png --x updates_per_symbol \\
      --y final_eval_loss --color b2 --cols tie_embeddings

The 256-updates groups (32,768 steps) dominate: run it as two shards (`--shard 0/2`,
`--shard 1/2`) to keep each under 20 minutes on two cores.

Run: python sweeps/longer_training.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

VOCAB = 4096
BATCH = 32
SEQ_LEN = 2

SWEEP = Sweep(
    name="longer_training",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        vocab_size=VOCAB,
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        tokens=16 * VOCAB * SEQ_LEN,  # each cell sets its own
        log_every=64,
        checkpoint_every=0,
    ),
    axes={
        # updates per symbol x V x L: 16, 64 and 256 updates per symbol
        "tokens": [u * VOCAB * SEQ_LEN for u in (16, 64, 256)],
        "tie_embeddings": [True, False],
        "b2": [0.95, 0.999],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
