"""The memory boundary against the width: return time 32, 128, 512 x b2 0.95, 0.99, 0.999 x
D = 16-128 x tying, V = 4,096, 16 updates per symbol, weight decay 0.1 (none: `*_wd0.py`).

24 groups: `--shard i/24`, each under 20 minutes on 2 cores but D = 128, R = 512 untied.
Run: python sweeps/memory_width.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "The law, and how well it predicts".
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

VOCAB = 4096
UPDATES = 16  # B x steps / V in every cell
SEQ_LEN = 2


def cell(preset: str, batch_size: int) -> list:
    """(preset, B, tokens) of one width and return time V / B: UPDATES x V / B steps of B."""
    return [preset, batch_size, UPDATES * VOCAB * SEQ_LEN]


SWEEP = Sweep(
    name="memory_width",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        vocab_size=VOCAB,
        seq_len=SEQ_LEN,
        batch_size=32,  # each cell sets its own
        tokens=UPDATES * VOCAB * SEQ_LEN,
        log_every=32,
        checkpoint_every=0,
    ),
    axes={
        "preset,batch_size,tokens": [
            cell(p, b) for p in ("tiny", "tiny-w32", "tiny-w64", "tiny-w128") for b in (128, 32, 8)
        ],
        "tie_embeddings": [True, False],
        "b2": [0.95, 0.99, 0.999],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
