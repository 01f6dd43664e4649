"""Depth as an axis: the memory boundary at n_layers 2, 4, 8, 16, at D = 32 and 128, V = 4,096.

Return time 128 (and 512 at 2, 8 layers) x b2 0.95, 0.99 x tying, 16 updates per symbol, 2
seeds, bracketed LRs; forecast first (results/forecasts/depth.csv). 24 groups: `--shard i/24`.
Run: python sweeps/depth.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "The law, and how well it predicts".
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

VOCAB = 4096
UPDATES = 16  # B x steps / V in every cell
SEQ_LEN = 2


def cell(layers: int, batch_size: int) -> list:
    """(n_layers, B, tokens) of one depth and return time V / B: UPDATES x V / B steps of B."""
    return [layers, batch_size, UPDATES * VOCAB * SEQ_LEN]


SWEEP = Sweep(
    name="depth",
    base=TrainConfig(
        preset="tiny-w32",
        language="spam",
        vocab_size=VOCAB,
        seq_len=SEQ_LEN,
        batch_size=32,  # each cell sets its own
        tokens=UPDATES * VOCAB * SEQ_LEN,
        log_every=32,
        eval_every=256,
        checkpoint_every=512,
    ),
    axes={
        "preset": ["tiny-w32", "tiny-w128"],
        "model.n_layers,batch_size,tokens": [cell(n, 32) for n in (2, 4, 8, 16)]
        + [cell(n, 8) for n in (2, 8)],
        "tie_embeddings": [True, False],
        "b2": [0.95, 0.99],
        "lr": [3e-3, 1e-2, 3e-2],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
