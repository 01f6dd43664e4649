"""`full_batch.py`'s cells under plain gradient descent, the optimizer of the paper's section 2.3.

SGD with momentum 0, no weight decay, no clipping; LRs 1 ... 100 bracketed upward until the runs
diverge (each symbol's rows get 1 / V of the mean-loss step). 2 seeds, exact evaluation.
Run: python sweeps/full_batch_sgd.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "Full batch: the paper's own setting".
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
