"""Is each best learning rate inside the swept grid? Warnings for the end-of-sweep summary.

A best LR at the smallest or largest LR of the grid means the true optimum may lie outside it,
and comparisons between settings at "their best LR" are then unreliable. Pure functions over
result rows (the dicts of `spamlang.sweep.results.gather`), so that they can be tested without
training.
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from spamlang.sweep.results import RESULT_COLUMNS
from spamlang.sweep.spec import fields_of, format_number

MIN_GRID = 3  # with two LRs every best one is at an edge; nothing to warn about


@dataclass(frozen=True)
class BestLR:
    """The best LR of one group of runs (every setting but lr and seed equal)."""

    group: tuple[tuple[str, Any], ...]  # (setting, value) pairs that define the group
    lr: float  # the LR with the best seed-averaged metric
    grid: tuple[float, ...]  # the group's LRs, ascending (diverged runs count too)
    value: float  # that LR's mean metric over seeds

    @property
    def edge(self) -> str | None:
        """'largest' or 'smallest' when the best LR is at that end of a grid of 3 or more."""
        if len(self.grid) < MIN_GRID:
            return None
        if self.lr == self.grid[-1]:
            return "largest"
        return "smallest" if self.lr == self.grid[0] else None


def settings_of(row: dict) -> list[str]:
    """The row's setting columns: those before its first outcome column (results.csv's order:
    settings, extra axes, outcomes), without run_id and the outcome columns themselves."""
    keys = list(row)
    first = min((i for i, k in enumerate(keys) if k in RESULT_COLUMNS), default=len(keys))
    return [k for k in keys[:first] if k != "run_id" and k not in RESULT_COLUMNS]


def _finite(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def _hashable(v: Any) -> Any:
    return json.dumps(v, sort_keys=True, default=str) if isinstance(v, (dict, list)) else v


def swept_values(points: list[tuple[str, Any]], axes: Iterable[str]) -> dict[str, dict[str, Any]]:
    """run_id -> the value of every field the sweep's `axes` set (a linked axis sets several),
    read from each point's config. It names groups by fields that results.csv keeps only as
    outcomes: a sweep over `tokens` has a token budget per run, not just a count of tokens."""
    fields = [f for axis in axes for f in fields_of(axis)]
    out = {}
    for run_id, config in points:
        data = config.to_json() if hasattr(config, "to_json") else dataclasses.asdict(config)
        out[run_id] = {f: _config_field(data, f) for f in fields}
    return out


def _config_field(data: dict, field: str) -> Any:
    for prefix, key in (("param.", "language_params"), ("model.", "model_overrides")):
        if field.startswith(prefix):
            return (data.get(key) or {}).get(field[len(prefix):])
    return data.get(field)


def best_lrs(rows: list[dict], metric: str = "final_eval_loss",
             swept: dict[str, dict[str, Any]] | None = None) -> list[BestLR]:
    """The best LR (lowest seed-mean `metric`, diverged runs excluded) of every group of rows
    sharing all settings but lr and seed (with `swept`, also the swept fields of each run id);
    groups without a finite value are left out."""
    groups: dict[tuple, dict[float, list[float]]] = {}
    for row in rows:
        lr = _finite(row.get("lr"))
        if lr is None:
            continue
        settings = {k: row.get(k) for k in settings_of(row)}
        settings.update((swept or {}).get(row.get("run_id"), {}))
        key = tuple((k, _hashable(v)) for k, v in settings.items() if k not in ("lr", "seed"))
        values = groups.setdefault(key, {}).setdefault(lr, [])
        v = _finite(row.get(metric))
        if v is not None and not row.get("diverged"):
            values.append(v)
    best = []
    for key, by_lr in groups.items():
        means = {lr: statistics.fmean(vs) for lr, vs in by_lr.items() if vs}
        if means:
            lr = min(means, key=lambda x: (means[x], x))
            best.append(BestLR(key, lr, tuple(sorted(by_lr)), means[lr]))
    return best


def _order(v: Any) -> tuple:
    """Numbers by value; anything else keeps the rows' order (the sort is stable)."""
    if isinstance(v, (int, float, str)) and not isinstance(v, bool):
        try:
            return (0, float(v))
        except ValueError:
            pass
    return (1, 0.0)


def _text(v: Any) -> str:
    return format_number(v) if isinstance(v, float) else str(v)


def edge_warnings(rows: list[dict], metric: str = "final_eval_loss",
                  swept: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """One line per group whose best LR is the smallest or largest of a grid of 3 or more LRs,
    e.g. "warning: best lr for vocab_size=4096, tie_embeddings=True is 3e-2, the largest in the
    grid (3e-3 .. 3e-2): the optimum may lie outside it". A group is named by the settings that
    differ between groups; the grid is the LRs its finished runs used. `swept` (see
    `swept_values`) adds the sweep's own fields to the settings that define a group.
    """
    best = best_lrs(rows, metric, swept)
    if not best:
        return []
    names = dict.fromkeys(k for b in best for k, _ in b.group)
    varying = [k for k in names if len({dict(b.group).get(k) for b in best}) > 1]
    # Numbers in numeric order (V = 256 before 1,024), the rest as the rows come.
    best = sorted(best, key=lambda b: [_order(dict(b.group).get(k)) for k in varying])
    lines = []
    for b in best:
        if b.edge is None:
            continue
        values = dict(b.group)
        label = ", ".join(f"{k}={_text(values.get(k))}" for k in varying)
        lines.append(f"warning: best lr{f' for {label}' if label else ''} is {_text(b.lr)}, "
                     f"the {b.edge} in the grid ({_text(b.grid[0])} .. {_text(b.grid[-1])}): "
                     "the optimum may lie outside it")
    return lines
