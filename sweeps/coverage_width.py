"""The width control of the coverage sweep: V = 4,096 at 3.9 and 15.6 updates per symbol,
for D = 16, 32 and 64 of the width family (`tiny`, `tiny-w32`, `tiny-w64`).

A wider model has a higher-rank head (D / V from 1/256 to 1/64) but also a wider backbone, so
this control alone cannot tell the bottleneck from capacity. What it does hold fixed, unlike
a plain `model.d_model` override, is everything else of the shape: the width family scales
d_ff (4 D), the heads (head_dim 8) and the init (std 1/sqrt(D), embedding rows of norm 1 at
every D), so the embedding norm no longer grows as sqrt(D) along the axis. Each cell: 500
steps at L = 2 (SpamLang is position-invariant), batch 32 or 128, tied and untied, 2 seeds,
LRs 1e-2, 3e-2, 1e-1 and up to 2 more per side where the best sits at an end.

Read it with
  spamlang plot lines runs/coverage_width -o coverage_width.png --x d_model \\
      --y final_eval_loss --color updates_per_symbol --cols tie_embeddings

Run: python sweeps/coverage_width.py [--out DIR] [--shard i/n] [--dry-run] [--vmap]
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
