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

Measured (`/usr/bin/time -v python sweeps/return_time.py`: 10 min 34 s wall on the 2-core
AMD EPYC, 146 runs with bracketing, 1.4 GB peak RSS). Best-LR final eval loss, seed mean
(min .. max over 2 seeds), every best LR interior:
  memory vs return  2 (B 2,048)         8 (B 512)           32 (B 128)          128 (B 32)
  10 (b2 0.9)       2.86 (2.68-3.04)    0.85 (0.83-0.86)    4.75 (4.74-4.75)    7.51 (7.51-7.51)
  20 (b2 0.95)      2.74 (2.56-2.92)    0.52 (0.49-0.54)    1.71 (1.69-1.73)    6.60 (6.57-6.63)
  100 (b2 0.99)     2.63 (2.44-2.82)    0.43 (0.41-0.45)    0.32 (0.32-0.32)    1.47 (1.41-1.52)
  1,000 (b2 0.999)  2.61 (2.42-2.80)    0.44 (0.41-0.46)    0.30 (0.29-0.30)    0.47 (0.43-0.52)
  10,000            2.60 (2.41-2.79)    0.44 (0.41-0.46)    0.29 (0.29-0.30)    0.46 (0.41-0.52)
Where the memory is at least 3x the return time, every cell with more than 32 steps ends at
0.29-0.47 (the coverage-limited loss of 16 updates per symbol); between 1x and 3x, 0.85 and
0.52; below the diagonal (memory < return time) the loss rises the further below it is:
1.47 (100 vs 128), 1.71 (20 vs 32), 4.75 (10 vs 32), 6.60 (20 vs 128), 7.51 (10 vs 128).
The B = 2,048 column (32 steps) fails for another reason, alike at every b2: too few steps.

Run: python sweeps/return_time.py [--out DIR] [--shard i/n] [--dry-run]
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
