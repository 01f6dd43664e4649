"""AMSGrad on the head only: does a second moment that never decreases keep a rare symbol's
row from being pushed down while it is away?

Between a symbol's appearances its head row gets only the softmax's small push-down gradient,
and once Adam's second moment v has forgotten the last pull-up (in about 1 / (1 - b2) steps),
m / sqrt(v) turns that small gradient into a full-size step. AMSGrad keeps the running max of
v, so an absent row's v stays at the scale of its pull-ups: if forgetting is the mechanism, the
cells that fail under plain Adam at b2 0.95 and 0.99 should learn with it. Only the head (the
output matrix's V rows; the embedding when tied, which is then the head) gets AMSGrad; every
other parameter keeps plain Adam (`TrainConfig.head_amsgrad`).

The cells are `memory_width.py`'s at D = 16 and 32 and its two short memories:
  D = 16, 32 (`tiny`, `tiny-w32`)
  R = 32 (B = 128, 512 steps), 128 (B = 32, 2,048 steps), 512 (B = 8, 8,192 steps)
  b2 = 0.95, 0.99 (memory 20, 100 steps)
V = 4,096 and 16 updates per symbol in every cell (steps = 16 V / B); tied and untied. AdamW
b1 0.9, weight decay 0.1 on matrices, 5% warmup then cosine to 0.1x, clipping at 1.0; 2 seeds
(3 in partial cells); peak LRs 1e-2, 3e-2, 1e-1 (the plain-Adam runs of these cells did best at
3e-2 in most, 1e-2 to 1e-1 in all: results/memory_width) with up to 2 more beyond an end where
a cell's best sits; L = 2; exact evaluation. Every run has a plain-Adam twin in
`memory_width.py`, the same config but for `head_amsgrad`, whose run id lacks the
`head_amsgrad` piece: compare with results/memory_width. What else moves: nothing but the
head's optimizer.

12 groups of 12 members (b2, LR and seed are members), 144 runs before bracketing. Run it as
12 shards (`--shard 0/12` ... `--shard 11/12`, one group each), seeds 0 and 1 only (`--only
'*seed[01]'`). Seed 2 ran only for the 4 partial cells (best-LR seed mean 0.1-0.5 log V), at
the grid's LRs:
  python sweeps/head_amsgrad.py --only 'tiny-B8-tok131072-*-head_amsgrad-b2_0.95-*seed2' \\
      --only 'tiny-B8-tok131072-untied-head_amsgrad-b2_0.99-*seed2' \\
      --only 'tiny-B32-tok131072-untied-head_amsgrad-b2_0.95-*seed2'

Read it with
  spamlang plot heatmap runs/head_amsgrad -o head_amsgrad.png --x symbol_return_steps \\
      --y adam_memory_steps_effective --best-over lr --cols d_model --rows tie_embeddings

Run: python sweeps/head_amsgrad.py [--out DIR] [--shard i/n] [--dry-run]
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
