"""Adam's epsilon at the failing default cell: eps 1e-8, 1e-6, 1e-4 x b2 0.95, 0.999 x tying.

V = 4,096, B = 32 (return time 128), 16 updates per symbol, `tiny` (D = 16), 2 seeds, bracketed
LRs; a larger eps caps the step on a row whose second moment has decayed.
Run: python sweeps/adam_eps.py [--out DIR] [--shard i/n] [--dry-run]
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
    name="adam_eps",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        vocab_size=VOCAB,
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        tokens=UPDATES * VOCAB * SEQ_LEN,
        log_every=32,
        checkpoint_every=0,
    ),
    axes={
        "tie_embeddings": [True, False],
        "b2": [0.95, 0.999],
        "eps": [1e-8, 1e-6, 1e-4],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
