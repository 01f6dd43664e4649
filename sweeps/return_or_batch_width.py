"""B or V / D? `return_or_batch.py`'s B = 16 cell at twice the width.

`return_or_batch.py` held the return time R = 224, Adam's memory M = 25, 12 updates per symbol
and D = 176 and moved B (with V = 224 B): each doubling of B multiplied the loss 4.5-7.7x. At
fixed R, B and V move together, so that sweep cannot say whether the batch or the head's
bottleneck (V / D) sets it. This one doubles D at B = 16, V = 3,584 (D = 352, `tiny-w352`): its
V / D is 10.2, that of `law_blind_4`'s B = 8 cell at D = 176 (V = 1,792), with twice its B.
  If it ends near that B = 8 cell (0.153 tied, 0.333 untied; 0.020 / 0.044 in units of log V),
  V / D sets the loss at this R and B does not; if it stays near the D = 176, B = 16 cell
  (0.73 / 1.51), B does and V / D does not; between, both.
What else moves with D: the backbone's width and parameters (4x in its matrices), the heads'
width (D / 4 per head), and the law's c (it grows with D), so the law's forecast moves too.
Everything else as in `return_or_batch.py`: b2 0.96, weight decay 0.1, 2 layers, L = 2, tied and
untied, 2 seeds, peak LRs 1e-4, 3e-4, 1e-3 bracketed (up to 2 more beyond an end), exact
evaluation every 128 steps. The shipped law's forecast was committed before any run
(results/forecasts/return_or_batch_width.csv).

2 groups (tying) of 6 members, one per shard: `--shard i/2`.

Read it with
  spamlang law compare results/forecasts/return_or_batch_width.csv runs/return_or_batch_width

Run: python sweeps/return_or_batch_width.py [--out DIR] [--shard i/n] [--dry-run]
"""

import dataclasses
from pathlib import Path

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import load_sweep_file

# The sweep it widens sits next to this one, loaded by path: sweeps/ is not a package.
NARROW = load_sweep_file(Path(__file__).with_name("return_or_batch.py"))[0]
BATCH, VOCAB, TOKENS = NARROW.axes["batch_size,vocab_size,tokens"][0]  # its B = 16 cell

SWEEP = dataclasses.replace(
    NARROW,
    name="return_or_batch_width",
    base=dataclasses.replace(
        NARROW.base, preset="tiny-w352", batch_size=BATCH, vocab_size=VOCAB, tokens=TOKENS
    ),
    axes={k: v for k, v in NARROW.axes.items() if k != "batch_size,vocab_size,tokens"},
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
