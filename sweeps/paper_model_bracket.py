"""The paper's model at its grid cell V 32,768 bracketed: LRs below the 1e-3 of
`paper_model_cpu.py`, and the remedy.

`smollm2-106m` (30 layers, D 576) at L 2, V 32,768, tied, B 64, 2,500 steps (return time 512,
4.9 updates per symbol; B and L assumed: back-solved from the paper's 41M tokens): b2 0.95 and
b2 0.999 at LR 1e-4 and 3e-4, and head AMSGrad at b2 0.95 at LR 3e-4 and 1e-3; seed 0. AdamW
b1 0.9, weight decay 0.1 on matrices, 5% warmup then cosine to 0.1x, clipping at 1.0; exact
evaluation every 256 steps. One run per shard (`--shard i/6`; `--dry-run` estimates the time).
Findings: docs/findings.md, "A remedy"; forecast: results/forecasts/paper_model_bracket.md.

Run: python sweeps/paper_model_bracket.py [--out DIR] [--shard i/6] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SEQ_LEN, BATCH, STEPS = 2, 64, 2500

SWEEP = Sweep(
    name="paper_model_bracket",
    base=TrainConfig(
        preset="smollm2-106m",
        vocab_size=32768,
        tie_embeddings=True,
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        tokens=STEPS * BATCH * SEQ_LEN,
        log_every=16,
        eval_every=256,
        checkpoint_every=256,
    ),
    axes={
        "head_amsgrad,b2,lr": [
            *([False, b2, lr] for b2 in (0.95, 0.999) for lr in (1e-4, 3e-4)),
            *([True, 0.95, lr] for lr in (3e-4, 1e-3)),
        ],
        "seed": [0],
    },
    group_size=1,  # one 30-layer run per program: a pair is two sessions' work here
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
