"""Full-batch training under plain gradient descent: the optimizer of the paper's section 2.3.

The cells of `full_batch.py` (sampling "permuted" with B = V: every symbol in every step, 100
steps, V = 256, 1,024, 4,096 at D = 16 and 64, untied) trained by `sgd` with momentum 0, no
weight decay and no clipping, the same warmup and cosine schedule. With the mean loss over
B = V rows, each symbol's rows get 1 / V of the step, so the best LR grows with V: the grid
starts at 1 ... 100 and LR bracketing adds up to 3 half-decade LRs beyond an end where a cell's
best sits, until the runs diverge (a diverged run is never a cell's best). 2 seeds; exact
evaluation. The head-rank account predicts that the loss grows with V / D at equal steps here
too; nothing in plain gradient descent forgets.

Read it with
  spamlang plot lines runs/full_batch_sgd -o full_batch_sgd.png --x vocab_size \\
      --y final_eval_loss --cols d_model

Run: python sweeps/full_batch_sgd.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

STEPS = 100
SEQ_LEN = 2


def cell(vocab_size: int) -> list[int]:
    """(V, B, tokens) of one cell: B = V rows of SEQ_LEN tokens for STEPS steps."""
    return [vocab_size, vocab_size, STEPS * vocab_size * SEQ_LEN]


SWEEP = Sweep(
    name="full_batch_sgd",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        sampling="permuted",
        tie_embeddings=False,
        seq_len=SEQ_LEN,
        batch_size=256,  # each cell sets B = V
        tokens=STEPS * 256 * SEQ_LEN,
        optimizer="sgd",
        momentum=0.0,
        weight_decay=0.0,
        grad_clip=0.0,
        log_every=10,
        checkpoint_every=0,
    ),
    axes={
        "preset": ["tiny", "tiny-w64"],
        "vocab_size,batch_size,tokens": [cell(256), cell(1024), cell(4096)],
        "lr": [1.0, 3.0, 10.0, 30.0, 100.0],
        "seed": [0, 1],
    },
    bracket_lr=3,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
