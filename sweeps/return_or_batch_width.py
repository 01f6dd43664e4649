"""B or V / D? `return_or_batch.py`'s B = 16, V = 3,584 cell at twice the width (D = 352).

Everything else as in `return_or_batch.py`; forecast first (results/forecasts/). 2 groups:
`--shard i/2`.
Run: python sweeps/return_or_batch_width.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "The law, and how well it predicts".
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
