"""`memory_width.py`'s boundary at the paper's head width: D = 576 (2 layers), V = 4,096, b2 0.95.

Untied, return time 128 and 512, 16 updates per symbol, 2 seeds, bracketed LRs: a test of the
law in width. Each group of 6 took about 40 minutes on 2 cores, and no split made one shorter.
Run: python sweeps/memory_width_576.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "The law, and how well it predicts".
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

VOCAB = 4096
UPDATES = 16  # B x steps / V in every cell
SEQ_LEN = 2

SWEEP = Sweep(
    name="memory_width_576",
    base=TrainConfig(
        preset="smollm2-106m",
        model={"n_layers": 2},
        language="spam",
        vocab_size=VOCAB,
        seq_len=SEQ_LEN,
        batch_size=32,  # each cell sets its own
        tokens=UPDATES * VOCAB * SEQ_LEN,
        tie_embeddings=False,
        b2=0.95,
        log_every=32,
        checkpoint_every=1024,
    ),
    axes={
        "batch_size": [32, 8],
        "lr": [1e-3, 3e-3, 1e-2],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
