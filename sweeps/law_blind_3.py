"""The third blind test: AdamW cells off every grid the laws were fitted on, forecast first.

`law_blind.py` and `law_blind_2.py` were the first two blind tests; their cells are now fitted,
so they test the laws no more. These cells sit off every grid now fitted (the cell law's sweeps,
`depth`, `symbol_reruns`, `sampling_cyclic`, `paper_model_cpu`, `law_blind`, `law_blind_2`), so
that no fitted cell is the same cell to a law:
  D = 112, 160 (`tiny-w112`, `tiny-w160`; fitted: 16, 32, 48, 64, 80, 96, 128, 144, 576)
  V = 2,560 (B = 16: R = 160, 14 updates per symbol; B = 8: R = 320, 10 updates per symbol);
      fitted V: powers of two, 1,536 and 3,072; fitted R: 32 to 512 but neither 160 nor 320
  b2 0.975 and 0.997 (M = 40 and 333; fitted: 10, 20, 33, 50, 100, 143, 200, 1,000)
  tied and untied, 2 layers, weight decay 0.1
AdamW b1 0.9, 5% warmup then cosine to 0.1x, clipping at 1.0; 2 seeds; peak LRs 1e-3, 3e-3,
1e-2 with up to 2 more beyond an end where a cell's best sits; L = 2; exact evaluation every 128
steps (17 or 25 evaluations a run), each run's symbols binned in the sweep's symbols.csv.gz.
What else moves along R: the steps (at the updates per symbol of the cell) and B.

8 groups of 12 members (3 LRs x 2 seeds x 2 b2, vmapped), one per shard: `--shard i/8`.
The forecasts of every cell, committed before any of its runs (`spamlang law predict
sweeps/law_blind_3.py [--law FITTED] --csv ...`), are results/forecasts/law_blind_3.csv (the
shipped cell law), law_blind_3.cell_law_3.csv (the cell law refitted on 474 cells,
cell_law_3.json) and law_blind_3.symbols.csv (the symbol law refitted on 204 cells' histories,
symbol_law_3.json); the findings compare them cell by cell.

Read it with
  spamlang law compare results/forecasts/law_blind_3.csv runs/law_blind_3
  spamlang plot heatmap runs/law_blind_3 -o law_blind_3.png --x symbol_return_steps \\
      --y adam_memory_steps --best-over lr --cols d_model --rows tie_embeddings

Run: python sweeps/law_blind_3.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SEQ_LEN = 2
VOCAB = 2560


def cell(batch_size: int, updates: int) -> list:
    """(B, tokens) of return time VOCAB / B with `updates` x VOCAB / B steps of B rows."""
    return [batch_size, updates * VOCAB * SEQ_LEN]


SWEEP = Sweep(
    name="law_blind_3",
    base=TrainConfig(
        preset="tiny-w112",
        language="spam",
        vocab_size=VOCAB,
        seq_len=SEQ_LEN,
        batch_size=16,  # each cell sets its own
        tokens=14 * VOCAB * SEQ_LEN,
        log_every=32,
        eval_every=128,
        checkpoint_every=512,
    ),
    axes={
        "preset": ["tiny-w112", "tiny-w160"],
        "batch_size,tokens": [cell(16, 14), cell(8, 10)],
        "tie_embeddings": [True, False],
        "b2": [0.975, 0.997],
        "lr": [1e-3, 3e-3, 1e-2],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
