"""Training curves (the paper's Figure 4): a metrics.jsonl value against tokens, a line per V."""

from __future__ import annotations

import math
import statistics
import sys

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from spamlang.errors import UserError
from spamlang.fields import finite
from spamlang.notation import format_count, format_lr
from spamlang.plots import layout
from spamlang.plots.canvas import writer
from spamlang.plots.layout import BEST_METRIC, SEED, Facets, Point, ident
from spamlang.results import CLASH_SUFFIX, column_values, load_metrics, read_runs, records, select

CURVE_METRICS = {
    "loss": ("train", "train loss (nats)"),
    "eval_loss": ("eval", "eval loss (nats)"),
    # A corpus run's one val set at every eval (its final eval_loss is all of val.bin).
    "val_start_loss": ("eval", "val loss, first 32K tokens (nats)"),
}
X_ALIASES = {"steps": "step"}  # --x steps: metrics.jsonl's field is `step`


def choose_runs(runs, lr: float | str | None, metrics: pd.DataFrame | None = None):
    """The rows of `runs` drawn, every seed of a chosen LR: None or "best", each cell's best LR
    (a cell with no finished run yet: the lowest latest train loss); a float, that LR."""
    if lr in (None, "best"):
        chosen = [r["run_id"] for p in layout.best_lr(runs) for r in p.runs]
        keys = [k for k in runs.attrs["settings"] if k not in ("lr", SEED)]
        for cell in layout.group_by(records(runs), keys, dict.get):  # a heatmap cell's runs
            if not any(r["run_id"] in chosen for r in cell):
                metrics = load_metrics(runs, warn=False) if metrics is None else metrics
                by_lr = [[r["run_id"] for r in g] for g in layout.group_by(cell, ["lr"], dict.get)]
                chosen += min(by_lr, key=lambda ids: _latest_loss(metrics, ids))
        return runs[runs["run_id"].isin(chosen)]
    lrs = column_values(runs, "lr")
    chosen = runs[[math.isclose(v, float(lr), rel_tol=1e-6) for v in lrs]]
    if chosen.empty:
        have = ", ".join(format_lr(x) for x in sorted(set(lrs)))
        raise UserError(f"no run has lr={format_lr(float(lr))}; the sweep has {have}")
    return chosen


def parse_lr(lr: float | str | None) -> float | str | None:
    if lr is None or lr == "best" or not isinstance(lr, str):
        return lr
    try:
        return float(lr)
    except ValueError:
        raise UserError(f"--lr must be a number or 'best', got {lr!r}") from None


def _rows(metrics: pd.DataFrame, ids, kind: str, *columns: str) -> pd.DataFrame:
    """The `kind` rows of the runs `ids` with a finite value of every one of `columns`."""
    rows = metrics[metrics["run_id"].isin(ids) & (metrics["kind"] == kind)]
    for c in columns:
        rows = rows[np.isfinite(rows[c].astype(float))] if c in rows else rows.iloc[:0]
    return rows


def _latest_loss(metrics: pd.DataFrame, ids: list[str]) -> float:
    """The runs' mean latest finite train loss (inf when none has one yet)."""
    latest = _rows(metrics, ids, "train", "loss").groupby("run_id")["loss"].last()
    return statistics.fmean(latest.get(i, math.inf) for i in ids)


def _floor(r: dict, metrics: pd.DataFrame) -> float | None:
    if (v := finite(r.get("optimal_loss"))) is not None:
        return v
    rows = _rows(metrics, [r["run_id"]], "eval", "eval_loss", "loss_above_floor")
    return None if rows.empty else float((rows["eval_loss"] - rows["loss_above_floor"]).iloc[0])


def _column(metrics: pd.DataFrame, field: str) -> str:
    """metrics.jsonl's `field` as `load_metrics` names it (an axis's name gets CLASH_SUFFIX)."""
    return field + CLASH_SUFFIX if field + CLASH_SUFFIX in metrics else field


def _kind_of(metrics: pd.DataFrame, ids, metric: str, x: str, axes) -> tuple[str, str]:
    """The row kind holding `metric` (train, then eval, then diag) and its axis label."""
    if metric in CURVE_METRICS:
        return CURVE_METRICS[metric]
    for kind in ("train", "eval", "diag"):
        if not _rows(metrics, ids, kind, _column(metrics, metric)).empty:
            return kind, f"{kind} {metric.replace('_', ' ')}"
    mine = metrics[metrics["run_id"].isin(ids)]
    skip = {"run_id", "kind", x, *axes, "finished"}
    fields = [c for c in mine if c not in skip and mine[c].notna().any()]
    have = ", ".join(fields) or "no rows"
    raise UserError(f"unknown metric {metric!r} for --y; metrics.jsonl has: {have}")


def _curve(metrics: pd.DataFrame, ids, kind: str, x: str, y: str, positive: bool) -> pd.DataFrame:
    """Mean, min, max and count of the runs' `y` at each `x` (the index); `positive`: > 0 only."""
    x, y = _column(metrics, x), _column(metrics, y)
    rows = _rows(metrics, ids, kind, x, y).reindex(columns=[x, y]).astype(float)
    rows = rows[rows[y] > 0] if positive else rows
    return rows.groupby(x)[y].agg(["mean", "min", "max", "count"])


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
    """A metrics.jsonl field against `x`, a line per `color` value at `choose_runs`' LR, faceted:
    seed means with min-max bands, runs in progress dotted, the Bayes floor dashed."""
    lr, x = parse_lr(lr), X_ALIASES.get(x, x)
    every = read_runs(sweep_dir)
    every = every[every["path"].notna()]  # a run without its folder has no curves
    if every.empty:
        raise UserError(f"no finished runs in {sweep_dir} (and no runs in progress)")
    before = select(every, where)  # what --lr chooses from (its panels left empty are named)
    (color, cols), rows = layout.check_axes(before, {"--color": color, "--cols": cols}, rows)
    lr_axis = "lr" in (color, cols, *(rows or []))
    if lr_axis and lr == "best":
        raise UserError("--lr best picks one lr per line; it cannot be combined with lr as an axis")
    metrics = load_metrics(before, warn=False)
    runs = choose_runs(before, lr, metrics) if not lr_axis or lr is not None else before
    # Lines at their own best LRs when there was a choice; where those differ, each legend
    # entry names its LR (a single LR is named once, in the titles).
    lrs = [{ident(v) for v in column_values(r, "lr")} for r in (before, runs)]
    chose = lr in (None, "best") and not lr_axis and len(lrs[0]) > 1
    best = chose and len(lrs[1]) > 1
    kind, ylabel = _kind_of(metrics, list(runs["run_id"]), metric, x, runs.attrs["axes"])
    logy = ("loss" in metric and "accuracy" not in metric) if logy is None else logy
    used = [c for c in (color, cols) if c]
    pooled = [] if SEED in used + (rows or []) else [SEED]
    points = layout.group_points(runs, pooled)
    facets = Facets(points, cols, rows, used, pooled + (["lr"] if best else []))
    fig = facets.figure(2.8, 0.4, sharey=True)
    colours = layout.palette(points, color)
    drawn, most, floor_named = [], 0, False
    for panel in facets.panels:
        for values, pts in layout.split(panel.points, [color] if color else []):
            drawn.append(line := layout.merge(pts))
            at = _curve(metrics, [r["run_id"] for r in line.runs], kind, x, metric, logy)
            colour = colours[ident(values[0] if color else None)]
            _draw_line(panel.ax, line, at, colour, _line_label(line, color, values, best))
            most = max(most, len(at))
        runs_in = [r for p in panel.points for r in p.runs]
        if "loss" in metric:  # the Bayes floor bounds losses, not other metrics
            floor_named |= _draw_floors(panel.ax, runs_in, metrics, logy, not floor_named)
        _label_panel(panel, runs_in, x, ylabel, logy, best or lr_axis)
    if drawn and not most:
        fields = "--x takes a metrics.jsonl field such as tokens or steps"
        raise UserError(f"no {kind} row of metrics.jsonl has both {x!r} and {metric!r}; {fields}")
    chosen = f"each line at its cell's best lr (lowest seed-mean {BEST_METRIC})" if chose else ""
    single = _single_note(records(runs), kind) if drawn and most == 1 else ""
    gone = ""
    if lr not in (None, "best"):  # the panels that no run at that LR fills
        old = Facets(layout.group_points(before, pooled), cols, rows, used, pooled + ["lr"])
        gone = _gone_note(old, set(runs["run_id"]), lr)
    notes = chosen, layout.pool_note(drawn, "bands"), single, gone
    return layout.finish(fig, every, runs, where, [color, cols, *(rows or [])], *notes)


plot_curves = writer(curves_figure)


def _draw_line(ax, line: Point, at: pd.DataFrame, colour, label: str) -> None:
    """A line's `_curve`: mean (dotted while running), min-max band, markers if few points."""
    xs, style = at.index.tolist(), ":" if any(not r["finished"] for r in line.runs) else "-"
    marker, ms = "o" if len(xs) < 5 else None, 5 if len(xs) == 1 else 3
    kw = dict(color=colour, lw=1.2, label=label, linestyle=style, marker=marker, ms=ms)
    ax.plot(xs, at["mean"].tolist(), **kw)
    if (at["count"] > 1).any():
        lo, hi = at["min"].tolist(), at["max"].tolist()
        ax.fill_between(xs, lo, hi, color=colour, alpha=0.2, linewidth=0)


def _label_panel(panel, runs: list[dict], x: str, ylabel: str, logy: bool, per_line: bool):
    """Tokens as counts (750K), named as steps x B x L where the panel has one B x L; the panel's
    one LR in its title unless lines name theirs."""
    ax = panel.ax
    ax.set_yscale("log" if logy else "linear")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_count(v, decimals=3)))
    head, lrs = panel.head, layout.sort_values(r["lr"] for r in runs)
    if runs and not per_line and len(lrs) == 1:
        head = f"{head}, lr {format_lr(lrs[0])}" if head else f"lr {format_lr(lrs[0])}"
    xlabel = layout.axis_label(x)
    sizes = {k: layout.sort_values(r.get(k) for r in runs) for k in ("batch_size", "seq_len")}
    if x == "tokens" and all(len(v) == 1 and v[0] is not None for v in sizes.values()):
        b, length = (layout.format_value(k, v[0]) for k, v in sizes.items())
        xlabel += f" (= steps \u00d7 {b} \u00d7 {length})"
    panel.label(xlabel, ylabel, panel.title(head))


def _single_note(runs: list[dict], kind: str) -> str:
    single = f"the runs have one {kind} row each: one point per run"
    if kind == "eval" and all(r.get("eval_every") == 0 for r in runs):
        single = "the runs evaluate only at the end (eval_every=0): one point per run"
    print(f"note: {single}", file=sys.stderr)
    return single


def _gone_note(old: Facets, kept: set[str], lr: float) -> str:
    """The panels of `old` (before one LR was picked) that no run `kept` fills."""
    empty = [
        p
        for p in old.panels
        if p.points and not any(r["run_id"] in kept for q in p.points for r in q.runs)
    ]
    if not (dropped := [p.title() or "the only panel" for p in empty]):
        return ""
    which = "that panel is" if len(dropped) == 1 else "those panels are"
    return f"no run at lr {format_lr(float(lr))} in {', '.join(dropped)}: {which} left out"


def _line_label(line: Point, color: str | None, values: tuple, best: bool) -> str:
    name = layout.facet_title(color, values[0]) if color else "runs"
    lrs = layout.sort_values(r["lr"] for r in line.runs)
    if best:  # one LR, or several when the line pools cells (--rows none)
        name += f", lr={'/'.join(format_lr(x) for x in lrs)}"
    if any(not r["finished"] for r in line.runs):
        name += " (running)"
    if diverged := sum(bool(r.get("diverged")) for r in line.runs):
        n = len(line.runs)
        name += " (diverged)" if diverged == n else f" ({diverged}/{n} diverged)"
    return name


def _draw_floors(ax, runs: list[dict], metrics, logy: bool, name: bool) -> bool:
    """The panel's Bayes floors, dashed; with `name` their legend entry (one per figure)."""
    floors = sorted({round(f, 6) for r in runs if (f := _floor(r, metrics)) is not None})
    drawn = [f for f in floors if f > 0 or not logy]
    for k, f in enumerate(drawn):
        ax.axhline(f, color="black", ls="--", lw=0.8, label="floor" if name and k == 0 else None)
    if name and logy and floors and min(floors) <= 0:  # a legend entry: kept clear of the curves
        ax.plot([], [], " ", label="floor: 0 nats (off the log axis)")
    return name and bool(floors)
