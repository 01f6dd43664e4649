"""Predicted against measured loss of a leave-one-sweep-out table, one colour per sweep."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from spamlang.law.formula import LOG_OFFSET


def plot_validation(table, out_file: str | Path) -> Path:
    """Scatter a `spamlang.law.leave_one_out` table (log axes, L + 0.01 so that a loss of 0
    has a place; hollow markers: predicted by extrapolation) with the diagonal; write it."""
    from matplotlib.figure import Figure

    from spamlang.plots.canvas import PAPER_WIDTH_IN, check_figure_path, line_colour, save_figure

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
                ax.scatter(
                    part["measured"][mask] + LOG_OFFSET,
                    part["predicted"][mask] + LOG_OFFSET,
                    s=18,
                    facecolors=face,
                    edgecolors=colour,
                    label=None if labelled else name,
                )
                labelled = True
    ends = (
        np.array(
            [
                table["measured"].min(),
                table["measured"].max(),
                table["predicted"].min(),
                table["predicted"].max(),
            ]
        )
        + LOG_OFFSET
    )
    ax.plot([ends.min(), ends.max()], [ends.min(), ends.max()], color="0.5", lw=0.8, zorder=0)
    ax.set(
        xscale="log",
        yscale="log",
        xlabel=f"measured best-LR loss + {LOG_OFFSET:g}",
        ylabel=f"predicted (fitted on the other sweeps) + {LOG_OFFSET:g}",
    )
    ax.legend(fontsize=7, title="sweep (hollow: extrapolated)", title_fontsize=7)
    fig.tight_layout()
    return save_figure(fig, out_file)
