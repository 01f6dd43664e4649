"""The missing rank control: a d = 16 backbone with a `lowrank:16` head beside its softmax
head (rank 16 both).

`rank_width.py` found that a rank-16 head learns on a d = 32 or 64 backbone where the d = 16
softmax (also rank 16) does not, and read it as "the d = 16 softmax does not fail for its rank
alone". But its rank-16 heads on wider backbones are `lowrank:16` (W = A B, with its own init
and its own gradient geometry), and the d = 16 softmax is not; the factorisation itself could
be what helps. Here d = 16 trains with both heads at rank 16: if `lowrank:16` learns at d = 16,
the factorisation helps; if it fails like the softmax, the backbone's width is what separates
rank_width's cells.

V = 4,096 at 16 updates per symbol with B = 128 for 512 steps (rank_width's cell, return time
32 steps), untied (a low-rank head has its own A), b2 = 0.95 and 0.999, model `tiny` (d = 16),
AdamW b1 0.9, weight decay 0.1 on matrices, 5% warmup then cosine to 0.1x, clipping at 1.0;
2 seeds; peak LRs 1e-2, 3e-2, 1e-1 with up to 2 more beyond an end where a cell's best sits;
L = 2; exact evaluation. What else moves along the head: its parameters (V x 16 + 16 x 16
against V x 16) and its init.

Read it with
  spamlang plot lines runs/rank_control -o rank_control.png --x b2 --y final_eval_loss \\
      --color head

Run: python sweeps/rank_control.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

VOCAB = 4096
BATCH = 128
STEPS = 512  # B x steps / V = 16 updates per symbol
SEQ_LEN = 2

SWEEP = Sweep(
    name="rank_control",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        vocab_size=VOCAB,
        tie_embeddings=False,
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        tokens=STEPS * BATCH * SEQ_LEN,
        log_every=16,
        checkpoint_every=0,
    ),
    axes={
        "head": ["softmax", "lowrank:16"],
        "b2": [0.95, 0.999],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
