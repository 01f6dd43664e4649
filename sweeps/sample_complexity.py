"""How many updates does a symbol need? Per-symbol sample complexity against V / rank.

Every SpamLang run scores each symbol on its own and bins the scores by the symbol's exposure
(training sequences that showed it); `updates_to_learn` is the exposure at which half of the
symbols reach a loss under 0.1 log V (`spamlang.coverage.symbols`). At 16 updates per symbol
almost every exposure bin is learned, so the number is only bounded from above; here the
coverage is 8 updates per symbol, so the exposures (Poisson around 8: about 2 to 15) straddle
the point where symbols start to be learned, and the crossing is measured.

  V        steps (B = 32)   V / r for softmax (r = D = 16) and lowrank:4
  256         64            16 and 64
  1,024      256            64 and 256
  4,096    1,024           256 and 1,024

Under pure coverage updates_to_learn is the same at every V and both heads; under the head's
bottleneck it grows with V / r, and `lowrank:4` at V = 1,024 needs what softmax needs at
V = 4,096. Untied (a low-rank head has its own A), `tiny` (d = 16), Adam's b2 0.95 (the
default) and 0.999 (the setting the optimizer sweeps found to learn best), 2 seeds, peak LRs
1e-2, 3e-2, 1e-1 with up to 2 more beyond an end of the grid where a cell's best sits. AdamW
(b1 0.9, weight decay 0.1 on matrices), 5% warmup then cosine to 0.1x, clipping at 1.0;
L = 2. What else moves along V: the steps (V / 4) and the return time V / B (8 to 128 steps).

Read it with
  spamlang plot symbols runs/sample_complexity -o symbols.png --cols head --rows b2
  spamlang plot lines runs/sample_complexity -o utl.png --x vocab_size --y updates_to_learn \\
      --color head --cols b2

Measured (`/usr/bin/time -v python sweeps/sample_complexity.py`: 4 min 00 s wall on the
2-core AMD EPYC, 72 runs). Under b2 = 0.999 the softmax's symbol-loss-against-exposure curves
of the three V lie on one line (a symbol needs no more updates at V / D = 256 than at 16);
under 0.95 V = 4,096's lies far above; lowrank:4's fall far more slowly at every V. Only the
softmax at V = 4,096, b2 0.999, crosses half learned inside its exposures: 15.3 (15.2-15.4).

Run: python sweeps/sample_complexity.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

BATCH = 32
UPDATES = 8  # B x steps / V, the same in every cell
SEQ_LEN = 2


def cell(vocab_size: int) -> list[int]:
    """(V, tokens) of one cell: UPDATES x V / B steps of B rows of SEQ_LEN tokens."""
    return [vocab_size, UPDATES * vocab_size * SEQ_LEN]


SWEEP = Sweep(
    name="sample_complexity",
    base=TrainConfig(
        preset="tiny",
        tie_embeddings=False,
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
        "vocab_size,tokens": [cell(256), cell(1024), cell(4096)],
        "head": ["softmax", "lowrank:4"],
        "b2": [0.95, 0.999],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
