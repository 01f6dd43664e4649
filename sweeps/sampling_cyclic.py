"""`sampling_order.py` in cyclic order: does an exact return time move the memory boundary?

`sampling = "permuted"` deals a fresh permutation every epoch, so a symbol appears once per
epoch but its gaps are V / B steps only on average (two uniform positions in consecutive
epochs: sd about 0.4 V / B, from 1 step to nearly twice the mean). `sampling = "cyclic"` deals one
seeded permutation again every epoch, so every gap is exactly V / B steps (B divides V in
every cell). If the failure is Adam forgetting a symbol between its appearances, the boundary
should sit where the memory covers the return time, with no tail to cover: sharper than under
permuted order, and at a shorter memory than under iid draws.

The grid is `sampling_order.py`'s with the one order "cyclic": V = 256, 1,024, 4,096 at B = 32
(return time 8, 32, 128 steps; 16 updates per symbol: 128, 512, 2,048 steps), b2 = 0.9, 0.95,
0.99, 0.999; untied, model `tiny` (D = 16), AdamW b1 0.9, weight decay 0.1 on matrices, 5%
warmup then cosine to 0.1x, clipping at 1.0; 2 seeds (3 in partial cells); peak LRs 1e-3 to 1e-1
(two below `sampling_order.py`'s, see SWEEP) with up to 2 more beyond an end where a cell's best
sits; L = 2; exact evaluation; every run saves symbols.npz. Its first epoch is the permuted
runs' first (the same seed): the orders part from the second epoch on. What else moves: nothing;
every other setting is `sampling_order.py`'s.

3 groups of 40 members, 120 runs before bracketing, seeds 0 and 1 (`--only '*seed[01]'`). Seed 2
ran only for the 6 partial cells (best-LR seed mean 0.1-0.5 log V), at the grid's LRs:
  python sweeps/sampling_cyclic.py --only 'V1024-*seed2' --only 'V4096-*-b2_0.99-*seed2' \\
      --only 'V4096-*-b2_0.999-*seed2'

Read it with (results/sampling_order holds the iid and permuted runs)
  spamlang plot lines runs/sampling_cyclic -o sampling_cyclic.png --x adam_memory_steps \\
      --y final_eval_loss --color vocab_size
  spamlang plot recency runs/sampling_cyclic -o recency_cyclic.png --where vocab_size=4096 \\
      --where b2=0.95

Run: python sweeps/sampling_cyclic.py [--out DIR] [--shard i/n] [--dry-run]
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
