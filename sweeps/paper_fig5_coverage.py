"""The paper's Figure 5 grid with the coverage held constant: 16 updates per symbol at every V.

`paper_fig5.py` trains 2,500 steps of 64 sequences, so the updates per symbol (B x steps / V,
the training rows that show an average symbol) fall from 156 at V = 1,024 to 1.2 at
V = 131,072 (where ~30% of the symbols never appear in training). A failure at large V there
may be the gradient bottleneck or simply symbols the model barely saw. This grid removes the
second cause: the same 106M model, the same V x LR x tying grid (8 x 5 x 2 = 80 runs) and
2,048 steps for every V, but the batch grows with V so that every symbol gets 16 updates:

  V        1,024  2,048  4,096  8,192  16,384  32,768  65,536  131,072
  batch        8     16     32     64     128     256     512    1,024

(at V = 131,072, e^-16 of the symbols, i.e. about one, go unseen). Sequences are 2 tokens:
SpamLang with RoPE is position-invariant (every position of a repeated symbol has the same
hidden state, tests/test_position_invariance.py), so a row of 2 tokens is the same update as
a row of 256, and this grid is the earlier version's (16,384 tokens per step cut into
sequences of 2,048 ... 16 tokens) at 2B tokens per step. results.csv reports
updates_per_symbol, the measured exposure and the eval loss on seen and unseen symbols;
compare with paper_fig5's runs:
  spamlang plot heatmap runs/paper_fig5_coverage -o fig5_coverage.png
  spamlang plot lines runs/paper_fig5_coverage -o cov.png --x vocab_size \\
      --y final_eval_loss --color tie_embeddings
If the large-V failure persists here, coverage does not explain it. What still co-varies
with V is the batch (8 ... 1,024 rows), and with it the gradient noise per step; each symbol
returns every V / B = 128 steps in every cell.

Cost, from spamlang.perf.flops_per_token (6 N + 12 n_layers L D per token) at L = 2:
  V = 1,024 ... 131,072:  641, 645, 652, 666, 694, 751, 864, 1,090 MFLOP/token
  tokens per run = 2,048 steps x 2B = 32,768 (V = 1,024) ... 4,194,304 (V = 131,072)
  total = 7.86e16 FLOP for the 80 runs, 1/29 of the 2.30e18 that the same grid cost at
  16,384 tokens per step (the V = 131,072 cells, 2,048 tokens per step, are 58% of it). These are FLOP counts, not measurements: the small-V cells' steps
  (16 ... 128 tokens) do not fill an accelerator, so their wall time is set by step latency.

Run: python sweeps/paper_fig5_coverage.py [--out DIR] [--shard i/n] [--group-size K]
  e.g. a SLURM array of 16 tasks (one per (V, tying) cell), each on one 80 GB accelerator:
  python sweeps/paper_fig5_coverage.py --shard $SLURM_ARRAY_TASK_ID/16 --group-size 1
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

UPDATES_PER_SYMBOL = 16
STEPS = 2_048
SEQ_LEN = 2


def cell(vocab_size: int) -> list[int]:
    """(V, batch, tokens): STEPS x batch = UPDATES_PER_SYMBOL x V rows of SEQ_LEN tokens."""
    batch = UPDATES_PER_SYMBOL * vocab_size // STEPS
    return [vocab_size, batch, STEPS * batch * SEQ_LEN]


SWEEP = Sweep(
    name="paper_fig5_coverage",
    base=TrainConfig(
        preset="smollm2-106m",
        language="spam",
        seq_len=SEQ_LEN,
        batch_size=64,  # each cell sets its own
        tokens=STEPS * 64 * SEQ_LEN,
        schedule="cosine",
        dtype="bfloat16",
        loss_chunk=4_096,
        log_every=25,
        eval_every=256,
        eval_sequences=2048,
        checkpoint_every=512,
    ),
    axes={
        "vocab_size,batch_size,tokens": [cell(2**e) for e in range(10, 18)],
        "lr": [1e-4, 2.5e-4, 5e-4, 1e-3, 2e-3],
        "tie_embeddings": [True, False],
    },
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
