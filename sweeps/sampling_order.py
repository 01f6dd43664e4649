"""iid against permuted (shuffled epochs) data order at V = 256, 1,024, 4,096 x b2 0.9 ... 0.999.

B = 32 and 16 updates per symbol, untied, `tiny` (D = 16), 2 seeds, bracketed LRs, exact
evaluation; every run saves symbols.npz (`spamlang plot recency`).
Run: python sweeps/sampling_order.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "Shuffled epochs: iid against permuted order".
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

BATCH = 32
UPDATES = 16  # B x steps / V in every cell
SEQ_LEN = 2


def cell(vocab_size: int) -> list[int]:
    """(V, tokens) of one cell: UPDATES x V / B steps of B rows of SEQ_LEN tokens."""
    return [vocab_size, UPDATES * vocab_size * SEQ_LEN]


SWEEP = Sweep(
    name="sampling_order",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        tie_embeddings=False,
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        tokens=UPDATES * 1024 * SEQ_LEN,  # each cell sets its own
        log_every=16,
        checkpoint_every=0,
    ),
    axes={
        "vocab_size,tokens": [cell(256), cell(1024), cell(4096)],
        "sampling": ["iid", "permuted"],
        "b2": [0.9, 0.95, 0.99, 0.999],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
