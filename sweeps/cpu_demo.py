"""The README's main job: the paper's SpamLang effect on a laptop CPU in minutes.

Reproduces the *shape* of the paper's Figure 5 (and Figure 4) at CPU scale: a fixed, small hidden
size D = 16 (preset `tiny`: 2 layers, 2 heads, 1 KV head, d_ff 64) trained on SpamLang for
V = 64, 256, 1,024, 4,096 and 16,384 (V/D from 4 to 1,024; the paper's grid spans V/D = 1.8 to
228), three peak learning rates around 1e-2 (3e-3, 1e-2, 3e-2: the best LR moves with V and with
tying), tied and untied: 5 x 3 x 2 = 30 runs, 10 vmapped groups of 3 LRs.
Each run: seq 64, batch 32, 500 steps = 1,024,000 tokens (~250 tokens per symbol at V = 4,096,
close to the paper's ~300 at its largest V), AdamW (0.9, 0.95, weight decay 0.1 on matrices),
5% linear warmup (25 steps) then cosine decay to 0.1 x the peak, gradient clipping at 1.0.

What it shows: at the best LR the final loss rises with V; the smallest V reach the floor
(loss 0, every next token correct) while the largest V stay far from it, although the task is
trivially within the model's expressivity for every V (the paper's section 3.2 argument).

Measured on this package's two-core CPU (shared with other jobs, so the times are inflated):
  TODO(H6): filled in below by measurement.

Cost: about TODO minutes on two CPU cores; no accelerator needed.
Writes runs/cpu_demo/ (run directories, results.csv) and, by default, runs/cpu_demo/heatmap.png
(final eval loss, V x LR, one panel per tying) and runs/cpu_demo/curves.png (loss vs tokens);
`--no-plots` skips the figures, `--figures DIR` puts them elsewhere.

Run: python sweeps/cpu_demo.py [--out DIR] [--shard i/n] [--no-plots]
"""

import spamlang.sweep
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

# `spamlang sweep sweeps/cpu_demo.py` also reads this: write the figures unless --no-plots.
PLOTS = True

SWEEP = Sweep(
    name="cpu_demo",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        seq_len=64,
        batch_size=32,
        tokens=500 * 32 * 64,  # 1,024,000 tokens, 500 steps
        schedule="cosine",
        warmup_frac=0.05,
        final_lr_ratio=0.1,
        log_every=10,
        eval_sequences=256,
        checkpoint_every=500,  # one checkpoint, at the end (for `spamlang sample`)
    ),
    axes={
        "vocab_size": [64, 256, 1024, 2048, 4096],
        "lr": [3e-3, 1e-2, 3e-2],
        "tie_embeddings": [True, False],
    },
)

if __name__ == "__main__":
    raise SystemExit(spamlang.sweep.main(SWEEP, plots=PLOTS))
