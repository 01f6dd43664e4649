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

# Starting points of c0 (log c): the sketch's c is 2.5-12, and a start far on the wrong side
# of M / R = 1 can settle where every cell is learned or every one failed.
C0_STARTS = (math.log(1.0), math.log(3.0), math.log(10.0))
# Starting points of the floor's exponent k, each with log_a putting l(16) near 0.3 nats: the
# floor is fitted from few distinct n, so the fit has more than one local optimum, and which
# one a single start reaches depended on the order of the cells.
K_STARTS = (0.5, 1.5, 3.0)
START = {"log_a": math.log(0.3)}
# a_D and a_iD are both terms of the width in the level l(n): over two widths they are one
# slope (every pair with the same difference between the two widths fits alike, and neither
# has a standard error), so a fit on fewer widths than this holds a_iD at 0 and a_D carries it.
MIN_WIDTHS = {"a_iD": 3}


def fit(frame, sources: Sequence[str] = ()) -> Law:
    """The law of `frame`: a DataFrame in results.csv's format (`spamlang.results.load`), or
    a list of them (one per sweep: each is reduced to cells on its own, so that one sweep's
    extra axes do not split another's cells). `sources`: names the law records."""
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
    """({key: cells} of each frame, {key: UserError} of the frames with no cell the law covers,
    such as a sweep of SGD runs among Adam ones: left out, said once)."""
    tables, refused = {}, {}
    for key, frame in frames.items():
        try:
            tables[key] = to_cells(frame)
        except UserError as e:
            refused[key] = e
    return tables, refused


def fit_cells(table, sources: Sequence[str] = (), *, warn: bool = True) -> Law:
    """The law of cells as `spamlang.law.cells.cells` makes them. `warn`: say in a warning
    which constants the cells do not pin down (`Law.unpinned`)."""
    from scipy.optimize import least_squares

    x = formula.features_of(table)
    target = formula.log_loss(table["loss"])
    widths = len(np.unique(np.asarray(table["d_model"], dtype=float)))
    # A constant whose term does not vary over the cells (every cell untied, one width, ...)
    # cannot be told from the others: held at 0, not fitted, and `Law.outside` flags a
    # prediction off the values the fit saw.
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
        # A trial step can overflow c or the steepness: least_squares backs off a step whose
        # residuals are not finite, so that is no warning line for the user.
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
    # standard errors from the Jacobian at the optimum: sqrt(diag((J^T J)^-1) x s^2), s^2 the
    # residual variance with one degree of freedom per fitted constant
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


# ----- validation: `classify` sorts a loss as the README reads its tables: learned below a
# tenth of chance (log V), failed above half of it, partial between.
LEARNED_BELOW = 0.1  # x log V: a loss under this is a learned cell
FAILED_ABOVE = 0.5  # x log V: a loss over this is a failed cell
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


# The classes of `classify`, in the order a summary lists them.
CLASSES = ("learned", "partial", "failed")


def classify(loss: float, V: int) -> str:
    """learned (< 0.1 log V), partial, or failed (> 0.5 log V)."""
    chance = math.log(V)
    if loss < LEARNED_BELOW * chance:
        return "learned"
    return "failed" if loss > FAILED_ABOVE * chance else "partial"


# What the formula sees of a cell: two cells equal in these are the same cell to the law.
_INPUTS = (
    "vocab_size",
    "batch_size",
    "steps",
    "M",
    "d_model",
    "n_layers",
    "tie_embeddings",
    "sampling",
)


def cell_key(cell) -> tuple:
    """What the formula sees of a cell (a results.csv-like row): `_INPUTS` and whether it
    decays its weights."""
    return (*(cell[k] for k in _INPUTS), cell["weight_decay"] > 0)


def leave_one_out(frames: Mapping[str, object]):
    """For each sweep (name -> its results.csv DataFrame), the law fitted on the other sweeps'
    cells predicting this one's: a DataFrame of one row per cell, its settings then
    R, M, n, TABLE_COLUMNS (error: predicted minus measured in log10(L + 0.01),
    `formula.error`; extrapolation: the reasons the cell is outside the law's range, joined by
    '; ', '' inside).

    Sweeps share cells (the default V = 4,096, B = 32 cell is in five of them), so the fit for
    a sweep also leaves out every other sweep's cell that is the same cell to the law
    (`_INPUTS`): each prediction is of a cell the fit never saw."""
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
    """Per sweep of a `leave_one_out` table: cells, RMS error in log10(L + 0.01), the fraction
    whose class the law predicted, how many it predicted by extrapolation, and the RMS error
    over the cells of each measured class (NaN where a sweep has none: a law can place the
    boundary right and still miss the level learned cells reach); then the same over every
    cell ("all")."""
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
