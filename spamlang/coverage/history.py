"""Each symbol's history (appearances, first and last step, gaps) and its loss at every
evaluation (symbol_evals.jsonl, `eval_row`), and their binned `summary`.

Whole rows are V numbers per field, too big to commit for hundreds of runs, so result.json also
holds the summary binned by powers of two, which a sweep gathers into symbols.csv.gz.
"""

from __future__ import annotations

import math

import numpy as np

from spamlang.coverage.symbols import LEARNED_FRACTION

# The per-symbol arrays of an evaluation row, after "step" and "loss".
HISTORY_FIELDS = ("appearances", "first_step", "last_step", "max_gap")
# symbols.csv.gz: run_id, then these; appearances, max_gap, age: a bin's lower edge (age -1:
# never shown; max_gap at the last evaluation only); learned: the share under LEARNED_FRACTION.
COLUMNS = ("step", "appearances", "max_gap", "age", "symbols", "loss_mean", "learned", "mean_gap")


def mean_gap(first_V, last_V, appearances_V) -> np.ndarray:
    """float32[V]: the mean steps between appearances; NaN before the second."""
    first, last = np.asarray(first_V, np.float64), np.asarray(last_V, np.float64)
    count = np.asarray(appearances_V, np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = np.where(count >= 2, (last - first) / (count - 1), np.nan)
    return gap.astype(np.float32)


def eval_row(step: int, loss_V, history: dict) -> dict:
    """The symbol_evals.jsonl row of an evaluation: step, each symbol's loss and HISTORY_FIELDS."""
    row = {"step": int(step), "loss": np.asarray(loss_V, np.float32).tolist()}
    row.update({k: np.asarray(history[k]).astype(int).tolist() for k in HISTORY_FIELDS})
    return row


def log2_floor(x) -> np.ndarray:
    """int64: 0 for 0, else the largest power of two <= x; -1 stays -1."""
    x = np.asarray(x, np.int64)
    out = np.where(x > 0, 2 ** np.floor(np.log2(np.maximum(x, 1))).astype(np.int64), x)
    return np.where(x < 0, -1, out)


def summary(rows: list[dict]) -> dict[str, list]:
    """COLUMNS of a run's evaluation rows: symbols binned by appearances and age (and gap, last)."""
    out: dict[str, list] = {c: [] for c in COLUMNS}
    for i, row in enumerate(rows):
        loss = np.asarray(row["loss"], np.float64)
        count, last = np.asarray(row["appearances"]), np.asarray(row["last_step"])
        gaps = mean_gap(row["first_step"], last, count)
        age = np.where(last >= 0, row["step"] - last, -1)
        # The longest gap splits only the last evaluation's bins: the table stays small.
        last_eval = i == len(rows) - 1
        gap_bin = log2_floor(row["max_gap"]) if last_eval else np.full(len(loss), -2)
        keys = np.stack([log2_floor(count), gap_bin, log2_floor(age)], 1)
        bins, which = np.unique(keys, axis=0, return_inverse=True)
        which = which.reshape(-1)
        learned = loss < LEARNED_FRACTION * math.log(len(loss))
        for b, (a, g, s) in enumerate(bins):
            members = which == b
            finite = gaps[members][np.isfinite(gaps[members])]
            values = (
                row["step"],
                int(a),
                int(g) if last_eval else None,
                int(s),
                int(members.sum()),
                float(loss[members].mean()),
                float(learned[members].mean()),
                float(finite.mean()) if finite.size else None,
            )
            for c, v in zip(COLUMNS, values):
                out[c].append(v)
    return out
