"""The paper's own model on this CPU at L = 2: a refutation check of the law's forecast, one seed.

`smollm2-106m` (30 layers, and 8) at the findings' cells (a)-(e), one run per program and per
shard (`--shard i/11`), a checkpoint every 256 steps; forecast first (results/forecasts/).
Run: python sweeps/paper_model_cpu.py [--out DIR] [--shard i/11] [--dry-run]
Findings: docs/findings.md, "The law, and how well it predicts".
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SEQ_LEN = 2
FIELDS = "model.n_layers,vocab_size,batch_size,tokens,tie_embeddings,b2,lr"


def point(layers, V, B, steps, tied, b2, lr) -> list:
    """One run: `steps` of B sequences of 2 tokens."""
    return [layers, V, B, steps * B * SEQ_LEN, tied, b2, lr]


SWEEP = Sweep(
    name="paper_model_cpu",
    base=TrainConfig(
        preset="smollm2-106m",
        language="spam",
        vocab_size=4096,
        seq_len=SEQ_LEN,
        batch_size=32,
        tokens=2048 * 32 * SEQ_LEN,
        log_every=16,
        eval_every=256,  # 8 evaluations at 2,048 steps, 9 at 2,500, 32 at 8,192
        checkpoint_every=256,
    ),
    axes={
        FIELDS: [
            *(point(30, 4096, 32, 2048, False, 0.95, lr) for lr in (3e-4, 1e-3)),  # (a)
            point(30, 8192, 64, 2500, True, 0.95, 1e-3),  # (c)
            *(point(30, 32768, 64, 2500, True, b2, 1e-3) for b2 in (0.95, 0.999)),  # (e)
            *(point(8, 4096, 32, 2048, False, 0.95, lr) for lr in (3e-4, 1e-3, 3e-3)),  # (d) at (a)
            *(point(8, 4096, 8, 8192, False, 0.95, lr) for lr in (3e-4, 1e-3, 3e-3)),  # (d) at (b)
        ],
        "seed": [0],
    },
    group_size=1,  # one run per program: a pair of 30-layer runs is two sessions' work here
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
