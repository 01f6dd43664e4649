"""What every sweep figure shares: its width, colours, output formats and the atomic save.

Figures are drawn on a bare `matplotlib.figure.Figure` (Agg canvas), so plotting never changes
the caller's pyplot backend, and are written atomically as PNG or PDF, chosen by the extension.
"""

from __future__ import annotations

import io
from pathlib import Path

from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from spamlang.errors import UserError
from spamlang.fileio import atomic_write_bytes, check_output_file

FIGURE_SUFFIXES = (".png", ".pdf")
CMAP = "viridis"  # perceptually uniform and colour-blind safe
PAPER_WIDTH_IN = 7.0
BEST_EDGE = "#ff3b30"  # a red that stands out against every viridis colour


def check_figure_path(out_file: str | Path) -> Path:
    """A PNG or PDF output path in an existing folder (`spamlang.fileio.check_output_file`);
    anything else is a UserError. Figure functions call it before drawing."""
    path = Path(out_file)
    if path.suffix.lower() not in FIGURE_SUFFIXES:
        raise UserError(f"output must end in .png or .pdf, got {str(out_file)!r}")
    return check_output_file(path)


def save_figure(fig: Figure, out_file: str | Path) -> Path:
    """Write `fig` atomically, in the format its extension names, into an existing folder."""
    path = check_figure_path(out_file)
    buf = io.BytesIO()
    fig.savefig(buf, format=path.suffix.lower()[1:], dpi=200)
    atomic_write_bytes(path, buf.getvalue())
    return path


def line_colour(i: int, n: int):
    """The i-th of n line colours: viridis without its palest yellow end, dark = small values."""
    return colormaps[CMAP](0.85 * i / max(n - 1, 1))


def note(fig: Figure, *parts: str) -> None:
    """A caption under the panels (how points were averaged, what outlines mean): the non-empty
    parts on one line, or one line each when that would not fit the figure's width."""
    parts = tuple(p for p in parts if p)
    if parts:
        one_line = "; ".join(parts)
        text = one_line if len(one_line) * 0.055 < fig.get_figwidth() else "\n".join(parts)
        fig.supxlabel(text, fontsize=7, color="0.3")


def plain_log_ticks(axis, lo: float, hi: float) -> None:
    """Label a log axis spanning less than 3 decades at 1, 2 and 5 x 10^k as plain numbers:
    matplotlib's default labels every minor tick in large scientific notation there."""
    if lo <= 0 or hi / lo >= 1000:
        return
    plain = FuncFormatter(lambda x, _: f"{x:g}")
    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.set_minor_locator(LogLocator(subs="auto"))
    axis.set_major_formatter(plain)
    axis.set_minor_formatter(NullFormatter())
