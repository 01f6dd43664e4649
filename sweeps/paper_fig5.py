"""The paper's Figure 5 (and Figure 4, Table 1): SpamLang on the 106M model, V x LR x tying.

`smollm2-106m`, 41M tokens, V = 1,024 ... 131,072 x 5 LRs x tying. What the paper does not give
is chosen: L 256, B 64, TrainConfig's AdamW and schedule. Cost: benchmarks/README.md.
Run: python sweeps/paper_fig5.py [--out DIR] [--shard i/n] [--plots] [--seq-len 2]
Findings: docs/findings.md, "The law's forecast for the paper's grid".
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SWEEP = Sweep(
    name="paper_fig5",
    base=TrainConfig(
        preset="smollm2-106m",
        language="spam",
        seq_len=256,
        batch_size=64,
        tokens=2_500 * 64 * 256,  # 40,960,000 tokens, 2,500 steps
        schedule="cosine",
        dtype="bfloat16",
        loss_chunk=4_096,
        log_every=25,
        eval_every=500,
        eval_sequences=2048,
        checkpoint_every=500,
    ),
    axes={
        "vocab_size": [2**e for e in range(10, 18)],  # 1,024 ... 131,072
        "lr": [1e-4, 2.5e-4, 5e-4, 1e-3, 2e-3],
        "tie_embeddings": [True, False],
    },
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
