"""Every language at V = 64 ... 4,096 on `tiny` (D = 16): which patterns the bottleneck breaks.

Untied, LRs 1e-2 and 3e-2, L = 64, B = 32, 500 steps; read against each language's exact floor
(results.csv's loss_above_floor).
Run: python sweeps/languages.py [--out DIR] [--plots]
Findings: docs/findings.md, "Verdict, scoped by what was measured".
"""

from spamlang import languages
from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SWEEP = Sweep(
    name="languages",
    base=TrainConfig(
        preset="tiny",
        tie_embeddings=False,
        seq_len=64,
        batch_size=32,
        tokens=500 * 32 * 64,
    ),
    axes={
        "language": languages.names(),
        "vocab_size": [64, 256, 1024, 4096],
        "lr": [1e-2, 3e-2],
    },
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
