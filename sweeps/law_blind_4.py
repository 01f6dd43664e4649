"""The fourth blind test: AdamW cells off every grid the laws were fitted on, forecast first.

`law_blind.py`, `law_blind_2.py` and `law_blind_3.py` were the first three blind tests; their
cells are now fitted. The cell law's form changed after them (format 3: the boundary's steepness
moves with the return time, s_R, chosen leave-one-sweep-out over the 490 cells of the 20 sweeps
of results/), so these cells test it, and the symbol law, where no fit has been:
  D = 176, 208 (`tiny-w176`, `tiny-w208`; fitted: every multiple of 16 to 160, and 576)
  V = 1,792 (B = 16: R = 112; B = 8: R = 224; 12 updates per symbol); fitted V: powers of two,
      1,536, 2,560 and 3,072; fitted R: 1 to 512 but neither 112 nor 224
  b2 0.96 and 0.985 (M = 25 and 67; fitted: 10, 20, 33, 40, 50, 100, 143, 200, 333, 1,000)
  tied and untied, 2 layers, weight decay 0.1
AdamW b1 0.9, 5% warmup then cosine to 0.1x, clipping at 1.0; 2 seeds; peak LRs 1e-3, 3e-3,
1e-2 with up to 2 more beyond an end where a cell's best sits; L = 2; exact evaluation every 128
steps (11 or 21 evaluations a run), each run's symbols binned in the sweep's symbols.csv.gz.
What else moves along R: the steps (at 12 updates per symbol) and B.

8 groups of 12 members (3 LRs x 2 seeds x 2 b2, vmapped), one per shard: `--shard i/8`.
The forecasts of every cell, committed before any of its runs (`spamlang law predict
sweeps/law_blind_4.py [--law FITTED] --csv ...`), are results/forecasts/law_blind_4.csv (the
cell law shipped until this test, one steepness, 290 cells), law_blind_4.cell_law_4.csv (the
format-3 cell law fitted on the 490 cells, cell_law_4.json) and law_blind_4.symbols.csv (the
symbol law refitted on every committed history, symbol_law_4.json); the findings compare them
cell by cell.

Read it with
  spamlang law compare results/forecasts/law_blind_4.cell_law_4.csv runs/law_blind_4
  spamlang plot heatmap runs/law_blind_4 -o law_blind_4.png --x symbol_return_steps \\
      --y adam_memory_steps --best-over lr --cols d_model --rows tie_embeddings

Run: python sweeps/law_blind_4.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SEQ_LEN = 2
VOCAB = 1792


def cell(batch_size: int, updates: int) -> list:
    """(B, tokens) of return time VOCAB / B with `updates` x VOCAB / B steps of B rows."""
    return [batch_size, updates * VOCAB * SEQ_LEN]


SWEEP = Sweep(
    name="law_blind_4",
    base=TrainConfig(
        preset="tiny-w176",
        language="spam",
        vocab_size=VOCAB,
        seq_len=SEQ_LEN,
        batch_size=16,  # each cell sets its own
        tokens=12 * VOCAB * SEQ_LEN,
        log_every=32,
        eval_every=128,
        checkpoint_every=512,
    ),
    axes={
        "preset": ["tiny-w176", "tiny-w208"],
        "batch_size,tokens": [cell(16, 12), cell(8, 12)],
        "tie_embeddings": [True, False],
        "b2": [0.96, 0.985],
        "lr": [1e-3, 3e-3, 1e-2],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
