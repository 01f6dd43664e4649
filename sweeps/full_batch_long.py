"""`full_batch.py`'s cell at D = 16, V = 4,096, trained for 1,000 steps instead of 100.

Says whether full-batch AdamW's level after 100 steps is a budget or a floor; everything else
is `full_batch.py`'s.
Run: python sweeps/full_batch_long.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "Controls at the failing default cell".
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
