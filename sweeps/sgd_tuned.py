"""SGD tuned as a baseline: no weight decay, no clipping, momentum 0 and 0.9, LRs bracketed upward.

V = 256, 1,024, 4,096 at B = 32 and 16 updates per symbol, tied and untied, `tiny` (D = 16),
2 seeds, LRs 0.3 ... 30 with up to 4 more half-decades until the runs diverge.
Run: python sweeps/sgd_tuned.py [--out DIR] [--shard i/n] [--dry-run]
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
    name="sgd_tuned",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        tokens=UPDATES * 1024 * SEQ_LEN,  # each cell sets its own
        optimizer="sgd",
        weight_decay=0.0,
        grad_clip=0.0,
        log_every=32,
        checkpoint_every=0,
    ),
    axes={
        "vocab_size,tokens": [cell(256), cell(1024), cell(4096)],
        "tie_embeddings": [True, False],
        "momentum": [0.0, 0.9],
        "lr": [0.3, 1.0, 3.0, 10.0, 30.0],
        "seed": [0, 1],
    },
    bracket_lr=4,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
