"""Where is lazy AdamW's tied/untied asymmetry? Lazy rows on the embedding, the head, or both.

The failing default cell untied (V = 4,096, B = 32, 16 updates per symbol), b2 0.95 and 0.999,
dense AdamW as the reference, 2 seeds, bracketed LRs.
Run: python sweeps/lazy_split.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "Controls at the failing default cell".
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

VOCAB = 4096
BATCH = 32
UPDATES = 16
SEQ_LEN = 2

SWEEP = Sweep(
    name="lazy_split",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        vocab_size=VOCAB,
        tie_embeddings=False,
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        tokens=UPDATES * VOCAB * SEQ_LEN,
        log_every=32,
        checkpoint_every=0,
    ),
    axes={
        "optimizer,lazy_rows": [
            ["adamw", "all"],
            ["lazy_adamw", "all"],
            ["lazy_adamw", "embed"],
            ["lazy_adamw", "head"],
        ],
        "b2": [0.95, 0.999],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
