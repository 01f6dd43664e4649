"""Adam's epsilon at the failing default cell: is the absent symbol's step blown up because
sqrt(v) has decayed toward eps?

Between a symbol's appearances its rows get only the softmax's small push-down, and once the
second moment v has forgotten the last pull-up, m / (sqrt(v) + eps) turns that small gradient
into a full-size step. A larger eps caps the step at |g| / eps for small v, so it should damp
the push-down if this is the mechanism. V = 4,096, B = 32 (return time 128 steps), 16 updates
per symbol (2,048 steps), AdamW b2 = 0.95 (memory 20 steps) and, as the control, 0.999; eps
1e-8 (the default), 1e-6 and 1e-4; tied and untied; model `tiny` (D = 16), b1 0.9, weight
decay 0.1 on matrices, 5% warmup then cosine to 0.1x, clipping at 1.0; 2 seeds; peak LRs 1e-2,
3e-2, 1e-1 with up to 2 more beyond an end where a cell's best sits; L = 2; exact evaluation.
Along eps nothing else moves (eps and b2 are member fields: one compiled program per tying).

Read it with
  spamlang plot lines runs/adam_eps -o adam_eps.png --x eps --y final_eval_loss --color b2 \\
      --cols tie_embeddings

Run: python sweeps/adam_eps.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

VOCAB = 4096
BATCH = 32
UPDATES = 16
SEQ_LEN = 2

SWEEP = Sweep(
    name="adam_eps",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        vocab_size=VOCAB,
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        tokens=UPDATES * VOCAB * SEQ_LEN,
        log_every=32,
        checkpoint_every=0,
    ),
    axes={
        "tie_embeddings": [True, False],
        "b2": [0.95, 0.999],
        "eps": [1e-8, 1e-6, 1e-4],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
