"""Coverage without the batch: V (256, 1,024, 4,096) x weight decay (0.1, 0) x b2 (0.95, 0.999).

B = 32 and 16 updates per symbol in every cell, tied and untied, `tiny` (D = 16), 2 seeds,
bracketed LRs; every run reports `updates_to_learn` and the kernel fraction along training.
Run: python sweeps/equal_batch.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "Verdict, scoped by what was measured".
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

BATCH = 32
UPDATES = 16  # B x steps / V, the same in every cell
SEQ_LEN = 2


def cell(vocab_size: int) -> list[int]:
    """(V, tokens, diag_every) of one cell: UPDATES x V / B steps of B rows of SEQ_LEN tokens,
    diagnosed every quarter of them."""
    steps = UPDATES * vocab_size // BATCH
    return [vocab_size, steps * BATCH * SEQ_LEN, steps // 4]


SWEEP = Sweep(
    name="equal_batch",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        tokens=UPDATES * 1024 * SEQ_LEN,  # each cell sets its own
        schedule="cosine",
        warmup_frac=0.05,
        final_lr_ratio=0.1,
        log_every=16,
        eval_sequences=2048,
        checkpoint_every=0,  # one checkpoint, at the end
    ),
    axes={
        "vocab_size,tokens,diag_every": [cell(256), cell(1024), cell(4096)],
        "weight_decay": [0.1, 0.0],
        "b2": [0.95, 0.999],
        "tie_embeddings": [True, False],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
