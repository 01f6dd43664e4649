"""Reruns, for their per-symbol history, of the D = 16-64 cells of `memory_width.py`,
`memory_width_wd0.py` and `sampling_order.py` at each cell's best LR, 2 seeds.

Those sweeps ran before runs kept each symbol's history (appearances, gaps, loss at every
evaluation) and their run directories are gone: their results.csv survives under results/,
their symbols do not. The symbol-level law (`spamlang.law.symbols`) is fitted on the binned
histories a sweep commits (symbols.csv.gz), so this file reruns every cell at the LR its sweep
found best (read from the committed results.csv, `spamlang.law.cells`: the best LR's seed mean),
with the same base settings, and 8 evaluations a run. What else moves: nothing but the
evaluations (which do not touch training) and the LR grid (one LR a cell, not three to five):
on the same CPU model and JAX version a rerun's final loss is its original's, which the sweep's
results.csv shows beside the committed one.

  memory_width, memory_width_wd0: D = 16, 32, 64 x R = 32, 128, 512 x M = 20, 100, 1,000 x tied,
      untied, weight decay 0.1 and 0 (108 cells), V = 4,096, 16 updates per symbol
  sampling_order: V = 256, 1,024, 4,096 x iid, permuted x b2 0.9-0.999, D = 16 untied (24 cells)

Run: python sweeps/symbol_reruns.py [--out DIR] [--shard i/n] [--dry-run]
"""

from pathlib import Path

import spamlang.results
from spamlang.cli.sweep_cmd import main
from spamlang.law.cells import cells
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

RESULTS = Path(__file__).resolve().parent.parent / "results"
SEQ_LEN = 2
UPDATES = 16  # B x steps / V in every cell of the three sweeps
EVALUATIONS = 8  # per run: the symbol history's rows (symbol_evals.jsonl)
SOURCES = ("memory_width", "memory_width_wd0", "sampling_order")
WIDTHS = {16: "tiny", 32: "tiny-w32", 64: "tiny-w64"}
# The fields a cell sets, one linked axis (the rest is the base, as the three sweeps had it).
FIELDS = ("preset", "vocab_size", "batch_size", "tokens", "eval_every", "tie_embeddings")
FIELDS += ("b2", "weight_decay", "sampling", "lr")


def best_cells() -> list[list]:
    """One value list (FIELDS) per D = 16-64 cell of SOURCES, at its best LR; a cell two
    sweeps share (the default V = 4,096, B = 32 one) once per distinct best LR."""
    values = []
    for name in SOURCES:
        for c in cells(spamlang.results.load(RESULTS / name)).to_dict("records"):
            if c["d_model"] not in WIDTHS:
                continue
            steps = UPDATES * c["vocab_size"] // c["batch_size"]
            values.append(
                [
                    WIDTHS[c["d_model"]],
                    c["vocab_size"],
                    c["batch_size"],
                    steps * c["batch_size"] * SEQ_LEN,
                    steps // EVALUATIONS,
                    bool(c["tie_embeddings"]),
                    float(c["b2"]),
                    float(c["weight_decay"]),
                    c["sampling"],
                    float(c["best_lr"]),
                ]
            )
    return [v for i, v in enumerate(values) if v not in values[:i]]


SWEEP = Sweep(
    name="symbol_reruns",
    base=TrainConfig(
        preset="tiny",
        language="spam",
        seq_len=SEQ_LEN,
        batch_size=32,  # each cell sets its own, as its V and tokens
        vocab_size=4096,
        tokens=UPDATES * 4096 * SEQ_LEN,
        log_every=32,
        checkpoint_every=0,
    ),
    axes={",".join(FIELDS): best_cells(), "seed": [0, 1]},
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
