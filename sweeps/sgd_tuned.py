"""SGD tuned as a baseline deserves: no weight decay, no clipping, momentum 0 and 0.9, and an
LR grid bracketed upward until it diverges.

`optimizers.py` ran SGD with AdamW's weight decay (0.1) and clipping (1.0) on Adam's grid
start, which is not how anyone would tune SGD. Plain SGD normalises nothing: a symbol's rows
move only by the gradients they get, so between appearances the softmax's push-down stays
small, and nothing forgets. If Adam's forgetting is the failure, tuned SGD should not show the
return-time boundary; if the head's rank is, it should fail with V like Adam.

V = 256, 1,024, 4,096 at B = 32 and 16 updates per symbol (128, 512 and 2,048 steps; return
time 8, 32, 128 steps), tied and untied, model `tiny` (D = 16), 5% warmup then cosine to 0.1x,
momentum 0 and 0.9 (member fields: one program per cell), 2 seeds, peak LRs 0.3 ... 30 with up
to 4 more half-decade LRs beyond an end where a cell's best sits, so a best LR at the top of the
grid is pushed until the runs diverge. L = 2; exact evaluation. What else moves along V: the
steps and the return time.

Read it with
  spamlang plot lines runs/sgd_tuned -o sgd_tuned.png --x vocab_size --y final_eval_loss \\
      --color momentum --cols tie_embeddings

Run: python sweeps/sgd_tuned.py [--out DIR] [--shard i/n] [--dry-run]
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
    name="sgd_tuned",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        tokens=UPDATES * 1024 * SEQ_LEN,  # each cell sets its own
        optimizer="sgd",
        weight_decay=0.0,
        grad_clip=0.0,
        log_every=32,
        checkpoint_every=0,
    ),
    axes={
        "vocab_size,tokens": [cell(256), cell(1024), cell(4096)],
        "tie_embeddings": [True, False],
        "momentum": [0.0, 0.9],
        "lr": [0.3, 1.0, 3.0, 10.0, 30.0],
        "seed": [0, 1],
    },
    bracket_lr=4,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
