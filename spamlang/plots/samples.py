"""The sample table (the paper's Table 1) as a figure: a row per sample, a coloured cell a token."""

from __future__ import annotations

import functools
from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.patches import Patch, Rectangle

from spamlang import glyphs
from spamlang.plots.canvas import PAPER_WIDTH_IN, writer

_CELL_IN = 0.2  # side of one token cell, inches
_STATS_IN = 2.8  # room for the four statistic columns
_SHOWN_MISSING = 3  # tokens named in the note on glyphs no font here draws


def samples_figure(
    result, *, cells, title: str, notes: str, colours: dict[str, str], wrong: str, ids: bool
) -> Figure:
    """A `spamlang.sample.SampleResult` as a coloured token table with per-sample statistics;
    `colours`: {token kind: colour}, the legend's order; `wrong`: the kind drawn in bold."""
    n, length = result.tokens.shape
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
    missing: dict[int, str] = {}  # token -> its glyph, which no font here draws
    for i, (tokens, row_kinds, s) in enumerate(zip(result.tokens, result.kinds(), result.stats)):
        y = -i
        ax.text(-0.7, y, str(i), ha="right", va="center", fontsize=7)
        for x, (token, k, label) in enumerate(zip(tokens.tolist(), row_kinds, cells[i])):
            ax.add_patch(Rectangle((x - 0.5, y - 0.45), 0.95, 0.9, facecolor=colours[k], lw=0))
            font, drawn = cell_font(label, bold=k == wrong, digits=ids)
            if not drawn:
                missing[token] = label
            ax.text(x, y, label, ha="center", va="center", fontproperties=font)
        first = "-" if s.first_error < 0 else str(s.first_error)
        runs = str(s.longest_run), str(s.longest_repeat)
        stats_row(y, (f"{100 * s.fraction_correct:.0f}%", first, *runs))
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
    notes += _missing_note(missing)
    fig.text(0.01, 0.005, notes, fontsize=6, color="0.3", ha="left", va="bottom", wrap=True)
    handles = [Patch(facecolor=c, label=k) for k, c in colours.items()]
    kw = dict(loc="upper right", ncol=3, fontsize=7, frameon=False, bbox_to_anchor=(0.99, 0.93))
    fig.legend(handles=handles, **kw)
    return fig


plot_samples = writer(samples_figure)  # to a .png or .pdf file


def cell_font(label: str, bold: bool, digits: bool) -> tuple[FontProperties, bool]:
    """The font of a token cell's `label` (the figure font, else the first font here with the
    glyph; `digits`: small enough for an id to fit), and whether it draws it."""
    if digits:
        return FontProperties(fname=glyphs.figure_font_file(), size=min(4.5, 15 / len(label))), True
    face = glyphs.figure_font_file("bold" if bold else "normal")
    if ord(label) in glyphs.figure_font_code_points():
        return FontProperties(fname=face, size=8), True
    other = _font_with(ord(label))
    return FontProperties(fname=other or face, size=8), other is not None


@functools.cache
def _font_with(code_point: int) -> str | None:
    """A font file of this machine (sans-serif first) that draws `code_point`, or None."""
    for path in _machine_fonts():
        if (face := _face(path)) is not None and face.get_char_index(code_point):
            return path
    return None


@functools.cache
def _machine_fonts() -> list[str]:
    from matplotlib import font_manager

    # Last Resort draws every code point as its block's sign in a box: not the glyph itself.
    paths = {f.fname for f in font_manager.fontManager.ttflist if "LastResort" not in f.fname}
    return sorted(paths, key=lambda p: ("Sans" not in Path(p).name, p))


@functools.cache
def _face(path: str):
    from matplotlib.ft2font import FT2Font

    try:
        return FT2Font(path)
    except (OSError, RuntimeError):  # unreadable or not a font FreeType knows
        return None


def _missing_note(missing: dict[int, str]) -> str:
    if not missing:
        return ""
    shown = list(missing.items())[:_SHOWN_MISSING]
    named = ", ".join(f"{t} (U+{ord(g):04X})" for t, g in shown)
    more = f" and {len(missing) - len(shown)} more" if len(missing) > len(shown) else ""
    how = "(install a font that has them, such as Noto, or draw ids with --ids)"
    return f"; boxes: glyphs in no font of this machine, tokens {named}{more} {how}"
