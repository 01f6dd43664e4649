"""Is it the optimizer family? AdamW, lazy AdamW, SGD with momentum and Adafactor at the cells
where the default (AdamW, b2 0.95) fails.

The cells are V = 4,096 at B = 32 (a symbol returns every 128 steps), with 500 steps (the CPU
demo's cell: 3.9 updates per symbol) and with 2,048 steps (16 updates per symbol, the
updates of `beta2_vocab.py` and `return_time.py`), tied and untied. The optimizers
(`spamlang.optim`):
- adamw: the default, b1 0.9, b2 0.95;
- lazy_adamw: the same, but a row of the embedding or head moves (moments, count, decay,
  parameters) only in steps where its symbol occurs, so nothing between its appearances
  reaches it;
- sgd: heavy-ball momentum 0.9, no normalisation (a rare row's push-down stays small);
- adafactor: factored second moments (a row statistic shared by the row's columns and a
  column statistic shared by every row), its decay 1 - t^-0.8, relative step sizes.
Every optimizer keeps the same clipping (1.0), decoupled weight decay (0.1 on matrices),
warmup (5%) and cosine schedule (to 0.1x), so only the direction of the step differs.

The LR grid starts at 1e-2, 3e-2, 1e-1 for every optimizer, and LR bracketing adds up to 3
half-decade LRs beyond an end of the grid where a cell's best sits (SGD's best lies far above
Adam's), so that every best LR is interior or the summary says it is not. 2 seeds, model
`tiny` (D = 16), L = 2 (position-invariant: the same runs as any longer L).

Read it with the end-of-sweep summary (each cell's best LR, seed mean and range), or
  spamlang plot heatmap runs/optimizers -o optimizers.png --x optimizer --y lr \\
      --cols tie_embeddings

Run: python sweeps/optimizers.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

VOCAB = 4096
BATCH = 32
SEQ_LEN = 2

SWEEP = Sweep(
    name="optimizers",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        vocab_size=VOCAB,
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        tokens=500 * BATCH * SEQ_LEN,  # each cell sets its own
        schedule="cosine",
        warmup_frac=0.05,
        final_lr_ratio=0.1,
        log_every=20,
        eval_sequences=2048,
        checkpoint_every=0,  # one checkpoint, at the end
    ),
    axes={
        "tokens": [500 * BATCH * SEQ_LEN, 2048 * BATCH * SEQ_LEN],  # 500 and 2,048 steps
        "optimizer": ["adamw", "lazy_adamw", "sgd", "adafactor"],
        "tie_embeddings": [True, False],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=3,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
