"""The fifth blind test: AdamW cells off every grid the laws were fitted on, forecast first.

`law_blind.py` to `law_blind_4.py` were the first four blind tests; their cells are now fitted.
The cell law's form changed after them (format 4: c grows with the width against the
vocabulary, exp(c_DV D / V), chosen leave-one-sweep-out over the 512 cells of the 23 sweeps of
results/ after the fourth test and its two controls, `return_or_batch.py` and
`return_or_batch_width.py`, showed B with V and the width moving the loss by decades at one
return time), so these cells test it where no fit has been, at a D / V above all but 13 of
the fitted cells':
  D = 192, 240 (`tiny-w192`, `tiny-w240`; fitted: every multiple of 16 to 160, 176, 208, 352
      and 576), so D / V = 0.15 and 0.19 (fitted: 0.004 to 0.25, above 0.12 in 13 cells only:
      V = 64-256 at D = 16-64, D = 576 at V = 4,096, and V = 896 at D = 176)
  V = 1,280 (fitted: powers of two, 896, 1,536, 1,792, 2,560, 3,072, 3,584)
  B = 5 (R = 256) and 10 (R = 128), 9 updates per symbol (fitted B: 2, 4, 8, 12, 16, 32 and
      up, not 5 or 10; fitted n: 3.9 to 256, not 9; both return times are fitted ones, at
      other V and B)
  b2 0.94 and 0.988 (M = 16.7 and 83.3; fitted: 10, 20, 25, 33, 40, 50, 67, 100, 143, 200,
      333, 1,000)
  tied and untied, 2 layers, weight decay 0.1
AdamW b1 0.9, 5% warmup then cosine to 0.1x, clipping at 1.0; 2 seeds; peak LRs 3e-4, 1e-3,
3e-3 with up to 2 more beyond an end where a cell's best sits; L = 2; exact evaluation every 128
steps, each run's symbols binned in the sweep's symbols.csv.gz. What else moves along R: the
steps (at 9 updates per symbol) and B.

8 groups of 12 members (3 LRs x 2 seeds x 2 b2, vmapped), one per shard: `--shard i/8`.
The forecasts of every cell, committed before any of its runs (`spamlang law predict
sweeps/law_blind_5.py --law LAW --csv ...`), are results/forecasts/law_blind_5.cell_law_5.csv
(the format-4 law fitted on the 512 cells, cell_law_5.json, the law the package ships since),
law_blind_5.cell_law_4.csv (the format-3 law shipped before it, fitted on 490 cells) and
law_blind_5.symbols.csv (the symbol law refitted on every committed history, symbol_law_5.json);
the findings compare them cell by cell.

Read it with
  spamlang law compare results/forecasts/law_blind_5.cell_law_5.csv runs/law_blind_5
  spamlang plot heatmap runs/law_blind_5 -o law_blind_5.png --x symbol_return_steps \\
      --y adam_memory_steps --best-over lr --cols d_model --rows tie_embeddings

Run: python sweeps/law_blind_5.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SEQ_LEN = 2
VOCAB = 1280
UPDATES = 9  # per symbol: steps = UPDATES x VOCAB / B


def cell(batch_size: int) -> list:
    """(B, tokens) of return time VOCAB / B with UPDATES x VOCAB / B steps of B rows."""
    return [batch_size, UPDATES * VOCAB * SEQ_LEN]


SWEEP = Sweep(
    name="law_blind_5",
    base=TrainConfig(
        preset="tiny-w192",
        language="spam",
        vocab_size=VOCAB,
        seq_len=SEQ_LEN,
        batch_size=10,  # each cell sets its own
        tokens=UPDATES * VOCAB * SEQ_LEN,
        log_every=32,
        eval_every=128,
        checkpoint_every=512,
    ),
    axes={
        "preset": ["tiny-w192", "tiny-w240"],
        "batch_size,tokens": [cell(10), cell(5)],
        "tie_embeddings": [True, False],
        "b2": [0.94, 0.988],
        "lr": [3e-4, 1e-3, 3e-3],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
