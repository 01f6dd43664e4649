"""Is it the optimizer family? AdamW, lazy AdamW, SGD (momentum 0.9), Adafactor where AdamW fails.

V = 4,096, B = 32, 500 and 2,048 steps, tied and untied, `tiny` (D = 16), 2 seeds; the same
clipping, decay and schedule for all, LRs bracketed up to 3 half-decades beyond the grid.
Run: python sweeps/optimizers.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "Verdict, scoped by what was measured".
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
