"""Clipping (1.0, off) x weight decay (0.1, 0) x b2 (0.95, 0.999) x tying at V = 1,024 and 4,096.

B = 32 (return time 32 and 128), 16 updates per symbol, `tiny` (D = 16), 2 seeds, bracketed
LRs, L = 2, exact evaluation: the two defaults that act between a symbol's appearances.
Run: python sweeps/clipping.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "Claims of earlier rounds, corrected".
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

BATCH = 32
UPDATES = 16
SEQ_LEN = 2


def cell(vocab_size: int) -> list[int]:
    """(V, tokens) of one cell: UPDATES x V / B steps of B rows of SEQ_LEN tokens."""
    return [vocab_size, UPDATES * vocab_size * SEQ_LEN]


SWEEP = Sweep(
    name="clipping",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        tokens=UPDATES * 1024 * SEQ_LEN,  # each cell sets its own
        log_every=32,
        checkpoint_every=0,
    ),
    axes={
        "vocab_size,tokens": [cell(1024), cell(4096)],
        "grad_clip": [1.0, 0.0],
        "weight_decay": [0.1, 0.0],
        "tie_embeddings": [True, False],
        "b2": [0.95, 0.999],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
