"""Where is lazy AdamW's tied/untied asymmetry? Lazy only on the embedding, only on the head,
or on both.

`lazy_adamw` moves a row of a row table (moments, count, decay and parameters) only in steps
where its symbol occurs, so the softmax's push-down on absent symbols never reaches it. In an
untied model there are two such tables, the input embedding E and the head W, and only W
receives the push-down (an absent symbol is nobody's input). `lazy_rows` makes one of them lazy
at a time: if the head's rows are where forgetting hurts, `head` alone should recover what
`all` does and `embed` alone should fail like dense AdamW.

V = 4,096, B = 32 (return time 128 steps), 16 updates per symbol (2,048 steps), untied, model
`tiny` (D = 16), b2 = 0.95 and 0.999, b1 0.9, weight decay 0.1 on matrices, 5% warmup then
cosine to 0.1x, clipping at 1.0; dense `adamw` as the reference; 2 seeds; peak LRs 1e-2, 3e-2,
1e-1 with up to 2 more beyond an end where a cell's best sits; L = 2; exact evaluation. Along
`lazy_rows` nothing else moves.

Read it with
  spamlang plot lines runs/lazy_split -o lazy_split.png --x b2 --y final_eval_loss \\
      --color optimizer,lazy_rows

Run: python sweeps/lazy_split.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

VOCAB = 4096
BATCH = 32
UPDATES = 16
SEQ_LEN = 2

SWEEP = Sweep(
    name="lazy_split",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        vocab_size=VOCAB,
        tie_embeddings=False,
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        tokens=UPDATES * VOCAB * SEQ_LEN,
        log_every=32,
        checkpoint_every=0,
    ),
    axes={
        "optimizer,lazy_rows": [
            ["adamw", "all"],
            ["lazy_adamw", "all"],
            ["lazy_adamw", "embed"],
            ["lazy_adamw", "head"],
        ],
        "b2": [0.95, 0.999],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
