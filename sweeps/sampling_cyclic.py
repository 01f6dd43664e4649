"""`sampling_order.py` in cyclic order (every gap exactly V / B): does an exact return time move
the memory boundary? Seeds 0, 1 (`--only '*seed[01]'`); seed 2 only in partial cells.

LRs from 1e-3 (two below `sampling_order.py`'s); its iid and permuted runs are the comparison.
Run: python sweeps/sampling_cyclic.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "Controls at the failing default cell".
"""

import dataclasses
from pathlib import Path

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import load_sweep_file

# The grid's file sits next to this one, loaded by path: sweeps/ is not a package.
ORDERS = load_sweep_file(Path(__file__).with_name("sampling_order.py"))[0]

# LRs 1e-3 and 3e-3 joined the grid after its first run: at V = 4,096, b2 0.999 every LR of
# 1e-2-1e-1 failed (7.7-8.8 nats) and bracketing, seeing a best inside that grid, went no lower,
# where b2 0.99's best sat (3e-3).
SWEEP = dataclasses.replace(
    ORDERS,
    name="sampling_cyclic",
    axes={
        **ORDERS.axes,
        "sampling": ["cyclic"],
        "lr": [1e-3, 3e-3, 1e-2, 3e-2, 1e-1],
        "seed": [0, 1, 2],  # seed 2: partial cells only (docstring)
    },
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
