"""The sample table (the paper's Table 1) as a figure: a row per sample, a coloured cell a token."""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from spamlang import glyphs
from spamlang.plots.canvas import PAPER_WIDTH_IN, check_figure_path, save_figure

_CELL_IN = 0.2  # side of one token cell, inches
_FONT = "DejaVu Sans"  # ships with matplotlib, so every machine draws the same table
_STATS_IN = 2.8  # room for the four statistic columns


def plot_samples(
    result, out_file, *, title: str, notes: str, colours: dict[str, str], wrong: str, ids: bool
) -> Path:
    """Draw a `spamlang.sample.SampleResult` as a coloured token table with per-sample statistics,
    in the words the terminal and the HTML page use: `title`, `notes` (under the table),
    `colours` ({token kind: colour}, the legend's order), `wrong` (the kind drawn in bold). A
    token whose glyph the font lacks (Indic scripts, Ethiopic) shows its id in small digits
    instead of an empty box; with `ids` every cell does."""
    check_figure_path(out_file)
    n, length = result.tokens.shape
    kinds = result.kinds()
    width = max(PAPER_WIDTH_IN, length * _CELL_IN + _STATS_IN + 0.5)
    fig = Figure(figsize=(width, (n + 4.2) * _CELL_IN * 1.25 + 0.3))
    ax = fig.add_axes((0.01, 0.1, 0.98, 0.72))  # room below for the definitions
    ax.set_axis_off()
    x_stats = length + 0.8
    step = _STATS_IN / _CELL_IN / 4  # stat columns, in cell units

    def stats_row(y: float, values, **style) -> None:
        for j, v in enumerate(values):
            ax.text(x_stats + (j + 1) * step, y, v, ha="right", va="center", fontsize=7, **style)

    stats_row(0.9, ("correct", "1st err", "run", "repeat"), weight="bold")
    for i, (tokens, row_kinds, s) in enumerate(zip(result.tokens, kinds, result.stats)):
        y = -i
        ax.text(-0.7, y, str(i), ha="right", va="center", fontsize=7)
        for x, (token, k) in enumerate(zip(tokens.tolist(), row_kinds)):
            cell = Rectangle((x - 0.5, y - 0.45), 0.95, 0.9, facecolor=colours[k], linewidth=0)
            ax.add_patch(cell)
            label, is_glyph = (str(int(token)), False) if ids else cell_label(token)
            # A glyph at 8 pt, bold when wrong; 4-7 digits must fit a 0.2-inch cell.
            style = (
                dict(fontsize=8, weight="bold" if k == wrong else "normal")
                if is_glyph
                else dict(fontsize=min(4.5, 15 / len(label)))
            )
            ax.text(x, y, label, ha="center", va="center", family=_FONT, **style)
        first = "-" if s.first_error < 0 else str(s.first_error)
        stats_row(
            y,
            (f"{100 * s.fraction_correct:.0f}%", first, str(s.longest_run), str(s.longest_repeat)),
        )
    m = result.summary
    mean = (
        f"{100 * m.mean_fraction_correct:.0f}%",
        "-" if m.mean_first_error is None else f"{m.mean_first_error:.1f}",
        f"{m.mean_longest_run:.1f}",
        f"{m.mean_longest_repeat:.1f}",
    )
    ax.text(x_stats, -n, "mean", ha="right", va="center", fontsize=7, style="italic")
    stats_row(-n, mean, style="italic")
    ax.set_xlim(-1.5, x_stats + 4 * step + 0.3)
    ax.set_ylim(-n - 0.6, 1.4)
    fig.suptitle(title, fontsize=7, x=0.01, ha="left", y=0.97)
    fig.text(0.01, 0.005, notes, fontsize=6, color="0.3", ha="left", va="bottom", wrap=True)
    handles = [Patch(facecolor=c, label=k) for k, c in colours.items()]
    kw = dict(loc="upper right", ncol=3, fontsize=7, frameon=False, bbox_to_anchor=(0.99, 0.93))
    fig.legend(handles=handles, **kw)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph .* missing from")
        return save_figure(fig, out_file)


def cell_label(token: int) -> tuple[str, bool]:
    """(its glyph, True), or (its id in digits, False) where the figure font lacks the glyph."""
    g = glyphs.glyph(token)
    return (g, True) if ord(g) in _font_code_points() else (str(int(token)), False)


@functools.cache
def _font_code_points() -> frozenset[int]:
    """Code points that both the regular and the bold face of the figure font can draw."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    faces = [
        FT2Font(font_manager.findfont(font_manager.FontProperties(family=_FONT, weight=w)))
        for w in ("normal", "bold")
    ]
    return frozenset(set(faces[0].get_charmap()) & set(faces[1].get_charmap()))
