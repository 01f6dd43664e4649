"""`full_batch_sgd.py`'s cell at D = 16, V = 4,096, trained for 1,000 steps instead of 100.

Plain full-batch gradient descent (SGD without momentum, weight decay or clipping; B = V in
permuted order, so every symbol is in every step) ended this cell at 1.48 nats after 100 steps
(results/full_batch_sgd, best LR inside its grid): 0.18 log V, partial by the package's classes.
A hundred steps cannot tell slow from stuck; ten times as many say whether the loss keeps
falling (an optimisation budget) or stays (a floor at V / D = 256). `full_batch_long.py` is the
same for AdamW.

Everything else is `full_batch_sgd.py`'s: untied, model `tiny`, peak LRs 1, 3, 10, 30, 100 with
up to 3 more beyond an end where a cell's best sits, 5% warmup then cosine to 0.1x (over the
1,000 steps), 2 seeds, L = 2, exact evaluation.
What else moves: only the steps.

1 group of 10 members, 10 runs before bracketing.

Read it with
  spamlang plot curves runs/full_batch_sgd_long -o full_batch_sgd_long.png --x step --color lr

Run: python sweeps/full_batch_sgd_long.py [--out DIR] [--shard i/n] [--dry-run]
"""

import dataclasses
from pathlib import Path

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import load_sweep_file

# The grid's file sits next to this one, loaded by path: sweeps/ is not a package.
SHORT = load_sweep_file(Path(__file__).with_name("full_batch_sgd.py"))[0]
STEPS = 1000
VOCAB = 4096

SWEEP = dataclasses.replace(
    SHORT,
    name="full_batch_sgd_long",
    axes={
        **SHORT.axes,
        "preset": ["tiny"],
        "vocab_size,batch_size,tokens": [[VOCAB, VOCAB, STEPS * VOCAB * SHORT.base.seq_len]],
    },
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
