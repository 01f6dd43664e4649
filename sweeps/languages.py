"""Every language across a vocabulary range on one small model: which patterns the bottleneck breaks.

The six languages of spamlang.languages (spam, zipf-spam, noisy-spam, cycle, permutation,
branching, each with its default parameters) at V = 64, 256, 1,024 and 4,096 on the `tiny`
model (D = 16, 2 layers), untied, at two learning rates (1e-2 and 3e-2, around the best untied
LR of the CPU demo's SpamLang runs), the CPU demo's budget: seq 64, batch 32, 500 steps
(1,024,000 tokens), AdamW with warmup + cosine. Results are read against each language's
exact floor (results.csv's loss_above_floor), since noisy-spam, cycle and branching have a
non-zero Bayes-optimal loss.

6 languages x 4 V x 2 LRs = 48 runs, 24 vmapped groups of two.
Cost: from the cpu_demo measurements (a tiny-model run on two loaded CPU cores: ~46 s at
V = 64, ~70 s at V = 1,024, ~230 s at V = 4,096; roughly 3-4x less on quiet cores), the twelve
V = 4,096 runs dominate: about 20 minutes on two quiet CPU cores, an hour on a busy one.
No accelerator needed.

Run: python sweeps/languages.py [--out DIR] [--plots]
     (plot one language with `spamlang plot heatmap runs/languages --where language=cycle`)
"""

from spamlang import languages
import spamlang.sweep
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SWEEP = Sweep(
    name="languages",
    base=TrainConfig(
        preset="tiny",
        tie_embeddings=False,
        seq_len=64,
        batch_size=32,
        tokens=500 * 32 * 64,
    ),
    axes={
        "language": languages.names(),
        "vocab_size": [64, 256, 1024, 4096],
        "lr": [1e-2, 3e-2],
    },
)

if __name__ == "__main__":
    raise SystemExit(spamlang.sweep.main(SWEEP))
