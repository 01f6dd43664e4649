"""LM heads against the bottleneck: softmax vs low-rank vs Mixture of Softmaxes on a small CPU model.

At a fixed vocabulary (V = 1,024) and the `tiny` model (D = 16, 2 layers), compare the standard
softmax head with `lowrank:r` (W = A B of rank r = 2, 4, 8 < D: a stronger bottleneck than the
hidden size alone, the paper's section 3.1 control) and `mos:k` (k = 2, 4 softmaxes mixed,
Yang et al. 2018: a high-rank log-probability matrix from the same D) over three learning
rates. All heads are untied (a low-rank head is untied by construction). SpamLang, batch 32,
500 steps (15.6 updates per symbol), AdamW with warmup + cosine (TrainConfig defaults), at
L = 2: SpamLang is position-invariant, so this is the run at any longer L (the numbers below
were measured when this sweep ran at L = 64, 1,024,000 tokens per run).

6 heads x 3 LRs = 18 runs (6 groups of three LRs, vmapped on accelerators).
Measured (`time python sweeps/heads.py --no-plots`, two CPU cores, niced, shared with light
work): 7 min 27 s wall; the three runs of a head took 26-40 s in all for softmax and low-rank,
97 s for mos:2 and 223 s for mos:4. Final eval loss (floor 0; log V = 6.93) and greedy
repetition accuracy at the best of the three LRs:
  softmax    1.37 (0.82)     lowrank:8  1.80 (0.66)     mos:2  3.84 (0.37)
  lowrank:4  4.44 (0.12)     lowrank:2  5.69 (0.02)     mos:4  4.31 (0.20)
(These numbers are from before the low-rank init was fixed: both factors were N(0, init_std^2),
so the initial logit std grew as sqrt(r) and the rank comparison was confounded with it. Since
then A B starts at the softmax head's logit scale for every r; `rank_width.py` repeats the rank
comparison with it, crossed with the backbone width and Adam's b2.)
A narrower head is worse, as a tighter bottleneck should be. Mixing softmaxes does not help
either: MoS raises the rank of the log-probabilities, but its gradient still reaches the
model through the same D-dimensional features. That fits the paper's point that the failure
is one of optimisation (the gradient), not of expressivity. No accelerator needed.

Run: python sweeps/heads.py [--out DIR] [--plots]   (heatmap rows: one per head)
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SWEEP = Sweep(
    name="heads",
    base=TrainConfig(
        preset="tiny",
        vocab_size=1024,
        tie_embeddings=False,
        language="spam",
        seq_len=2,  # position-invariant: the same run as at L = 64 (docstring)
        batch_size=32,
        tokens=500 * 32 * 2,
    ),
    axes={
        "head": ["softmax", "lowrank:2", "lowrank:4", "lowrank:8", "mos:2", "mos:4"],
        "lr": [3e-3, 1e-2, 3e-2],
    },
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
