"""Memory, step size or decay? A factorial of controls on Adam's step on the head's rows.

Three cells at 16 updates per symbol and b2 0.95 (SpamLang, V 4,096, L 2, exact evaluation):
D 16 at B 32 (return time 128: the default cell), D 32 at B 32 (128), D 128 at B 8 (512);
tied and untied; 3 seeds; LRs 1e-2, 3e-2, 1e-1 bracketed by up to 2 more. Arms, each one change
from AdamW (weight decay 0.1, clipping 1, cosine): head AMSGrad, gated v, head b2 0.999, global
b2 0.999, head weight decay 0, head LR scale 1/3 and 1/10. The matched scale (head AMSGrad's
post-warmup median head_step_rms over AdamW's) is `head_remedy_matched.py`, run after these.
Findings: docs/findings.md, "A remedy"; forecast: results/forecasts/head_remedy.md.

Run: python sweeps/head_remedy.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

VOCAB, UPDATES, SEQ_LEN = 4096, 16, 2
TOKENS = UPDATES * VOCAB * SEQ_LEN  # B x steps = 16 V in every cell
CELLS = [["tiny", 32, TOKENS], ["tiny-w32", 32, TOKENS], ["tiny-w128", 8, TOKENS]]
ARM_FIELDS = "head_amsgrad,head_v_gated,b2,head_b2,head_weight_decay,head_lr_scale"
ARMS = {  # name: one change from AdamW at b2 0.95 (None: the run's own value)
    "adamw": [False, False, 0.95, None, None, 1.0],
    "head_amsgrad": [True, False, 0.95, None, None, 1.0],
    "gated_v": [False, True, 0.95, None, None, 1.0],
    "head_b2_0.999": [False, False, 0.95, 0.999, None, 1.0],
    "b2_0.999": [False, False, 0.999, None, None, 1.0],
    "head_wd0": [False, False, 0.95, None, 0.0, 1.0],
    "head_lr_1/3": [False, False, 0.95, None, None, 1 / 3],
    "head_lr_1/10": [False, False, 0.95, None, None, 0.1],
}

SWEEP = Sweep(
    name="head_remedy",
    base=TrainConfig(
        preset="tiny",
        vocab_size=VOCAB,
        seq_len=SEQ_LEN,
        batch_size=32,
        tokens=TOKENS,
        log_every=32,
        checkpoint_every=0,
    ),
    axes={
        "preset,batch_size,tokens": CELLS,
        "tie_embeddings": [True, False],
        ARM_FIELDS: list(ARMS.values()),
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1, 2],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
