"""Coverage or bottleneck? SpamLang at V (256 ... 16,384) x updates per symbol (3.9, 15.6, 62.5).

500 steps at L = 2; the batch sets the updates per symbol (B = 2 ... 512), tied and untied,
`tiny` (D = 16), 2 seeds, bracketed LRs, a bottleneck diagnosis of every final model.
Run: python sweeps/coverage.py [--out DIR] [--shard i/n] [--dry-run] [--vmap]
Findings: docs/findings.md, "Verdict, scoped by what was measured".
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

STEPS = 500
SEQ_LEN = 2


def cell(vocab_size: int, batch_size: int) -> list[int]:
    """(V, B, tokens) of one cell: STEPS steps of B rows of SEQ_LEN tokens."""
    return [vocab_size, batch_size, STEPS * batch_size * SEQ_LEN]


CELLS = [
    cell(256, 2),
    cell(256, 8),
    cell(256, 32),
    cell(1024, 8),
    cell(1024, 32),
    cell(1024, 128),
    cell(4096, 32),
    cell(4096, 128),
    cell(4096, 512),
    cell(16384, 128),
    cell(16384, 512),
]

SWEEP = Sweep(
    name="coverage",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        seq_len=SEQ_LEN,
        tokens=STEPS * 32 * SEQ_LEN,  # each cell sets its own
        schedule="cosine",
        warmup_frac=0.05,
        final_lr_ratio=0.1,
        log_every=25,
        eval_sequences=2048,
        # D = 16 makes the head memory-bound: chunks of 64 tokens (64 x 16,384 logits, 4 MiB)
        # stay in cache and measured 1.5x faster per step than the default 256 at V = 16,384.
        loss_chunk=64,
        diag_every=STEPS,  # one diagnosis, of the final model
        checkpoint_every=STEPS,
    ),
    axes={
        "vocab_size,batch_size,tokens": CELLS,
        "tie_embeddings": [True, False],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
