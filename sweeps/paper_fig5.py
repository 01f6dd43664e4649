"""The paper's Figure 5 (and Figure 4, Table 1): SpamLang on the 106M model, V x LR x tying.

Reproduces section 3.2 of Godey & Artzi (2026), "Lost in Backpropagation": a Transformer with
106,203,456 non-embedding parameters and D = 576 (preset `smollm2-106m`, the SmolLM2-135M
shape) trained on 41M tokens of SpamLang for V = 1,024 ... 131,072 (powers of two), a grid of
peak learning rates around the paper's 2.5e-4 and 5e-4, with and without weight tying:
8 x 5 x 2 = 80 runs. The final-loss heatmap is Figure 5; the curves at lr 5e-4 are Figure 4.

Settings the paper does not give (its appendix with the optimizer, batch and schedule was not
available): sequence length 256 and batch 64 (16,384 tokens per step, 2,500 steps, so
40,960,000 ~ 41M tokens; a SpamLang sequence needs no long context), AdamW
(0.9, 0.95, eps 1e-8, weight decay 0.1), 5% linear warmup then cosine decay to 0.1 x the peak,
gradient clipping at 1.0 (TrainConfig's documented defaults), bfloat16 matmuls with float32
parameters, softmax and loss. A sequence is one uniform symbol repeated 256 times, so the
160,000 training sequences give each symbol, on average, B x steps / V updates:
  V =                      1,024   2,048  4,096  8,192  16,384  32,768  65,536  131,072
  updates per symbol         156      78     39   19.5     9.8     4.9     2.4      1.2
  tokens per symbol       40,000  20,000 10,000  5,000   2,500   1,250     625      313
  return time V / B (steps)  16      32     64    128     256     512   1,024    2,048
  AdamW memory 1 / (1 - b2)   20 steps in every cell (b2 = 0.95)
A symbol occurs in a step with probability about B / V and so returns every V / B steps; from
V = 2,048 on it is gone for longer than Adam's second moment remembers it (PREDICTION, below).
The paper holds tokens per symbol near 300 ("roughly 300 times" at V = 131,072), which is
1.2 sequences here: ~30% of the symbols (e^-1.22) never appear in training at all, so a
large-V failure in this grid mixes the bottleneck with unseen symbols. results.csv reports
both (updates_per_symbol, unseen_fraction, eval_loss_seen / eval_loss_unseen), and
paper_fig5_coverage.py runs the same grid at 16 updates per symbol for every V.

Tokens per symbol is not the quantity that matters. With RoPE a SpamLang sequence has the same
hidden state at every position, and the loss averages over positions, so a sequence of 256
tokens is one update of its symbol, like a sequence of 2: the run's result is fixed by V, the
model, B, the steps, the LR schedule and the seed (tests/test_position_invariance.py). The
switch `--seq-len 2` runs the equivalent grid (paper_fig5-L2: L = 2, the same batch of 64 and
2,500 steps, 320,000 tokens per run) at 641 ... 1,090 MFLOP/token (V = 1,024 ... 131,072) and
1.92e16 FLOP for the grid, 1/137 of the 2.63e18 below. Wall time falls less than FLOPs: a
step of 128 tokens does not fill an accelerator (vmapped LR groups help). Figure 4's curves and
Table 1's samples work the same (`spamlang sample` draws 32 tokens from an L = 2 model).

PREDICTION from this package's CPU sweeps (D = 16; README, "What drives the failure"): a run
fails where its symbols return less often than Adam remembers them and learns where the memory
is about 3x the return time or more, coverage permitting. With b2 = 0.95 (memory 20 steps)
that predicts learning at V = 1,024 (return 16), a partial failure at V = 2,048 (32) and
failure from V = 4,096 (64) on, although V = 4,096 and 8,192 still give each symbol 39 and
19.5 updates. With b2 = 0.999 (memory 1,000) it predicts learning up to V = 16,384 (9.8
updates per symbol, return 256), and failure beyond it from coverage (4.9, 2.4, 1.2 updates)
rather than from the optimizer. `sweeps/paper_fig5_optimizer.py` tests it at D = 576.

The loss is computed in chunks of 4,096
tokens so that the logits of V = 131,072 (4,096 x 131,072 floats = 2 GiB per chunk and member)
never exist for the whole batch at once. The five learning rates of one (V, tying) cell form
one vmapped group (on accelerators), cut into programs of as many members as fit the device
(see Memory below).

Cost, from spamlang.perf.flops_per_token (6 N + 12 n_layers L D per token, N counting the
V x D head matmul, tied or not), at L = 256:
  V = 1,024 ... 131,072:  694, 697, 704, 718, 747, 803, 917, 1,143 MFLOP/token  (sum 6,423)
  total = 6,423e6 FLOP/token x 2 tyings x 5 LRs x 40.96e6 tokens = 2.63e18 FLOP.
At 40% MFU of an H100/H200's 989 TFLOP/s dense bf16 peak (396 TFLOP/s sustained):
  2.63e18 / 3.96e14 = 6,650 s = 1.85 accelerator-hours for the whole grid (~83 s per run);
a 576-wide model often reaches only 20-30% MFU, i.e. 2.5-3.7 accelerator-hours.

Memory, from XLA's memory analysis of the compiled (never run) step at V = 131,072 untied,
kernels=xla, on forced host CPU devices (XLA:CPU's buffers; a GPU compile, with fused attention
and bf16 activations, may need less): one member's state (257M float32 parameters and the AdamW
moments) is 2.87 GiB, replicated on every device. The vmapped group of 5 needs 53.5 GiB per
device on an 8-device mesh (8 sequences per device: 14.4 GiB state + 39.1 GiB temporaries;
9.9 GiB for one member), but 194 GiB on ONE device holding the whole batch of 64 (39.0 GiB for
one member: 36.2 GiB of temporaries, mostly the backbone's activations, so a smaller V saves
little: 32.5 GiB for one member at V = 1,024 tied). The sweep fits this itself, with no flag:
before training a group on a device that reports its memory (or with
SPAMLANG_DEVICE_MEMORY=80GiB) it compiles the step, reads XLA's memory analysis and caps the
members per program to fit with a 10% margin, in one line (spamlang/sweep/fit.py). On one
80 GiB device that is 2 members per program for V = 1,024 ... 65,536 untied (64.3 ... 70.4 GiB
of the 72.0 usable) and 1 at V = 131,072 (39.0 GiB; 5 would need 194.1): `python
benchmarks/paper_fit.py --cells untied`, 12.5 min on 2 cores. Undeclared, a GPU's figure is
JAX's allocator limit, by default 75% of its memory (XLA_PYTHON_CLIENT_MEM_FRACTION), which
gives 1 member per program on an 80 GB GPU. An H200 (141 GB) takes about 3 members, an
8-device node the whole group.
XLA's cost analysis agrees with the FLOP count above (11.8 vs 11.7 TFLOP per device and step
for the group on 8 devices). Three real steps of one member at batch 8 on a 2-core Xeon
(1 device, cpu kernels, 8 micro-batches): 53.5 s per step (44 GFLOP/s), 62 s to compile,
7.3 GiB peak RSS. Measured by `python benchmarks/paper_shape.py --part all` (7.3 minutes on
2 cores). Not for CPUs: one run is ~2.6e16 FLOP.

Evaluation: 2,048 fixed sequences (the standard error of a mean loss stays near log V / 45
even for a model that fails), every 500 steps; at L = 256 it decodes 255 tokens per sequence
greedily, which the FLOP count above leaves out.

Run: python sweeps/paper_fig5.py [--out DIR] [--shard i/n] [--plots] [--seq-len 2]
  e.g. a SLURM array of 16 tasks (one per (V, tying) cell), each on one 80 GB accelerator
  (the sweep caps the LRs per vmapped program to fit its memory; no --group-size needed):
  python sweeps/paper_fig5.py --shard $SLURM_ARRAY_TASK_ID/16 --out runs/paper_fig5
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SWEEP = Sweep(
    name="paper_fig5",
    base=TrainConfig(
        preset="smollm2-106m",
        language="spam",
        seq_len=256,
        batch_size=64,
        tokens=2_500 * 64 * 256,  # 40,960,000 tokens, 2,500 steps
        schedule="cosine",
        dtype="bfloat16",
        loss_chunk=4_096,
        log_every=25,
        eval_every=500,
        eval_sequences=2048,
        checkpoint_every=500,
    ),
    axes={
        "vocab_size": [2**e for e in range(10, 18)],  # 1,024 ... 131,072
        "lr": [1e-4, 2.5e-4, 5e-4, 1e-3, 2e-3],
        "tie_embeddings": [True, False],
    },
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
