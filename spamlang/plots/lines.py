"""A metric against a numeric column, a line per value of another column (`spamlang plot lines`)."""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from spamlang.errors import UserError
from spamlang.plots import layout
from spamlang.plots.canvas import MAX_DATA_TICKS, data_ticks, plain_log_ticks, writer
from spamlang.plots.layout import SEED, Facets, Point, describe, format_value, short_name
from spamlang.results import check_column, column_values, records, select

AUTO = "auto"
LOGX_SPAN = 8.0  # a positive x spanning this factor or more gets a log axis by default
# y is an outcome (a loss from 7.5 down to 1e-4): a log axis only when a linear one would
# flatten the small values, beyond two decades.
LOGY_SPAN = 100.0


def auto_logy(values: list[float]) -> bool:
    return bool(values) and min(values) > 0 and max(values) > LOGY_SPAN * min(values)


def auto_logx(values: list[float]) -> bool:
    return bool(values) and min(values) > 0 and max(values) >= LOGX_SPAN * min(values)


def resolve_best_over(runs, best: str | None, axes: list[str]) -> str | None:
    """The column `--best-over` optimises, or None: 'auto', lr when it varies and is not an
    axis; 'none', off; else a setting that is not an axis."""
    settings = runs.attrs["settings"]
    if best is None or best.strip().lower() == AUTO:
        lr_varies = "lr" in settings and layout.varying(records(runs), ["lr"])
        return "lr" if lr_varies and "lr" not in axes else None
    if layout.column_or_none(best) is None:
        return None
    best = check_column(runs, best, "--best-over")
    if best in axes:
        raise UserError(f"--best-over {best} is also an axis of the figure; drop one of them")
    if best not in settings:
        raise UserError(f"--best-over takes a setting such as lr, and {best} is an outcome")
    return best


def label_axis(axis, column: str, values: list, log: bool, grid: bool) -> None:
    """Ticks in `format_value`'s notation, at the data's own values where they are few or a grid
    (`grid`: a setting), which 1-2-5 ticks would miss."""
    values = [float(v) for v in values]
    if not values:
        return
    few = len(set(values)) <= MAX_DATA_TICKS
    if (log and (few or grid)) or (grid and few):
        data_ticks(axis, values, lambda v: format_value(column, v))
    elif log:
        plain_log_ticks(axis, min(values), max(values), lambda v: format_value(column, v))
    elif column == "lr" or all(v.is_integer() for v in values):  # 3e-2; counts: 2K, not 2000
        axis.set_major_formatter(
            FuncFormatter(lambda v, _: format_value(column, int(v) if float(v).is_integer() else v))
        )


def _numeric(runs, column: str, flag: str) -> None:
    if not layout.is_numeric(have := column_values(runs, column)):
        values = f"(values: {describe(have, column)}); use it as --color, --cols or --rows"
        raise UserError(f"{flag} {column} is not numeric {values}")


def lines_figure(
    sweep_dir,
    x: str,
    y: str,
    color: str | None = "vocab_size",
    cols: str | None = None,
    rows: str | list[str] | None = None,
    where: dict | None = None,
    best_over: str | None = AUTO,
    points: bool = False,
    logx: bool | None = None,
    logy: bool | None = None,
) -> Figure:
    """Outcome `y` against the numeric column `x`, a line per `color` value, faceted: seed means
    with min-max bars, each at its best `best_over` value; `points`: markers only."""
    every = layout.finished_runs(sweep_dir)
    runs = select(every, where)
    flags = {"--x": x, "--y": y, "--color": color, "--cols": cols}
    (x, y, color, cols), rows = layout.check_axes(runs, flags, rows)
    axes = [x, y] + [c for c in (color, cols) if c] + (rows or [])
    _numeric(runs, x, "--x")
    _numeric(runs, y, "--y")
    best = resolve_best_over(runs, best_over, axes)
    pooled = [] if SEED in axes or best == SEED else [SEED]
    pts = layout.group_points(runs, pooled)
    if best:
        pts = layout.best_over(pts, best, y)
    stats = layout.pool(pts, y)
    if not stats["n"].any():
        raise UserError(f"no run has a finite {y}")
    used = [x] + [c for c in (color, cols) if c]
    facets = Facets(pts, cols, rows, used, pooled + ([best] if best else []))
    colours = layout.palette(pts, color)
    x_values = [v for p in pts if (v := p.value(x)) is not None]
    y_values = stats.loc[stats["n"] > 0, ["lo", "mean", "hi"]].to_numpy().ravel().tolist()
    logx = auto_logx(x_values) if logx is None else logx
    logy = auto_logy(y_values) if logy is None else logy

    fig = facets.figure(2.9, 0.4, sharex=True, sharey=True)
    drawn: list[Point] = []
    for panel in facets.panels:
        ax = panel.ax
        for values, line_pts in layout.split(panel.points, [color] if color else []):
            marks = [layout.merge(at) for _, at in layout.split(line_pts, [x])]
            marks = [m for m in marks if m.value(x) is not None]
            at = layout.pool(marks, y)
            marks, at = [m for m, n in zip(marks, at["n"]) if n], at[at["n"] > 0]
            drawn += marks
            label = layout.facet_title(color, values[0]) if color else None
            colour = colours[layout.ident(values[0] if color else None)]
            _draw_line(ax, marks, at, x, colour, points, label)
        ax.set_xscale("log" if logx else "linear")
        ax.set_yscale("log" if logy else "linear")
        label_axis(ax.xaxis, x, x_values, logx, x in runs.attrs["settings"])
        if logy:
            plain_log_ticks(ax.yaxis, min(y_values), max(y_values))
        panel.label(layout.axis_label(x), layout.axis_label(y), legend=bool(color))
    notes = _best_note(best, y, drawn), layout.pool_note(drawn, "bars")
    return layout.finish(fig, every, runs, where, axes + [best], *notes)


plot_lines = writer(lines_figure)


def _draw_line(ax, marks: list[Point], stats, x: str, colour, points: bool, label: str | None):
    """`marks` at their value of `x`: `stats` (their `pool` rows), means with min-max bars."""
    xs, means = [m.value(x) for m in marks], stats["mean"].tolist()
    spread = [(stats["mean"] - stats["lo"]).tolist(), (stats["hi"] - stats["mean"]).tolist()]
    yerr = spread if (stats["n"] > 1).any() else None
    style = dict(fmt="o" if points else "o-", color=colour, ms=4, lw=1.2, capsize=2, label=label)
    ax.errorbar(xs, means, yerr=yerr, **style)
    edge = [(a, b) for a, b, m in zip(xs, means, marks) if m.at_edge]
    if edge:
        ax.plot(*zip(*edge), "o", ms=4, mfc="white", mec=colour, zorder=3)


def _best_note(best: str | None, y: str, drawn: list[Point]) -> str:
    if not best:
        return ""
    grid = layout.sort_values(v for p in drawn for v in p.grid)
    how = "highest" if layout.higher_is_better(y) else "lowest"
    text = f"each point: the {short_name(best)} with the {how} {y} ({describe(grid, best)})"
    if any(p.at_edge for p in drawn):
        text += f"; hollow: best {short_name(best)} at the edge of the grid"
    return text
