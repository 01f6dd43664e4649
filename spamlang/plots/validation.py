"""`spamlang law validate`'s figure: the law's leave-one-sweep-out predictions against measured."""

from __future__ import annotations

from matplotlib.figure import Figure

from spamlang.plots.canvas import PAPER_WIDTH_IN, line_colour, writer


def validation_figure(table, offset: float) -> Figure:
    """Scatter `spamlang.law.leave_one_out`'s table (sweep, measured, predicted, extrapolation) on
    log axes, each loss plus the law's `offset` (a loss of 0 has a place; hollow: extrapolated)."""
    fig = Figure(figsize=(PAPER_WIDTH_IN * 0.6, PAPER_WIDTH_IN * 0.6))
    ax = fig.add_subplot()
    names = list(dict.fromkeys(table["sweep"]))
    for i, name in enumerate(names):
        part = table[table["sweep"] == name]
        colour = line_colour(i, len(names))
        inside = (part["extrapolation"] == "").to_numpy()
        label = name  # the legend names a sweep once, by the markers it has
        for mask, face in ((inside, colour), (~inside, "none")):
            if mask.any():
                xy = part["measured"][mask] + offset, part["predicted"][mask] + offset
                ax.scatter(*xy, s=18, facecolors=face, edgecolors=colour, label=label)
                label = None
    ends = table[["measured", "predicted"]].to_numpy() + offset
    ax.plot([ends.min(), ends.max()], [ends.min(), ends.max()], color="0.5", lw=0.8, zorder=0)
    xlabel = f"measured best-LR loss + {offset:g}"
    ylabel = f"predicted (fitted on the other sweeps) + {offset:g}"
    ax.set(xscale="log", yscale="log", xlabel=xlabel, ylabel=ylabel)
    ax.legend(fontsize=7, title="sweep (hollow: extrapolated)", title_fontsize=7)
    fig.tight_layout()
    return fig


plot_validation = writer(validation_figure)  # spamlang law validate --output FILE
