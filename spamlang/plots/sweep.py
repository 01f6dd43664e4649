"""The final-loss heatmap (the paper's Figure 5): a final metric on an x by y grid of cells."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable

import numpy as np
from matplotlib.colors import LogNorm, Normalize
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from spamlang.errors import UserError
from spamlang.fields import finite, is_number
from spamlang.plots import layout
from spamlang.plots.canvas import BEST_EDGE, CMAP, PAPER_WIDTH_IN, colour_bar, writer
from spamlang.plots.layout import SEED, Facets, Point, describe, higher_is_better, ident, short_name
from spamlang.plots.lines import resolve_best_over
from spamlang.results import column_values, select

# Settings named in each cell when they are no axis yet differ between cells: the head kind
# of rank_width.png, whose rank axis crosses from lowrank:r through softmax to mlp:r.
CELL_TAGS = ("head",)
HEATMAP_METRICS = {
    "final_eval_loss": "final eval loss (nats)",
    "loss_above_floor": "eval loss above floor (nats)",
    "final_train_loss": "final train loss (nats)",
}
DIAGONAL_LABEL = "memory = return time"  # x = y on the return-time phase diagram
GID = "diagonal"  # tells the line's label apart from the cells' texts
# On by default for exactly the return-time phase diagram: symbol_return_steps against these.
MEMORY_AXES = {"adam_memory_steps", "adam_memory_steps_effective"}
_POINTS = 200  # enough for a smooth line through a few cells


def color_limits(values: Iterable[float | None]) -> tuple[float, float, bool]:
    """(vmin, vmax, log): the finite values' range, log when all are positive and span 10x or
    more; a single value gets a small range around it."""
    finite = [float(v) for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return 0.0, 1.0, False
    lo, hi = min(finite), max(finite)
    if lo == hi:
        pad = abs(lo) * 0.05 or 0.5
        return lo - pad, hi + pad, False
    return lo, hi, lo > 0 and hi / lo >= 10


def best_cells(grid: np.ndarray, higher_is_better: bool = False) -> list[tuple[int, int]]:
    """(row, col) of the best finite cell (min, or max) of each column of `grid`, ties all; [] for
    a single row."""
    grid = np.asarray(grid, dtype=float)
    if grid.ndim != 2 or grid.shape[0] < 2:
        return []
    loss = np.where(np.isfinite(grid), -grid if higher_is_better else grid, np.inf)
    best = (loss == loss.min(axis=0)) & np.isfinite(loss)
    return [(int(row), int(col)) for row, col in np.argwhere(best)]  # row-major: sorted


def _cell_text(v: float) -> str:
    """A loss as a cell shows it: never rounded to a "0" its colour contradicts ("5.0e-4")."""
    if v == 0:
        return "0"
    if abs(v) < 1e-3:
        mantissa, exponent = f"{v:.1e}".split("e")
        return f"{mantissa.removesuffix('.0')}e{int(exponent)}"
    if abs(v) < 0.1:
        return f"{v:.3f}"
    return f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}"


def _range_text(lo: float, hi: float) -> str:
    """ "lo–hi", sharing one exponent ("7.1–7.6e-7"): a cell is narrow."""
    a, b = _cell_text(lo), _cell_text(hi)
    if "e" in a and "e" in b and a.split("e")[1] == b.split("e")[1]:
        a = a.split("e")[0]
    return f"{a}\u2013{b}"


def cell_label(point: Point, s, best: str | None = None, tags: Iterable[str] = ()) -> str:
    """A cell's text from its `pool` row `s`: the mean, the min-max range of several runs, the
    `best` value chosen, each `tags` value (head: 'lowrank:16'), 'k/n div'; 'div' when all did."""
    n_div = sum(bool(r.get("diverged")) for r in point.runs)
    if not s.n:
        return "div" if n_div else ""
    lines = [_cell_text(s.mean)]
    if s.n > 1 and _cell_text(s.lo) != _cell_text(s.hi):
        lines.append(_range_text(s.lo, s.hi))
    if best:
        lines.append(f"{short_name(best)} {describe([r.get(best) for r in point.runs], best)}")
    lines += [describe([r.get(t) for r in point.runs], t) for t in tags]
    if n_div:
        lines.append(f"{n_div}/{len(point.runs)} div")
    return "\n".join(lines)


def heatmap_figure(
    sweep_dir,
    metric: str = "final_eval_loss",
    where: dict | None = None,
    x: str = "vocab_size",
    y: str = "lr",
    cols: str | None = "tie_embeddings",
    rows: str | list[str] | None = None,
    best_over: str | None = None,
    diagonal: bool | None = None,
) -> Figure:
    """`metric` of every finished run on an x by y grid, faceted by `cols` / `rows`, each column's
    best cell outlined in red; `best_over` keeps each cell's best value of that setting instead of
    pooling them; `diagonal`: x = y (None: on for return time against Adam's memory)."""
    every = layout.finished_runs(sweep_dir)
    runs = select(every, where)
    flags = {"--metric": metric, "--x": x, "--y": y, "--cols": cols}
    (metric, x, y, cols), rows = layout.check_axes(runs, flags, rows)
    if not layout.is_numeric(column_values(runs, metric)):
        why = "pick an outcome such as final_eval_loss"
        raise UserError(f"--metric {metric} is not numeric; {why}")
    taken = [metric, x, y] + ([cols] if cols else []) + (rows or [])
    best = resolve_best_over(runs, best_over, taken) if layout.column_or_none(best_over) else None
    runs, left_out = _with_values(runs, [x, y])
    used = [x, y] + ([cols] if cols else [])
    pooled = [] if SEED in used + (rows or []) or best == SEED else [SEED]
    points = layout.group_points(runs, pooled)
    if best:
        points = layout.best_over(points, best, metric, keep_failed=True)
    facets = Facets(points, cols, rows, used, pooled + ([best] if best else []))
    xs, ys = (layout.sort_values(p.value(c) for p in points) for c in (x, y))
    diagonal = _diagonal(diagonal, x, y, xs, ys)
    x_at, y_at = ({ident(v): i for i, v in enumerate(vs)} for vs in (xs, ys))
    cells = [  # (panel, y index, x index, the points of the cell pooled into one)
        (k, y_at[ident(g[0].value(y))], x_at[ident(g[0].value(x))], layout.merge(g))
        for k, panel in enumerate(facets.panels)
        for g in layout.group_by(panel.points, [y, x], Point.value)
    ]
    drawn = [c for *_, c in cells]
    stats = layout.pool(drawn, metric)
    vmin, vmax, log = color_limits(stats["mean"])
    norm = LogNorm(vmin, vmax) if log else Normalize(vmin, vmax)
    tags = [c for c in CELL_TAGS if c not in taken and len({ident(p.value(c)) for p in drawn}) > 1]
    text_lines = 1 + any(len(c.runs) > 1 for c in drawn) + bool(best) + len(tags)
    fig = facets.figure(max(2.1, 0.15 * (text_lines + 1) * len(ys) + 0.9), 0.4)
    cell_w = (PAPER_WIDTH_IN - 1.2) / (facets.shape[1] * len(xs))
    font = float(np.clip(cell_w * 72 / 3.4, 4.5, 8.0))
    for k, panel in enumerate(facets.panels):
        mine = [(c[1:], s) for c, s in zip(cells, stats.itertuples()) if c[0] == k]
        image = _draw_cells(panel.ax, mine, (len(ys), len(xs)), metric, norm, font, best, tags)
        if diagonal:
            draw_diagonal(panel.ax, xs, ys)
        _ticks(panel.ax, x, xs, y, ys, cell_w)
        panel.label(layout.axis_label(x), layout.axis_label(y), legend=False)
    label = HEATMAP_METRICS.get(metric, layout.axis_label(metric)) + (", log scale" if log else "")
    colour_bar(fig, image, facets.grid, label, (vmin, vmax) if log else None)
    outline = ""
    if len(ys) > 1:
        outline = f"red outline: best {layout.axis_label(y)} of each {short_name(x)}"
        outline += " (highest)" if higher_is_better(metric) else ""
    # A cell where every value of `best` diverged pools them all, but shows only "div".
    pooled_cells = [c for c, n in zip(drawn, stats["n"]) if n] if best else drawn
    notes = outline, _best_note(best, metric, runs), layout.pool_note(pooled_cells, "second line")
    return layout.finish(fig, every, runs, where, taken + [best], *notes, left_out)


plot_heatmap = writer(heatmap_figure)


def _diagonal(diagonal: bool | None, x: str, y: str, xs: list, ys: list) -> bool:
    """None: x = y only on the return-time phase diagram, where it can be drawn; asked for where
    it cannot be, a UserError."""
    if diagonal is None:
        phase = "symbol_return_steps" in (x, y) and bool(MEMORY_AXES & {x, y})
        return phase and crossable(xs) and crossable(ys)
    for column, values in ((x, xs), (y, ys)) if diagonal else ():
        if not crossable(values):
            why = f"along --x and --y; {column} has {len(values)} value(s), not all so"
            raise UserError(f"--diagonal needs two or more positive numbers {why}")
    return diagonal


def _ticks(ax, x: str, xs: list, y: str, ys: list, cell_w: float) -> None:
    # x labels wider than a cell are tilted (131072 beside 65536: about 0.6 em a digit at 7 pt).
    x_labels = [layout.format_value(x, v) for v in xs]
    tilted = max(map(len, x_labels)) * 7 * 0.6 / 72 > 0.9 * cell_w
    x_tilt = dict(rotation=30, ha="right", rotation_mode="anchor") if tilted else {}
    ax.set_xticks(range(len(xs)), x_labels, fontsize=7, **x_tilt)
    ax.set_yticks(range(len(ys)), [layout.format_value(y, v) for v in ys], fontsize=7)


def _with_values(runs, columns: list[str]) -> tuple:
    """The runs with a finite value of every column, and a note (also printed) on the others:
    adam_memory_steps is empty for sgd and adafactor."""
    notes = []
    for c in columns:
        values = column_values(runs, c)
        kept = runs[[v is not None and (not is_number(v) or finite(v) is not None) for v in values]]
        if kept.empty:
            raise UserError(f"no finished run has a value of {c}")
        if len(kept) < len(runs):
            notes.append(f"left out {len(runs) - len(kept)} runs without a value of {c}")
        runs = kept
    if text := "; ".join(notes):
        print(f"note: {text}", file=sys.stderr)
    return runs, text


def _best_note(best: str | None, metric: str, runs) -> str:
    if not best:
        return ""
    how = "highest" if higher_is_better(metric) else "lowest"
    grid = describe(column_values(runs, best), best)
    each = f"each cell: its best {short_name(best)} of {grid} ({how} seed-mean {metric})"
    return each + ", named in the cell"


def _draw_cells(ax, cells: list, shape, metric: str, norm, font: float, best, tags):
    """One panel of `cells` ((y index, x index, point), `pool` row): coloured means, labels,
    diverged cells hatched, best cells outlined."""
    grid = np.full(shape, np.nan)
    for (yi, xi, _), s in cells:
        grid[yi, xi] = s.mean
    image = ax.imshow(grid, origin="lower", aspect="auto", cmap=CMAP, norm=norm)
    labels = {(yi, xi): cell_label(p, s, best, tags) for (yi, xi, p), s in cells}
    # One size for the panel, the largest at which every line fits its cell (0.62 em a char).
    width_pt = ax.get_position().width * ax.figure.get_figwidth() * 72 / max(shape[1], 1)
    longest = max((len(line) for text in labels.values() for line in text.splitlines()), default=1)
    font = min(font, 0.9 * width_pt / (0.62 * max(longest, 1)))
    for (yi, xi), label in labels.items():
        if label == "div":
            hatched = dict(fc="0.85", ec="0.4", hatch="////", lw=0)
            ax.add_patch(Rectangle((xi - 0.5, yi - 0.5), 1, 1, **hatched))
        v = grid[yi, xi]
        luma = 1.0 if np.isnan(v) else np.dot(image.cmap(norm(v))[:3], (0.299, 0.587, 0.114))
        colour = "black" if luma > 0.5 else "white"  # a blank (nan) cell's text: black
        style = dict(ha="center", va="center", fontsize=font, color=colour, linespacing=1.1)
        ax.text(xi, yi, label, **style)
    for yi, xi in best_cells(grid, higher_is_better(metric)):
        # Inset, so that outlines of neighbouring cells stay two boxes.
        edge = dict(fill=False, ec=BEST_EDGE, lw=2, zorder=3)
        ax.add_patch(Rectangle((xi - 0.45, yi - 0.45), 0.9, 0.9, **edge))
    return image


def log_index(values: list[float], v: np.ndarray) -> np.ndarray:
    """Each `v`'s fractional cell index along a sorted positive axis (log interpolation, the end
    intervals extended out to the outer cells' edges)."""
    logs, at = np.log(values), np.log(v)
    inside = np.interp(at, logs, np.arange(len(values), dtype=float))
    below = (at - logs[0]) / (logs[1] - logs[0])
    above = len(values) - 1 + (at - logs[-1]) / (logs[-1] - logs[-2])
    return np.where(at < logs[0], below, np.where(at > logs[-1], above, inside))


def crossable(values: list) -> bool:
    numbers = [v for v in values if is_number(v)]
    return len(numbers) == len(values) >= 2 and min(numbers) > 0


def draw_diagonal(ax, xs: list[float], ys: list[float]) -> None:
    """The line x = y across a heatmap's categorical cells, through each value's fractional cell
    index, interpolated in log space (`log_index`)."""

    def edges(values: list[float]) -> tuple[float, float]:  # log values at index -0.5, n - 0.5
        logs = np.log(values)
        return logs[0] - (logs[1] - logs[0]) / 2, logs[-1] + (logs[-1] - logs[-2]) / 2

    (x_lo, x_hi), (y_lo, y_hi) = edges(xs), edges(ys)
    lo, hi = max(x_lo, y_lo), min(x_hi, y_hi)
    if lo >= hi:
        return
    t = np.exp(np.linspace(lo, hi, _POINTS))
    px, py = log_index(xs, t), log_index(ys, t)
    limits = ax.get_xlim(), ax.get_ylim()  # a line must not widen an image's extent
    # White under black dashes, both under the cells' numbers (zorder 3): seen on any colour.
    ax.plot(px, py, color="white", lw=2.2, zorder=2.1)
    ax.plot(px, py, color="black", lw=1.2, ls="--", zorder=2.2, label=DIAGONAL_LABEL, gid=GID)
    # Named on the line itself: a legend box would hide cells' numbers.
    at = int(0.8 * (_POINTS - 1))
    box = dict(boxstyle="round,pad=0.1", facecolor="white", edgecolor="none", alpha=0.8)
    style = dict(fontsize=6, ha="right", va="bottom", zorder=6, gid=GID, bbox=box)
    ax.text(px[at], py[at], f" {DIAGONAL_LABEL} ", **style)
    ax.set_xlim(*limits[0])
    ax.set_ylim(*limits[1])
