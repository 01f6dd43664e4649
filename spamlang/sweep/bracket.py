"""LR grids that bracket the optimum: extend a cell's grid past an edge until its best is inside.

A cell is the set of runs that share every setting but lr and seed. When its best LR (lowest
seed-mean final eval loss, diverged runs excluded; `best_lr.best_lrs`) is the largest or the
smallest LR it has, the optimum may lie outside the grid, and a comparison of cells "at their
best LR" compares grid edges. Bracketing then trains the next LR beyond that end, for every
seed of the cell, and looks again, until the best is interior, or the cell is solved (its best
within `best_lr.SOLVED` of the floor: any LR that reaches the floor is optimal), or `limit` LRs
have been added beyond that end (the cell "stayed at the limit", which the summary lists).

The next LR continues the grid by its own ratio at that end (x3 for a grid of one LR); a
half-decade grid (1, 3, 10, 30, ...) continues as one, so 3e-2 is followed by 1e-1, not 9e-2.
A run that diverges has no value, so a grid that reaches divergence is bracketed from above.

Every decision is a function of the finished runs on disk, so a rerun of the same sweep makes
the same decisions, skips the added runs that finished and resumes the one that did not.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spamlang.rundir.reading import read_object
from spamlang.rundir.schema import RESULT
from spamlang.sweep.best_lr import BestLR, best_lrs

DEFAULT_LIMIT = 3  # LRs added per side when `--bracket-lr` is given without a number
_HALF_DECADE = (2.9, 3.5)  # ratios of a 1-3-10 grid: 3 and 10/3


def _mantissa(x: float) -> float:
    return round(x / 10 ** math.floor(math.log10(x) + 1e-9), 6)


def step_beyond(grid: tuple[float, ...], side: str) -> float:
    """The LR one step past `grid`'s `side` end ("largest" or "smallest"), at the grid's ratio."""
    grid = tuple(sorted(grid))
    edge = grid[-1] if side == "largest" else grid[0]
    ratio = (
        3.0 if len(grid) < 2 else (grid[-1] / grid[-2] if side == "largest" else grid[1] / grid[0])
    )
    up = side == "largest"
    if _HALF_DECADE[0] <= ratio <= _HALF_DECADE[1] and _mantissa(edge) in (1.0, 3.0):
        # 1 -> 3 -> 10 upwards, 3 -> 1 -> 0.3 downwards.
        factor = (
            (3.0 if _mantissa(edge) == 1.0 else 10 / 3)
            if up
            else (1 / 3 if _mantissa(edge) == 3.0 else 3 / 10)
        )
    else:
        factor = ratio if up else 1 / ratio
    new = edge * factor
    return float(f"{new:.3g}")  # a readable run id (lr1e-1), never 0.09999999999999999


def decide(best: BestLR, original: tuple[float, ...], limit: int) -> tuple[str, float | None]:
    """What bracketing does with a cell: ("interior" | "solved" | "limit", None) to stop, or
    ("extend", lr) to train `lr` next. `original` is the cell's grid as the sweep wrote it; the
    LRs beyond its ends are the ones bracketing added."""
    if best.solved:
        return "solved", None
    side = (
        "largest"
        if best.lr == max(best.grid)
        else "smallest"
        if best.lr == min(best.grid)
        else None
    )
    if side is None:
        return "interior", None
    added = (
        sum(lr > max(original) for lr in best.grid)
        if side == "largest"
        else sum(lr < min(original) for lr in best.grid)
    )
    if added >= limit:
        return "limit", None
    return "extend", step_beyond(best.grid, side)


def cell_rows(run_dirs: dict[str, Path], configs: dict[str, Any]) -> list[dict]:
    """best_lrs-style rows of one cell's finished runs (lr and seed are its only settings)."""
    rows = []
    for run_id, run_dir in run_dirs.items():
        result = read_object(run_dir / RESULT)
        if result is None:
            continue  # not finished (or being written): not part of the decision yet
        config = configs[run_id]
        rows.append(
            {
                "lr": config.lr,
                "seed": config.seed,
                **{k: result.get(k) for k in ("final_eval_loss", "optimal_loss", "diverged")},
            }
        )
    return rows


def bracket_cell(
    cell: list[tuple[str, Any]],
    run_id_of: Callable[[Any], str],
    out: Path,
    limit: int,
    train: Callable[[list[tuple[str, Any]]], None],
) -> tuple[str, list[tuple[str, Any]]]:
    """Extend one cell's LR grid until its best LR is interior (module docstring).

    `cell`: its (run id, config) points, all trained; `train(points)` trains new points (one
    LR, every seed of the cell). Returns the final status ("interior", "solved", "limit",
    "none": no finite result) and the points it added, finished ones of earlier runs included.
    """
    points = list(cell)
    original = tuple(sorted({config.lr for _, config in cell}))
    # One template per seed (any LR of it): an added LR is trained for every seed.
    templates = {config.seed: config for _, config in cell}
    while True:
        by_id = dict(points)
        rows = cell_rows({run_id: out / run_id for run_id in by_id}, by_id)
        best = best_lrs(rows)
        if not best:
            return "none", points[len(cell) :]
        status, lr = decide(best[0], original, limit)
        if status != "extend":
            return status, points[len(cell) :]
        new = [(run_id_of(c), c) for c in (t.replace(lr=lr) for t in templates.values())]
        points.extend(new)
        todo = [(run_id, c) for run_id, c in new if not (out / run_id / RESULT).is_file()]
        if todo:
            train(todo)
