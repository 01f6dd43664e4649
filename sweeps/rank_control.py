"""The rank control: a d = 16 backbone with a `lowrank:16` head beside its softmax (rank 16 both).

`rank_width.py`'s cell (V = 4,096, B = 128, 512 steps), untied, b2 0.95 and 0.999, 2 seeds,
bracketed LRs: does the factorisation itself help?
Run: python sweeps/rank_control.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "Controls at the failing default cell".
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

VOCAB = 4096
BATCH = 128
STEPS = 512  # B x steps / V = 16 updates per symbol
SEQ_LEN = 2

SWEEP = Sweep(
    name="rank_control",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        vocab_size=VOCAB,
        tie_embeddings=False,
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        tokens=STEPS * BATCH * SEQ_LEN,
        log_every=16,
        checkpoint_every=0,
    ),
    axes={
        "head": ["softmax", "lowrank:16"],
        "b2": [0.95, 0.999],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
