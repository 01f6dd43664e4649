"""A sweep's numbers as pandas DataFrames, for analysis in a notebook or a script.

    import spamlang.results
    runs = spamlang.results.load("runs/paper_fig5")  # results.csv: one row per finished run
    curves = spamlang.results.load_metrics("runs/paper_fig5")  # every metrics.jsonl row

Both read only files, so they work on a sweep still running elsewhere. Columns are typed from
their cells: a column of whole numbers is int64 (float64 when some cells are empty), other
numbers float64, True/False bool (object when some cells are empty), anything else text;
an empty cell, or a null in metrics.jsonl (a non-finite value), is NaN.

pandas is an optional dependency: `pip install "spamlang[analysis]"`.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

from spamlang.errors import UserError
from spamlang.plots.results import check_dir, flatten_config, parse_cell, read_metrics
from spamlang.schema import CONFIG, RESULT, RESULT_COLUMNS, RESULTS_FILE

# The first columns of load_metrics, before each row's metrics and the run's axes.
ROW_COLUMNS = ("run_id", "kind", "step", "tokens")
# A metrics.jsonl field named like an axis (the train rows' `lr`: the LR of that step, not the
# run's peak `lr`) gets this suffix, so that the axis keeps its name.
CLASH_SUFFIX = "_at_step"


def load(sweep_dir: str | Path):
    """results.csv of `sweep_dir` as a DataFrame: one row per finished run, settings then
    outcomes, in the file's column order, typed as the module docstring says."""
    pd = _pandas()
    path = check_dir(sweep_dir) / RESULTS_FILE
    header, rows = _read_csv(path)
    return pd.DataFrame({c: _column(pd, [row[i] for row in rows]) for i, c in enumerate(header)},
                        columns=header)


def load_metrics(sweep_dir: str | Path):
    """Every run's metrics.jsonl rows under `sweep_dir` as one long DataFrame, finished runs
    and runs still going alike.

    Columns: run_id, kind (train / eval / diag), step, tokens, every metric any row has (NaN
    where a row lacks it: eval rows have no train loss), then the run's axes, the settings
    columns of results.csv (taken from config.json for runs not in results.csv yet), and
    `finished` (the run has its result.json). A metric named like an axis is renamed with
    the suffix "_at_step" (the train rows' `lr`, the LR of that step, is `lr_at_step`; `lr` is
    the run's peak LR). A torn last line of a live run is skipped.
    """
    pd = _pandas()
    root = check_dir(sweep_dir)
    axes, known = _axes(root)
    records: list[dict[str, Any]] = []
    for run_dir in _run_dirs(root):
        settings = known.get(run_dir.name)
        if settings is None:
            settings = _config_axes(_read_json(run_dir / CONFIG), axes)
        finished = (run_dir / RESULT).is_file()
        for row in read_metrics(run_dir, kind=None):
            metrics = {(k + CLASH_SUFFIX if k in settings else k): v for k, v in row.items()}
            records.append({"run_id": run_dir.name, **metrics, **settings, "finished": finished})
    names = dict.fromkeys([*ROW_COLUMNS, *(k for r in records for k in r)])
    # Metrics first, in order of appearance, then the axes, then `finished`.
    columns = [*(c for c in names if c not in axes and c != "finished"), *axes, "finished"]
    return pd.DataFrame({c: _column(pd, [r.get(c) for r in records]) for c in columns},
                        columns=columns)


# ----- reading ---------------------------------------------------------------------------------

def _pandas():
    try:
        import pandas
    except ImportError:
        raise UserError('spamlang.results needs pandas: pip install "spamlang[analysis]"') from None
    return pandas


def _read_csv(path: Path) -> tuple[list[str], list[list[Any]]]:
    """results.csv as (header, rows of cells parsed by `spamlang.plots.results.parse_cell`)."""
    import csv

    if not path.is_file():
        raise UserError(f"no {RESULTS_FILE} in {path.parent} (a sweep writes it when its first "
                        "run finishes)")
    with open(path, newline="", encoding="utf-8") as f:
        table = list(csv.reader(f))
    if not table:
        raise UserError(f"{path} is empty")
    header = table[0]
    rows = []
    for row in table[1:]:
        if row:
            cells = (row + [""] * len(header))[: len(header)]
            # run_id is a directory name, never a number ("1e-3" must not become 0.001)
            rows.append([cell if name == "run_id" else parse_cell(cell)
                         for name, cell in zip(header, cells)])
    return header, rows


def _axes(root: Path) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """(the settings columns of results.csv but run_id, {run_id: those settings}). Settings are
    the columns before the first outcome, as `spamlang.plots.results` reads the table; without
    results.csv, the columns a sweep would write."""
    if not (root / RESULTS_FILE).is_file():
        from spamlang.sweep.results import SETTING_COLUMNS, extra_axes

        return [*SETTING_COLUMNS[1:], *extra_axes(root)], {}
    header, rows = _read_csv(root / RESULTS_FILE)
    first = min((i for i, c in enumerate(header) if c in RESULT_COLUMNS), default=len(header))
    axes = [c for c in header[:first] if c != "run_id"]
    by_id = {}
    for row in rows:
        cells = dict(zip(header, row))
        by_id[cells.get("run_id")] = {c: cells.get(c) for c in axes}
    return axes, by_id


def _config_axes(config: Any, axes: list[str]) -> dict[str, Any]:
    """The `axes` of a run not in results.csv, from its config.json as results.csv would write
    them: `d_model` and `model.X` from the model the run builds, `param.X` from its language."""
    if not isinstance(config, dict):
        return dict.fromkeys(axes)
    flat = flatten_config(config)
    model, params = _built(config)
    out = {}
    for c in axes:
        if c in flat:
            out[c] = flat[c]
        elif c.startswith("param."):
            out[c] = params.get(c[len("param."):])
        else:
            out[c] = model.get(c[len("model."):] if c.startswith("model.") else c)
    return out


def _built(config: dict) -> tuple[dict, dict]:
    """(ModelConfig fields, language parameters) of a config.json; empty for a config this
    version cannot build (an older or foreign one): its cells stay empty."""
    from spamlang.train.config import TrainConfig

    try:
        train = TrainConfig.from_json(config)
        return dataclasses.asdict(train.model_config()), train.make_language().params()
    except (ValueError, TypeError):
        return {}, {}


def _run_dirs(root: Path) -> list[Path]:
    dirs = [root] if (root / CONFIG).is_file() else []
    return dirs + sorted(p for p in root.iterdir() if (p / CONFIG).is_file())


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # being written by a live run


# ----- typing ----------------------------------------------------------------------------------

def _column(pd, values: list[Any]):
    """A Series typed from its non-empty values (see the module docstring); None is NaN."""
    present = [v for v in values if v is not None]
    complete = len(present) == len(values)
    if present and all(isinstance(v, bool) for v in present):
        return pd.Series(values if complete else [_nan(v) for v in values],
                         dtype=bool if complete else object)
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return pd.Series([_nan(v) for v in values], dtype="int64" if complete else "float64")
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return pd.Series([_nan(v) for v in values], dtype="float64")  # all empty: all NaN
    return pd.Series([_nan(v) for v in values])


def _nan(v: Any) -> Any:
    return math.nan if v is None else v
