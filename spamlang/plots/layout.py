"""Where each run goes in a figure: points (runs differing only in seed, drawn as mean and
min-max range), best LR, and the panel grid (`auto_rows`: experiments never averaged silently)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from spamlang.errors import UserError
from spamlang.fields import finite, is_int, is_number
from spamlang.notation import format_count, format_lr
from spamlang.plots.canvas import PAPER_WIDTH_IN, line_colour, note
from spamlang.results import check_column, complement_of, read_runs, records, text
from spamlang.rundir import reading
from spamlang.rundir.schema import TITLE_DEFAULTS

SEED = "seed"
BEST_METRIC = "final_eval_loss"  # what a cell's best LR is chosen by, in every figure
MAX_FACETS = 8
_LABELS = {
    "vocab_size": "vocabulary size V",
    "lr": "learning rate",
    "tie_embeddings": "tied embeddings",
    "tokens": "training tokens",
    "step": "step",
    "seq_len": "sequence length",
    "d_model": "hidden size D",
    "batch_size": "batch size",
    "symbol_return_steps": "return time V/B (steps)",
    "adam_memory_steps": "Adam memory 1/(1-b2) (steps)",
}


def higher_is_better(metric: str) -> bool:
    return "accuracy" in metric


def format_value(column: str, v: Any) -> str:
    """Ticks' and legends' notation (what `--where` takes back): 100K, 3e-2, floats to 3 digits."""
    if v is None:
        return "n/a"
    if column == "lr" and is_number(v) and v > 0:
        return format_lr(float(v))
    if is_int(v) or (column == "vocab_size" and is_number(v) and float(v).is_integer()):
        return format_count(int(v))
    if isinstance(v, float):
        # Whole up to float noise (1 / (1 - 0.999) = 999.9999999999991): '1000', not '1e+03'.
        if abs(v) < 1e6 and math.isclose(v, round(v), rel_tol=1e-9, abs_tol=1e-12):
            return str(round(v))
        return f"{v:.3g}"
    return str(v)


def short_name(column: str) -> str:
    return "V" if column == "vocab_size" else column


def facet_title(column: str, v: Any) -> str:
    if column == "tie_embeddings" and isinstance(v, bool):
        return "tied" if v else "untied"
    return f"{short_name(column)}={format_value(column, v)}"


def axis_label(column: str) -> str:
    if column not in _LABELS and (base := complement_of(column)):
        return f"1 \u2212 {axis_label(base)}"
    return _LABELS.get(column, column.replace("_", " "))


def ident(v: Any) -> tuple:
    """A hashable identity: 16 == 16.0, True != 1, floats to 9 significant digits."""
    if isinstance(v, bool):
        return (1, v)
    if is_number(v):
        return (0, float(f"{float(v):.9g}"))
    return (3, "") if v is None else (2, str(v))


def order_key(v: Any) -> tuple:
    """Numbers numerically, then True before False (tied first, as in the paper), then text with
    its digit runs read as numbers (lowrank:4 before lowrank:16)."""
    kind, x = ident(v)
    if kind == 2:  # re.split with a group alternates text and digits: like compares with like
        return (kind, [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", x)])
    return (kind, not x) if kind == 1 else (kind, x)


def sort_values(values: Iterable[Any]) -> list[Any]:
    return sorted({ident(v): v for v in values}.values(), key=order_key)


def is_numeric(values: Iterable[Any]) -> bool:
    present = [v for v in values if v is not None]
    return bool(present) and all(is_number(v) for v in present)


def describe(values: list[Any], column: str) -> str:
    return ", ".join(format_value(column, v) for v in sort_values(values))


def finished_runs(path):
    """`read_runs` of `path`: its finished runs, or UserError when it has none."""
    runs = read_runs(path)
    runs = runs[runs["finished"].astype(bool)]
    if runs.empty:
        raise UserError(f"no finished runs in {path}")
    return runs


def varying(runs: list[dict], keys: Iterable[str]) -> list[str]:
    """The `keys` that take more than one value among `runs` (`records`), in their order."""
    return [k for k in keys if len({text(r.get(k)) for r in runs}) > 1]


@dataclass
class Point:
    """Runs (`records`) drawn as one mark; `best`: the best-over value chosen among `grid`."""

    runs: list[dict]
    settings: list[str]  # the columns that are settings, not outcomes
    best: Any = None
    grid: tuple = ()

    def value(self, column: str) -> Any:
        """The runs' common value; the mean when an outcome differs; None otherwise."""
        values = [r.get(column) for r in self.runs]
        if len({ident(v) for v in values}) == 1:
            return values[0]
        if is_numeric(values) and column not in self.settings:
            mean, n = pool([self], column).loc[0, ["mean", "n"]]
            return float(mean) if n else None
        return None

    @property
    def at_edge(self) -> bool:
        """Was the best value the smallest or largest of a grid of 3 or more?"""
        ends = (ident(self.grid[0]), ident(self.grid[-1])) if self.grid else ()
        return len(self.grid) >= 3 and ident(self.best) in ends


def pool(points: list[Point], column: str) -> pd.DataFrame:
    """Per point, the mean, min ("lo"), max ("hi") and count ("n") of its runs' finite values of
    `column`; NaN, n = 0, for a point without any."""
    values = pd.Series([finite(r.get(column)) for p in points for r in p.runs], dtype=float)
    at = [i for i, p in enumerate(points) for _ in p.runs]
    stats = values.groupby(at).agg(["mean", "min", "max", "count"]).reindex(range(len(points)))
    return stats.set_axis(["mean", "lo", "hi", "n"], axis=1)


def group_by(items: list, keys: list[str], value: Callable[[Any, str], Any]) -> list[list]:
    """`items` grouped by the idents of `value(item, key)` for `keys`, in order of appearance."""
    groups: dict[tuple, list] = {}
    for item in items:
        groups.setdefault(tuple(ident(value(item, k)) for k in keys), []).append(item)
    return list(groups.values())


def group_points(runs, pooled: Iterable[str] = (SEED,)) -> list[Point]:
    """One point per combination of the settings of the frame `runs` but the `pooled` ones."""
    settings = runs.attrs["settings"]
    keys = [k for k in settings if k not in set(pooled)]
    return [Point(g, settings) for g in group_by(records(runs), keys, dict.get)]


def best_over(points: list[Point], column: str, metric: str, keep_failed=False) -> list[Point]:
    """Of points that differ only in `column` (lr), the best by `reading.best_over`, with its
    value and grid; a group where every run diverged is dropped (`keep_failed`: merged)."""
    inner = set(pooled_settings(points)) | {column}
    others = [k for k in (points[0].settings if points else []) if k not in inner]
    groups = group_by(points, others, Point.value)
    rows = [
        (g, order_key(p.value(column)), None if r.get("diverged") else finite(r.get(metric)))
        for g, members in enumerate(groups)
        for p in members
        for r in p.runs
    ]
    table = pd.DataFrame(rows, columns=["group", "over", "value"])
    best = reading.best_over(table, "group", "over", "value", higher_is_better(metric))
    chosen = dict(zip(best["group"], best["over"]))
    kept = []
    for g, members in enumerate(groups):
        grid = tuple(sort_values(p.value(column) for p in members))
        picked = [p for p in members if order_key(p.value(column)) == chosen.get(g)]
        if picked:
            kept.append(Point(picked[0].runs, picked[0].settings, picked[0].value(column), grid))
        elif keep_failed:
            kept.append(merge(members))
    return kept


def best_lr(runs) -> list[Point]:
    """A point per cell of the frame `runs` (seeds pooled), at its best LR where the LR varies."""
    points = group_points(runs, [SEED])
    return best_over(points, "lr", BEST_METRIC) if varying(records(runs), ["lr"]) else points


def merge(points: list[Point]) -> Point:
    """Points drawn at one place, as one (the best-over choice kept only if they share it)."""
    same = len({(ident(p.best), p.grid) for p in points}) == 1
    runs, settings = [r for p in points for r in p.runs], points[0].settings
    return Point(runs, settings, points[0].best, points[0].grid) if same else Point(runs, settings)


def auto_rows(points: list[Point], used: list[str], skip: Iterable[str] = ()) -> list[str]:
    """Settings that vary among `points`, are not `used` or skipped, and are not determined by
    the `used` columns' values (batch_size by updates_per_symbol and V)."""
    skip = set(skip) | set(used)
    groups = group_by(points, used, Point.value)
    settings = points[0].settings if points else []
    return [
        k
        for k in varying([r for p in points for r in p.runs], settings)
        if k not in skip and any(len({ident(p.value(k)) for p in g}) > 1 for g in groups)
    ]


def split(points: list[Point], keys: list[str]) -> list[tuple[tuple, list[Point]]]:
    """Points by their values of `keys`, in plotting order of those values."""
    groups = [(tuple(g[0].value(k) for k in keys), g) for g in group_by(points, keys, Point.value)]
    return sorted(groups, key=lambda g: [order_key(v) for v in g[0]])


@dataclass
class Panel:
    """One axes of a faceted figure: its place, its points and its title's two parts."""

    row: int
    col: int
    points: list[Point]
    head: str  # the column facet's value ('tied', 'd_model=64'); '' without one
    row_label: str  # the row's settings ('head=softmax, b2=0.99'); '' without rows
    ax: Any = None

    def title(self, head: str | None = None) -> str:
        head = self.head if head is None else head
        return f"{head} ({self.row_label})" if head and self.row_label else head or self.row_label

    def label(self, xlabel: str, ylabel: str, title: str | None = None, legend: bool = True):
        """Labels (y on the first column only), title and legend: one size in every figure."""
        # "both": a log axis within a decade labels its minor ticks, at the default size.
        self.ax.tick_params(which="both", labelsize=7)
        self.ax.set_xlabel(xlabel, fontsize=8)
        if self.col == 0:
            self.ax.set_ylabel(ylabel, fontsize=8)
        self.ax.set_title(self.title() if title is None else title, fontsize=9)
        if legend and self.points:
            self.ax.legend(fontsize=6, frameon=False)


class Facets:
    """The panel grid of every faceted figure: a row per combination of `rows` (None:
    `auto_rows`), a column per value of `cols`; more than MAX_FACETS of either asks for --where."""

    def __init__(self, points, cols: str | None, rows, used: list[str], skip: Iterable[str] = ()):
        self.row_keys = auto_rows(points, used, skip) if rows is None else rows
        by_row = split(points, self.row_keys)
        col_values = sort_values(p.value(cols) for p in points) if cols else [None]
        pick = "pick some with --where KEY=VALUE"
        if len(by_row) > MAX_FACETS:
            rows = f"{len(by_row)} combinations of {', '.join(self.row_keys)}"
            raise UserError(f"{rows} would each get a row of panels: {pick} or choose --rows")
        if len(col_values) > MAX_FACETS:
            raise UserError(f"{cols} has {len(col_values)} values, too many panel columns: {pick}")
        self.shape = (len(by_row), len(col_values))
        self.panels = []
        for i, (values, members) in enumerate(by_row):
            row_label = ", ".join(facet_title(k, v) for k, v in zip(self.row_keys, values))
            for j, cv in enumerate(col_values):
                mine = [p for p in members if cols is None or ident(p.value(cols)) == ident(cv)]
                self.panels.append(
                    Panel(i, j, mine, facet_title(cols, cv) if cols else "", row_label)
                )

    def figure(self, row_height: float, extra: float, **subplots) -> Figure:
        """The paper's width, `row_height` per row plus `extra`; `subplots`: sharex, sharey."""
        height = row_height * self.shape[0] + extra
        fig = Figure(figsize=(PAPER_WIDTH_IN, height), layout="constrained")
        self.grid = fig.subplots(*self.shape, squeeze=False, **subplots)
        for p in self.panels:
            p.ax = self.grid[p.row, p.col]
        return fig


def palette(points: list[Point], column: str | None) -> dict[tuple, Any]:
    """ident(value) -> line colour, one per value of `column` (one colour, at None, without)."""
    values = sort_values(p.value(column) for p in points) if column else [None]
    return {ident(v): line_colour(i, len(values)) for i, v in enumerate(values)}


def pooled_settings(points: list[Point]) -> list[str]:
    """Settings that vary inside some point: what its mean averages over."""
    return list(dict.fromkeys(k for p in points for k in varying(p.runs, p.settings)))


def pool_note(points: list[Point], spread: str) -> str:
    """'' when every point is one run, else e.g. 'mean over seed (3 runs); bands: min-max'."""
    sizes = sorted({len(p.runs) for p in points})
    if sizes[-1:] in ([], [1]):
        return ""
    keys = pooled_settings(points) or ["repeated runs"]
    count = f"{sizes[0]}" if len(sizes) == 1 else f"{sizes[0]}-{sizes[-1]}"
    return f"mean over {', '.join(keys)} ({count} runs); {spread}: min\u2013max"


def column_or_none(column: str | None) -> str | None:
    """'' and 'none' switch an axis off."""
    return None if column is None or column.strip().lower() in ("", "none") else column


def check_axes(runs, flags: dict[str, str | None], rows) -> tuple[list, list | None]:
    """The columns of `flags` ({'--x': 'vocab_size', ...}) and --rows (None: automatic, []:
    'none') checked against the frame `runs`; one column cannot play two parts in a figure."""
    columns = [
        None if f in ("--color", "--cols") and not column_or_none(c) else check_column(runs, c, f)
        for f, c in flags.items()
    ]
    if isinstance(rows, str):
        rows = [c.strip() for c in rows.split(",")]
    if rows is not None:
        rows = [check_column(runs, r, "--rows") for r in rows if column_or_none(r)]
    seen: dict[str, str] = {}
    for flag, column in list(zip(flags, columns)) + [("--rows", r) for r in rows or []]:
        if column and column in seen:
            raise UserError(
                f"{flag} and {seen[column]} are both {column!r}; pick different columns"
            )
        if column:
            seen[column] = flag
    return columns, rows


def run_steps(r: dict, settings: list[str]) -> int | None:
    """A run's budget in optimizer steps: its config's tokens // (B x L), else the steps it ran,
    unless it diverged."""
    tokens, b, length = (finite(r.get(k)) for k in ("tokens", "batch_size", "seq_len"))
    steps = tokens // (b * length) if "tokens" in settings and tokens and b and length else None
    if steps is None and not r.get("diverged"):
        steps = finite(r.get("steps"))
    return None if steps is None else int(steps)


def _span(column: str, values: list) -> str:
    """One value in the figures' notation, or the range 'lo–hi' of several."""
    values = sort_values(v for v in values if v is not None)
    ends = values[:1] if len(values) == 1 else [values[0], values[-1]]
    return "\u2013".join(format_value(column, v) for v in ends)


def _language(r: dict) -> Any:
    """What a run trained on: its language, or a corpus run's corpus folder's name."""
    corpus = r.get("corpus")
    return PurePath(str(corpus)).name if corpus else r.get("language")


def run_shape(runs: list[dict], settings: list[str]) -> tuple[str, set[str]]:
    """'500 steps × B=32 × L=2 on spam' (a range where runs differ), what every title leads with,
    and the keys it fixes, which the title's other parts leave out (tokens = steps x B x L too)."""
    columns = {
        "steps": [run_steps(r, settings) for r in runs],
        **{k: [r.get(k) for r in runs] for k in ("batch_size", "seq_len")},
    }
    forms = {"steps": "{} steps", "batch_size": "B={}", "seq_len": "L={}"}
    shape = " \u00d7 ".join(
        forms[k].format(_span(k, vs)) for k, vs in columns.items() if any(v is not None for v in vs)
    )
    fixed = {k for k, vs in columns.items() if len({ident(v) for v in vs if v is not None}) == 1}
    if fixed == set(columns):
        fixed.add("tokens")  # steps x B x L
    languages = {ident(_language(r)): _language(r) for r in runs}
    if len(languages) == 1 and (language := next(iter(languages.values()))) is not None:
        shape, fixed = f"{shape} on {language}".strip(), fixed | {"language", "corpus"}
    return shape, fixed


def finish(fig: Figure, data, shown, where, axes, *notes: str) -> Figure:
    """The caption (`note`) and, above the panels, the title of what the figure holds fixed."""
    note(fig, *notes)
    if title := fixed_title(data, shown, where, axes):
        fig.suptitle(title, fontsize=9)
    return fig


def fixed_title(data, shown, where: dict | None, axes: Iterable[str | None] = ()) -> str:
    """`run_shape` of the runs `shown`, then what they hold fixed of the sweep `data`: every
    `--where` filter, each non-axis setting `data` varies, each TITLE_DEFAULTS setting off its
    default; none repeating the shape."""
    settings, data, shown = shown.attrs["settings"], records(data), records(shown)

    def single(key: str) -> list:
        values = {ident(r.get(key)): r.get(key) for r in shown}
        return list(values.values()) if len(values) == 1 and key in settings else []

    axes = {a for a in axes if a}
    shape, said = run_shape(shown, settings)
    parts = [shape] if shape else []
    for key, wanted in (where or {}).items():
        name, op = (key[:-1], "!=") if key.endswith("!") else (key, "=")
        if name in said:
            continue
        one = single(name) if op == "=" and shown else []
        wanted = wanted if isinstance(wanted, (list, tuple)) else [wanted]
        parts.append(
            facet_title(name, one[0]) if one else f"{name}{op}{'|'.join(map(str, wanted))}"
        )
        said.add(name)
    for key in sorted(set(settings) - axes - said):
        if len({ident(r.get(key)) for r in data}) > 1 and (one := single(key)):
            parts.append(facet_title(key, one[0]))
            said.add(key)
    # A base setting off its default, which no axis varies: a D = 32, b2 0.99 sweep says so.
    for key, default in TITLE_DEFAULTS.items():
        one = single(key) if shown and key not in axes | said else []
        if one and one[0] is not None and ident(one[0]) != ident(default):
            parts.append(facet_title(key, one[0]))
    return ", ".join(parts)
