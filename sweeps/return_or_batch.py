"""Return time or batch? The fourth blind test's misses at one return time and three batches.

`law_blind_4.py`'s four misses (every cell law called them partial; they learned) are its cells
at return time R = V / B = 224 under b2 0.96, all at B = 8; the misses of `law_blind_2.py` and
`law_blind_3.py` were at B = 8 too. The cell law has R in it and not B, so this sweep holds R,
Adam's memory M, the updates per symbol and the width where they were and moves B:
  B = 4 at V = 896, B = 16 at V = 3,584 (and B = 8 at V = 1,792: `law_blind_4`'s cells)
  all at R = 224, 12 updates per symbol (2,688 steps), b2 0.96 (M = 25), D = 176 (`tiny-w176`),
  2 layers, tied and untied, weight decay 0.1
If these cells learn as the B = 8 ones did, the law misplaces the boundary in R (or M, or D) at
this width; if they are partial, as the law says, B matters and the law has no term for it.
What else moves along B: V (with it chance, log V, and the class thresholds 0.1 and 0.5 log V),
the head's size, and the tokens a step (B sequences of L = 2).
AdamW b1 0.9, 5% warmup then cosine to 0.1x, clipping at 1.0; 2 seeds; peak LRs 1e-4, 3e-4,
1e-3 (the B = 8 cells' best was 3e-4 of 1e-4 .. 1e-2) with up to 2 more beyond an end where a
cell's best sits; exact evaluation every 128 steps; each run's symbols binned in the sweep's
symbols.csv.gz. The forecasts of every cell were committed before any of its runs: the shipped
law's (results/forecasts/return_or_batch.csv) and the symbol law symbol_law_4.json's
(return_or_batch.symbols.csv); both call every cell partial.

4 groups (B x tying) of 6 members (3 LRs x 2 seeds), one per shard: `--shard i/4`.

Read it with
  spamlang law compare results/forecasts/return_or_batch.csv runs/return_or_batch
  spamlang law compare results/forecasts/return_or_batch.symbols.csv runs/return_or_batch
  spamlang law compare results/forecasts/law_blind_4.cell_law_4.csv results/law_blind_4

Run: python sweeps/return_or_batch.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SEQ_LEN = 2
RETURN = 224  # steps between a symbol's returns, V / B: law_blind_4's missed cells'
UPDATES = 12  # updates per symbol, B x steps / V


def cell(batch_size: int) -> list:
    """(B, V, tokens) of return time RETURN with UPDATES x RETURN steps of B rows."""
    vocab = RETURN * batch_size
    return [batch_size, vocab, UPDATES * vocab * SEQ_LEN]


SWEEP = Sweep(
    name="return_or_batch",
    base=TrainConfig(
        preset="tiny-w176",
        language="spam",
        vocab_size=RETURN * 16,  # each cell sets its own
        seq_len=SEQ_LEN,
        batch_size=16,
        tokens=UPDATES * RETURN * 16 * SEQ_LEN,
        b2=0.96,
        log_every=32,
        eval_every=128,
        checkpoint_every=512,
    ),
    axes={
        "batch_size,vocab_size,tokens": [cell(16), cell(4)],
        "tie_embeddings": [True, False],
        "lr": [1e-4, 3e-4, 1e-3],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
