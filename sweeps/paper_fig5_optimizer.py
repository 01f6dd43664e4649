"""The optimizer question at the paper's scale: `smollm2-106m` (D = 576) at V x (optimizer, b2).

V = 1,024, 8,192, 32,768, 131,072 at the paper's B 64, 2,500 steps, L = 2; AdamW b2 0.95, 0.999,
0.9999, lazy AdamW, SGD, Adafactor; tied and untied, 2 seeds: one accelerator session.
Run: python sweeps/paper_fig5_optimizer.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "The law's forecast for the paper's grid".
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SWEEP = Sweep(
    name="paper_fig5_optimizer",
    base=TrainConfig(
        preset="smollm2-106m",
        language="spam",
        seq_len=2,  # position-invariant: the paper's L = 256 run at 1/128 of the tokens
        batch_size=64,
        tokens=2_500 * 64 * 2,  # the paper's 2,500 steps
        schedule="cosine",
        dtype="bfloat16",
        log_every=25,
        eval_every=500,
        eval_sequences=2048,
        checkpoint_every=500,
    ),
    axes={
        "vocab_size": [1024, 8192, 32768, 131072],
        "optimizer,b2": [
            ["adamw", 0.95],
            ["adamw", 0.999],
            ["adamw", 0.9999],
            ["lazy_adamw", 0.95],
            ["sgd", 0.95],
            ["adafactor", 0.95],
        ],
        "tie_embeddings": [True, False],
        "lr": [2.5e-4, 1e-3, 4e-3],
        "seed": [0, 1],
    },
    bracket_lr=3,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
