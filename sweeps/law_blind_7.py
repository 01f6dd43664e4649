"""The seventh blind test: AdamW cells off every grid the laws were fitted on, forecast first.

`law_blind_6.py` was the first blind test of the format-5 cell law (the learned level stops
falling with width, a_iD) and the first to meet the goal (15 of 16 classified right, RMS 0.172 in
log10(L + 0.01)). One test of 16 cells is thin: this is a second test of the same law, not
refitted, in two places neither fit nor test has been:
  D = 224 at V = 1,824 (`tiny-w224`; fitted: every multiple of 16 to 160, 176, 192, 208, 240,
      352 and 576; `law_blind_6` ran D = 272), D / V = 0.12, B = 12 (R = 152) and 6 (R = 304)
  D = 96 at V = 5,632 (`tiny-w96`; a fitted width, never at this V), D / V = 0.017, B = 22
      (R = 256) and 11 (R = 512): return times where the boundary is in play at D = 96
  V = 1,824 and 5,632 (fitted: powers of two, 896, 1,280, 1,536, 1,792, 2,560, 3,072, 3,584)
  6 updates per symbol (steps = 6 V / B: 912 to 3,072)
  b2 0.955 and 0.996 (M = 22.2 and 250; fitted: 10, 16.7, 20, 25, 33, 40, 50, 67, 83, 100,
      143, 200, 333, 1,000)
  tied and untied, 2 layers, weight decay 0.1
AdamW b1 0.9, 5% warmup then cosine to 0.1x, clipping at 1.0; 2 seeds; peak LRs 3e-4, 1e-3,
3e-3 with up to 2 more beyond an end where a cell's best sits; L = 2; exact evaluation every 128
steps, each run's symbols binned in the sweep's symbols.csv.gz. What else moves along R: the
steps (at 6 updates per symbol), B, and (between the two widths) V.

8 groups of 12 members (3 LRs x 2 seeds x 2 b2, vmapped), one per shard: `--shard i/8`.
The forecasts of every cell, committed before any of its runs (`spamlang law predict
sweeps/law_blind_7.py --law LAW --csv ...`), are results/forecasts/law_blind_7.cell_law_6.csv
(the format-5 law the package ships, cell_law_6.json, as it forecast `law_blind_6`),
law_blind_7.cell_law_5.csv (the format-4 law shipped before it) and law_blind_7.symbols.csv
(the symbol law refitted on every committed history, symbol_law_7.json); the findings compare
them cell by cell. It ran as 122 runs with bracketing, 8 shards of 393-1,088 s, two at once on
the 2-core AMD EPYC (results/law_blind_7).

Read it with
  spamlang law compare results/forecasts/law_blind_7.cell_law_6.csv runs/law_blind_7
  spamlang plot heatmap runs/law_blind_7 -o law_blind_7.png --x symbol_return_steps \\
      --y adam_memory_steps --best-over lr --cols d_model --rows tie_embeddings

Run: python sweeps/law_blind_7.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SEQ_LEN = 2
UPDATES = 6  # per symbol: steps = UPDATES x V / B


def cell(preset: str, vocab: int, batch_size: int) -> list:
    """(preset, V, B, tokens) of return time V / B with UPDATES x V / B steps of B rows."""
    return [preset, vocab, batch_size, UPDATES * vocab * SEQ_LEN]


SWEEP = Sweep(
    name="law_blind_7",
    base=TrainConfig(
        preset="tiny-w224",
        language="spam",
        vocab_size=1824,
        seq_len=SEQ_LEN,
        batch_size=12,  # each cell sets its own
        tokens=UPDATES * 1824 * SEQ_LEN,
        log_every=32,
        eval_every=128,
        checkpoint_every=512,
    ),
    axes={
        "preset,vocab_size,batch_size,tokens": [
            cell("tiny-w224", 1824, 12),
            cell("tiny-w224", 1824, 6),
            cell("tiny-w96", 5632, 22),
            cell("tiny-w96", 5632, 11),
        ],
        "tie_embeddings": [True, False],
        "b2": [0.955, 0.996],
        "lr": [3e-4, 1e-3, 3e-3],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
