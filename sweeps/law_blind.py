"""The law's blind test: AdamW cells off every grid the law was fitted on, forecast first.

Every number the law reports about itself came from cells of sweeps it was fitted on, or left
out one sweep at a time from a form chosen after seeing them. These cells sit between the
fitted ones on every axis the law reads, so that no fitted cell is the same cell to it:
  D = 48, 80 (`tiny-w48`, `tiny-w80`; fitted: 16, 32, 64, 128, 576)
  V = 2,048 (B = 16: R = 128) and 8,192 (B = 32: R = 256; B = 16: R = 512)
  12 updates per symbol (fitted: 3.9, 15.6, 16, 19.5, 62.5, 64, 256)
  b2 0.97 and 0.995 (M = 33 and 200; fitted: 10, 20, 100, 1,000)
  tied and untied, 2 layers, weight decay 0.1
AdamW b1 0.9, 5% warmup then cosine to 0.1x, clipping at 1.0; 2 seeds; peak LRs 3e-3, 1e-2,
3e-2 with up to 2 more beyond an end where a cell's best sits; L = 2; exact evaluation every
256 steps, each run's symbols binned in the sweep's symbols.csv.gz. What else moves along V:
the head's rows (and its FLOPs), with the steps at fixed updates per symbol.

12 groups of 12 members (3 LRs x 2 seeds x 2 b2, vmapped), one per shard: `--shard i/12`.
results/forecasts/law_blind.csv is the shipped law's forecast of every cell
(`spamlang law predict sweeps/law_blind.py --csv ...`), committed before any of its runs; the
findings compare them cell by cell, apart from leave-one-sweep-out, and only then is the law
refitted with them.

Read it with
  spamlang law compare results/forecasts/law_blind.csv runs/law_blind
  spamlang plot heatmap runs/law_blind -o law_blind.png --x symbol_return_steps \\
      --y adam_memory_steps --best-over lr --cols d_model --rows tie_embeddings

Run: python sweeps/law_blind.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

UPDATES = 12  # B x steps / V in every cell
SEQ_LEN = 2


def cell(vocab_size: int, batch_size: int) -> list:
    """(V, B, tokens) of one return time V / B: UPDATES x V / B steps of B rows."""
    return [vocab_size, batch_size, UPDATES * vocab_size * SEQ_LEN]


SWEEP = Sweep(
    name="law_blind",
    base=TrainConfig(
        preset="tiny-w48",
        language="spam",
        vocab_size=2048,  # each cell sets its own
        seq_len=SEQ_LEN,
        batch_size=16,  # each cell sets its own
        tokens=UPDATES * 2048 * SEQ_LEN,
        log_every=32,
        eval_every=256,
        checkpoint_every=512,
    ),
    axes={
        "preset": ["tiny-w48", "tiny-w80"],
        "vocab_size,batch_size,tokens": [cell(2048, 16), cell(8192, 32), cell(8192, 16)],
        "tie_embeddings": [True, False],
        "b2": [0.97, 0.995],
        "lr": [3e-3, 1e-2, 3e-2],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
