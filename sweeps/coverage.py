"""Coverage or bottleneck? SpamLang at a fixed token budget, cut into sequences of different lengths.

In SpamLang a sequence carries one symbol, so at a fixed token budget T the number of
training sequences that show a given symbol is T / (seq_len x V): a sweep over V alone
changes the head's D / V and the coverage together. Here T and the tokens per step are
fixed and the sequence length (with the batch, seq_len x batch = 1,024) sets the sequences
per symbol (sps) at each V:

  sps     V = 256        V = 1,024     V = 4,096     V = 16,384
   ~4     L 512, B 2     L 128, B 8    L 32, B 32    L 8, B 128
  ~16     L 128, B 8     L 32, B 32    L 8, B 128    L 2, B 512
  ~64     L 32, B 32     L 8, B 128    L 2, B 512    (L 0.5: out of reach)

(3.9, 15.6 and 62.5 sequences per symbol exactly.) L = 2 is SpamLang at its shortest: one
prediction per sequence, the symbol itself. Every cell is trained tied and untied at two
peak LRs (1e-2 and 3e-2, around the CPU demo's best), on the `tiny` model (D = 16, 2 layers);
a width control adds D = 32 and 64 at V = 4,096 at ~4 and ~16 sequences per symbol.
Budget: 512,000 tokens per run, 500 steps of 1,024 tokens, AdamW with 5% warmup then cosine
to 0.1x, the CPU demo's recipe. Every run ends with a gradient-bottleneck diagnosis of its
final model (kernel_fraction, projected_cosine in results.csv). The sweep summary warns when
the best LR of a cell sits at the edge of the LR grid.

Out of reach on a CPU: ~64 sequences per symbol at V = 16,384 needs sequences of half a
token at this budget, or 4x the budget at L = 2 (about 2M tokens, ~4 minutes per run on two
cores, where this whole sweep must fit in 15 minutes).

Read it with
  spamlang plot lines runs/coverage -o coverage.png --x sequences_per_symbol \\
      --y final_eval_loss --color vocab_size --cols tie_embeddings --where d_model=16
If the lines collapse onto one, coverage explains the failure; if they fan out by V at equal
coverage, the bottleneck does. results.csv also holds eval_loss_seen / eval_loss_unseen:
a model that learned to copy repeats symbols it never trained on.

Measured (`time python sweeps/coverage.py` on the project's 2-core Xeon, nothing else
running): 21 min 33 s wall, 1.5 GB peak RSS, over the 15-minute aim. Per part, summed from
the runs' wall_seconds: V = 256 3.7 min, V = 1,024 3.1 min, V = 4,096 4.1 min, V = 16,384
4.2 min, the width control 6.2 min. Best-LR final eval loss, tied / untied:
  sequences per symbol   V = 256      V = 1,024    V = 4,096    V = 16,384
   3.9                   3.61 / 4.27  4.90 / 5.70  5.82 / 7.12  6.82 / 8.12
  15.6                   0.13 / 1.21  0.50 / 1.37  0.73 / 1.73  1.01 / 2.32
  62.5                   0.00 / 0.00  0.00 / 0.00  0.00 / 0.00  -
  width control, V = 4,096: D = 32 4.88 / 6.19 (3.9), 0.00 / 0.12 (15.6);
                            D = 64 2.95 / 4.58 (3.9), 0.00 / 0.01 (15.6).
What it means is in the README section "What drives the failure".

Run: python sweeps/coverage.py [--out DIR] [--shard i/n] [--dry-run]
"""

import spamlang.sweep
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

TOKENS = 512_000
TOKENS_PER_STEP = 1_024
STEPS = TOKENS // TOKENS_PER_STEP


def cut(vocab_size: int, seq_len: int, d_model: int = 16) -> list[int]:
    """(d_model, V, L, B) of one cell: the batch that keeps TOKENS_PER_STEP tokens per step."""
    return [d_model, vocab_size, seq_len, TOKENS_PER_STEP // seq_len]


CELLS = [
    cut(256, 512), cut(256, 128), cut(256, 32),
    cut(1024, 128), cut(1024, 32), cut(1024, 8),
    cut(4096, 32), cut(4096, 8), cut(4096, 2),
    cut(16384, 8), cut(16384, 2),
    # the width control: V = 4,096 at ~4 and ~16 sequences per symbol
    cut(4096, 32, 32), cut(4096, 8, 32), cut(4096, 32, 64), cut(4096, 8, 64),
]

SWEEP = Sweep(
    name="coverage",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        tokens=TOKENS,
        schedule="cosine",
        warmup_frac=0.05,
        final_lr_ratio=0.1,
        log_every=25,
        eval_sequences=256,
        # D = 16 makes the head memory-bound: chunks of 64 tokens (64 x 16,384 logits, 4 MiB)
        # stay in cache and measured 1.5x faster per step than the default 256 at V = 16,384.
        loss_chunk=64,
        diag_every=STEPS,  # one diagnosis, of the final model
        checkpoint_every=STEPS,
    ),
    axes={
        "model.d_model,vocab_size,seq_len,batch_size": CELLS,
        "tie_embeddings": [True, False],
        "lr": [1e-2, 3e-2],
    },
)

if __name__ == "__main__":
    raise SystemExit(spamlang.sweep.main(SWEEP))
