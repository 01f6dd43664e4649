"""Sweep figures: the final-loss heatmap (the paper's Figure 5) and training curves (Figure 4).

Both read a sweep directory from disk (see `spamlang.plots.results`) and never import the trainer.
Figures are drawn on a bare `matplotlib.figure.Figure` (Agg canvas), so plotting never changes
the caller's pyplot backend, and are written atomically as PNG or PDF, chosen by the extension.

Settings other than V, LR and tying that vary across the sweep (head, language, seed, ...) give
one figure row each; `where={"head": "softmax"}` (`--where head=softmax`) keeps only matching runs.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import EngFormatter

from spamlang.errors import UserError
from spamlang.fileio import atomic_write_bytes
from spamlang.plots.results import Run, facets, finished_runs, read_metrics, scan_runs, select

HEATMAP_METRICS = {
    "final_eval_loss": "final eval loss (nats)",
    "loss_above_floor": "eval loss above floor (nats)",
    "final_train_loss": "final train loss (nats)",
}
CURVE_METRICS = {"loss": ("train", "train loss (nats)"), "eval_loss": ("eval", "eval loss (nats)")}
FIGURE_SUFFIXES = (".png", ".pdf")
# Zero losses (SpamLang at small V) have no place on a log scale: colour them as this value.
LOG_FLOOR = 1e-3
CMAP = "viridis"  # perceptually uniform and colour-blind safe
PAPER_WIDTH_IN = 7.0


def format_vocab(v: int) -> str:
    """1024 -> '1K', 131072 -> '128K', 1536 -> '1.5K', 100 -> '100'."""
    for unit, suffix in ((1 << 20, "M"), (1 << 10, "K")):
        if v >= unit and (v * 2) % unit == 0:
            return f"{v / unit:g}{suffix}"
    return str(v)


def format_lr(lr: float) -> str:
    """5e-4 -> '5e-4', 0.00025 -> '2.5e-4', 0.01 -> '1e-2'."""
    mantissa, exponent = f"{lr:.3e}".split("e")
    return f"{float(mantissa):g}e{int(exponent)}"


def check_figure_path(out_file: str | Path) -> Path:
    """A PNG or PDF output path; anything else is a UserError."""
    path = Path(out_file)
    if path.suffix.lower() not in FIGURE_SUFFIXES:
        raise UserError(f"output must end in .png or .pdf, got {str(out_file)!r}")
    return path


def save_figure(fig: Figure, out_file: str | Path) -> Path:
    """Write `fig` atomically, in the format its extension names; parent folders are created."""
    path = check_figure_path(out_file)
    buf = io.BytesIO()
    fig.savefig(buf, format=path.suffix.lower()[1:], dpi=200)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, buf.getvalue())
    return path


def _tying_panels(runs: list[Run]) -> list[bool]:
    # Tied first, as in the paper's appendix; only the settings present get a panel.
    return [t for t in (True, False) if any(r.tied == t for r in runs)]


def _cell_text(v: float) -> str:
    if abs(v) < 5e-4:
        return "0"
    if abs(v) < 0.1:
        return f"{v:.3f}"
    return f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}"


def _text_colour(rgba) -> str:
    r, g, b = rgba[:3]
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def plot_heatmap(sweep_dir, out_file, metric: str = "final_eval_loss", where: dict | None = None) -> Path:
    """Final metric of every finished run on a V x LR grid, one panel per tying setting.

    Colour is on a log scale (values below LOG_FLOOR, such as a zero loss, are coloured as
    LOG_FLOOR; the cell's text shows the real value). Diverged runs are hatched and marked "div";
    points without a finished run stay blank. Returns the written path.
    """
    check_figure_path(out_file)
    return save_figure(heatmap_figure(sweep_dir, metric, where), out_file)


def heatmap_figure(sweep_dir, metric: str = "final_eval_loss", where: dict | None = None) -> Figure:
    """The figure of `plot_heatmap`, unsaved."""
    if metric not in HEATMAP_METRICS:
        raise UserError(f"unknown metric {metric!r}; choose from {', '.join(HEATMAP_METRICS)}")
    runs = select(finished_runs(sweep_dir), where)
    rows = facets(runs)
    vocabs = sorted({r.vocab_size for r in runs})
    lrs = sorted({r.lr for r in runs})
    tyings = _tying_panels(runs)
    values = [v for r in runs if not r.diverged and (v := r.value(metric)) is not None]
    vmin = max(LOG_FLOOR, min(values, default=1.0))
    vmax = max(max(values, default=1.0), vmin * 10)
    norm = LogNorm(vmin=vmin, vmax=vmax)

    cell_w = (PAPER_WIDTH_IN - 1.2) / (len(tyings) * len(vocabs))
    font = float(np.clip(cell_w * 72 / 3.4, 4.5, 8.0))
    height = len(rows) * max(2.1, 0.3 * len(lrs) + 0.9) + 0.2
    fig = Figure(figsize=(PAPER_WIDTH_IN, height), layout="constrained")
    axes = fig.subplots(len(rows), len(tyings), squeeze=False)
    image = None
    for i, (label, members) in enumerate(rows):
        for j, tied in enumerate(tyings):
            ax = axes[i, j]
            grid = np.full((len(lrs), len(vocabs)), np.nan)
            cells = {(lrs.index(r.lr), vocabs.index(r.vocab_size)): r for r in members if r.tied == tied}
            for (y, x), r in cells.items():
                v = r.value(metric)
                if not r.diverged and v is not None:
                    grid[y, x] = max(v, vmin)
            image = ax.imshow(grid, origin="lower", aspect="auto", cmap=CMAP, norm=norm)
            for (y, x), r in cells.items():
                v = r.value(metric)
                if r.diverged:
                    ax.add_patch(Rectangle((x - 0.5, y - 0.5), 1, 1, facecolor="0.85",
                                           edgecolor="0.4", hatch="////", linewidth=0))
                    ax.text(x, y, "div", ha="center", va="center", fontsize=font, color="black")
                elif v is not None:
                    ax.text(x, y, _cell_text(v), ha="center", va="center", fontsize=font,
                            color=_text_colour(image.cmap(norm(max(v, vmin)))))
            ax.set_xticks(range(len(vocabs)), [format_vocab(v) for v in vocabs], fontsize=7)
            ax.set_yticks(range(len(lrs)), [format_lr(lr) for lr in lrs], fontsize=7)
            ax.set_xlabel("vocabulary size V", fontsize=8)
            if j == 0:
                ax.set_ylabel("learning rate", fontsize=8)
            title = "tied" if tied else "untied"
            ax.set_title(f"{title} ({label})" if label else title, fontsize=9)
    bar = fig.colorbar(image, ax=axes, shrink=0.9)
    clipped = any(v < vmin for v in values)
    bar.set_label(HEATMAP_METRICS[metric] + (f"\nlog scale, clipped at {vmin:.2g}" if clipped else ", log scale"),
                  fontsize=7)
    bar.ax.tick_params(labelsize=7)
    return fig


def _lower_median(values: list[float]) -> float:
    values = sorted(set(values))
    return values[(len(values) - 1) // 2]


def choose_runs(runs: list[Run], lr: float | str | None) -> list[Run]:
    """The runs drawn by `plot_curves`.

    lr=None: the middle LR of the sweep's grid (the lower middle one for an even grid size), the
    same for every V as in the paper's Figure 4; a float: that LR (relative tolerance 1e-6);
    "best": for each V, tying and other setting, the LR with the lowest final eval loss among
    finished, non-diverged runs (runs still going compete with their latest train loss).
    """
    if lr is None:
        lr = _lower_median([r.lr for r in runs])
    if isinstance(lr, str):
        if lr != "best":
            try:
                lr = float(lr)
            except ValueError:
                raise UserError(f"--lr must be a number or 'best', got {lr!r}") from None
        else:
            best: dict[tuple, tuple] = {}
            for r in runs:
                key = (r.vocab_size, r.tied, tuple(sorted(r.axes.items())))
                score = _best_score(r)
                if key not in best or score < best[key][0]:
                    best[key] = (score, r)
            return [r for _, r in best.values()]
    chosen = [r for r in runs if math.isclose(r.lr, float(lr), rel_tol=1e-6)]
    if not chosen:
        have = ", ".join(format_lr(x) for x in sorted({r.lr for r in runs}))
        raise UserError(f"no run has lr={format_lr(float(lr))}; the sweep has {have}")
    return chosen


def _best_score(r: Run) -> tuple:
    v = r.value("final_eval_loss")
    if r.finished and not r.diverged and v is not None:
        return (0, v)
    last = [row.get("loss") for row in read_metrics(r.path)] if r.path else []
    last = [x for x in last if isinstance(x, (int, float)) and math.isfinite(x)]
    return (1, last[-1] if last else math.inf)


def _floor(r: Run) -> float | None:
    v = r.value("optimal_loss")
    if v is not None:
        return v
    for row in read_metrics(r.path, "eval") if r.path else []:
        if isinstance(row.get("eval_loss"), (int, float)) and isinstance(row.get("loss_above_floor"), (int, float)):
            return float(row["eval_loss"]) - float(row["loss_above_floor"])
    return None


def plot_curves(sweep_dir, out_file, lr: float | str | None = None, metric: str = "loss",
                where: dict | None = None) -> Path:
    """Loss against training tokens, one line per V at one LR (see `choose_runs`), log y axis.

    One panel per tying setting; runs still in progress are drawn dotted and labelled "running",
    diverged runs are labelled "diverged"; the language's Bayes floor is a dashed line (a floor
    of 0, SpamLang's, cannot sit on a log axis and is stated in the panel instead).
    """
    check_figure_path(out_file)
    return save_figure(curves_figure(sweep_dir, lr, metric, where), out_file)


def curves_figure(sweep_dir, lr: float | str | None = None, metric: str = "loss",
                  where: dict | None = None) -> Figure:
    """The figure of `plot_curves`, unsaved."""
    if metric not in CURVE_METRICS:
        raise UserError(f"unknown metric {metric!r}; choose from {', '.join(CURVE_METRICS)}")
    kind, ylabel = CURVE_METRICS[metric]
    runs = select(scan_runs(sweep_dir), where)
    if not runs:
        raise UserError(f"no finished runs in {sweep_dir} (and no runs in progress)")
    best = lr == "best"
    runs = choose_runs(runs, lr)
    rows = facets(runs)
    vocabs = sorted({r.vocab_size for r in runs})
    tyings = _tying_panels(runs)
    colours = [line_colour(i, len(vocabs)) for i in range(len(vocabs))]
    fig = Figure(figsize=(PAPER_WIDTH_IN, 2.8 * len(rows) + 0.2), layout="constrained")
    axes = fig.subplots(len(rows), len(tyings), squeeze=False, sharey=True)
    for i, (label, members) in enumerate(rows):
        for j, tied in enumerate(tyings):
            ax = axes[i, j]
            panel = sorted((r for r in members if r.tied == tied), key=lambda r: r.vocab_size)
            for r in panel:
                points = [(row.get("tokens"), row.get(metric)) for row in read_metrics(r.path, kind)] if r.path else []
                points = [(float(t), float(y)) for t, y in points
                          if isinstance(t, (int, float)) and isinstance(y, (int, float)) and math.isfinite(y) and y > 0]
                name = f"V={format_vocab(r.vocab_size)}" + (f" lr={format_lr(r.lr)}" if best else "")
                name += "" if r.finished else " (running)"
                name += " (diverged)" if r.diverged else ""
                xs, ys = zip(*points) if points else ((), ())
                ax.plot(xs, ys, color=colours[vocabs.index(r.vocab_size)], lw=1.2, label=name,
                        linestyle="-" if r.finished else ":", marker="o" if len(xs) < 5 else None, ms=3)
            floors = sorted({round(f, 6) for r in panel if (f := _floor(r)) is not None})
            for k, f in enumerate(floors):
                if f > 0:
                    ax.axhline(f, color="black", ls="--", lw=0.8, label="floor" if k == 0 else None)
            if floors and min(floors) <= 0:
                # An empty legend entry rather than free text: the legend's placement then
                # keeps the note clear of the curves.
                ax.plot([], [], " ", label="floor: 0 nats (off the log axis)")
            ax.set_yscale("log")
            ax.xaxis.set_major_formatter(EngFormatter(sep=""))
            ax.tick_params(labelsize=7)
            ax.set_xlabel("training tokens", fontsize=8)
            if j == 0:
                ax.set_ylabel(ylabel, fontsize=8)
            title = "tied" if tied else "untied"
            if panel and not best:
                title += f", lr {format_lr(panel[0].lr)}"
            ax.set_title(f"{title} ({label})" if label else title, fontsize=9)
            if panel:
                ax.legend(fontsize=6, frameon=False)
    return fig


def line_colour(i: int, n: int):
    """The i-th of n line colours: viridis without its palest yellow end, dark = small V."""
    return colormaps[CMAP](0.85 * i / max(n - 1, 1))
