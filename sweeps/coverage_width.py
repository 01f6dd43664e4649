"""The width control of `coverage.py`: V = 4,096 at 3.9 and 15.6 updates per symbol, D = 16, 32, 64.

The width family (`tiny`, `tiny-w32`, `tiny-w64`) moves only the width; 500 steps at L = 2,
B = 32 or 128, tied and untied, 2 seeds, bracketed LRs.
Run: python sweeps/coverage_width.py [--out DIR] [--shard i/n] [--dry-run] [--vmap]
Findings: docs/findings.md, "Verdict, scoped by what was measured".
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

STEPS = 500
SEQ_LEN = 2

SWEEP = Sweep(
    name="coverage_width",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        vocab_size=4096,
        seq_len=SEQ_LEN,
        tokens=STEPS * 32 * SEQ_LEN,  # each cell sets its own
        schedule="cosine",
        warmup_frac=0.05,
        final_lr_ratio=0.1,
        log_every=25,
        eval_sequences=2048,
        loss_chunk=64,
        diag_every=STEPS,
        checkpoint_every=STEPS,
    ),
    axes={
        "preset": ["tiny", "tiny-w32", "tiny-w64"],
        "batch_size,tokens": [[b, STEPS * b * SEQ_LEN] for b in (32, 128)],
        "tie_embeddings": [True, False],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
