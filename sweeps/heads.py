"""LM heads against the bottleneck: softmax vs low-rank vs Mixture of Softmaxes on a small CPU model.

At a fixed vocabulary (V = 1,024) and the `tiny` model (D = 16, 2 layers), compare the standard
softmax head with `lowrank:r` (W = A B of rank r = 2, 4, 8 < D: a stronger bottleneck than the
hidden size alone, the paper's section 3.1 control) and `mos:k` (k = 2, 4 softmaxes mixed,
Yang et al. 2018: a high-rank log-probability matrix from the same D) over three learning
rates. All heads are untied (a low-rank head is untied by construction). SpamLang, seq 64,
batch 32, 500 steps (1,024,000 tokens), AdamW with warmup + cosine (TrainConfig defaults).

6 heads x 3 LRs = 18 runs; the three LRs of each head are one vmapped program.
Cost: from the cpu_demo measurements (a tiny-model run at V = 1,024 trains at ~24k tokens/s
on two loaded CPU cores, i.e. ~45 s per run, ~20-30 s on quiet cores), the softmax and
low-rank groups take about a minute each and the mos:k groups k times longer (k full V-wide
softmaxes): about 10 minutes on two quiet CPU cores. No accelerator needed.

Run: python sweeps/heads.py [--out DIR] [--plots]   (heatmap rows: one per head)
"""

import spamlang.sweep
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SWEEP = Sweep(
    name="heads",
    base=TrainConfig(
        preset="tiny",
        vocab_size=1024,
        tie_embeddings=False,
        language="spam",
        seq_len=64,
        batch_size=32,
        tokens=500 * 32 * 64,
    ),
    axes={
        "head": ["softmax", "lowrank:2", "lowrank:4", "lowrank:8", "mos:2", "mos:4"],
        "lr": [3e-3, 1e-2, 3e-2],
    },
)

if __name__ == "__main__":
    raise SystemExit(spamlang.sweep.main(SWEEP))
