"""The README's demo: the paper's SpamLang effect (Figures 4-5, Table 1) on a laptop CPU in minutes.

`tiny` (D = 16), V = 64 ... 4,096 x AdamW b2 0.95, 0.999 x tying, 2 seeds, bracketed LRs, B = 32,
500 steps, L = 2 (position-invariant: as any longer L). Eval: exact. Writes the figures too.
Run: python sweeps/cpu_demo.py [--out DIR] [--shard i/n] [--no-plots] [--bracket-lr N]
Findings: docs/findings.md, "What the CPU demo shows".
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
