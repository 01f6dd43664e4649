"""Does a model that learned SpamLang copy a symbol it never saw? 10% of V = 1,024 held out.

64 updates per symbol (B = 32, 2,048 steps), D = 16 and 64 x b2 0.95, 0.999 x tying, 2 seeds,
bracketed LRs; results.csv has eval_loss_heldout and repetition_accuracy_heldout.
Run: python sweeps/holdout.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "Verdict, scoped by what was measured".
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

VOCAB = 1024
BATCH = 32
UPDATES = 64  # B x steps / V (a kept symbol gets UPDATES / 0.9)
SEQ_LEN = 2
STEPS = UPDATES * VOCAB // BATCH

SWEEP = Sweep(
    name="holdout",
    base=TrainConfig(
        vocab_size=VOCAB,
        language="spam",
        language_params={"holdout": 0.1},
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        tokens=STEPS * BATCH * SEQ_LEN,
        schedule="cosine",
        warmup_frac=0.05,
        final_lr_ratio=0.1,
        log_every=32,
        eval_sequences=2048,
        diag_every=STEPS // 4,
        checkpoint_every=0,  # one checkpoint, at the end
    ),
    axes={
        "preset": ["tiny-w16", "tiny-w64"],
        "b2": [0.95, 0.999],
        "tie_embeddings": [True, False],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
