"""The CPU slice of `paper_width.py`: D = 576, 2 layers, V = 4,096 untied, b2 0.95 and 0.999.

The same runs as `paper_width.py`'s V = 4,096 untied cells (same configs, so the same run ids
and results): 16 updates per symbol at B = 128 (512 steps, return time 32 steps), 2 seeds,
peak LRs 1e-3, 3e-3, 1e-2 with LR bracketing. Run it with the same --out as the full grid to
share its finished runs.

Measured (`/usr/bin/time -v python sweeps/paper_width_cpu.py`: 27 min 50 s wall on the 2-core
AMD EPYC, 12 runs in one vmapped group, 4.5 GB peak RSS, about 100 tokens/s per member). Every
run learns: best LR 3e-3, final eval loss 2.8e-5 (2.3e-5 .. 3.3e-5) under b2 = 0.95 and
4.6e-4 (4.4e-4 .. 4.7e-4) under 0.999; the worst of the 12 runs is at 1.5e-3.

Run: python sweeps/paper_width_cpu.py [--out DIR] [--dry-run]
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
