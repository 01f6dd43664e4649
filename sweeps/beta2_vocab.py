"""Is it Adam's memory? SpamLang at V (256, 1,024, 4,096) x b2 (0.9 ... 0.9999), tied and untied.

B = 32 and 16 updates per symbol in every cell (steps = V / 2), so the return time V / B and
Adam's memory 1 / (1 - b2) cross; `tiny` (D = 16), 2 seeds, bracketed LRs, L = 2.
Run: python sweeps/beta2_vocab.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "Verdict, scoped by what was measured".
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

BATCH = 32
UPDATES = 16  # B x steps / V, the same in every cell
SEQ_LEN = 2


def cell(vocab_size: int) -> list[int]:
    """(V, tokens) of one cell: UPDATES x V / B steps of B rows of SEQ_LEN tokens."""
    return [vocab_size, UPDATES * vocab_size * SEQ_LEN]


SWEEP = Sweep(
    name="beta2_vocab",
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
        "vocab_size,tokens": [cell(256), cell(1024), cell(4096)],
        "b2": [0.9, 0.95, 0.99, 0.999, 0.9999],
        "tie_embeddings": [True, False],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
