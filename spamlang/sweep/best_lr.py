"""Is each best learning rate inside the swept grid? Summary lines, warnings, and LR bracketing.

A best LR at an end of the grid means the true optimum may lie outside it. The summary functions
are pure functions over result rows (the dicts of `spamlang.sweep.results_csv.gather`); the best
LR is the one rule `spamlang.rundir.reading.best_over` (the law and the figures use it too).
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spamlang.fields import finite
from spamlang.rundir.reading import best_over, read_object, settings_columns
from spamlang.rundir.schema import RESULT
from spamlang.sweep.spec import config_field, fields_of, format_number

DEFAULT_LIMIT = 3  # LRs added per side when `--bracket-lr` is given without a number
_HALF_DECADE = (2.9, 3.5)  # ratios of a 1-3-10 grid: 3 and 10/3
MIN_GRID = 3  # with two LRs every best one is at an edge; nothing to warn about
DIGITS = 3  # significant digits, not decimals: learned cells end near 1e-4 nats, chance near 8
# Within this many nats of the loss floor a cell is solved: where its best LR sits says nothing.
SOLVED = 0.01


@dataclass(frozen=True)
class BestLR:
    """The best LR of one group of runs (every setting but lr and seed equal)."""

    group: tuple[tuple[str, Any], ...]  # (setting, value) pairs that define the group
    lr: float  # the LR with the best seed-averaged metric
    grid: tuple[float, ...]  # the group's LRs, ascending (diverged runs count too)
    value: float  # that LR's mean metric over seeds
    low: float = math.nan  # that LR's smallest value over seeds
    high: float = math.nan  # and its largest: the seed spread is high - low
    seeds: int = 1  # runs behind `value`
    above_floor: float = math.nan  # `value` minus the runs' optimal_loss

    @property
    def solved(self) -> bool:  # any LR that reaches the floor is as good
        return self.above_floor <= SOLVED

    @property
    def edge(self) -> str | None:
        """'largest' or 'smallest' when the best LR is at that end of a grid of MIN_GRID or more."""
        if len(self.grid) < MIN_GRID:
            return None
        if self.lr == self.grid[-1]:
            return "largest"
        return "smallest" if self.lr == self.grid[0] else None


def _hashable(v: Any) -> Any:
    return json.dumps(v, sort_keys=True, default=str) if isinstance(v, (dict, list)) else v


def swept_values(points: list[tuple[str, Any]], axes: Iterable[str]) -> dict[str, dict[str, Any]]:
    """run_id -> the value of every field the sweep's `axes` set (results.csv may lack them)."""
    fields = [f for axis in axes for f in fields_of(axis)]
    datas = ((run_id, config.to_json()) for run_id, config in points)
    return {run_id: {f: config_field(data, f) for f in fields} for run_id, data in datas}


def best_lrs(rows: list[dict], swept: dict[str, dict] | None = None) -> list[BestLR]:
    """The best LR (`best_over`, by final eval loss) of each group of rows equal in all but lr
    and seed; `swept`: run id -> its swept values (`swept_values`)."""
    import pandas as pd

    groups: dict[tuple, int] = {}  # a group's settings -> its number, in order of appearance
    records = []
    swept = swept or {}
    fields = next(iter(swept.values()), {})
    for row in rows:
        lr = finite(row.get("lr"))
        if lr is None:
            continue
        settings = {k: row.get(k) for k in settings_columns(list(row))}
        # A run bracketing added elsewhere is no point here: its row holds its swept values.
        own = swept.get(row.get("run_id"))
        settings.update(own if own is not None else {f: row.get(f) for f in fields})
        key = tuple((k, _hashable(v)) for k, v in settings.items() if k not in ("lr", "seed"))
        v = None if row.get("diverged") else finite(row.get("final_eval_loss"))
        floor = finite(row.get("optimal_loss")) if v is not None else None
        records.append((groups.setdefault(key, len(groups)), lr, v, floor))
    if not records:
        return []
    frame = pd.DataFrame(records, columns=["group", "lr", "value", "floor"], dtype=float)
    by_group = frame.groupby("group")
    grids, floors = by_group["lr"].unique(), by_group["floor"].mean()
    best = best_over(frame, "group", "lr", "value")
    best["grid"] = [tuple(sorted(grids[g].tolist())) for g in best["group"]]
    best["above_floor"] = best["mean"] - floors[best["group"]].to_numpy()
    keys = list(groups)
    best["group"] = [keys[int(g)] for g in best["group"]]
    columns = ["group", "lr", "grid", "mean", "min", "max", "count", "above_floor"]
    return [BestLR(*row) for row in best[columns].itertuples(index=False)]


def _order(v: Any) -> tuple:  # numbers by value, the rest in the rows' order
    if isinstance(v, (int, float, str)) and not isinstance(v, bool):
        with contextlib.suppress(ValueError):
            return (0, float(v))
    return (1, 0.0)


def _text(v: Any, key: str = "lr") -> str:
    """LRs as run ids write them (1e-2); other floats as typed where short (b2 0.95)."""
    if not isinstance(v, float):
        return str(v)
    if key != "lr" and v == v and (v == 0 or 1e-3 <= abs(v) < 1e6):
        return repr(v)
    return format_number(v)


def labelled(best: list[BestLR]) -> list[tuple[BestLR, str]]:
    """Each cell with a label of the settings that differ between cells, in numeric order."""
    names = dict.fromkeys(k for b in best for k, _ in b.group)
    varying = [k for k in names if len({dict(b.group).get(k) for b in best}) > 1]
    best = sorted(best, key=lambda b: [_order(dict(b.group).get(k)) for k in varying])
    return [(b, ", ".join(f"{k}={_text(dict(b.group).get(k), k)}" for k in varying)) for b in best]


def cell_lines(rows: list[dict], swept: dict[str, dict] | None = None) -> list[str]:
    """One line per cell: its best LR, the seed mean and spread there, where it sits in the grid."""
    lines = []
    for b, label in labelled(best_lrs(rows, swept)):
        spread = f"{b.low:#.{DIGITS}g} .. {b.high:#.{DIGITS}g}, {b.seeds} seeds"
        spread = spread if b.seeds > 1 else "1 seed"
        where = f"at the {b.edge} LR" if b.edge else "interior"
        where = "solved" if b.solved else where if len(b.grid) >= MIN_GRID else f"{len(b.grid)} LRs"
        lines.append(
            f"{label or 'all'}: best lr {_text(b.lr)} of {_text(b.grid[0])} .. "
            f"{_text(b.grid[-1])} ({where}), final_eval_loss {b.value:#.{DIGITS}g} ({spread})"
        )
    return lines


def edge_warnings(rows: list[dict], swept: dict[str, dict] | None = None) -> list[str]:
    """One warning per unsolved cell whose best LR is at an edge of a grid of MIN_GRID or more."""
    return [
        f"warning: best lr{f' for {label}' if label else ''} is {_text(b.lr)}, the {b.edge} in "
        f"the grid ({_text(b.grid[0])} .. {_text(b.grid[-1])}): the optimum may lie outside it"
        for b, label in labelled(best_lrs(rows, swept))
        if b.edge is not None and not b.solved
    ]


def _mantissa(x: float) -> float:
    return round(x / 10 ** math.floor(math.log10(x) + 1e-9), 6)


def step_beyond(grid: tuple[float, ...], side: str) -> float:
    """The LR one step past `grid`'s `side` end, at its ratio (1, 3, 10 continues as one)."""
    grid, up = sorted(grid), side == "largest"
    edge = grid[-1] if up else grid[0]
    ratio = 3.0 if len(grid) < 2 else grid[-1] / grid[-2] if up else grid[1] / grid[0]
    factor, mantissa = ratio if up else 1 / ratio, _mantissa(edge)
    if _HALF_DECADE[0] <= ratio <= _HALF_DECADE[1] and mantissa in (1.0, 3.0):
        # 1 -> 3 -> 10 upwards, 3 -> 1 -> 0.3 downwards.
        factor = {(1, 1.0): 3.0, (1, 3.0): 10 / 3, (0, 3.0): 1 / 3, (0, 1.0): 3 / 10}[up, mantissa]
    return float(f"{edge * factor:.3g}")  # a readable run id (lr1e-1), never 0.09999999999999999


def decide(best: BestLR, original: tuple[float, ...], limit: int) -> tuple[str, float | None]:
    """("interior" | "solved" | "limit", None), or ("extend", lr); `original`: the sweep's grid."""
    if best.solved:
        return "solved", None
    up = best.lr == max(best.grid)
    if not up and best.lr != min(best.grid):
        return "interior", None
    if sum(lr > max(original) if up else lr < min(original) for lr in best.grid) >= limit:
        return "limit", None
    return "extend", step_beyond(best.grid, "largest" if up else "smallest")


def diverged_everywhere(rows: list[dict]) -> bool:
    """Does every LR of `rows` (lr, seed, diverged) have a diverged run?"""
    lrs = {row["lr"] for row in rows}
    return bool(lrs) and lrs == {row["lr"] for row in rows if row.get("diverged")}


def bracket_cell(
    cell: list[tuple[str, Any]],
    run_id_of: Callable[[Any], str],
    out: Path,
    limit: int,
    train: Callable[[list[tuple[str, Any]]], bool],
) -> tuple[str, list[tuple[str, Any]]]:
    """Extend one cell's LR grid (every seed) beyond the end its best LR sits at, or below it
    where every LR has a diverged run, until it is interior, solved, or `limit` LRs were added
    there, deciding from the finished runs on disk alone. `train`: False when another process
    holds a point. (status: interior, solved, limit, none, busy or damaged, the points it
    added)."""
    points = list(cell)
    original = tuple(sorted({config.lr for _, config in cell}))
    # One template per seed: an added LR is trained for every seed.
    templates = {config.seed: config for _, config in cell}
    while True:
        rows = []  # lr, seed and outcomes of its finished runs (being written: not yet)
        for run_id, config in dict(points).items():
            result = read_object(out / run_id / RESULT)
            if result is None and (out / run_id / RESULT).is_file():
                return "damaged", points[len(cell) :]
            if result is not None:
                outcome = {
                    k: result.get(k) for k in ("final_eval_loss", "optimal_loss", "diverged")
                }
                rows.append({"lr": config.lr, "seed": config.seed, **outcome})
        best = best_lrs(rows)
        if best:
            status, lr = decide(best[0], original, limit)
        elif not diverged_everywhere(rows):
            return "none", points[len(cell) :]
        else:  # no LR without a diverged seed: a stable one, if any, lies below the grid
            grid = tuple(sorted({row["lr"] for row in rows}))
            below = sum(lr < min(original) for lr in grid) >= limit
            status, lr = ("limit", None) if below else ("extend", step_beyond(grid, "smallest"))
        if status != "extend":
            return status, points[len(cell) :]
        new = [(run_id_of(c), c) for c in (t.replace(lr=lr) for t in templates.values())]
        points.extend(new)
        todo = [(run_id, c) for run_id, c in new if not (out / run_id / RESULT).is_file()]
        if todo and not train(todo):
            return "busy", []
