"""Each head row's Adam step clipped to RMS 0.45 (`head_row_clip`) at b2 0.999: does bounding the
pull an appearance gives change what the long memory learns? The default cell, tied and untied.

Seeds 0, 1 (`--only '*seed[01]'`); seed 2 only in the partial cell (the findings).
Run: python sweeps/head_clip.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "Controls at the failing default cell".
"""

import dataclasses
from pathlib import Path

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import load_sweep_file

# The grid's file sits next to this one, loaded by path: sweeps/ is not a package.
PLAIN = load_sweep_file(Path(__file__).with_name("memory_width.py"))[0]
CELL = ["tiny", 32]  # D = 16 at B = 32: preset and batch of the default cell

SWEEP = dataclasses.replace(
    PLAIN,
    name="head_clip",
    axes={
        "preset,batch_size,tokens": [
            c for c in PLAIN.axes["preset,batch_size,tokens"] if c[:2] == CELL
        ],
        "tie_embeddings": [True, False],
        "head_row_clip": [0.45],
        "b2": [0.999],
        "lr": [3e-3, 1e-2, 3e-2],
        "seed": [0, 1, 2],  # seed 2: partial cells only (docstring)
    },
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
