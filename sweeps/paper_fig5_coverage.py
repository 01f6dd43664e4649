"""The paper's Figure 5 grid with the coverage held constant: 16 sequences per symbol at every V.

`paper_fig5.py` cuts its 41M tokens into sequences of 256, so the sequences that show a given
symbol fall from 156 at V = 1,024 to 1.2 at V = 131,072 (where ~30% of the symbols never
appear in training). A failure at large V there may be the gradient bottleneck or simply
symbols the model never saw. This grid removes the second cause: the same 106M model, the
same V x LR x tying grid (8 x 5 x 2 = 80 runs), the same 16,384 tokens per step and the
same token budget for every V (2,048 steps, 33,554,432 tokens), but the sequence length
shrinks as V grows so that every symbol is seen in 16 sequences on average:

  V        1,024  2,048  4,096  8,192  16,384  32,768  65,536  131,072
  seq_len  2,048  1,024    512    256     128      64      32       16
  batch        8     16     32     64     128     256     512    1,024

(at V = 131,072, e^-16 of the symbols, i.e. about one, go unseen). results.csv reports
sequences_per_symbol, the measured exposure and the eval loss on seen and unseen symbols;
compare with paper_fig5's runs:
  spamlang plot heatmap runs/paper_fig5_coverage -o fig5_coverage.png
  spamlang plot lines runs/paper_fig5_coverage -o cov.png --x vocab_size \\
      --y final_eval_loss --color tie_embeddings
If the large-V failure persists here, coverage does not explain it. What still co-varies
with V is the sequence length (2,048 down to 16 tokens); a SpamLang position needs only the
previous token, so this should matter little, which the CPU sweep `coverage.py` checks at
small scale.

Cost, from spamlang.perf.flops_per_token (6 N + 12 n_layers L D per token, untied; tied
is the same up to rounding), at each V's sequence length:
  V = 1,024 ... 131,072:  1,065, 856, 757, 718, 720, 764, 870, 1,093 MFLOP/token (sum 6,845)
  total = 6,845e6 FLOP/token x 2 tyings x 5 LRs x 33.55e6 tokens = 2.30e18 FLOP,
0.87x paper_fig5's 2.63e18 (fewer tokens; the long sequences of small V cost more attention).
At 40% MFU of an H100/H200's 989 TFLOP/s dense bf16 peak: 2.30e18 / 3.96e14 = 5,800 s =
1.6 accelerator-hours for the grid (~73 s per run); 2.2-3.2 hours at 20-30% MFU. These are
estimates from the FLOP count, not measurements. Memory per step is close to paper_fig5's
(the same 16,384 tokens; the head's chunked loss is the same, attention at L = 2,048 is
flash-style in `jax.nn.dot_product_attention`): take paper_fig5's --group-size advice.

Run: python sweeps/paper_fig5_coverage.py [--out DIR] [--shard i/n] [--group-size K]
  e.g. a SLURM array of 16 tasks (one per (V, tying) cell), each on one 80 GB accelerator:
  python sweeps/paper_fig5_coverage.py --shard $SLURM_ARRAY_TASK_ID/16 --group-size 1
"""

import spamlang.sweep
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

TOKENS_PER_STEP = 16_384
SEQUENCES_PER_SYMBOL = 16
STEPS = 2_048


def cell(vocab_size: int) -> list[int]:
    """(V, seq_len, batch): STEPS x batch = SEQUENCES_PER_SYMBOL x V sequences."""
    batch = SEQUENCES_PER_SYMBOL * vocab_size // STEPS
    return [vocab_size, TOKENS_PER_STEP // batch, batch]


SWEEP = Sweep(
    name="paper_fig5_coverage",
    base=TrainConfig(
        preset="smollm2-106m",
        language="spam",
        tokens=STEPS * TOKENS_PER_STEP,  # 33,554,432 tokens
        schedule="cosine",
        dtype="bfloat16",
        loss_chunk=4_096,
        log_every=25,
        eval_every=256,
        eval_sequences=512,
        checkpoint_every=512,
    ),
    axes={
        "vocab_size,seq_len,batch_size": [cell(2**e) for e in range(10, 18)],
        "lr": [1e-4, 2.5e-4, 5e-4, 1e-3, 2e-3],
        "tie_embeddings": [True, False],
    },
)

if __name__ == "__main__":
    raise SystemExit(spamlang.sweep.main(SWEEP))
