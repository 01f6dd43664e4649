"""AMSGrad on the head only (`head_amsgrad`): does a second moment that never decays keep an absent
symbol's row from being pushed down? `memory_width.py`'s cells at D = 16, 32, b2 0.95, 0.99.

12 groups: `--shard i/12`, `--only '*seed[01]'`; seed 2 only in partial cells (the findings).
Run: python sweeps/head_amsgrad.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "Controls at the failing default cell".
"""

import dataclasses
from pathlib import Path

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import load_sweep_file

# The grid's file sits next to this one, loaded by path: sweeps/ is not a package.
PLAIN = load_sweep_file(Path(__file__).with_name("memory_width.py"))[0]

axes = {**PLAIN.axes, "b2": [0.95, 0.99]}  # the memories under which plain Adam fails
SWEEP = dataclasses.replace(
    PLAIN,
    name="head_amsgrad",
    axes={
        "preset,batch_size,tokens": [
            c for c in axes.pop("preset,batch_size,tokens") if c[0] in ("tiny", "tiny-w32")
        ],
        "tie_embeddings": axes.pop("tie_embeddings"),
        "head_amsgrad": [True],
        **axes,
        "seed": [0, 1, 2],  # seed 2: partial cells only (docstring)
    },
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
