"""Slow, or a plateau? The failing default cell (b2 0.95) at 16, 64 and 256 updates per symbol.

V = 4,096, B = 32, b2 0.95 and 0.999, tied and untied, 2 seeds, bracketed LRs. The 32,768-step
groups dominate: run it as two shards (`--shard 0/2`, `--shard 1/2`).
Run: python sweeps/longer_training.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "Controls at the failing default cell".
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

VOCAB = 4096
BATCH = 32
SEQ_LEN = 2

SWEEP = Sweep(
    name="longer_training",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        vocab_size=VOCAB,
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        tokens=16 * VOCAB * SEQ_LEN,  # each cell sets its own
        log_every=64,
        checkpoint_every=0,
    ),
    axes={
        # updates per symbol x V x L: 16, 64 and 256 updates per symbol
        "tokens": [u * VOCAB * SEQ_LEN for u in (16, 64, 256)],
        "tie_embeddings": [True, False],
        "b2": [0.95, 0.999],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
