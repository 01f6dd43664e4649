"""`memory_width.py` without weight decay: the same cells at weight decay 0.

24 groups, as 24 shards (`--shard i/24`); all but D = 128, R = 512 untied take under 20
minutes on 2 cores.
Run: python sweeps/memory_width_wd0.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "The law, and how well it predicts".
"""

import dataclasses
from pathlib import Path

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import load_sweep_file

# The grid's file sits next to this one, loaded by path: sweeps/ is not a package.
WITH_DECAY = load_sweep_file(Path(__file__).with_name("memory_width.py"))[0]

axes = dict(WITH_DECAY.axes)
SWEEP = dataclasses.replace(
    WITH_DECAY,
    name="memory_width_wd0",
    axes={
        "preset,batch_size,tokens": axes.pop("preset,batch_size,tokens"),
        "tie_embeddings": axes.pop("tie_embeddings"),
        "weight_decay": [0.0],
        **axes,
    },
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
