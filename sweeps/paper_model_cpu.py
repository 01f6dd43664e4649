"""The paper's own model on this CPU at L = 2: a refutation check of the law's forecast, one seed.

SpamLang is position-invariant, so at L = 2 a row is one update of its symbol, as a row of 256
tokens is, and `smollm2-106m` (30 layers, D = 576, the paper's 106M model) becomes a matter of
hours here. These cells check the law's forecast at the paper's depth; with one seed each and
no LR grid beyond the one listed, they are a check of the forecast, not a measured cell:
  (a) V 4,096, B 32, 2,048 steps (return time 128, memory 20, 16 updates per symbol), b2 0.95,
      untied, LR 3e-4 and 1e-3: the cell that fails at D = 16 and that the 2-layer D = 576
      model learns (`memory_width_576.py`)
  (b) (a) at B 8 and 8,192 steps (return time 512), where the 2-layer D = 576 model is partial;
      run at 8 layers only, with (d)
  (c) the paper's grid cell V 8,192, B 64, 2,500 steps (return time 128, 19.5 updates per
      symbol), b2 0.95, tied, LR 1e-3
  (e) the paper's grid cell V 32,768, B 64, 2,500 steps (return time 512, 4.9 updates per
      symbol), tied, b2 0.95 and 0.999, LR 1e-3
  (d) `smollm2-106m` at 8 layers, LRs 3e-4, 1e-3 and 3e-3, at (a) and (b)
AdamW b1 0.9, weight decay 0.1 on matrices, 5% warmup then cosine to 0.1x, clipping at 1.0;
seed 0; exact evaluation every 256 steps (symbol_evals.jsonl). Each cell is one linked point,
so the file lists exactly these 11 runs.

One run per group (`group_size=1`: a vmapped pair of 30-layer runs would take twice as long as
one, past a session here), so one run per shard with `--shard i/11`. A checkpoint every 256
steps lets a shard that a session ends resume in the next. The forecast of every run by the
law shipped when it started is results/forecasts/paper_model_cpu.csv, committed before any of
its runs.

Run: python sweeps/paper_model_cpu.py [--out DIR] [--shard i/11] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SEQ_LEN = 2
FIELDS = "model.n_layers,vocab_size,batch_size,tokens,tie_embeddings,b2,lr"


def point(layers, V, B, steps, tied, b2, lr) -> list:
    """One run: `steps` of B sequences of 2 tokens."""
    return [layers, V, B, steps * B * SEQ_LEN, tied, b2, lr]


SWEEP = Sweep(
    name="paper_model_cpu",
    base=TrainConfig(
        preset="smollm2-106m",
        language="spam",
        vocab_size=4096,
        seq_len=SEQ_LEN,
        batch_size=32,
        tokens=2048 * 32 * SEQ_LEN,
        log_every=16,
        eval_every=256,  # 8 evaluations at 2,048 steps, 9 at 2,500, 32 at 8,192
        checkpoint_every=256,
    ),
    axes={
        FIELDS: [
            *(point(30, 4096, 32, 2048, False, 0.95, lr) for lr in (3e-4, 1e-3)),  # (a)
            point(30, 8192, 64, 2500, True, 0.95, 1e-3),  # (c)
            *(point(30, 32768, 64, 2500, True, b2, 1e-3) for b2 in (0.95, 0.999)),  # (e)
            *(point(8, 4096, 32, 2048, False, 0.95, lr) for lr in (3e-4, 1e-3, 3e-3)),  # (d) at (a)
            *(point(8, 4096, 8, 8192, False, 0.95, lr) for lr in (3e-4, 1e-3, 3e-3)),  # (d) at (b)
        ],
        "seed": [0],
    },
    group_size=1,  # one run per program: a pair of 30-layer runs is two sessions' work here
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
