"""Return time against Adam's memory: SpamLang at one V, batch x steps at equal updates per
symbol, crossed with beta2 (the phase diagram).

A symbol returns about every V / B steps; Adam's second moment remembers a gradient's scale for
about 1 / (1 - b2) steps. At one V (4,096, where the CPU demo fails) this sweep trades the
batch against the steps so that every symbol gets the same B x steps / V = 16 updates, and
crosses that with b2:
  B        steps   return time V / B         b2       memory 1 / (1 - b2)
  32       2,048   128 steps                 0.9        10 steps
  128        512    32 steps                 0.95       20
  512        128     8 steps                 0.99      100
  2,048       32     2 steps                 0.999   1,000
                                             0.9999 10,000
so the cells lie on both sides of the diagonal return time = memory. If Adam's forgetting
between returns is what fails, the boundary between learned and failed cells follows that
diagonal; if coverage alone decides, every cell (same updates per symbol) ends alike.

Untied (the CPU demo's worse case: the head row is pushed down between appearances while the
embedding row is not), 2 seeds, peak LRs 1e-2, 3e-2, 1e-1 with up to 2 more beyond an end
where a cell's best sits. Model `tiny` (D = 16), AdamW (b1 0.9, weight decay 0.1 on
matrices), 5% warmup then cosine to 0.1x, clipping at 1.0; L = 2. What else moves along B:
the number of steps (and the schedule's length in steps) and the gradient noise per step,
which falls as B grows; along b2 nothing else.

Read it with
  spamlang plot heatmap runs/return_time -o phase.png --x symbol_return_steps \\
      --y adam_memory_steps --best-over lr --cols none
(each cell: the best LR's seed mean, with its seed range) and with the end-of-sweep summary,
which lists each cell's best LR and seed spread.

Run: python sweeps/return_time.py [--out DIR] [--shard i/n] [--dry-run]
"""

import spamlang.sweep
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
    raise SystemExit(spamlang.sweep.main(SWEEP))
