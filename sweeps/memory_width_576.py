"""`memory_width.py`'s boundary at the paper's head width: D = 576 (2 layers), V = 4,096, b2 0.95.

The law of `spamlang.law`, fitted at D = 16-128 where the boundary's constant c grows with the
width, extrapolates to D = 576: a 20-step memory (b2 = 0.95) should hold a symbol away for 128
steps and only partly one away for 512, where D = 16 fails both (`memory_width.py`). These
cells test that extrapolation in D before any accelerator runs; what they measured, and what
the law fitted without them predicted, is in docs/findings.md ("The test in width"). The
shipped law now includes them.

The block is `paper_width.py`'s (smollm2-106m's shape, 2 of its 30 layers); V = 4,096 untied
(V / D = 7.1), 16 updates per symbol, return time 128 (B = 32, 2,048 steps) and 512 (B = 8,
8,192 steps); AdamW b1 0.9, b2 0.95, weight decay 0.1, 5% warmup then cosine to 0.1x, clipping
at 1.0; 2 seeds; peak LRs 1e-3, 3e-3, 1e-2 with up to 2 more beyond an end where a cell's best
sits; L = 2; exact evaluation. What else moves along R: the batch, the steps, and the gradient
noise per step. `paper_width_cpu.py` holds the R = 32 cell.

Measured on the 2-core AMD EPYC: 8.91e13 training FLOPs; the R = 128 group took about 42 min
beside the test suite and other work, the R = 512 group 39 min 50 s, mostly alone. Each group
is one vmapped program of 6 runs, so `--shard` alone cannot bring a part under 20 minutes here.
`--group-size 3 --shard i/4` (i = 0 .. 3) makes four parts of 3 runs, but a part does not halve
the time: `--shard 2/4` (R = 512) reached step 2,976 of 8,192 in 10 min 36 s alone, about
29 min for the part, and one run alone (`--group-size 1 --shard 6/12`, R = 512) reached step
512 of 8,192 in 5 min beside another sweep. So no part of this file runs in under 20 minutes
on this machine; its points are measured all the same, in the two parts above.

Run: python sweeps/memory_width_576.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

VOCAB = 4096
UPDATES = 16  # B x steps / V in every cell
SEQ_LEN = 2

SWEEP = Sweep(
    name="memory_width_576",
    base=TrainConfig(
        preset="smollm2-106m",
        model={"n_layers": 2},
        language="spam",
        vocab_size=VOCAB,
        seq_len=SEQ_LEN,
        batch_size=32,  # each cell sets its own
        tokens=UPDATES * VOCAB * SEQ_LEN,
        tie_embeddings=False,
        b2=0.95,
        log_every=32,
        checkpoint_every=1024,
    ),
    axes={
        "batch_size": [32, 8],
        "lr": [1e-3, 3e-3, 1e-2],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
