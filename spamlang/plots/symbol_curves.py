"""Per-symbol sample complexity (`spamlang plot symbols`): symbol loss against its exposure.

Each finished run of a SpamLang-family sweep scored every symbol (up to 4,096 of them) on its
own sequence at the end and binned the scores by how many training sequences showed the
symbol (`symbol_curve` in result.json, `spamlang.coverage.symbols`). This draws the bins' median
loss against their mean exposure, one colour per V, one line per seed (so the seed spread is
the spread of the lines), at each cell's best LR (lowest seed-mean final eval loss). A dashed
line marks each V's "learned" threshold, 0.1 log V, and a diamond each run's
`updates_to_learn` (the exposure where half of the symbols are under it; hollow where it is
only an upper bound). Under pure coverage
the curves of every V fall together; under the head's bottleneck the larger V needs more
updates.
"""

from __future__ import annotations

import math

from matplotlib.figure import Figure

from spamlang.errors import UserError
from spamlang.plots.canvas import note, writer
from spamlang.plots.layout import (
    SEED,
    Facets,
    check_axes,
    facet_title,
    group_points,
    ident,
    palette,
)
from spamlang.plots.layout import best_over as best_points
from spamlang.plots.runs import finished_runs, select, varying_settings
from spamlang.rundir.reading import read_object
from spamlang.rundir.schema import RESULT

COLOR = "vocab_size"
METRIC = "final_eval_loss"  # what the best LR is chosen by


def _curve(run) -> dict | None:
    result = read_object(run.path / RESULT) if run.path else None
    curve = (result or {}).get("symbol_curve")
    return curve if curve and curve.get("exposure") else None


def symbols_figure(
    sweep_dir, *, where: dict | None = None, cols: str | None = None, rows=None
) -> Figure:
    """The figure of the module docstring; `cols` / `rows` facet it like `plot lines`."""
    runs = [r for r in select(finished_runs(sweep_dir), where) if _curve(r) is not None]
    if not runs:
        raise UserError(
            f"no finished run in {sweep_dir} has a symbol_curve in its result.json "
            "(SpamLang-family runs write one since per-symbol scoring exists)"
        )
    (cols,), rows = check_axes(runs, {"--cols": cols}, rows)
    pts = group_points(runs, [SEED])
    best = "lr" if "lr" in varying_settings(runs) else None
    if best:
        pts = best_points(pts, best, METRIC)
    facets = Facets(pts, cols, rows, [COLOR] + ([cols] if cols else []), [SEED, best or SEED])
    colours = palette(pts, COLOR)

    fig = facets.figure(2.7, 0.5, sharex=True, sharey=True)
    for panel in facets.panels:
        for p in sorted(panel.points, key=lambda p: p.value(COLOR)):
            V = p.value(COLOR)
            for k, run in enumerate(sorted(p.runs, key=lambda r: r.get(SEED) or 0)):
                _draw_run(
                    panel.ax, run, colours[ident(V)], facet_title(COLOR, V) if k == 0 else None
                )
            panel.ax.axhline(0.1 * math.log(V), color=colours[ident(V)], lw=0.6, ls="--")
        panel.ax.set_yscale("log")
        panel.label(
            "exposure: training sequences that showed the symbol",
            "symbol loss (bin median, nats)",
        )
    note(
        fig,
        "one line per seed at each cell's best LR (lowest seed-mean final eval loss)",
        "dashed: 0.1 log V, the learned threshold; diamond: updates_to_learn (hollow: an "
        "upper bound, the least-exposed bin was already half learned)",
    )
    return fig


plot_symbols = writer(symbols_figure)


def _draw_run(ax, run, colour, label) -> None:
    curve = _curve(run)
    ax.plot(
        curve["exposure"], curve["loss_median"], color=colour, lw=1.0, marker=".", ms=3, label=label
    )
    value = run.get("updates_to_learn")
    if isinstance(value, (int, float)) and math.isfinite(value):
        threshold = 0.1 * math.log(run.get(COLOR))
        upper = run.get("updates_to_learn_bound") == "upper"  # only bounded: drawn hollow
        ax.plot(
            [value],
            [threshold],
            marker="D",
            ms=4,
            color=colour,
            mec="black",
            mew=0.5,
            mfc="white" if upper else colour,
        )
