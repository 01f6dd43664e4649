"""Can the body learn SpamLang through a tied head that barely moves (head LR x 1e-3, no head decay)?

head_remedy's tied D 16 and D 32 cells (V 4,096, B 32, 16 updates per symbol, b2 0.95); LRs 1e-3,
3e-3, 1e-2 bracketed by up to 4; 3 seeds. Findings: docs/findings.md, "A remedy"; forecast:
results/forecasts/head_frozen.md.

Run: python sweeps/head_frozen.py [--out DIR] [--dry-run]
"""

import dataclasses
from pathlib import Path

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import load_sweep_file

FACTORIAL = load_sweep_file(Path(__file__).with_name("head_remedy.py"))[0]

SWEEP = dataclasses.replace(
    FACTORIAL,
    name="head_frozen",
    axes={
        "preset,batch_size,tokens": FACTORIAL.axes["preset,batch_size,tokens"][:2],
        "tie_embeddings": [True],
        "head_lr_scale,head_weight_decay": [[1e-3, 0.0]],
        "lr": [1e-3, 3e-3, 1e-2],
        "seed": [0, 1, 2],
    },
    bracket_lr=4,  # D 16's best was at the top after 2 more LRs (1e-1)
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
