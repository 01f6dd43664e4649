"""The law's leave-one-sweep-out test as a figure: predicted against measured, a colour per sweep
(the table `spamlang.law.leave_one_out` computes, passed in by `spamlang law validate`)."""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from spamlang.plots.canvas import PAPER_WIDTH_IN, check_figure_path, line_colour, save_figure


def plot_validation(table, out_file: str | Path, offset: float) -> Path:
    """Scatter `spamlang.law.leave_one_out`'s table (sweep, measured, predicted, extrapolation) on
    log axes, each loss plus the law's `offset` (a loss of 0 has a place; hollow: extrapolated)."""
    check_figure_path(out_file)
    fig = Figure(figsize=(PAPER_WIDTH_IN * 0.6, PAPER_WIDTH_IN * 0.6))
    ax = fig.add_subplot()
    names = list(dict.fromkeys(table["sweep"]))
    for i, name in enumerate(names):
        part = table[table["sweep"] == name]
        colour = line_colour(i, len(names))
        inside = (part["extrapolation"] == "").to_numpy()
        labelled = False
        for mask, face in ((inside, colour), (~inside, "none")):
            if mask.any():  # the legend names a sweep once, by the markers it has
                xy = part["measured"][mask] + offset, part["predicted"][mask] + offset
                label = None if labelled else name
                ax.scatter(*xy, s=18, facecolors=face, edgecolors=colour, label=label)
                labelled = True
    ends = table[["measured", "predicted"]].to_numpy() + offset
    ax.plot([ends.min(), ends.max()], [ends.min(), ends.max()], color="0.5", lw=0.8, zorder=0)
    xlabel = f"measured best-LR loss + {offset:g}"
    ylabel = f"predicted (fitted on the other sweeps) + {offset:g}"
    ax.set(xscale="log", yscale="log", xlabel=xlabel, ylabel=ylabel)
    ax.legend(fontsize=7, title="sweep (hollow: extrapolated)", title_fontsize=7)
    fig.tight_layout()
    return save_figure(fig, out_file)
