"""A larger Adam eps on the head only, at the failing default cell: is an absent row's
push-down blown up because its sqrt(v) has decayed toward eps?

`adam_eps.py` raised eps for every parameter (up to 1e-4) and moved nothing. Here only the head
(the output matrix's V rows; the embedding when tied, which is then the head) gets the larger
eps (1e-4, 1e-3, 3e-3; `TrainConfig.head_eps`), so the rest of the model keeps the step it
had, while a head row's step m / (sqrt(v) + eps) is capped at |m| / eps once its v has decayed
between appearances to the scale of the push-down gradient. A large head eps also shrinks the
pull a symbol gets when it appears, so the best LR may move: the LR grid is wider than
`adam_eps.py`'s, and bracketing extends it further.

V = 4,096, B = 32 (return time 128 steps), 16 updates per symbol (2,048 steps), AdamW b2 = 0.95
(memory 20 steps), eps 1e-8 elsewhere, b1 0.9, weight decay 0.1 on matrices, 5% warmup then
cosine to 0.1x, clipping at 1.0; model `tiny` (D = 16); tied and untied; 2 seeds (3 in partial
cells); peak LRs 3e-3, 1e-2, 3e-2, 1e-1, 3e-1 (plain Adam did best at 3e-2 here) with up to 2
more beyond an end where a cell's best sits; L = 2; exact evaluation. The base is
`adam_eps.py`'s: its b2 = 0.95, eps = 1e-8 runs are the plain twins. The head's eps is a
constant of the compiled program (unlike eps, not a member field): each value is its own group.

6 groups of 10 members, 60 runs before bracketing, seeds 0 and 1 (`--only '*seed[01]'`). Seed 2
ran only for the 3 partial cells (best-LR seed mean 0.1-0.5 log V), at the grid's LRs:
  python sweeps/head_eps.py --only 'tied-head_eps1e-3-*seed2' --only '*-head_eps3e-3-*seed2'

Read it with
  spamlang plot lines runs/head_eps -o head_eps.png --x head_eps --y final_eval_loss \\
      --cols tie_embeddings

Run: python sweeps/head_eps.py [--out DIR] [--shard i/n] [--dry-run]
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
