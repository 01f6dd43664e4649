"""Does a token absent for longer than Adam's memory get forgotten in real text too?

The full-softmax arm of `head_rank_text.py` (small, D = 64, the reference corpus at 16K BPE,
L 64, B 16, 2,048 steps) under three optimizers of the head: AdamW b2 0.95 (memory 20 steps),
b2 0.999 (1,000), and b2 0.95 with AMSGrad on the head alone (`head_amsgrad`); 2 seeds, LRs
1e-3, 3e-3, 1e-2 bracketed by up to 2 more. Each run's val loss by a token's training count and
steps since it was last a target is in result.json (`spamlang plot buckets`). The b2 0.95 arm is
Figure 1's softmax group (same config), so two groups here: `--shard i/2`. Findings:
docs/findings.md, "Real text".

Run: python sweeps/text_memory.py [--out DIR] [--shard i/2] [--dry-run]
"""

import dataclasses
from pathlib import Path

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import load_sweep_file

# The same base as Figure 1's sweep, loaded by path: sweeps/ is not a package.
FIGURE_1 = load_sweep_file(Path(__file__).with_name("head_rank_text.py"))[0]

SWEEP = dataclasses.replace(
    FIGURE_1,
    name="text_memory",
    axes={
        # AdamW b2 0.95 is Figure 1's softmax group, the same config: its runs are not repeated.
        "head_amsgrad,b2": [[False, 0.999], [True, 0.95]],
        "lr": [1e-3, 3e-3, 1e-2],
        "seed": [0, 1],
    },
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
