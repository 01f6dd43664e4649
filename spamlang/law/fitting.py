"""`fit`: the formula's constants by least squares on log(L + 0.01) over a sweep's cells.

A constant whose term does not vary over the cells (every cell untied, one width, one sign of
weight decay) cannot be told from the others: it is held at 0 and reported as not fitted, and
the law flags any prediction off the values it saw (`Law.outside`). Standard errors come from
the Jacobian at the optimum, sqrt(diag((J^T J)^-1) x s^2), s^2 the residual variance with one
degree of freedom per fitted constant.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from spamlang.errors import UserError
from spamlang.law import formula
from spamlang.law.cells import cells as to_cells
from spamlang.law.law import COVERED, Law

# Starting points of c0 (log c): the sketch's c is 2.5-12, and a start far on the wrong side
# of M / R = 1 can settle where every cell is learned or every one failed.
C0_STARTS = (math.log(1.0), math.log(3.0), math.log(10.0))
# Starting points of the floor's exponent k, each with log_a putting l(16) near 0.3 nats: the
# floor is fitted from few distinct n, so the fit has more than one local optimum, and which
# one a single start reaches depended on the order of the cells.
K_STARTS = (0.5, 1.5, 3.0)
START = {"log_a": math.log(0.3)}


def fit(frame, sources: Sequence[str] = ()) -> Law:
    """The law of `frame`: a DataFrame in results.csv's format (`spamlang.results.load`), or
    a list of them (one per sweep: each is reduced to cells on its own, so that one sweep's
    extra axes do not split another's cells). `sources`: names the law records."""
    import pandas as pd

    frames = [frame] if not isinstance(frame, (list, tuple)) else list(frame)
    if not frames:
        raise UserError("no runs to fit: no frame given")
    names = list(sources) if len(sources) == len(frames) else [""] * len(frames)
    tables, used, refused = [], [], []
    for f, name in zip(frames, names):
        try:
            tables.append(to_cells(f))
            used.append(name)
        except UserError as e:  # a sweep of SGD runs among Adam ones: left out, said once
            refused.append(e)
    if not tables:
        raise refused[0]
    if refused:
        warnings.warn(
            f"{len(refused)} of {len(frames)} sweeps have no cell the law covers "
            f"and are left out ({refused[0]})",
            stacklevel=2,
        )
    sources = used if len(sources) == len(frames) else sources
    return fit_cells(pd.concat(tables, ignore_index=True), sources)


def fit_cells(table, sources: Sequence[str] = ()) -> Law:
    """The law of cells as `spamlang.law.cells.cells` makes them."""
    from scipy.optimize import least_squares

    x = formula.features(
        table["vocab_size"],
        table["batch_size"],
        table["steps"],
        table["M"],
        table["d_model"],
        table["tie_embeddings"],
        table["weight_decay"] > 0,
        table["sampling"] == "permuted",
    )
    target = formula.log_loss(table["loss"])
    free = [
        n
        for n in formula.NAMES
        if n not in formula.FEATURE_OF or np.ptp(x[formula.FEATURE_OF[n]]) > 0
    ]
    if len(target) <= len(free):
        raise UserError(
            f"{len(target)} cell(s) cannot fit {len(free)} constants: the law "
            "needs more cells than constants"
        )

    def theta(p: np.ndarray) -> dict[str, float]:
        return {**dict.fromkeys(formula.NAMES, 0.0), **dict(zip(free, p))}

    def residuals(p: np.ndarray) -> np.ndarray:
        return formula.log_loss(formula.loss(theta(p), x)) - target

    best = None
    for c0, k in [(c0, k) for c0 in C0_STARTS for k in K_STARTS]:
        first = {"log_a": START["log_a"] + k * math.log(16), "k": k, "c0": c0}
        start = np.array([first.get(n, 0.0) for n in free])
        result = least_squares(residuals, start, method="trf", x_scale="jac")
        if best is None or result.cost < best.cost:
            best = result
    r = best.fun
    dof = len(r) - len(free)
    errors = _standard_errors(best.jac, float(r @ r) / dof)
    return Law(
        constants=theta(best.x),
        errors={n: (errors[free.index(n)] if n in free else None) for n in formula.NAMES},
        cells=len(r),
        rms=float(np.sqrt(np.mean(r**2))),
        ranges=_ranges(table, x),
        covered=_covered(table),
        sources=list(sources),
    )


def _standard_errors(jac: np.ndarray, variance: float) -> list[float]:
    """sqrt(diag((J^T J)^-1) x s^2); the pseudo-inverse where J^T J is singular (a constant
    the cells barely move: its error comes out huge rather than the fit failing)."""
    jtj = jac.T @ jac
    try:
        cov = np.linalg.inv(jtj)
    except np.linalg.LinAlgError:
        cov = np.linalg.pinv(jtj)
    return [float(math.sqrt(max(v, 0.0) * variance)) for v in np.diag(cov)]


def _ranges(table, x: dict[str, np.ndarray]) -> dict[str, list[float]]:
    seen = {
        "D": np.asarray(table["d_model"], dtype=float),
        **{k: x[k] for k in ("V", "R", "M", "n")},
    }
    return {k: [float(v.min()), float(v.max())] for k, v in seen.items()}


def _covered(table) -> dict[str, list[Any]]:
    values = {
        **{c: list(table[c]) for c in COVERED if c != "decayed"},
        "decayed": [bool(w > 0) for w in table["weight_decay"]],
    }
    return {c: sorted({_plain(v) for v in values[c]}, key=str) for c in COVERED}


def _plain(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v
