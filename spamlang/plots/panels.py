"""The panel loop every faceted figure shares: one axes per (row of `layout.facets`, value of
the column facet), with the points that fall in it and a title naming both."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from matplotlib.figure import Figure

from spamlang.plots.layout import Point, facet_title, ident


@dataclass
class Panel:
    ax: Any  # matplotlib Axes
    row: int
    col: int
    points: list[Point]
    title: str  # "<cols facet> (<row label>)", either part alone, or ""


def panel_grid(
    fig: Figure, row_groups: list, col_values: list, cols: str | None, **subplots
) -> tuple[Any, list[Panel]]:
    """The axes grid (rows x columns, never squeezed) and its panels in reading order;
    `subplots` go to `Figure.subplots` (sharex, sharey)."""
    grid = fig.subplots(len(row_groups), len(col_values), squeeze=False, **subplots)
    panels = []
    for i, (row_label, members) in enumerate(row_groups):
        for j, cv in enumerate(col_values):
            points = [p for p in members if cols is None or ident(p.value(cols)) == ident(cv)]
            title = facet_title(cols, cv) if cols else ""
            title = f"{title} ({row_label})" if title and row_label else title or row_label
            panels.append(Panel(grid[i, j], i, j, points, title))
    return grid, panels
