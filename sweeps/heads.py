"""LM heads at V = 1,024 on `tiny` (D = 16): softmax, lowrank:2/4/8 and mos:2/4, untied, 3 LRs.

500 steps of B = 32 at L = 2 (the same runs as at L = 64, where its numbers were measured, before
the low-rank init was fixed); `rank_width.py` repeats the rank comparison properly.
Run: python sweeps/heads.py [--out DIR] [--plots]
Findings: docs/findings.md, "Verdict, scoped by what was measured".
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SWEEP = Sweep(
    name="heads",
    base=TrainConfig(
        preset="tiny",
        vocab_size=1024,
        tie_embeddings=False,
        language="spam",
        seq_len=2,  # position-invariant: the same run as at L = 64 (docstring)
        batch_size=32,
        tokens=500 * 32 * 2,
    ),
    axes={
        "head": ["softmax", "lowrank:2", "lowrank:4", "lowrank:8", "mos:2", "mos:4"],
        "lr": [3e-3, 1e-2, 3e-2],
    },
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
