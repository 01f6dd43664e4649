"""The paper's own setting: full batch (B = V, permuted: every symbol in every step) under AdamW.

V = 256, 1,024, 4,096 x D = 16, 64 x b2 0.95, 0.999, 100 steps, untied, 2 seeds, bracketed LRs,
exact evaluation; only the head's rank and the backbone move with V. SGD: `full_batch_sgd.py`.
Run: python sweeps/full_batch.py [--out DIR] [--shard i/n] [--dry-run]
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
