"""Per-symbol figures: `plot symbols` (final loss binned by exposure) and `plot recency` (final
loss against steps since last shown, Adam's memory marked), both at each cell's best LR."""

from __future__ import annotations

import math
import sys
import zipfile

import numpy as np
import pandas as pd
from matplotlib.colors import LogNorm, Normalize
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from spamlang.errors import UserError
from spamlang.plots import layout
from spamlang.plots.canvas import BEST_EDGE, CMAP, colour_bar, note, writer
from spamlang.plots.layout import SEED, Facets, Point, facet_title, format_value
from spamlang.plots.sweep import color_limits
from spamlang.results import records, select
from spamlang.rundir.reading import read_object, read_symbols
from spamlang.rundir.schema import ADAM_B2, RESULT, SYMBOLS

COLOR = "vocab_size"  # plot symbols: one colour per V
# What tells the panels of plot recency apart, always named in each title.
TITLED = ("vocab_size", "batch_size", ADAM_B2, "sampling", "tie_embeddings", "lr")


def _curve(run: dict) -> dict | None:
    result = read_object(run["path"] / RESULT) if run["path"] else None
    curve = (result or {}).get("symbol_curve")
    return curve if curve and curve.get("exposure") else None


def symbols_figure(sweep_dir, *, where: dict | None = None, cols=None, rows=None) -> Figure:
    """`plot symbols`: each symbol's loss against its exposure, a line per V and seed."""
    runs = select(layout.finished_runs(sweep_dir), where)
    runs = runs[[_curve(r) is not None for r in records(runs)]]
    if runs.empty:
        why = "symbol_curve in its result.json (SpamLang-family runs write one since per-symbol "
        raise UserError(f"no finished run in {sweep_dir} has a {why}scoring exists)")
    (cols,), rows = layout.check_axes(runs, {"--cols": cols}, rows)
    pts = layout.best_lr(runs)
    facets = Facets(pts, cols, rows, [COLOR] + ([cols] if cols else []), [SEED, "lr"])
    colours = layout.palette(pts, COLOR)

    fig = facets.figure(2.7, 0.5, sharex=True, sharey=True)
    for panel in facets.panels:
        for p in sorted(panel.points, key=lambda p: p.value(COLOR)):
            V = p.value(COLOR)
            colour = colours[layout.ident(V)]
            for k, run in enumerate(sorted(p.runs, key=lambda r: r.get(SEED) or 0)):
                _draw_curve(panel.ax, run, colour, facet_title(COLOR, V) if k == 0 else None)
            panel.ax.axhline(0.1 * math.log(V), color=colour, lw=0.6, ls="--")
        panel.ax.set_yscale("log")
        xlabel = "exposure: training sequences that showed the symbol"
        panel.label(xlabel, "symbol loss (bin median, nats)")
    note(
        fig,
        "one line per seed at each cell's best LR (lowest seed-mean final eval loss)",
        "dashed: 0.1 log V, the learned threshold; diamond: updates_to_learn (hollow: an "
        "upper bound, the least-exposed bin was already half learned)",
    )
    return fig


plot_symbols = writer(symbols_figure)


def _draw_curve(ax, run, colour, label) -> None:
    curve = _curve(run)
    kw = dict(color=colour, lw=1.0, marker=".", ms=3, label=label)
    ax.plot(curve["exposure"], curve["loss_median"], **kw)
    value = run.get("updates_to_learn")
    if isinstance(value, (int, float)) and math.isfinite(value):
        threshold = 0.1 * math.log(run.get(COLOR))
        face = "white" if run.get("updates_to_learn_bound") == "upper" else colour  # bound: hollow
        kw = dict(marker="D", ms=4, color=colour, mec="black", mew=0.5, mfc=face)
        ax.plot([value], [threshold], **kw)


def recency_figure(dirs: list, *, where: dict | None = None, cols=None, rows=None) -> Figure:
    """`plot recency`: each symbol's loss against the steps since it was last shown, a panel per
    run of `dirs` (run or sweep directories); runs without a symbols.npz are named on stderr."""
    frames = [layout.finished_runs(d) for d in dirs]
    runs = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    runs.attrs["settings"] = list(dict.fromkeys(k for f in frames for k in f.attrs["settings"]))
    runs = select(runs, where)
    (cols,), rows = layout.check_axes(runs, {"--cols": cols}, rows)
    points, arrays = _with_symbols(runs, dirs)
    used = [cols] if cols else []
    facets = Facets(points, cols, rows, used, [SEED, "lr"])
    # One colour scale for every panel, over the counts of the symbols shown.
    counts = np.concatenate([s["appearances"][s["last_step"] >= 0] for s in arrays.values()])
    lo, hi, log = color_limits(counts.tolist())
    norm = LogNorm(lo, hi) if log else Normalize(lo, hi)

    fig = facets.figure(2.6, 0.8, sharey=True)
    for panel in facets.panels:
        if len(panel.points) > 1:
            share = f"{len(panel.points)} runs would share the panel '{panel.title()}'"
            raise UserError(f"{share}: give --rows / --cols the settings that tell them apart")
        if not panel.points:
            panel.ax.set_axis_off()
            continue
        run = panel.points[0].runs[0]
        image = _draw_run(panel, run, arrays[id(run)], norm, _title(run, facets.row_keys + used))
    label = "appearances (training sequences that showed the symbol)"
    colour_bar(fig, image, facets.grid, label, (lo, hi) if log else None, size=6)
    panels = "each panel: a cell's best LR (lowest seed-mean final eval loss), seed 0"
    red = "red line: Adam's memory min(1/(1\u2212b2), steps) (lazy_adamw: counted in the row's "
    note(fig, panels, red + "own appearances)", "dashed: chance, log V")
    return fig


def _with_symbols(runs, dirs: list) -> tuple[list[Point], dict[int, dict]]:
    """A point of each cell's best-LR run of smallest seed with a readable symbols.npz, and the
    arrays by id(run); runs whose file is missing or damaged are named on stderr."""
    points, arrays, missing, damaged = [], {}, [], []
    for p in layout.best_lr(runs):
        run = min(p.runs, key=lambda r: (r.get(SEED) is None, r.get(SEED) or 0))
        try:
            npz = read_symbols(run["path"]) if run["path"] else None
        except (UserError, zipfile.BadZipFile) as e:
            damaged.append(f"{run['run_id']} ({e})")
            continue
        if npz is None:
            missing.append(run["run_id"])
        else:
            points.append(Point([run], p.settings))
            arrays[id(run)] = npz
    if damaged:
        why = f"whose {SYMBOLS} cannot be read: {', '.join(damaged)}"
        print(f"warning: skipped {len(damaged)} run(s) {why}", file=sys.stderr)
    if not points:
        why = "(runs of a position-invariant language write one when they finish)"
        raise UserError(f"no run in {', '.join(map(str, dirs))} has a readable {SYMBOLS} {why}")
    if missing:
        why = f"without {SYMBOLS}: {', '.join(missing)}"
        print(f"warning: skipped {len(missing)} run(s) {why}", file=sys.stderr)
    return points, arrays


plot_recency = writer(recency_figure)


def _draw_run(panel, run: dict, s: dict, norm, title: str):
    """`s`: the run's symbols.npz arrays (last_step: 1 .. steps, -1 for a symbol never shown)."""
    ax, loss, steps, vocab = panel.ax, s["loss"], s["steps"], len(s["loss"])
    shown, never = s["last_step"] >= 0, s["last_step"] < 0
    kw = dict(cmap=CMAP, norm=norm, s=4, linewidths=0, rasterized=True, gid="shown")
    kw["label"] = f"shown ({int(shown.sum())})"
    image = ax.scatter(steps - s["last_step"][shown], loss[shown], c=s["appearances"][shown], **kw)
    if never.any():
        label = f"never shown ({int(never.sum())}), at x = steps"
        kw = dict(marker="x", s=10, color="0.35", linewidths=0.6, gid="never", label=label)
        ax.scatter(np.full(int(never.sum()), steps), loss[never], **kw)
    chance = f"chance log V = {np.log(vocab):.2f}"
    ax.axhline(np.log(vocab), color="0.3", lw=0.8, ls="--", label=chance)
    memory = run.get("adam_memory_steps")  # None for optimizers without a second moment
    if isinstance(memory, (int, float)) and memory > 0:
        # min(memory, steps): a shorter run's bias-corrected second moment averages all of it.
        effective = min(float(memory), steps)
        capped = f", capped at {steps} steps" if memory > steps else ""
        label = f"Adam memory 1/(1\u2212b2) = {memory:g}{capped}"
        ax.axvline(effective, color=BEST_EDGE, lw=1.0, label=label)
    # Symlog: a symbol shown in the very last batch is 0 steps ago.
    ax.set_xscale("symlog", linthresh=1.0, linscale=0.6)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlim(left=0)
    ax.set_yscale("log", nonpositive="clip")
    ax.set_title(title, fontsize=7)
    ax.set_xlabel("steps since last appearance (steps \u2212 last_step)", fontsize=7)
    if panel.col == 0:
        ax.set_ylabel("final loss on 's s' (nats)", fontsize=7)
    ax.tick_params(which="both", labelsize=6)
    ax.legend(fontsize=5, loc="best", framealpha=0.9, edgecolor="none")
    return image


def _title(run: dict, faceted: list[str]) -> str:
    """What tells this panel apart: TITLED, then any other setting the panels are split by."""
    names = list(TITLED) + [k for k in faceted if k not in TITLED]
    optimizer = run.get("optimizer")
    parts = [] if optimizer in (None, "adamw") else [str(optimizer)]
    no_b2 = optimizer is not None and run.get("adam_memory_steps") is None  # sgd, adafactor
    for k in names:
        if (v := run.get(k)) is None or (k == ADAM_B2 and no_b2):
            continue
        if k == "sampling":
            parts.append(str(v))
        elif k == "lr":
            parts.append(f"lr {format_value(k, v)}")
        else:
            parts.append(facet_title(k, v).replace("batch_size=", "B=", 1))
    if len(parts) <= 3:
        return ", ".join(parts)
    half = (len(parts) + 1) // 2
    return ", ".join(parts[:half]) + "\n" + ", ".join(parts[half:])
