"""Coverage without the batch: SpamLang at V x weight decay, one batch, equal updates per symbol.

The coverage sweep (`coverage.py`) reached equal updates per symbol at every V by growing the
batch with V, so V and the batch moved together. Here the batch is fixed (B = 32) and the steps
grow with V so that every symbol gets the same B x steps / V = 16 updates:
  V        steps   return time V / B   V / D (D = 16)
  256        128     8 steps             16
  1,024      512    32 steps             64
  4,096    2,048   128 steps            256
Weight decay (0.1 on matrices, the default, and 0) is crossed with it: between its returns a
symbol's rows are decayed, so decay is one more force that grows with the return time. Adam's
b2 is 0.95 (the default) and 0.999 (the setting the optimizer sweeps found to learn best), so
the head's effect is not hidden behind the optimizer's forgetting.

Every run reports the per-symbol sample complexity (`updates_to_learn`, the exposure at which
half of the symbols reach a loss under 0.1 log V, `spamlang.coverage.symbols`) and logs the
kernel fraction along training (diag rows at init, every quarter, and at the end). Under pure
coverage, updates_to_learn is the same at every V; under the head's bottleneck it grows with
V / D.

Each cell is trained tied and untied, 2 seeds, peak LRs 1e-2, 3e-2, 1e-1, with up to 2 more
beyond an end of the grid where a cell's best sits. Model `tiny` (D = 16, 2 layers); AdamW
(b1 0.9), 5% warmup then cosine to 0.1x, clipping at 1.0; L = 2 (position invariant: the
same runs as any longer L). What else moves along V: the steps (and the schedule's length in
steps) and the return time V / B; along the weight decay and b2, nothing else.

Read it with
  spamlang plot lines runs/equal_batch -o equal_batch.png --x vocab_size \\
      --y final_eval_loss --color b2 --cols weight_decay --rows tie_embeddings
  spamlang plot symbols runs/equal_batch -o updates_to_learn.png
and with the end-of-sweep summary (each cell's best LR and seed spread).

Measured (`/usr/bin/time -v python sweeps/equal_batch.py`: 17 min 11 s wall on the 2-core AMD
EPYC, 164 runs with bracketing, a test suite beside it for part of the time). Best-LR final
eval loss, seed mean, tied / untied:
  b2, decay     V = 256        V = 1,024      V = 4,096
  0.95, 0.1     0.036 / 0.53   0.42 / 1.21    5.86 / 6.64
  0.95, 0       0.011 / 0.42   0.011 / 0.51   5.82 / 6.47
  0.999, 0.1    0.046 / 0.42   0.017 / 0.22   0.046 / 0.47
  0.999, 0      0.016 / 0.33   0.004 / 0.10   0.0012 / 0.049

Run: python sweeps/equal_batch.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

BATCH = 32
UPDATES = 16  # B x steps / V, the same in every cell
SEQ_LEN = 2


def cell(vocab_size: int) -> list[int]:
    """(V, tokens, diag_every) of one cell: UPDATES x V / B steps of B rows of SEQ_LEN tokens,
    diagnosed every quarter of them."""
    steps = UPDATES * vocab_size // BATCH
    return [vocab_size, steps * BATCH * SEQ_LEN, steps // 4]


SWEEP = Sweep(
    name="equal_batch",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        tokens=UPDATES * 1024 * SEQ_LEN,  # each cell sets its own
        schedule="cosine",
        warmup_frac=0.05,
        final_lr_ratio=0.1,
        log_every=16,
        eval_sequences=2048,
        checkpoint_every=0,  # one checkpoint, at the end
    ),
    axes={
        "vocab_size,tokens,diag_every": [cell(256), cell(1024), cell(4096)],
        "weight_decay": [0.1, 0.0],
        "b2": [0.95, 0.999],
        "tie_embeddings": [True, False],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
