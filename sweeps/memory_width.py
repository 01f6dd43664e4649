"""The memory boundary's constant against the width: return time x Adam's memory x D, tied and
untied, with and without weight decay, at fixed updates per symbol.

The law of `spamlang.law` writes a cell's loss as a mix of chance and the loss its updates
allow, weighted by exp(-c M / R): a symbol away for R steps is forgotten by a second moment of
memory M unless c M >= R. Earlier sweeps put c near 4 tied and 2.5 untied at D = 16, and higher
at D = 32 and 64 (`coverage_width.py`), with weight decay moving it. This grid measures c's
dependence on each at once:
  D        16, 32, 64 (`tiny-w<D>`: the tiny model at width D, its heads and FFN scaled)
  R = V/B  32 (B = 128, 512 steps), 128 (B = 32, 2,048 steps), 512 (B = 8, 8,192 steps)
  M        20, 100, 1,000 (b2 = 0.95, 0.99, 0.999; every run is longer than M steps)
V = 4,096 and 16 updates per symbol in every cell; tied and untied; weight decay 0.1 (on
matrices) and 0. AdamW b1 0.9, 5% warmup then cosine to 0.1x, clipping at 1.0; 2 seeds; peak
LRs 1e-2, 3e-2, 1e-1 with up to 2 more beyond an end where a cell's best sits; L = 2; exact
evaluation. What else moves: along R, the batch and the steps (and the gradient noise per
step); along D, the backbone's capacity with the head's rank.

36 groups of 18 members, about 1e14 training FLOPs; run it in two shards (`--shard 0/2`,
`--shard 1/2`) of about 15 minutes each on two cores. D = 128 (`tiny-w128`) would add 1.7e14
FLOPs, most of them at R = 512, and is left out of the grid for that reason.

Read it with
  spamlang plot heatmap runs/memory_width -o memory_width.png --x symbol_return_steps \\
      --y adam_memory_steps --best-over lr --cols d_model --rows tie_embeddings \\
      --where weight_decay=0.1

Run: python sweeps/memory_width.py [--out DIR] [--shard i/n] [--dry-run]
"""

import spamlang.sweep
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

VOCAB = 4096
UPDATES = 16  # B x steps / V in every cell
SEQ_LEN = 2


def cell(batch_size: int) -> list[int]:
    """(B, tokens) of one return time V / B: UPDATES x V / B steps of B rows."""
    return [batch_size, UPDATES * VOCAB * SEQ_LEN]


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
        "preset": ["tiny", "tiny-w32", "tiny-w64"],
        "batch_size,tokens": [cell(128), cell(32), cell(8)],
        "tie_embeddings": [True, False],
        "weight_decay": [0.1, 0.0],
        "b2": [0.95, 0.99, 0.999],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(spamlang.sweep.main(SWEEP))
