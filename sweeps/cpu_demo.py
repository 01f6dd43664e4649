"""The README's main job: the paper's SpamLang effect on a laptop CPU in minutes, and what
AdamW's second-moment memory does to it.

Reproduces the *shape* of the paper's Figure 5 (and Figure 4) at CPU scale: a fixed, small hidden
size D = 16 (preset `tiny`: 2 layers, 2 heads, 1 KV head, d_ff 64) trained on SpamLang for
V = 64, 256, 1,024 and 4,096 (V/D = 4 to 256; the paper's grid spans V/D = 1.8 to 228), tied
and untied, 2 seeds, and an LR grid that brackets each cell's optimum: it starts at 1e-2, 3e-2
and 1e-1 and, where a cell's best LR is at an end, adds the next half-decade LR beyond it
(up to 3 per side; `spamlang.sweep.best_lr`) until the best is inside the grid. Every cell is
trained with AdamW's b2 at the LM default 0.95 and at 0.999: a symbol returns every V / B =
2, 8, 32 and 128 steps, and b2 = 0.95 forgets a gradient's scale in about 20 steps, 0.999 in
about 1,000 (README, "What drives the failure"). b2 is a member field like the LR, so both
train in the same vmapped group and the sweep costs little more than one b2 would.

Each run: batch 32, 500 steps, AdamW (b1 0.9, weight decay 0.1 on matrices), 5% linear warmup
(25 steps) then cosine decay to 0.1 x the peak, gradient clipping at 1.0. Every symbol gets
B x steps / V = 250, 62.5, 15.6 and 3.9 updates at the four V. Sequences are 2 tokens long:
SpamLang with RoPE is position-invariant (every position of a repeated symbol has the same
hidden state, and the loss averages over positions), so L = 2 is the same run as the L = 64 of
earlier versions of this demo at 1/32 of the tokens (`tests/test_position_invariance.py`);
Figure 4's curves and Table 1's samples (32 tokens, sampled from these L = 2 models) still come
out. Eval: exact, every symbol scored once on its own sequence `s s` (the population loss).

What it shows: at b2 = 0.95 and the best LR the final loss rises with V; the smallest V reach
the floor (loss 0, every greedy continuation correct) while the largest stays far from it
(log V = 8.3 is chance level), although the task is within the model's expressivity for every
V (the paper's section 3.2 argument). At b2 = 0.999 the rise is much smaller. What else moves
along V: the updates per symbol and the return time (above), since the batch and the steps
are fixed.

Writes runs/cpu_demo/ (run directories, results.csv) and, by default, runs/cpu_demo/heatmap.png
(final eval loss, V x LR, one panel per tying, one row per b2, seeds averaged),
runs/cpu_demo/curves.png (loss vs tokens) and runs/cpu_demo/samples_V4096_tied_b2_0.95.png and
..._b2_0.999.png (Table 1: six 32-token samples at temperature 0.9 seeded with `A`, from the
best-LR tied V = 4,096 run); `--no-plots` skips the figures, `--figures DIR` puts them elsewhere.

Its numbers (best-LR final eval loss per cell, exact evaluation, 2 seeds) are the README's
headline paragraph and `results/cpu_demo/results.csv`, from one run of this script; the time
is the README's Quickstart's.

Run: python sweeps/cpu_demo.py [--out DIR] [--shard i/n] [--no-plots] [--bracket-lr N]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

# `spamlang sweep sweeps/cpu_demo.py` also reads these: write the figures unless --no-plots,
# and with them Table 1's analogue for the largest V (samples_V4096_tied.png).
PLOTS = True
SAMPLES = (
    {"vocab_size": 4096, "tie_embeddings": True, "b2": 0.95},
    {"vocab_size": 4096, "tie_embeddings": True, "b2": 0.999},
)

SWEEP = Sweep(
    name="cpu_demo",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        seq_len=2,  # position-invariant: the same run as any longer L (module docstring)
        batch_size=32,
        tokens=500 * 32 * 2,  # 500 steps
        schedule="cosine",
        warmup_frac=0.05,
        final_lr_ratio=0.1,
        log_every=10,
        eval_sequences=2048,
        checkpoint_every=500,  # one checkpoint, at the end (for `spamlang sample`)
    ),
    axes={
        "vocab_size": [64, 256, 1024, 4096],
        "lr": [1e-2, 3e-2, 1e-1],
        "tie_embeddings": [True, False],
        # AdamW's second-moment decay: 0.95 (the LM default) forgets in ~20 steps, 0.999 in
        # ~1,000; a member field, so both train in one vmapped group per cell
        "b2": [0.95, 0.999],
        "seed": [0, 1],
    },
    bracket_lr=3,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP, plots=PLOTS, samples=SAMPLES))
