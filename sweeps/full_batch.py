"""The paper's own setting: full-batch training, where the return time is 1 and coverage is
complete, so only the head's rank and the backbone are left to move with V.

The paper's section 2.3 analyses full-batch gradient descent: every context is in every step.
Here `sampling = "permuted"` with B = V deals every symbol exactly once into every step, so a
symbol returns every step (R = 1) and gets one update per step at every V. The two accounts
predict different things:
- the head's rank: at equal steps the loss grows with V / D (the rank-D head has to pull V
  symbols apart through D directions);
- the optimizer's memory: a symbol is never away longer than Adam remembers, so under Adam
  there is no V effect at all.

  V (= B)   V / D at D = 16   V / D at D = 64
  256          16                 4
  1,024        64                16
  4,096       256                64
100 steps at every V and D. AdamW at b2 = 0.95 (memory 20 steps) and 0.999 (memory 1,000
steps; 100 effective, bias correction makes it a running mean over the run), b1 0.9, weight
decay 0.1 on matrices, 5% warmup then cosine to 0.1x, clipping at 1.0 (the package's
defaults). Untied, 2 seeds, peak LRs 1e-2 ... 3e-1 with up to 2 more beyond an end where a
cell's best sits; exact evaluation (every symbol, `eval_method` exact). Plain gradient descent
is `full_batch_sgd.py`. What else moves along V: the batch (it is V), hence the tokens per step
and the compute; the step count, the updates per symbol (100) and the return time (1) do not.
Along D: the backbone's width (and so its capacity) with the head's rank.

Read it with
  spamlang plot lines runs/full_batch -o full_batch.png --x vocab_size --y final_eval_loss \\
      --color b2 --cols d_model

Run: python sweeps/full_batch.py [--out DIR] [--shard i/n] [--dry-run]
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
    name="full_batch",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        sampling="permuted",
        tie_embeddings=False,
        seq_len=SEQ_LEN,
        batch_size=256,  # each cell sets B = V
        tokens=STEPS * 256 * SEQ_LEN,
        log_every=10,
        checkpoint_every=0,  # one checkpoint, at the end
    ),
    axes={
        "preset": ["tiny", "tiny-w64"],
        "vocab_size,batch_size,tokens": [cell(256), cell(1024), cell(4096)],
        "b2": [0.95, 0.999],
        "lr": [1e-2, 3e-2, 1e-1, 3e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
