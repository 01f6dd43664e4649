"""What every sweep figure shares: its width, colours, output formats and the atomic save; drawn
on a bare `Figure` (Agg), so plotting never changes the caller's pyplot backend."""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path

from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter, NullLocator

from spamlang.errors import UserError
from spamlang.rundir.atomic import atomic_write_bytes, check_output_file

FIGURE_SUFFIXES = (".png", ".pdf")
CMAP = "viridis"  # perceptually uniform and colour-blind safe
PAPER_WIDTH_IN = 7.0
MAX_DATA_TICKS = 8  # an axis labelled at its data's values names at most this many
BEST_EDGE = "#ff3b30"  # a red that stands out against every viridis colour


def check_figure_path(out_file: str | Path) -> Path:
    """A PNG or PDF path in an existing folder, else a UserError: checked before drawing."""
    path = Path(out_file)
    if path.suffix.lower() not in FIGURE_SUFFIXES:
        raise UserError(f"output must end in .png or .pdf, got {str(out_file)!r}")
    return check_output_file(path)


def save_figure(fig: Figure, out_file: str | Path) -> Path:
    path = check_figure_path(out_file)
    buf = io.BytesIO()
    with warnings.catch_warnings():  # a glyph no font has is a box, and the sample table says so
        warnings.filterwarnings("ignore", message=r"Glyph .* missing from")
        fig.savefig(buf, format=path.suffix.lower()[1:], dpi=200)
    atomic_write_bytes(path, buf.getvalue())
    return path


def writer(figure: Callable[..., Figure]) -> Callable[..., Path]:
    """`plot_X(first, out_file, ...)` of `X_figure(first, ...)`: path checked before drawing."""

    def plot(first, out_file, *args, **kwargs) -> Path:
        check_figure_path(out_file)
        return save_figure(figure(first, *args, **kwargs), out_file)

    return plot


def line_colour(i: int, n: int):
    """The i-th of n line colours: viridis without its palest yellow end, dark = small values."""
    return colormaps[CMAP](0.85 * i / max(n - 1, 1))


def colour_bar(fig: Figure, image, axes, label: str, log: tuple | None = None, size: float = 7):
    """A colour bar beside `axes`, labelled; `log`: the (lo, hi) of a log scale, plainly ticked."""
    bar = fig.colorbar(image, ax=axes, shrink=0.9)
    bar.set_label(label, fontsize=7)
    if log:
        plain_log_ticks(bar.ax.yaxis, *log)
    bar.ax.tick_params(which="both", labelsize=size)
    return bar


def note(fig: Figure, *parts: str) -> None:
    """A caption under the panels: the non-empty parts on one line, or a line each if too wide."""
    parts = tuple(p for p in parts if p)
    if parts:
        one_line = "; ".join(parts)
        text = one_line if len(one_line) * 0.055 < fig.get_figwidth() else "\n".join(parts)
        fig.supxlabel(text, fontsize=7, color="0.3")


def plain_log_ticks(axis, lo: float, hi: float, fmt: Callable[[float], str] | None = None) -> None:
    """Label a log axis of under 3 decades with plain numbers (`fmt`, default '%g'): 1, 2, 5 x 10^k,
    or within a decade 3 to 5 round values."""
    if lo <= 0 or hi / lo >= 1000:
        return
    label = FuncFormatter(lambda x, _: fmt(x) if fmt else f"{x:g}")
    if hi / lo < 10:
        axis.set_major_locator(MaxNLocator(nbins=4, steps=[1, 2, 2.5, 5, 10]))
        axis.set_minor_locator(NullLocator())
    else:
        axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_minor_locator(LogLocator(subs="auto"))
    axis.set_major_formatter(label)
    axis.set_minor_formatter(NullFormatter())


def data_ticks(axis, values: Iterable[float], fmt: Callable[[float], str]) -> None:
    """Label an axis at the data's own values (V = 64, 1024), every k-th of more than
    MAX_DATA_TICKS, the first and the last included."""
    values = sorted({float(v) for v in values})
    if len(values) > MAX_DATA_TICKS:
        step = -(-(len(values) - 1) // (MAX_DATA_TICKS - 1))
        values = values[::step] + ([values[-1]] if (len(values) - 1) % step else [])
    axis.set_ticks(values, [fmt(v) for v in values])
    axis.set_minor_formatter(NullFormatter())
