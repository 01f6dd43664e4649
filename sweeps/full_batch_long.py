"""`full_batch.py`'s cell at D = 16, V = 4,096, trained for 1,000 steps instead of 100.

Full batch (`sampling = "permuted"` with B = V) shows every symbol in every step: the return
time is 1 and Adam's memory never runs out between appearances. After 100 steps this cell ends
near 1e-3 at its best LR (results/full_batch: 0.0012 at b2 = 0.95, 0.0034 at 0.999, LR 1e-1);
ten times the steps says whether that level is still falling (an optimisation budget) or
stays (a floor that the head's rank, V / D = 256, sets at this width). At 1,000 steps the
memory of b2 = 0.999 (1,000 steps) is no longer cut short by the run's length as it was at 100.

Everything else is `full_batch.py`'s: untied, model `tiny`, AdamW b2 0.95 and 0.999, b1 0.9,
weight decay 0.1 on matrices, 5% warmup then cosine to 0.1x (over the 1,000 steps), clipping at
1.0; 2 seeds; peak LRs 1e-2 ... 3e-1 with up to 2 more beyond an end where a cell's best sits;
L = 2; exact evaluation. What else moves: only the steps (and with them the schedule's length).

1 group of 16 members, 16 runs before bracketing.

Read it with
  spamlang plot curves runs/full_batch_long -o full_batch_long.png --x step --color b2

Run: python sweeps/full_batch_long.py [--out DIR] [--shard i/n] [--dry-run]
"""

import dataclasses
from pathlib import Path

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import load_sweep_file

# The grid's file sits next to this one, loaded by path: sweeps/ is not a package.
SHORT = load_sweep_file(Path(__file__).with_name("full_batch.py"))[0]
STEPS = 1000
VOCAB = 4096

SWEEP = dataclasses.replace(
    SHORT,
    name="full_batch_long",
    axes={
        **SHORT.axes,
        "preset": ["tiny"],
        "vocab_size,batch_size,tokens": [[VOCAB, VOCAB, STEPS * VOCAB * SHORT.base.seq_len]],
    },
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
