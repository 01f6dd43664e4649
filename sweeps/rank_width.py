"""Is it the head? The head's rank r against the backbone width d, V = 4,096, 16 updates per symbol.

`lowrank:r`, `softmax` and `mlp:r` heads on d = 16 and 64, and a d = 64 model with a 16-wide
input embedding; untied, b2 0.95 and 0.999, 2 seeds, bracketed LRs, B = 128, 512 steps.
Run: python sweeps/rank_width.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "Verdict, scoped by what was measured".
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

VOCAB = 4096
BATCH = 128
STEPS = 512  # B x steps / V = 16 updates per symbol
SEQ_LEN = 2


def cell(d: int, head: str, embed: int | None = None) -> list:
    """(preset, head, embed_dim) of one cell; embed_dim = d is the plain embedding."""
    return [f"tiny-w{d}", head, embed or d]


CELLS = [
    cell(16, "lowrank:4"),
    cell(16, "softmax"),
    cell(16, "mlp:16"),
    cell(16, "mlp:64"),
    cell(64, "lowrank:4"),
    cell(64, "lowrank:16"),
    cell(64, "softmax"),
    cell(64, "softmax", embed=16),
]

SWEEP = Sweep(
    name="rank_width",
    base=TrainConfig(
        vocab_size=VOCAB,
        tie_embeddings=False,
        language="spam",
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        tokens=STEPS * BATCH * SEQ_LEN,
        schedule="cosine",
        warmup_frac=0.05,
        final_lr_ratio=0.1,
        log_every=16,
        eval_sequences=2048,
        diag_every=STEPS // 4,
        checkpoint_every=0,  # one checkpoint, at the end
    ),
    axes={
        "preset,head,model.embed_dim": CELLS,
        "b2": [0.95, 0.999],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
