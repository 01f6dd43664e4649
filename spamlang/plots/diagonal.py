"""The line x = y across a heatmap's categorical cells: Adam's memory equal to the return time.

A heatmap places its values at cell indices 0, 1, 2, ..., not at the values themselves, so the
line is drawn through the fractional index of each value, interpolated in log space between
the two ticks around it (the axes are 1-2-4 or 10-100-1000 grids, even in log).
"""

from __future__ import annotations

import numpy as np

from spamlang.errors import UserError
from spamlang.fields import is_number

LABEL = "memory = return time"
GID = "diagonal"  # tells the line's label apart from the cells' texts
_RETURN = {"symbol_return_steps"}
_MEMORY = {"adam_memory_steps", "adam_memory_steps_effective"}
_POINTS = 200  # enough for a smooth line through a few cells


def default_diagonal(x: str, y: str) -> bool:
    """On for exactly the return-time phase diagram: one axis the return time, the other a memory."""
    return {x, y} & _RETURN != set() and {x, y} & _MEMORY != set() and x != y


def log_index(values: list[float], v: np.ndarray) -> np.ndarray:
    """The fractional cell index of each `v` along a sorted positive axis: log interpolation
    between its ticks, extended by the end intervals out to the outer cells' edges."""
    logs, at = np.log(values), np.log(v)
    inside = np.interp(at, logs, np.arange(len(values), dtype=float))
    below = (at - logs[0]) / (logs[1] - logs[0])
    above = len(values) - 1 + (at - logs[-1]) / (logs[-1] - logs[-2])
    return np.where(at < logs[0], below, np.where(at > logs[-1], above, inside))


def _edges(values: list[float]) -> tuple[float, float]:
    """The values at the grid's outer cell edges (index -0.5 and n - 0.5)."""
    logs = np.log(values)
    return (
        float(np.exp(logs[0] - (logs[1] - logs[0]) / 2)),
        float(np.exp(logs[-1] + (logs[-1] - logs[-2]) / 2)),
    )


def crossable(values: list) -> bool:
    """Can the diagonal cross this axis: two or more values, all positive numbers?"""
    numbers = [v for v in values if is_number(v)]
    return len(numbers) == len(values) >= 2 and min(numbers) > 0


def check_axis(column: str, values: list) -> list[float]:
    """The axis' values as floats, or a UserError when the diagonal cannot cross it."""
    if not crossable(values):
        raise UserError(
            f"--diagonal needs two or more positive numbers along --x and --y; "
            f"{column} has {len(values)} value(s), not all so"
        )
    return [float(v) for v in values]


def draw_diagonal(ax, xs: list[float], ys: list[float], label: str = LABEL) -> bool:
    """Draw x = y where the two axes' cells overlap; False (nothing drawn) where they do not."""
    (x_lo, x_hi), (y_lo, y_hi) = _edges(xs), _edges(ys)
    lo, hi = max(x_lo, y_lo), min(x_hi, y_hi)
    if lo >= hi:
        return False
    t = np.geomspace(lo, hi, _POINTS)
    limits = ax.get_xlim(), ax.get_ylim()  # a line must not widen an image's extent
    # White under black dashes, both under the cells' numbers (zorder 3): seen on any colour.
    ax.plot(log_index(xs, t), log_index(ys, t), color="white", lw=2.2, zorder=2.1)
    ax.plot(
        log_index(xs, t),
        log_index(ys, t),
        color="black",
        lw=1.2,
        ls="--",
        zorder=2.2,
        label=label,
        gid=GID,
    )
    # Named on the line itself: a legend box would hide cells' numbers.
    at = int(0.8 * (_POINTS - 1))
    ax.text(
        log_index(xs, t[at : at + 1])[0],
        log_index(ys, t[at : at + 1])[0],
        f" {label} ",
        fontsize=6,
        ha="right",
        va="bottom",
        zorder=6,
        gid=GID,
        bbox=dict(boxstyle="round,pad=0.1", facecolor="white", edgecolor="none", alpha=0.8),
    )
    ax.set_xlim(*limits[0])
    ax.set_ylim(*limits[1])
    return True
