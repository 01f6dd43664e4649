"""Training curves (the paper's Figure 4): a metrics.jsonl value against tokens, one line per V.

Runs are read from their directories, so runs still in progress are drawn too (dotted).
"""

from __future__ import annotations

import functools
import math
import statistics
import sys

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from spamlang.errors import UserError
from spamlang.fields import finite
from spamlang.notation import format_count, format_lr
from spamlang.plots import layout
from spamlang.plots.canvas import writer
from spamlang.plots.layout import SEED, Facets, Point, ident
from spamlang.rundir.reading import iter_metrics
from spamlang.rundir.runs import Run, scan_runs, select

CURVE_METRICS = {"loss": ("train", "train loss (nats)"), "eval_loss": ("eval", "eval loss (nats)")}
_KINDS = ("train", "eval", "diag")
BEST_METRIC = "final_eval_loss"  # what a line's best LR is chosen by: the heatmap's metric
X_ALIASES = {"steps": "step"}  # --x steps: metrics.jsonl's field is `step`


def choose_runs(runs: list[Run], lr: float | str | None) -> list[Run]:
    """The runs drawn, every seed of a chosen LR. None or "best": each cell's best LR by
    `layout.best_over` (the heatmap's red outlines, the sweep summary's "best lr"); a cell with
    no finished run yet, the LR with the lowest latest train loss. A float: that LR (rel. 1e-6)."""
    if lr in (None, "best"):
        points = layout.best_over(layout.group_points(runs, [SEED]), "lr", BEST_METRIC)
        chosen = [r for p in points for r in p.runs]
        done = {_cell(r) for r in chosen}
        going: dict[tuple, dict[float, list[Run]]] = {}
        for r in runs:
            if _cell(r) not in done:
                going.setdefault(_cell(r), {}).setdefault(r.lr, []).append(r)
        for by_lr in going.values():
            chosen += min(by_lr.values(), key=_latest_loss)
        return chosen
    chosen = [r for r in runs if math.isclose(r.lr, float(lr), rel_tol=1e-6)]
    if not chosen:
        have = ", ".join(format_lr(x) for x in sorted({r.lr for r in runs}))
        raise UserError(f"no run has lr={format_lr(float(lr))}; the sweep has {have}")
    return chosen


def parse_lr(lr: float | str | None) -> float | str | None:
    if lr is None or lr == "best" or not isinstance(lr, str):
        return lr
    try:
        return float(lr)
    except ValueError:
        raise UserError(f"--lr must be a number or 'best', got {lr!r}") from None


def _cell(r: Run) -> tuple:
    """The run's settings but lr and seed: its heatmap cell."""
    return tuple(sorted((k, ident(v)) for k, v in r.settings.items() if k not in ("lr", SEED)))


def _latest_loss(runs: list[Run]) -> float:
    """The runs' mean latest finite train loss (inf when none has one yet)."""
    losses = [[finite(row.get("loss")) for row in iter_metrics(r.path, "train")] for r in runs]
    return statistics.fmean(next((x for x in ls[::-1] if x is not None), math.inf) for ls in losses)


def _floor(r: Run) -> float | None:
    v = r.value("optimal_loss")
    if v is not None:
        return v
    for row in iter_metrics(r.path, "eval"):
        loss, above = finite(row.get("eval_loss")), finite(row.get("loss_above_floor"))
        if loss is not None and above is not None:
            return loss - above
    return None


def _kind_of(rows_of, runs: list[Run], metric: str, x: str) -> tuple[str, str]:
    """The row kind holding `metric` (train, then eval, then diag) and its axis label."""
    if metric in CURVE_METRICS:
        return CURVE_METRICS[metric]
    fields: dict[str, None] = {}
    for kind in _KINDS:
        for r in runs:
            for row in rows_of(r.path, kind):
                if metric in row:
                    return kind, f"{kind} {metric.replace('_', ' ')}"
                fields.update(dict.fromkeys(k for k in row if k not in ("kind", x)))
    raise UserError(
        f"unknown metric {metric!r} for --y; metrics.jsonl has: {', '.join(fields) or 'no rows'}"
    )


def _curve(rows_of, runs: list[Run], kind: str, x: str, y: str, positive: bool) -> pd.DataFrame:
    """Mean, min, max and count of the runs' `y` at each `x` (the index); `positive`: > 0 only."""
    pairs = [
        (t, v)
        for r in runs
        for row in rows_of(r.path, kind)
        if (t := finite(row.get(x))) is not None
        and (v := finite(row.get(y))) is not None
        and (v > 0 or not positive)
    ]
    frame = pd.DataFrame(pairs, columns=["x", "y"], dtype=float)
    return frame.groupby("x")["y"].agg(["mean", "min", "max", "count"])


def curves_figure(
    sweep_dir,
    lr: float | str | None = None,
    metric: str = "loss",
    where: dict | None = None,
    x: str = "tokens",
    color: str | None = "vocab_size",
    cols: str | None = "tie_embeddings",
    rows: str | list[str] | None = None,
    logy: bool | None = None,
) -> Figure:
    """A metrics.jsonl field against `x`, one line per `color` value at its cell's best LR or at
    `lr` (`choose_runs`), faceted by `cols` / `rows`: seed means with min-max bands, runs in
    progress dotted, the Bayes floor dashed; a note says why lines are single points."""
    lr, x = parse_lr(lr), X_ALIASES.get(x, x)
    every = scan_runs(sweep_dir)
    if not every:
        raise UserError(f"no finished runs in {sweep_dir} (and no runs in progress)")
    before = select(every, where)  # what --lr chooses from (its panels left empty are named)
    (color, cols), rows = layout.check_axes(before, {"--color": color, "--cols": cols}, rows)
    lr_axis = "lr" in (color, cols, *(rows or []))
    if lr_axis and lr == "best":
        raise UserError("--lr best picks one lr per line; it cannot be combined with lr as an axis")
    runs = choose_runs(before, lr) if not lr_axis or lr is not None else before
    # Lines at their own best LRs when there was a choice; where those differ, each legend
    # entry names its LR (a single LR is named once, in the titles).
    chose = lr in (None, "best") and not lr_axis and len({ident(r.lr) for r in before}) > 1
    best = chose and len({ident(r.lr) for r in runs}) > 1
    rows_of = functools.cache(iter_metrics)  # metrics.jsonl rows, read once per run and kind
    kind, ylabel = _kind_of(rows_of, runs, metric, x)
    logy = ("loss" in metric and "accuracy" not in metric) if logy is None else logy
    used = [c for c in (color, cols) if c]
    pooled = [] if SEED in used + (rows or []) else [SEED]
    points = layout.group_points(runs, pooled)
    facets = Facets(points, cols, rows, used, pooled + (["lr"] if best else []))
    fig = facets.figure(2.8, 0.4, sharey=True)
    colours = layout.palette(points, color)
    drawn, most, floor_named = [], 0, False
    for panel in facets.panels:
        lines = layout.split(panel.points, [color] if color else [])
        for values, pts in lines:
            drawn.append(line := layout.merge(pts))
            at = _curve(rows_of, line.runs, kind, x, metric, logy)
            colour = colours[ident(values[0] if color else None)]
            _draw_line(panel.ax, line, at, colour, _line_label(line, color, values, best))
            most = max(most, len(at))
        runs_in = [r for p in panel.points for r in p.runs]
        if "loss" in metric:  # the Bayes floor bounds losses, not other metrics
            floor_named |= _draw_floors(panel.ax, runs_in, logy, name=not floor_named)
        _label_panel(panel, runs_in, x, ylabel, logy, best or lr_axis)
    if drawn and not most:
        raise UserError(
            f"no {kind} row of metrics.jsonl has both {x!r} and {metric!r}; "
            "--x takes a metrics.jsonl field such as tokens or steps"
        )
    chosen = f"each line at its cell's best lr (lowest seed-mean {BEST_METRIC})" if chose else ""
    single = _single_note(runs, kind) if drawn and most == 1 else ""
    gone = ""
    if lr not in (None, "best"):  # the panels that no run at that LR fills
        old = Facets(layout.group_points(before, pooled), cols, rows, used, pooled + ["lr"])
        gone = _gone_note(old, {r.run_id for r in runs}, lr)
    notes = chosen, layout.pool_note(drawn, "bands"), single, gone
    return layout.finish(fig, every, runs, where, [color, cols, *(rows or [])], *notes)


plot_curves = writer(curves_figure)


def _draw_line(ax, line: Point, at: pd.DataFrame, colour, label: str) -> None:
    """A line's `_curve`: mean (dotted while running), min-max band, markers if few points."""
    xs, style = at.index.tolist(), ":" if any(not r.finished for r in line.runs) else "-"
    marker, ms = "o" if len(xs) < 5 else None, 5 if len(xs) == 1 else 3
    kw = dict(color=colour, lw=1.2, label=label, linestyle=style, marker=marker, ms=ms)
    ax.plot(xs, at["mean"].tolist(), **kw)
    if (at["count"] > 1).any():
        lo, hi = at["min"].tolist(), at["max"].tolist()
        ax.fill_between(xs, lo, hi, color=colour, alpha=0.2, linewidth=0)


def _label_panel(panel, runs: list[Run], x: str, ylabel: str, logy: bool, per_line: bool):
    """Tokens as counts (750K, 1.25M), named as steps x B x L where the panel has one B x L; the
    panel's one LR in its title unless lines name theirs."""
    ax = panel.ax
    ax.set_yscale("log" if logy else "linear")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_count(v, decimals=3)))
    head, lrs = panel.head, layout.sort_values(r.lr for r in runs)
    if runs and not per_line and len(lrs) == 1:
        head = f"{head}, lr {format_lr(lrs[0])}" if head else f"lr {format_lr(lrs[0])}"
    xlabel = layout.axis_label(x)
    sizes = {k: layout.sort_values(r.get(k) for r in runs) for k in ("batch_size", "seq_len")}
    if x == "tokens" and all(len(v) == 1 and v[0] is not None for v in sizes.values()):
        b, length = (layout.format_value(k, v[0]) for k, v in sizes.items())
        xlabel += f" (= steps \u00d7 {b} \u00d7 {length})"
    panel.label(xlabel, ylabel, panel.title(head))


def _single_note(runs: list[Run], kind: str) -> str:
    single = f"the runs have one {kind} row each: one point per run"
    if kind == "eval" and all(r.get("eval_every") == 0 for r in runs):
        single = "the runs evaluate only at the end (eval_every=0): one point per run"
    print(f"note: {single}", file=sys.stderr)
    return single


def _gone_note(old: Facets, kept: set[str], lr: float) -> str:
    """The panels of `old` (before one LR was picked) that no run `kept` fills."""
    dropped = [
        p.title() or "the only panel"
        for p in old.panels
        if p.points and not any(r.run_id in kept for q in p.points for r in q.runs)
    ]
    if not dropped:
        return ""
    return (
        f"no run at lr {format_lr(float(lr))} in {', '.join(dropped)}: "
        f"{'that panel is' if len(dropped) == 1 else 'those panels are'} left out"
    )


def _line_label(line: Point, color: str | None, values: tuple, best: bool) -> str:
    name = layout.facet_title(color, values[0]) if color else "runs"
    lrs = layout.sort_values(r.lr for r in line.runs)
    if best:  # one LR, or several when the line pools cells (--rows none)
        name += f", lr={'/'.join(format_lr(x) for x in lrs)}"
    if any(not r.finished for r in line.runs):
        name += " (running)"
    if diverged := sum(r.diverged for r in line.runs):
        n = len(line.runs)
        name += " (diverged)" if diverged == n else f" ({diverged}/{n} diverged)"
    return name


def _draw_floors(ax, runs: list[Run], logy: bool, name: bool) -> bool:
    """The panel's Bayes floors, dashed; with `name` their legend entry (one per figure)."""
    floors = sorted({round(f, 6) for r in runs if (f := _floor(r)) is not None})
    drawn = [f for f in floors if f > 0 or not logy]
    for k, f in enumerate(drawn):
        ax.axhline(f, color="black", ls="--", lw=0.8, label="floor" if name and k == 0 else None)
    if name and logy and floors and min(floors) <= 0:
        # An empty legend entry rather than free text: the legend's placement then keeps the
        # note clear of the curves.
        ax.plot([], [], " ", label="floor: 0 nats (off the log axis)")
    return name and bool(floors)
