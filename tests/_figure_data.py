"""What a figure draws, as plain data: per panel its title, axes, tick labels, lines, texts,
patches, scatter points and cells, rounded; figures equal here are equal at the data level."""

from __future__ import annotations

import numpy as np
from matplotlib.colors import to_hex


def _num(values) -> list:
    return [None if not np.isfinite(v) else float(f"{v:.9g}") for v in np.ravel(values)]


def _colour(c) -> str:
    try:
        return to_hex(c, keep_alpha=True)
    except (TypeError, ValueError):
        return str(c)


def _panel(ax) -> dict:
    legend = ax.get_legend()
    return {
        "title": ax.get_title(),
        "labels": (ax.get_xlabel(), ax.get_ylabel()),
        "scales": (ax.get_xscale(), ax.get_yscale()),
        "ticks": (
            [t.get_text() for t in ax.get_xticklabels()],
            [t.get_text() for t in ax.get_yticklabels()],
        ),
        "lines": [
            (
                ln.get_label(),
                _num(ln.get_xdata()),
                _num(ln.get_ydata()),
                ln.get_linestyle(),
                str(ln.get_marker()),
                _colour(ln.get_color()),
                ln.get_gid(),
            )
            for ln in ax.get_lines()
        ],
        "texts": sorted((tuple(_num(t.get_position())), t.get_text()) for t in ax.texts),
        "patches": [
            (
                type(p).__name__,
                _num(p.get_bbox().bounds),
                p.get_fill(),
                p.get_hatch(),
                _colour(p.get_edgecolor()),
            )
            for p in ax.patches
        ],
        "collections": [
            (
                type(c).__name__,
                c.get_gid(),
                _num(c.get_offsets()),
                [_num(p.vertices) for p in c.get_paths()][:50] if hasattr(c, "get_paths") else None,
            )
            for c in ax.collections
        ],
        "images": [
            (
                _num(im.get_array().filled(np.nan)),
                _num((im.norm.vmin, im.norm.vmax)),
                type(im.norm).__name__,
            )
            for im in ax.images
        ],
        "legend": [t.get_text() for t in legend.get_texts()] if legend else [],
    }


def figure_data(fig, draw: bool = False) -> dict:
    """The figure's captions and every visible panel's `_panel`, subfigures' included; `draw`:
    the tick labels of automatic locators too, which exist only once drawn (slower)."""
    if draw:
        fig.draw_without_rendering()
    return {
        "titles": [f._suptitle.get_text() if f._suptitle else "" for f in [fig, *fig.subfigs]],
        "caption": fig._supxlabel.get_text() if fig._supxlabel else "",
        "panels": [_panel(ax) for ax in fig.axes if ax.get_visible()],  # subfigures' too
    }
