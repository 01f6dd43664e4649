"""A larger Adam eps on the head only (`head_eps` 1e-4, 1e-3, 3e-3) at the failing default cell
under b2 0.95: is an absent row's step blown up because its sqrt(v) has decayed toward eps?

Seeds 0, 1 (`--only '*seed[01]'`); seed 2 only in partial cells (the findings).
Run: python sweeps/head_eps.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "Controls at the failing default cell".
"""

import dataclasses
from pathlib import Path

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import load_sweep_file

# The base's file sits next to this one, loaded by path: sweeps/ is not a package.
ADAM_EPS = load_sweep_file(Path(__file__).with_name("adam_eps.py"))[0]

SWEEP = dataclasses.replace(
    ADAM_EPS,
    name="head_eps",
    axes={
        "tie_embeddings": [True, False],
        "head_eps": [1e-4, 1e-3, 3e-3],
        "lr": [3e-3, 1e-2, 3e-2, 1e-1, 3e-1],
        "seed": [0, 1, 2],  # seed 2: partial cells only (docstring)
    },
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
