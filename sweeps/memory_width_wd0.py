"""`memory_width.py` without weight decay: the same cells (D = 16, 32, 64, 128 x return time 32,
128, 512 x b2 0.95, 0.99, 0.999 x tying, 16 updates per symbol, V = 4,096) at weight decay 0.

Decay is the one setting the earlier sweeps found to move the boundary at fixed memory
(`clipping.py`: V = 1,024, tied, b2 0.95 ends at 0.47 with decay 0.1 and 0.0073 without). This
file crosses it with the width and the return time, so the law's decay term is fitted on more
than one width. What else moves: nothing; every other setting is `memory_width.py`'s.

Measured on the 2-core AMD EPYC, in parts and with resumes: its R = 32 and 128 groups at
D = 16-64 in 12 min 44 s alone (the D = 16 ones had mostly run before), the six R = 512 groups
in about 40 min beside other work, the D = 128 groups in 8 min 25 s and 11 min 07 s at R = 128
and 17 min 37 s tied and 26 min 58 s untied at R = 512, and 2 min 30 s and 3 min 10 s at
R = 32, alone. Run it as 24 shards (`--shard 0/24` ... `--shard 23/24`, one group each); each
is under 20 minutes here except the D = 128, R = 512 untied group.

Run: python sweeps/memory_width_wd0.py [--out DIR] [--shard i/n] [--dry-run]
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
