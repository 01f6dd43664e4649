"""Return time or batch? `law_blind_4`'s missed cells (R = 224, b2 0.96, D = 176) at B = 4 and 16.

V = 224 B, 12 updates per symbol, tied and untied, 2 seeds, bracketed LRs; forecasts first
(results/forecasts/return_or_batch*.csv). 4 groups: `--shard i/4`.
Run: python sweeps/return_or_batch.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "The law, and how well it predicts".
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SEQ_LEN = 2
RETURN = 224  # steps between a symbol's returns, V / B: law_blind_4's missed cells'
UPDATES = 12  # updates per symbol, B x steps / V


def cell(batch_size: int) -> list:
    """(B, V, tokens) of return time RETURN with UPDATES x RETURN steps of B rows."""
    vocab = RETURN * batch_size
    return [batch_size, vocab, UPDATES * vocab * SEQ_LEN]


SWEEP = Sweep(
    name="return_or_batch",
    base=TrainConfig(
        preset="tiny-w176",
        language="spam",
        vocab_size=RETURN * 16,  # each cell sets its own
        seq_len=SEQ_LEN,
        batch_size=16,
        tokens=UPDATES * RETURN * 16 * SEQ_LEN,
        b2=0.96,
        log_every=32,
        eval_every=128,
        checkpoint_every=512,
    ),
    axes={
        "batch_size,vocab_size,tokens": [cell(16), cell(4)],
        "tie_embeddings": [True, False],
        "lr": [1e-4, 3e-4, 1e-3],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
