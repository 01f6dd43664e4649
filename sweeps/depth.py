"""Depth as an axis: the memory boundary at n_layers 2, 4, 8 and 16, at D = 32 and 128.

Every cell the law of `spamlang.law` was first fitted on had 2 layers, so a forecast of the
paper's 30-layer model was an extrapolation in depth. This grid puts depth into the fit:
  D = 32, 128 (`tiny-w32`, `tiny-w128`: the tiny model at width D, its layers set by the axis)
  n_layers 2, 4, 8, 16 at return time R = 128 (B = 32, 2,048 steps)
  n_layers 2, 8 at R = 512 (B = 8, 8,192 steps)
  M = 20, 100 (b2 = 0.95, 0.99), tied and untied
V = 4,096 and 16 updates per symbol in every cell. AdamW b1 0.9, weight decay 0.1 on matrices,
5% warmup then cosine to 0.1x, clipping at 1.0; 2 seeds; peak LRs 3e-3, 1e-2, 3e-2 with up to
2 more beyond an end where a cell's best sits; L = 2; exact evaluation every 256 steps (8
evaluations at R = 128, 32 at R = 512), each symbol's loss and history at each one in its run's
symbol_evals.jsonl, their bins in the sweep's symbols.csv.gz. What else moves along the depth: the
backbone's parameters (and its FLOPs) with the head held; at D = 32 and D = 128 the 2-layer
cells repeat `memory_width.py`'s at other LRs.

24 groups of 12 members (3 LRs x 2 seeds x 2 b2, vmapped), one per shard: `--shard i/24`. The
forecast of every cell by the law shipped when the grid started is
results/forecasts/depth.csv (`spamlang law predict sweeps/depth.py --csv ...`), committed before
any of its runs.

Read it with
  spamlang plot heatmap runs/depth -o depth.png --x model.n_layers --y adam_memory_steps \\
      --best-over lr --cols symbol_return_steps --rows tie_embeddings

Run: python sweeps/depth.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

VOCAB = 4096
UPDATES = 16  # B x steps / V in every cell
SEQ_LEN = 2


def cell(layers: int, batch_size: int) -> list:
    """(n_layers, B, tokens) of one depth and return time V / B: UPDATES x V / B steps of B."""
    return [layers, batch_size, UPDATES * VOCAB * SEQ_LEN]


SWEEP = Sweep(
    name="depth",
    base=TrainConfig(
        preset="tiny-w32",
        language="spam",
        vocab_size=VOCAB,
        seq_len=SEQ_LEN,
        batch_size=32,  # each cell sets its own
        tokens=UPDATES * VOCAB * SEQ_LEN,
        log_every=32,
        eval_every=256,
        checkpoint_every=512,
    ),
    axes={
        "preset": ["tiny-w32", "tiny-w128"],
        "model.n_layers,batch_size,tokens": [cell(n, 32) for n in (2, 4, 8, 16)]
        + [cell(n, 8) for n in (2, 8)],
        "tie_embeddings": [True, False],
        "b2": [0.95, 0.99],
        "lr": [3e-3, 1e-2, 3e-2],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
