"""The sixth blind test: AdamW cells off every grid the laws were fitted on, forecast first.

`law_blind.py` to `law_blind_5.py` were the first five blind tests; their cells are now fitted.
The fifth found format 4 classifying 15 of its 16 cells right but missing the level its
learned cells reach at D = 192-240 by up to 22x (RMS 0.43 in log10(L + 0.01)). These cells
test the laws again in two places no fit has been, at a width above and one below the
fifth test's:
  D = 272 at V = 1,152 (`tiny-w272`; fitted: every multiple of 16 to 160, 176, 192, 208, 240,
      352 and 576), D / V = 0.24 (fitted: 0.004 to 0.25, above 0.2 in 6 cells only),
      B = 12 (R = 96) and 6 (R = 192)
  D = 48 at V = 4,608 (`tiny-w48`; a fitted width, never at this V), D / V = 0.010,
      B = 16 (R = 288) and 9 (R = 512): return times where the boundary is in play at D = 48
  V = 1,152 and 4,608 (fitted: powers of two, 896, 1,280, 1,536, 1,792, 2,560, 3,072, 3,584)
  8 updates per symbol (steps = 8 V / B: 768 to 4,096)
  b2 0.965 and 0.992 (M = 28.6 and 125; fitted: 10, 16.7, 20, 25, 33, 40, 50, 67, 83, 100,
      143, 200, 333, 1,000)
  tied and untied, 2 layers, weight decay 0.1
AdamW b1 0.9, 5% warmup then cosine to 0.1x, clipping at 1.0; 2 seeds; peak LRs 3e-4, 1e-3,
3e-3 with up to 2 more beyond an end where a cell's best sits; L = 2; exact evaluation every 128
steps, each run's symbols binned in the sweep's symbols.csv.gz. What else moves along R: the
steps (at 8 updates per symbol), B, and (between the two widths) V.

8 groups of 12 members (3 LRs x 2 seeds x 2 b2, vmapped), one per shard: `--shard i/8`.
The forecasts of every cell, committed before any of its runs (`spamlang law predict
sweeps/law_blind_6.py --law LAW --csv ...`, commit f474792), are
results/forecasts/law_blind_6.cell_law_6.csv (the format-5 law fitted on the 528 cells,
cell_law_6.json, the law the package ships since), law_blind_6.cell_law_5.csv (the format-4 law
shipped before it, fitted on 512 cells) and law_blind_6.symbols.csv (the symbol law refitted on
every committed history, symbol_law_6.json); the findings compare them cell by cell. It ran as
114 runs with bracketing, 8 shards of 439-847 s, two at once on the 2-core AMD EPYC
(results/law_blind_6).

Read it with
  spamlang law compare results/forecasts/law_blind_6.cell_law_6.csv runs/law_blind_6
  spamlang plot heatmap runs/law_blind_6 -o law_blind_6.png --x symbol_return_steps \\
      --y adam_memory_steps --best-over lr --cols d_model --rows tie_embeddings

Run: python sweeps/law_blind_6.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SEQ_LEN = 2
UPDATES = 8  # per symbol: steps = UPDATES x V / B


def cell(preset: str, vocab: int, batch_size: int) -> list:
    """(preset, V, B, tokens) of return time V / B with UPDATES x V / B steps of B rows."""
    return [preset, vocab, batch_size, UPDATES * vocab * SEQ_LEN]


SWEEP = Sweep(
    name="law_blind_6",
    base=TrainConfig(
        preset="tiny-w272",
        language="spam",
        vocab_size=1152,
        seq_len=SEQ_LEN,
        batch_size=12,  # each cell sets its own
        tokens=UPDATES * 1152 * SEQ_LEN,
        log_every=32,
        eval_every=128,
        checkpoint_every=512,
    ),
    axes={
        "preset,vocab_size,batch_size,tokens": [
            cell("tiny-w272", 1152, 12),
            cell("tiny-w272", 1152, 6),
            cell("tiny-w48", 4608, 16),
            cell("tiny-w48", 4608, 9),
        ],
        "tie_embeddings": [True, False],
        "b2": [0.965, 0.992],
        "lr": [3e-4, 1e-3, 3e-3],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
