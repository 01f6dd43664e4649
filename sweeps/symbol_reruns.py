"""Reruns of the D = 16-64 cells of `memory_width.py`, `memory_width_wd0.py` and `sampling_order.py`
at each cell's best LR (from the committed results.csv), 2 seeds, for their per-symbol history.

Same settings otherwise, 8 evaluations a run; a rerun's final loss equals its original's.
Run: python sweeps/symbol_reruns.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "A law of symbols (the goal not reached)".
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
