"""`paper_model_bracket.py` extended, one run per shard, all else as there: b2 0.95 at LR 3e-5, head
AMSGrad at 1e-4 (each below its best), b2 0.95 at 1e-4 seed 1, head b2 0.999 at 1e-4 to 1e-2
(and 3e-3 seed 1), global b2 0.999 at 3e-3 and 1e-2.
Findings: docs/findings.md, "A remedy"; forecast: results/forecasts/paper_model_bracket.md.

Run: python sweeps/paper_model_followup.py [--out DIR] [--shard i/11 | --only GLOB] [--dry-run]
"""

import dataclasses
from pathlib import Path

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import load_sweep_file

# The bracket's file sits next to this one, loaded by path: sweeps/ is not a package.
BRACKET = load_sweep_file(Path(__file__).with_name("paper_model_bracket.py"))[0]

SWEEP = dataclasses.replace(
    BRACKET,
    name="paper_model_followup",
    axes={
        "head_amsgrad,b2,head_b2,lr,seed": [
            [False, 0.95, None, 3e-5, 0],
            [True, 0.95, None, 1e-4, 0],
            [False, 0.95, None, 1e-4, 1],
            [False, 0.95, 0.999, 3e-4, 0],
            [False, 0.95, 0.999, 1e-3, 0],
            [False, 0.95, 0.999, 1e-4, 0],
            [False, 0.95, 0.999, 3e-3, 0],  # its 1e-3 run ended its best, so above it
            [False, 0.95, 0.999, 1e-2, 0],  # its 3e-3 run ended below 1e-3, so above it
            [False, 0.999, None, 3e-3, 0],  # global b2 0.999 beside the remedy's 3e-3
            [False, 0.999, None, 1e-2, 0],  # its 3e-3 run ended its best, so above it
            [False, 0.95, 0.999, 3e-3, 1],  # the remedy's second seed at its best LR
        ]
    },
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
