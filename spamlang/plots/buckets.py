"""`spamlang plot buckets`: a corpus run's val loss by how often a token was a training target
against the steps since it last was one (result.json's "target_buckets")."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from matplotlib.cm import ScalarMappable
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from spamlang.errors import UserError
from spamlang.notation import format_count
from spamlang.plots.canvas import BEST_EDGE, PAPER_WIDTH_IN, colour_bar, line_colour, note, writer
from spamlang.plots.layout import MAX_FACETS
from spamlang.rundir.reading import check_dir, read_object
from spamlang.rundir.schema import ADAM_B2, CONFIG, RESULT

MIN_TARGETS = 20  # fewer validation targets make a cell's mean loss noise
# The log axis has no 0: the age-0 cell (a target in the very last step) sits one bucket left
# of [1, 2)'s middle, so that the buckets stay evenly spaced (bucket b >= 1 at 2^(b - 1.5)).
AGE0_X = 2**-0.5
READ = ((float, "val_loss"), (int, "val_targets"), (int, "ids"))  # a cell's values, as `Series`


@dataclass(frozen=True)
class BucketRun:
    """One finished corpus run: its name, config.json, result.json and what its figure draws."""

    name: str  # the run directory's name
    config: dict  # its config.json ({} when unreadable)
    result: dict  # its result.json, which holds "target_buckets"
    rows: list[dict]  # target_buckets' cells
    steps: int  # the steps it trained
    memory: float | None  # Adam's memory 1/(1-b2) in steps; None without a second moment
    unigram: float | None  # the val unigram loss (no context)


def load_buckets(run_dir: str | Path) -> BucketRun:
    """A finished corpus run, else UserError naming it (not finished, or not a corpus run)."""
    path = check_dir(run_dir)
    if (result := read_object(path / RESULT)) is None:
        raise UserError(f"{path} has not finished: no readable {RESULT}")
    if not isinstance(buckets := result.get("target_buckets"), dict):
        why = f"its {RESULT} has no target_buckets (runs trained with --corpus DIR write them)"
        raise UserError(f"{path} is not a corpus run: {why}")
    memory = buckets.get("adam_memory_steps")
    unigram = (result.get("corpus") or {}).get("val_unigram_loss")
    return BucketRun(
        path.name or str(path),
        read_object(path / CONFIG) or {},
        result,
        buckets.get("rows") or [],
        int(buckets.get("steps") or result.get("steps") or 0),
        float(memory) if isinstance(memory, (int, float)) and memory > 0 else None,
        float(unigram) if isinstance(unigram, (int, float)) else None,
    )


def age_x(age_lo: int | None, age_hi: int | None, steps: int) -> float:
    """Where a cell is drawn: its age bucket's geometric middle, age 0 at AGE0_X, never a target
    (no age) at x = steps, right of every age."""
    if age_lo is None:
        return float(max(steps, 1))
    return AGE0_X if age_lo == 0 else math.sqrt(age_lo * age_hi)


@dataclass(frozen=True)
class Series:
    """One training-count bucket's cells, by age: what one line of a panel draws."""

    count_lo: int  # the bucket [count_lo, count_hi) of training-target counts
    count_hi: int
    x: tuple[float, ...]  # `age_x` of each cell, increasing
    loss: tuple[float, ...]  # the cell's mean validation loss (nats)
    targets: tuple[int, ...]  # its validation targets
    ids: tuple[int, ...]  # its token ids that occur as validation targets


def series(rows: list[dict], steps: int, min_targets: int = MIN_TARGETS) -> tuple[list, int]:
    """([Series] by count bucket, the number of cells with fewer than `min_targets` validation
    targets, dropped); a bucket left without cells gets no series."""
    kept = [r for r in rows if r["val_targets"] >= min_targets]
    out = []
    for lo in sorted({r["count_lo"] for r in kept}):
        cells = [r for r in kept if r["count_lo"] == lo]
        cells.sort(key=lambda r: age_x(r["age_lo"], r["age_hi"], steps))
        x = tuple(age_x(r["age_lo"], r["age_hi"], steps) for r in cells)
        loss, targets, ids = (tuple(t(r[k]) for r in cells) for t, k in READ)
        out.append(Series(lo, cells[0]["count_hi"], x, loss, targets, ids))
    return out, len(rows) - len(kept)


def bucket_label(lo: int, hi: int | None) -> str:
    """An integer bucket [lo, hi) in words: '0', '2-3', '1K-2047'; None is never a target."""
    if hi is None:
        return "never"
    return format_count(lo) if hi - lo == 1 else f"{format_count(lo)}-{format_count(hi - 1)}"


def describe(run: BucketRun) -> str:
    """'NAME\nadamw b2=0.95, head_amsgrad, eval loss 4.712': what tells the panels apart."""
    c = run.config
    optimizer = c.get("optimizer", "adamw")
    parts = [str(optimizer)]
    if "adam" in str(optimizer) and isinstance(c.get(ADAM_B2), (int, float)):
        parts[0] += f" b2={c[ADAM_B2]:g}"
    if c.get("head_amsgrad"):
        parts.append("head_amsgrad")
    loss = run.result.get("final_eval_loss")
    parts.append(f"eval loss {loss:.4g}" if isinstance(loss, (int, float)) else "no eval loss")
    return f"{run.name}\n" + ", ".join(parts)


def count_colours(runs: list[BucketRun]) -> tuple[ListedColormap, BoundaryNorm] | None:
    """One colour per training-count bucket of any run (dark = rare), on edges 1, 2, 4, ...;
    None when no run has a token that was a target."""
    highs = [r["count_hi"] for run in runs for r in run.rows if r["count_lo"] > 0]
    if not highs:
        return None
    n = int(math.log2(max(highs)))
    edges = [2**b for b in range(n + 1)]  # [1, 2) ... [2^(n-1), 2^n)
    return ListedColormap([line_colour(i, n) for i in range(n)]), BoundaryNorm(edges, n)


def buckets_figure(runs: list[BucketRun], min_targets: int = MIN_TARGETS) -> Figure:
    """One panel per run, side by side, sharing both axes; a colour bar of the count buckets."""
    if not runs:
        raise UserError("no run directory given")
    if len(runs) > MAX_FACETS:
        raise UserError(f"{len(runs)} runs would each get a panel; draw at most {MAX_FACETS}")
    if min_targets < 0:
        raise UserError(f"--min-targets must be >= 0, got {min_targets}")
    colours = count_colours(runs)
    fig = Figure(figsize=(max(PAPER_WIDTH_IN, 3.2 * len(runs) + 1.2), 3.6), layout="constrained")
    axes = fig.subplots(1, len(runs), sharex=True, sharey=True, squeeze=False)[0]
    dropped = total = 0
    for ax, run in zip(axes, runs):
        lines, gone = series(run.rows, run.steps, min_targets)
        dropped, total = dropped + gone, total + len(run.rows)
        _draw_panel(ax, run, lines, colours)
    axes[0].set_ylabel("validation loss (nats, the cell's mean)", fontsize=7)
    _age_ticks(axes[0], max(max(run.steps, run.memory or 0) for run in runs))
    if colours is not None:
        label = "times a target (training-target count)"
        bar = colour_bar(fig, ScalarMappable(colours[1], colours[0]), axes, label, size=6)
        bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_count(int(v))))
    note(
        fig,
        "a point: the validation targets whose token was a training target so many times (colour)",
        "and last one so many steps before the end (x: log2 buckets at their geometric middle; "
        "0: in the last step)",
        f"cells with fewer than {min_targets} validation targets left out ({dropped} of {total}); "
        "dashed: Adam's memory; dotted: the val unigram loss (no context)",
    )
    return fig


plot_buckets = writer(buckets_figure)


def _draw_panel(ax, run: BucketRun, lines: list[Series], colours) -> None:
    for s in lines:
        if s.count_lo == 0:  # never a target, so no age: a cross apart, at x = steps
            label = f"never a target ({sum(s.ids)} ids), at x = steps"
            ax.plot(s.x, s.loss, "x", color="0.35", ms=5, mew=1.0, label=label, gid="never")
        else:
            colour = colours[0](colours[1](s.count_lo))
            kw = dict(color=colour, lw=1.2, marker="o", ms=3, gid=f"count{s.count_lo}")
            ax.plot(s.x, s.loss, **kw)
    if run.memory is not None:
        beyond = f", past the run's {run.steps} steps" if run.memory > run.steps else ""
        label = f"Adam memory 1/(1\u2212b2) = {run.memory:g} steps{beyond}"
        ax.axvline(run.memory, color=BEST_EDGE, lw=1.0, ls="--", label=label, gid="memory")
    if run.unigram is not None:
        label = f"val unigram loss {run.unigram:.3g}"
        ax.axhline(run.unigram, color="0.3", lw=0.9, ls=":", label=label, gid="unigram")
    if not lines:
        ax.text(0.5, 0.5, "no cell left", transform=ax.transAxes, ha="center", fontsize=7)
    ax.set_title(describe(run), fontsize=7)
    ax.set_xlabel("steps since last a training target", fontsize=7)
    ax.tick_params(which="both", labelsize=6)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=5, loc="best", framealpha=0.9, edgecolor="none")


def _age_ticks(ax, right: float) -> None:
    """A log2 axis from the age-0 cell ('0') to past `right`, labelled at the bucket edges."""
    ax.set_xscale("log", base=2)
    top = max(1, math.ceil(math.log2(max(right, 1))))
    powers = [2**b for b in range(top + 1)]
    powers = powers[:: 1 + len(powers) // 9]
    ax.xaxis.set_major_locator(FixedLocator([AGE0_X, *powers]))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: "0" if v < 1 else format_count(v)))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlim(AGE0_X / 1.6, 2**top * 1.3)


def buckets_table(run: BucketRun, min_targets: int = MIN_TARGETS) -> str:
    """The run's cells as text: a row per training-count bucket, a column per age bucket, each
    its mean validation loss; '.' where fewer than `min_targets`."""
    ages = {(r["age_lo"], r["age_hi"]) for r in run.rows}
    ages = sorted(ages, key=lambda a: (a[0] is None, a[0] or 0))
    counts = sorted({(r["count_lo"], r["count_hi"]) for r in run.rows})
    cells = {(r["count_lo"], r["age_lo"]): r for r in run.rows}
    header = ["count \\ age", *(bucket_label(lo, hi) for lo, hi in ages)]
    lines = []
    for lo, hi in counts:
        row = [bucket_label(lo, hi)]
        for age_lo, _ in ages:
            cell = cells.get((lo, age_lo))
            seen = cell is not None and cell["val_targets"] >= min_targets
            row.append(f"{cell['val_loss']:.3f}" if seen else "." if cell else "")
        lines.append(row)
    widths = [max(len(x) for x in col) for col in zip(header, *lines)]
    fmt = "  ".join(f"{{:<{w}}}" if k < 1 else f"{{:>{w}}}" for k, w in enumerate(widths))
    memory = f"; Adam memory {run.memory:g} steps" if run.memory is not None else ""
    title = (
        f"{describe(run).replace(chr(10), ': ')}: val loss (nats) by times a target (rows) and steps since last one "
        f"(columns) after {run.steps} steps{memory}; '.': under {min_targets} val targets"
    )
    body = [fmt.format(*line).rstrip() for line in [header, *lines]]
    return "\n".join([title, *body])
