"""Return time against Adam's memory (the phase diagram): V = 4,096, batch x steps x b2.

B = 32 ... 2,048 traded against the steps at 16 updates per symbol, crossed with b2 0.9 ...
0.9999; untied, `tiny` (D = 16), 2 seeds, bracketed LRs, L = 2.
Run: python sweeps/return_time.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "Verdict, scoped by what was measured".
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

VOCAB = 4096
UPDATES = 16  # B x steps / V in every cell
SEQ_LEN = 2


SWEEP = Sweep(
    name="return_time",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        vocab_size=VOCAB,
        tie_embeddings=False,
        seq_len=SEQ_LEN,
        batch_size=32,  # each cell sets its own
        # The same tokens at every B: steps = UPDATES x V / B, so B x steps / V = UPDATES.
        tokens=UPDATES * VOCAB * SEQ_LEN,
        schedule="cosine",
        warmup_frac=0.05,
        final_lr_ratio=0.1,
        log_every=8,
        eval_sequences=2048,
        checkpoint_every=0,  # one checkpoint, at the end
    ),
    axes={
        "batch_size": [32, 128, 512, 2048],
        "b2": [0.9, 0.95, 0.99, 0.999, 0.9999],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
