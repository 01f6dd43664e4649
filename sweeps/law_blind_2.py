"""The second blind test: AdamW cells off every grid the laws were refitted on, forecast first.

`law_blind.py` was the first blind test; its cells then went into the fit, so they test the law
no more. These cells sit off every grid now fitted (`depth`, `law_blind`, `symbol_reruns`,
`sampling_cyclic`, `paper_model_cpu` and the cell law's sweeps), so that no fitted cell is the
same cell to a law:
  D = 96, 144 (`tiny-w96`, `tiny-w144`; fitted: 16, 32, 48, 64, 80, 128, 576)
  V = 1,536 (B = 12: R = 128, 18 updates per symbol) and 3,072 (B = 12: R = 256; B = 8:
      R = 384; 10 updates per symbol); fitted V are powers of two, R 384 is not fitted
  b2 0.98 and 0.993 (M = 50 and 143; fitted: 10, 20, 33, 100, 200, 1,000)
  tied and untied, 2 layers, weight decay 0.1
AdamW b1 0.9, 5% warmup then cosine to 0.1x, clipping at 1.0; 2 seeds; peak LRs 3e-3, 1e-2,
3e-2 with up to 2 more beyond an end where a cell's best sits; L = 2; exact evaluation every 128
steps (10 to 30 evaluations a run), each run's symbols binned in the sweep's symbols.csv.gz.
What else moves along V: the head's rows (and its FLOPs), with the steps at the updates per
symbol of the cell.

12 groups of 12 members (3 LRs x 2 seeds x 2 b2, vmapped), one per shard: `--shard i/12`.
results/forecasts/law_blind_2.csv (the shipped cell law) and law_blind_2.symbols.csv (the symbol
law of results/forecasts/symbol_law_2.json) are the forecasts of every cell, committed before
any of its runs (`spamlang law predict sweeps/law_blind_2.py --csv ...`); the findings compare
them cell by cell.

Read it with
  spamlang law compare results/forecasts/law_blind_2.symbols.csv runs/law_blind_2
  spamlang plot heatmap runs/law_blind_2 -o law_blind_2.png --x symbol_return_steps \\
      --y adam_memory_steps --best-over lr --cols d_model --rows tie_embeddings

Run: python sweeps/law_blind_2.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SEQ_LEN = 2


def cell(vocab_size: int, batch_size: int, updates: int) -> list:
    """(V, B, tokens) of return time V / B with `updates` x V / B steps of B rows."""
    return [vocab_size, batch_size, updates * vocab_size * SEQ_LEN]


SWEEP = Sweep(
    name="law_blind_2",
    base=TrainConfig(
        preset="tiny-w96",
        language="spam",
        vocab_size=1536,  # each cell sets its own
        seq_len=SEQ_LEN,
        batch_size=12,  # each cell sets its own
        tokens=18 * 1536 * SEQ_LEN,
        log_every=32,
        eval_every=128,
        checkpoint_every=512,
    ),
    axes={
        "preset": ["tiny-w96", "tiny-w144"],
        "vocab_size,batch_size,tokens": [cell(1536, 12, 18), cell(3072, 12, 10), cell(3072, 8, 10)],
        "tie_embeddings": [True, False],
        "b2": [0.98, 0.993],
        "lr": [3e-3, 1e-2, 3e-2],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
