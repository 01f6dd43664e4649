"""`fit`: the formula's constants by least squares on log(L + 0.01) over a sweep's cells; and
how well the law carries over (`leave_one_out`): each sweep predicted by a law fitted on the
others, its error in log10(L + 0.01) (`formula.error`, the unit every command prints)."""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from spamlang.errors import UserError
from spamlang.law import formula
from spamlang.law.cells import _plain
from spamlang.law.cells import cells as to_cells
from spamlang.law.law import COVERED, RANGED, Law

# Starts of c0 and k (log_a puts l(16) near 0.3 nats): the fit has more than one local optimum.
C0_STARTS = (math.log(1.0), math.log(3.0), math.log(10.0))
K_STARTS = (0.5, 1.5, 3.0)
START = {"log_a": math.log(0.3)}
# Over two widths a_D and a_iD are one slope: with fewer widths than this a_iD is held at 0.
MIN_WIDTHS = {"a_iD": 3}


def fit(frame, sources: Sequence[str] = ()) -> Law:
    """The law of `frame`, a results.csv DataFrame or a list of them, one per sweep (reduced to
    cells each on its own); `sources`: names the law records."""
    import pandas as pd

    frames = [frame] if not isinstance(frame, (list, tuple)) else list(frame)
    if not frames:
        raise UserError("no runs to fit: no frame given")
    tables, refused = _cells_of(dict(enumerate(frames)))
    if not tables:
        raise next(iter(refused.values()))
    if refused:
        warnings.warn(
            f"{len(refused)} of {len(frames)} sweeps have no cell the law covers "
            f"and are left out ({next(iter(refused.values()))})",
            stacklevel=2,
        )
    if len(sources) == len(frames):
        sources = [sources[i] for i in tables]
    return fit_cells(pd.concat(tables.values(), ignore_index=True), sources)


def _cells_of(frames: Mapping) -> tuple[dict, dict]:
    """({key: cells} of each frame, {key: UserError} of the frames with no cell the law covers)."""
    tables, refused = {}, {}
    for key, frame in frames.items():
        try:
            tables[key] = to_cells(frame)
        except UserError as e:
            refused[key] = e
    return tables, refused


def fit_cells(table, sources: Sequence[str] = (), *, warn: bool = True) -> Law:
    """The law of `cells.cells`' table; `warn`: say which constants it does not pin down."""
    from scipy.optimize import least_squares

    x = formula.features_of(table)
    target = formula.log_loss(table["loss"])
    widths = len(np.unique(np.asarray(table["d_model"], dtype=float)))
    # A constant whose term does not vary over the cells is held at 0, not fitted.
    free = [
        n
        for n in formula.NAMES
        if (n not in formula.FEATURE_OF or np.ptp(x[formula.FEATURE_OF[n]]) > 0)
        and widths >= MIN_WIDTHS.get(n, 1)
    ]
    if len(target) <= len(free):
        raise UserError(
            f"{len(target)} cell(s) cannot fit {len(free)} constants: the law "
            "needs more cells than constants"
        )

    def theta(p: np.ndarray) -> dict[str, float]:
        return {**dict.fromkeys(formula.NAMES, 0.0), **dict(zip(free, p))}

    def residuals(p: np.ndarray) -> np.ndarray:
        # least_squares backs off a trial step that overflows: no warning for the user.
        with np.errstate(all="ignore"):
            return formula.log_loss(formula.loss(theta(p), x)) - target

    best = None
    for c0, k in itertools.product(C0_STARTS, K_STARTS):
        first = {"log_a": START["log_a"] + k * math.log(16), "k": k, "c0": c0}
        start = np.array([first.get(n, 0.0) for n in free])
        result = least_squares(residuals, start, method="trf", x_scale="jac")
        if best is None or result.cost < best.cost:
            best = result
    r = best.fun
    # standard errors: sqrt(diag((J^T J)^-1) x s^2), s^2 the residual variance
    variance = float(r @ r) / (len(r) - len(free))
    jtj = best.jac.T @ best.jac
    try:
        cov = np.linalg.inv(jtj)
    except np.linalg.LinAlgError:  # a constant the cells barely move: a huge error, no failure
        cov = np.linalg.pinv(jtj)
    errors = [float(math.sqrt(max(v, 0.0) * variance)) for v in np.diag(cov)]
    seen = {
        "D": np.asarray(table["d_model"], dtype=float),
        **{k: x[k] for k in RANGED if k != "n_layers"},
        "n_layers": np.asarray(table["n_layers"], dtype=float),
    }
    table = table.assign(decayed=[bool(w > 0) for w in table["weight_decay"]])
    law = Law(
        constants=theta(best.x),
        errors={n: (errors[free.index(n)] if n in free else None) for n in formula.NAMES},
        cells=len(r),
        rms=float(np.sqrt(np.mean(r**2))),
        ranges={k: [float(v.min()), float(v.max())] for k, v in seen.items()},
        covered={c: sorted({_plain(v) for v in table[c]}, key=str) for c in COVERED},
        sources=list(sources),
    )
    if warn and law.unpinned():
        warnings.warn(f"the cells do not pin down {law.unpinned_text()}", stacklevel=2)
    return law


LEARNED_BELOW = 0.1  # x log V: a loss under this is a learned cell
FAILED_ABOVE = 0.5  # x log V: a loss over this is a failed cell
# The columns leave_one_out adds after a cell's settings.
TABLE_COLUMNS = tuple(
    "sweep measured predicted error class_measured class_predicted extrapolation".split()
)

CLASSES = ("learned", "partial", "failed")


def classify(loss: float, V: int) -> str:
    """learned (< 0.1 log V), partial, or failed (> 0.5 log V)."""
    chance = math.log(V)
    if loss < LEARNED_BELOW * chance:
        return "learned"
    return "failed" if loss > FAILED_ABOVE * chance else "partial"


# Two cells equal in these are the same cell to the law.
_INPUTS = tuple("vocab_size batch_size steps M d_model n_layers tie_embeddings sampling".split())


def cell_key(cell) -> tuple:
    """What the formula sees of a cell: `_INPUTS` and whether it decays its weights."""
    return (*(cell[k] for k in _INPUTS), cell["weight_decay"] > 0)


def leave_one_out(frames: Mapping[str, object]):
    """For each sweep, the law fitted on the others' cells predicting its cells (each a cell the fit
    never saw, `cell_key`): one row per cell, its settings then R, M, n, TABLE_COLUMNS."""
    import pandas as pd

    if len(frames) < 2:
        raise UserError(f"leave-one-sweep-out needs at least 2 sweeps, got {len(frames)}")
    by_sweep, refused = _cells_of(frames)
    if refused:
        warnings.warn(f"left out, no cell the law covers: {', '.join(refused)}", stacklevel=2)
    if len(by_sweep) < 2:
        raise UserError(
            f"leave-one-sweep-out needs at least 2 sweeps with cells the law covers, "
            f"got {len(by_sweep)}"
        )

    rows = []
    for name, mine in by_sweep.items():
        held = {cell_key(c) for c in mine.to_dict("records")}
        others = [n for n in by_sweep if n != name]
        kept = [by_sweep[n] for n in others]
        kept = [c[[cell_key(r) not in held for r in c.to_dict("records")]] for c in kept]
        law = fit_cells(pd.concat(kept, ignore_index=True), sources=others, warn=False)
        if law.unpinned():  # said per sweep: its cells' predictions may lean on them
            warnings.warn(
                f"fitted without {name}, the other cells do not pin down {law.unpinned_text()}",
                stacklevel=2,
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
                    "error": float(formula.error(p.loss, measured)),
                    "class_measured": classify(measured, cell["vocab_size"]),
                    "class_predicted": classify(p.loss, cell["vocab_size"]),
                    "extrapolation": "; ".join(p.extrapolation),
                }
            )
    table = pd.DataFrame.from_records(rows)
    front = [c for c in table.columns if c not in TABLE_COLUMNS]
    return table[[*front, *TABLE_COLUMNS]]


def summary(table):
    """Per sweep, then over all: cells, RMS error, classified share, extrapolated, RMS per class."""
    import pandas as pd

    def rms(errors) -> float:
        return float((errors**2).mean() ** 0.5) if len(errors) else math.nan

    parts = [*table.groupby("sweep", sort=False), ("all", table)]
    rows = [
        {
            "sweep": name,
            "cells": len(part),
            "rms": rms(part["error"]),
            "classified": float((part["class_measured"] == part["class_predicted"]).mean()),
            "extrapolated": int((part["extrapolation"] != "").sum()),
            **{f"rms_{c}": rms(part.loc[part["class_measured"] == c, "error"]) for c in CLASSES},
        }
        for name, part in parts
    ]
    return pd.DataFrame.from_records(rows)
