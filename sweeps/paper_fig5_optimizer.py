"""The optimizer question at the paper's scale: the 106M model (D = 576) at V x beta2 and
V x optimizer family, ready for one accelerator session.

`paper_fig5.py` trains AdamW with b2 = 0.95, whose second moment forgets in about 20 steps,
while at its batch of 64 a symbol returns every V / 64 steps: 16 steps at V = 1,024 and
2,048 at V = 131,072. `beta2_vocab.py`, `return_time.py` and `optimizers.py` test at D = 16
whether Adam's forgetting between a symbol's returns is what fails; this sweep repeats the
test at D = 576, where the head's rank ratio D / V is the paper's.

Grid (the paper's batch 64 and 2,500 steps; L = 2, which by the position invariance is the
same run as the paper's L = 256 at 1/128 of the tokens):
  V                   1,024   8,192   32,768   131,072
  return time V / B      16     128      512     2,048 steps
  updates per symbol    156    19.5      4.9       1.2
  optimizer, b2: adamw 0.95 (memory 20 steps, the paper's setting), adamw 0.999 (1,000),
                 adamw 0.9999 (10,000), lazy_adamw 0.95 (rows move only when their symbol
                 occurs), sgd (momentum 0.9), adafactor
  tied and untied, 2 seeds, peak LRs 2.5e-4, 1e-3, 4e-3 with LR bracketing (up to 3 more
  half-decade LRs beyond an end where a cell's best sits: SGD's optimum lies far above
  Adam's).
4 x 6 x 2 = 48 cells, 288 runs before bracketing. What else moves along V: the updates per
symbol (the batch and steps are fixed, as in the paper), so at V = 131,072 about 30% of the
symbols never occur in training whatever the optimizer; results.csv separates them
(eval_loss_seen, eval_loss_unseen).

Cost: 0.64e9 ... 1.09e9 FLOP/token (V = 1,024 ... 131,072) x 320,000 tokens, at most 3.5e14
FLOP per run and 7.25e16 for the grid before bracketing (`--dry-run`; 1/36 of paper_fig5's
2.63e18); a 128-token step does not fill an accelerator, so wall time
is set by the step's latency, and the 6 members of a cell's LR x seed group share each step
(vmapped). One member's state is 2.87 GiB at V = 131,072 (parameters and two moments; SGD
keeps one buffer, Adafactor factored statistics), so a group of 6 fits one 80 GB device.

Prediction from the CPU sweeps: the law's forecast of this grid, in the README's "The headline
finding" and docs/findings.md ("What drives the failure"), which this sweep's results should
confirm or overturn at D = 576 and 30 layers.

Run: python sweeps/paper_fig5_optimizer.py [--out DIR] [--shard i/n] [--dry-run]
  e.g. one accelerator: python sweeps/paper_fig5_optimizer.py --out runs/paper_fig5_optimizer
  or a SLURM array of 8: --shard $SLURM_ARRAY_TASK_ID/8
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SWEEP = Sweep(
    name="paper_fig5_optimizer",
    base=TrainConfig(
        preset="smollm2-106m",
        language="spam",
        seq_len=2,  # position-invariant: the paper's L = 256 run at 1/128 of the tokens
        batch_size=64,
        tokens=2_500 * 64 * 2,  # the paper's 2,500 steps
        schedule="cosine",
        dtype="bfloat16",
        log_every=25,
        eval_every=500,
        eval_sequences=2048,
        checkpoint_every=500,
    ),
    axes={
        "vocab_size": [1024, 8192, 32768, 131072],
        "optimizer,b2": [
            ["adamw", 0.95],
            ["adamw", 0.999],
            ["adamw", 0.9999],
            ["lazy_adamw", 0.95],
            ["sgd", 0.95],
            ["adafactor", 0.95],
        ],
        "tie_embeddings": [True, False],
        "lr": [2.5e-4, 1e-3, 4e-3],
        "seed": [0, 1],
    },
    bracket_lr=3,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
