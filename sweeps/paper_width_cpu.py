"""The CPU slice of `paper_width.py`: D = 576, 2 layers, V = 4,096 untied, b2 0.95 and 0.999.

The same configs and run ids as the full grid's cells: run it with the same --out to share them.
Run: python sweeps/paper_width_cpu.py [--out DIR] [--dry-run]
Findings: docs/findings.md, "Verdict, scoped by what was measured".
"""

import dataclasses
from pathlib import Path

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import load_sweep_file

# The full grid's file sits next to this one, loaded by path: sweeps/ is not a package.
FULL = load_sweep_file(Path(__file__).with_name("paper_width.py"))[0]
CELLS = FULL.axes["vocab_size,tokens,diag_every"]

SWEEP = dataclasses.replace(
    FULL,
    name="paper_width_cpu",
    axes={
        **FULL.axes,
        "vocab_size,tokens,diag_every": [c for c in CELLS if c[0] == 4096],
        "tie_embeddings": [False],
    },
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
