"""How well the law carries over: each sweep predicted by a law fitted on the others.

`classify` sorts a loss as the README reads its tables: learned below a tenth of chance
(log V), failed above half of it, partial between.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping

from spamlang.errors import UserError
from spamlang.law import formula
from spamlang.law.cells import cells as to_cells
from spamlang.law.fitting import fit_cells

LEARNED_BELOW = 0.1  # x log V: a loss under this is a learned cell
FAILED_ABOVE = 0.5  # x log V: a loss over this is a failed cell
CLASSES = ("learned", "partial", "failed")
# The columns leave_one_out adds after a cell's settings.
TABLE_COLUMNS = (
    "sweep",
    "measured",
    "predicted",
    "error",
    "class_measured",
    "class_predicted",
    "extrapolation",
)


def classify(loss: float, V: int) -> str:
    """learned (< 0.1 log V), partial, or failed (> 0.5 log V)."""
    chance = math.log(V)
    if loss < LEARNED_BELOW * chance:
        return "learned"
    return "failed" if loss > FAILED_ABOVE * chance else "partial"


# What the formula sees of a cell: two cells equal in these are the same cell to the law.
_INPUTS = ("vocab_size", "batch_size", "steps", "M", "d_model", "tie_embeddings", "sampling")


def _key(cell) -> tuple:
    return (*(cell[k] for k in _INPUTS), cell["weight_decay"] > 0)


def leave_one_out(frames: Mapping[str, object]):
    """For each sweep (name -> its results.csv DataFrame), the law fitted on the other sweeps'
    cells predicting this one's: a DataFrame of one row per cell, its settings then
    R, M, n, TABLE_COLUMNS (error: predicted minus measured in log(L + 0.01); extrapolation: the
    reasons the cell is outside the law's range, joined by '; ', '' inside).

    Sweeps share cells (the default V = 4,096, B = 32 cell is in five of them), so the fit for
    a sweep also leaves out every other sweep's cell that is the same cell to the law
    (`_INPUTS`): each prediction is of a cell the fit never saw."""
    import pandas as pd

    if len(frames) < 2:
        raise UserError(f"leave-one-sweep-out needs at least 2 sweeps, got {len(frames)}")
    by_sweep, refused = {}, []
    for name, frame in frames.items():
        try:
            by_sweep[name] = to_cells(frame)
        except UserError:  # a sweep with no cell in the law's scope (SGD runs): left out
            refused.append(name)
    if refused:
        warnings.warn(f"left out, no cell the law covers: {', '.join(refused)}", stacklevel=2)
    if len(by_sweep) < 2:
        raise UserError(
            f"leave-one-sweep-out needs at least 2 sweeps with cells the law covers, "
            f"got {len(by_sweep)}"
        )
    rows = []
    for name, mine in by_sweep.items():
        held = {_key(c) for c in mine.to_dict("records")}
        others = [
            c[[_key(r) not in held for r in c.to_dict("records")]]
            for n, c in by_sweep.items()
            if n != name
        ]
        law = fit_cells(
            pd.concat(others, ignore_index=True), sources=[n for n in by_sweep if n != name]
        )
        for cell in mine.to_dict("records"):
            p = law.predict_row(cell)
            measured = cell["loss"]
            settings = {k: v for k, v in cell.items() if k not in ("loss", "best_lr", "seeds")}
            rows.append(
                {
                    **settings,
                    "sweep": name,
                    "measured": measured,
                    "predicted": p.loss,
                    "error": float(formula.log_loss(p.loss) - formula.log_loss(measured)),
                    "class_measured": classify(measured, cell["vocab_size"]),
                    "class_predicted": classify(p.loss, cell["vocab_size"]),
                    "extrapolation": "; ".join(p.extrapolation),
                }
            )
    table = pd.DataFrame.from_records(rows)
    front = [c for c in table.columns if c not in TABLE_COLUMNS]
    return table[[*front, *TABLE_COLUMNS]]


def summary(table):
    """Per sweep of a `leave_one_out` table: cells, RMS error in log(L + 0.01), the fraction
    whose class the law predicted, and how many it predicted by extrapolation."""
    import pandas as pd

    rows = []
    for name, part in table.groupby("sweep", sort=False):
        rows.append(
            {
                "sweep": name,
                "cells": len(part),
                "rms": float((part["error"] ** 2).mean() ** 0.5),
                "classified": float((part["class_measured"] == part["class_predicted"]).mean()),
                "extrapolated": int((part["extrapolation"] != "").sum()),
            }
        )
    return pd.DataFrame.from_records(rows)
