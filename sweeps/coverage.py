"""Coverage or bottleneck? SpamLang at V x updates per symbol, with seeds and bracketed LRs.

In SpamLang a sequence carries one symbol, and with RoPE every position of it has the same
hidden state (tests/test_position_invariance.py): a training row is one update of its symbol
whatever its length. How often a symbol is trained on is B x steps / V, the updates per symbol,
so a sweep over V alone at a fixed batch and step count changes the head's D / V and the
coverage together. Here the steps are fixed (500) and the batch sets the updates per symbol
(ups = 500 B / V) at each V, at L = 2 (one prediction per row, the symbol itself):

  ups     V = 256   V = 1,024   V = 4,096   V = 16,384
  3.9     B 2       B 8         B 32        B 128
  15.6    B 8       B 32        B 128       B 512
  62.5    B 32      B 128       B 512       (B 2,048: out of reach on a CPU)

These are the runs of this sweep's earlier version, which held 1,024 tokens per step and cut
them into sequences of 1,024 / B tokens: by the invariance, the same runs at 1/4 ... 1/512 of
the tokens. Every cell is trained tied and untied, for 2 seeds, at peak LRs 1e-2, 3e-2 and
1e-1, and LR bracketing (`spamlang.sweep.best_lr`) adds up to 2 more LRs beyond an end of the
grid where a cell's best sits, so that every best LR is interior or the summary says it is not.
Model: `tiny` (D = 16, 2 layers); the width control (`coverage_width.py`) varies D alone.
AdamW with 5% warmup then cosine to 0.1x, the CPU demo's recipe. Every run ends with a
gradient-bottleneck diagnosis of its final model (kernel_fraction, projected_cosine in
results.csv).

What else moves along an axis: at equal updates per symbol a larger V trains with a larger
batch (B = 2 ... 512), so its gradient is less noisy per step and each symbol returns every
V / B = 128 steps in every cell; along the updates axis at one V, the batch (and with it the
gradient noise) grows with the updates. Whether B and the step count trade one for one is not
tested here.

Read it with
  spamlang plot lines runs/coverage -o coverage.png --x updates_per_symbol \\
      --y final_eval_loss --color vocab_size --cols tie_embeddings
If the lines collapse onto one, coverage explains the failure; if they fan out by V at equal
coverage, the bottleneck (or something else that moves with V, above) does.
results.csv also holds eval_loss_seen / eval_loss_unseen: a model that learned to copy
repeats symbols it never trained on.

Run: python sweeps/coverage.py [--out DIR] [--shard i/n] [--dry-run] [--vmap]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

STEPS = 500
SEQ_LEN = 2


def cell(vocab_size: int, batch_size: int) -> list[int]:
    """(V, B, tokens) of one cell: STEPS steps of B rows of SEQ_LEN tokens."""
    return [vocab_size, batch_size, STEPS * batch_size * SEQ_LEN]


CELLS = [
    cell(256, 2),
    cell(256, 8),
    cell(256, 32),
    cell(1024, 8),
    cell(1024, 32),
    cell(1024, 128),
    cell(4096, 32),
    cell(4096, 128),
    cell(4096, 512),
    cell(16384, 128),
    cell(16384, 512),
]

SWEEP = Sweep(
    name="coverage",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        seq_len=SEQ_LEN,
        tokens=STEPS * 32 * SEQ_LEN,  # each cell sets its own
        schedule="cosine",
        warmup_frac=0.05,
        final_lr_ratio=0.1,
        log_every=25,
        eval_sequences=2048,
        # D = 16 makes the head memory-bound: chunks of 64 tokens (64 x 16,384 logits, 4 MiB)
        # stay in cache and measured 1.5x faster per step than the default 256 at V = 16,384.
        loss_chunk=64,
        diag_every=STEPS,  # one diagnosis, of the final model
        checkpoint_every=STEPS,
    ),
    axes={
        "vocab_size,batch_size,tokens": CELLS,
        "tie_embeddings": [True, False],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
