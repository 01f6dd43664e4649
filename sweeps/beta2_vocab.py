"""Is it Adam's memory? SpamLang at V x beta2, at a fixed batch and fixed updates per symbol.

In SpamLang a symbol occurs in a step with probability about B / V, so it returns every V / B
steps; between its appearances its head row (and, tied, its embedding row) still gets the
softmax's small push-down gradient. Adam's second moment forgets a gradient's scale in about
1 / (1 - b2) steps, after which it normalises the push-down to full-size updates while the
pull-up arrives once per return. If that defeats SpamLang at large V, the final loss moves
with b2 at a fixed V.

Here the batch is fixed (B = 32) and the steps grow with V so that every symbol gets the same
B x steps / V = 16 updates; only V (the head's D / V, and with it the return time V / B) and
b2 vary:
  V        steps   return time V / B
  256        128     8 steps
  1,024      512    32 steps
  4,096    2,048   128 steps
  b2       0.9   0.95   0.99   0.999   0.9999
  memory    10     20    100   1,000   10,000 steps  (1 / (1 - b2))
so the grid has cells on both sides of return time = memory. Each cell is trained tied and
untied, 2 seeds, peak LRs 1e-2, 3e-2, 1e-1, and LR bracketing adds up to 2 more LRs beyond an
end of the grid where a cell's best sits. Model `tiny` (D = 16); AdamW (b1 0.9, eps 1e-8,
weight decay 0.1 on matrices), 5% warmup then cosine to 0.1x, clipping at 1.0; L = 2
(position-invariant: the same runs as any longer L). What else moves along V: the steps (and
so the schedule's length in steps) and the return time; along b2 nothing else.

Read it with
  spamlang plot lines runs/beta2_vocab -o beta2_vocab.png --x adam_memory_steps \\
      --y final_eval_loss --color vocab_size --cols tie_embeddings
results.csv holds symbol_return_steps and adam_memory_steps for each run; `spamlang plot phase`
draws the loss over the two.

Measured (`/usr/bin/time -v python sweeps/beta2_vocab.py`: 9 min 12 s wall on the 2-core AMD
EPYC, 202 runs with bracketing, in one vmapped group of 30 members per (V, tying) cell).
Best-LR final eval loss, seed mean (min .. max over 2 seeds), tied / untied, every best LR
interior after bracketing:
  b2 (memory)    V = 256 (return 8)        V = 1,024 (return 32)       V = 4,096 (return 128)
  0.9 (10)       0.07 (.06-.08) / 0.67 (.64-.70)   2.78 (2.76-2.80) / 3.50 (3.43-3.57)   6.87 (6.86-6.87) / 7.51 (7.51-7.51)
  0.95 (20)      0.04 (.03-.04) / 0.53 (.53-.54)   0.41 (0.37-0.45) / 1.21 (1.16-1.26)   5.83 (5.81-5.85) / 6.60 (6.57-6.63)
  0.99 (100)     0.05 (.04-.05) / 0.44 (.41-.46)   0.01 (0.01-0.01) / 0.26 (0.24-0.27)   0.32 (0.30-0.35) / 1.47 (1.41-1.52)
  0.999 (1,000)  0.05 (.05-.05) / 0.42 (.39-.45)   0.02 (0.02-0.02) / 0.22 (0.22-0.22)   0.05 (0.04-0.05) / 0.47 (0.43-0.52)
  0.9999         0.04 (.04-.04) / 0.39 (.39-.39)   0.02 (0.02-0.02) / 0.23 (0.23-0.24)   0.05 (0.04-0.05) / 0.46 (0.41-0.52)
A run fails where its symbols return less often than Adam remembers them (return time >
memory); with b2 >= 0.999 no V effect is left between V = 256 and 4,096 at this coverage.

Run: python sweeps/beta2_vocab.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

BATCH = 32
UPDATES = 16  # B x steps / V, the same in every cell
SEQ_LEN = 2


def cell(vocab_size: int) -> list[int]:
    """(V, tokens) of one cell: UPDATES x V / B steps of B rows of SEQ_LEN tokens."""
    return [vocab_size, UPDATES * vocab_size * SEQ_LEN]


SWEEP = Sweep(
    name="beta2_vocab",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        tokens=UPDATES * 1024 * SEQ_LEN,  # each cell sets its own
        schedule="cosine",
        warmup_frac=0.05,
        final_lr_ratio=0.1,
        log_every=16,
        eval_sequences=2048,
        checkpoint_every=0,  # one checkpoint, at the end
    ),
    axes={
        "vocab_size,tokens": [cell(256), cell(1024), cell(4096)],
        "b2": [0.9, 0.95, 0.99, 0.999, 0.9999],
        "tie_embeddings": [True, False],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
