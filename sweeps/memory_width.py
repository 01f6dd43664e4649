"""The memory boundary's constant against the width: return time x Adam's memory x D, tied and
untied, weight decay 0.1, at fixed updates per symbol.

The law of `spamlang.law` writes a cell's loss as a mix of chance and the loss its updates
allow, weighted by the share of symbols away longer than c M steps: a symbol away for R steps
on average is forgotten by a second moment of memory M unless c M >= R. Earlier sweeps put c
near 4 tied and 2.5 untied at D = 16, and higher at D = 32 and 64 (`coverage_width.py`). This
grid measures c against the width and the return time:
  D = 16, 32, 64, 128 (`tiny`, `tiny-w32`, `tiny-w64`, `tiny-w128`: the tiny model at width D)
  R = 32 (B = 128, 512 steps), 128 (B = 32, 2,048 steps), 512 (B = 8, 8,192 steps)
  M = 20, 100, 1,000 (b2 = 0.95, 0.99, 0.999; effective memory min(M, steps): 512 at R = 32)
V = 4,096 and 16 updates per symbol in every cell; tied and untied. AdamW b1 0.9, weight decay
0.1 on matrices, 5% warmup then cosine to 0.1x, clipping at 1.0; 2 seeds; peak LRs 1e-2, 3e-2,
1e-1 with up to 2 more beyond an end where a cell's best sits; L = 2; exact evaluation. What
else moves: along R, the batch and the steps (and the gradient noise per step); along D, the
backbone's capacity with the head's rank. `memory_width_wd0.py` is the same grid without weight
decay, `memory_width_576.py` its boundary at D = 576.

24 groups of 18 members, 1.39e14 training FLOPs before bracketing. Measured in parts on the
2-core AMD EPYC, all with their bracketing: 36 min 06 s for the 14 groups at R = 32 and 128 and
at D = 16, R = 512 (beside two other sweeps), 24 min 08 s alone for the four R = 512 groups at
D = 32 and 64, then for D = 128 24 min 10 s and 10 min 32 s at R = 128 (the first beside five
test-running processes), 17 min 16 s at R = 512 tied and 62 min 17 s untied (beside test runs
for most of it; 10 bracketing runs), and 4 min 34 s and 3 min 06 s at R = 32 (the first beside
the test suite). Run it as 24 shards (`--shard 0/24` ... `--shard 23/24`, one group each);
each is under 20 minutes here except the D = 128, R = 512 untied group and the crowded one
above (its no-decay twin took 8 min 25 s).

Read it with
  spamlang plot heatmap runs/memory_width -o memory_width.png --x symbol_return_steps \\
      --y adam_memory_steps_effective --best-over lr --cols d_model --rows tie_embeddings

Run: python sweeps/memory_width.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

VOCAB = 4096
UPDATES = 16  # B x steps / V in every cell
SEQ_LEN = 2


def cell(preset: str, batch_size: int) -> list:
    """(preset, B, tokens) of one width and return time V / B: UPDATES x V / B steps of B."""
    return [preset, batch_size, UPDATES * VOCAB * SEQ_LEN]


SWEEP = Sweep(
    name="memory_width",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        vocab_size=VOCAB,
        seq_len=SEQ_LEN,
        batch_size=32,  # each cell sets its own
        tokens=UPDATES * VOCAB * SEQ_LEN,
        log_every=32,
        checkpoint_every=0,
    ),
    axes={
        "preset,batch_size,tokens": [
            cell(p, b) for p in ("tiny", "tiny-w32", "tiny-w64", "tiny-w128") for b in (128, 32, 8)
        ],
        "tie_embeddings": [True, False],
        "b2": [0.95, 0.99, 0.999],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
