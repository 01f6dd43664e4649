"""Clipping off, and weight decay crossed with b2, at every V where the README makes a claim
about either.

Gradient clipping at global norm 1.0 and decoupled weight decay 0.1 are both defaults that act
between a symbol's appearances: clipping rescales the whole step when a rare symbol's large
gradient arrives, and decay shrinks the symbol's rows while it is away. `equal_batch.py` found
that dropping the decay changed V = 1,024 tied at b2 = 0.95 from 0.42 to 0.011 (sampled
evaluation), against an earlier README's claim that dropping the decay changed nothing. Here both
are switched off alone and together, at V = 1,024 and 4,096, B = 32 (return time 32 and 128
steps), 16 updates per symbol (512 and 2,048 steps), b2 = 0.95 and 0.999, tied and untied:
  grad_clip   1.0 (default) | 0 (off)
  weight decay 0.1 (default) | 0
Model `tiny` (D = 16), AdamW b1 0.9, 5% warmup then cosine to 0.1x; 2 seeds; peak LRs 1e-2,
3e-2, 1e-1 with up to 2 more beyond an end where a cell's best sits; L = 2; exact evaluation.
Along the clipping and the decay nothing else moves.

Read it with
  spamlang plot lines runs/clipping -o clipping.png --x vocab_size --y final_eval_loss \\
      --color b2 --cols grad_clip,weight_decay --rows tie_embeddings

Run: python sweeps/clipping.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

BATCH = 32
UPDATES = 16
SEQ_LEN = 2


def cell(vocab_size: int) -> list[int]:
    """(V, tokens) of one cell: UPDATES x V / B steps of B rows of SEQ_LEN tokens."""
    return [vocab_size, UPDATES * vocab_size * SEQ_LEN]


SWEEP = Sweep(
    name="clipping",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        tokens=UPDATES * 1024 * SEQ_LEN,  # each cell sets its own
        log_every=32,
        checkpoint_every=0,
    ),
    axes={
        "vocab_size,tokens": [cell(1024), cell(4096)],
        "grad_clip": [1.0, 0.0],
        "weight_decay": [0.1, 0.0],
        "tie_embeddings": [True, False],
        "b2": [0.95, 0.999],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
