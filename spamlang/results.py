"""A sweep's numbers as pandas DataFrames, for analysis in a notebook or a script.

    import spamlang.results
    runs = spamlang.results.load("runs/paper_fig5")  # results.csv: one row per finished run
    curves = spamlang.results.load_metrics("runs/paper_fig5")  # every metrics.jsonl row

Both read only files, so they work on a sweep still running elsewhere (or on a read-only
copy), and both also take a single run directory. Columns are typed from their cells: a column
of whole numbers is int64 (float64 when some cells are empty), other numbers float64,
True/False bool (object when some cells are empty), anything else text; an empty cell, or a
null in metrics.jsonl (a non-finite value), is NaN.

What they cannot read they leave out and say so, one `RunWarning` per run: a finished run
missing from results.csv (its config.json deleted or garbled), a run whose settings cannot be
read (NaN), metrics.jsonl lines that do not parse (a finished run's torn last line among them;
a live run's last line may be a row being written, and is skipped quietly).

pandas is an optional dependency: `pip install "spamlang[analysis]"`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from pathlib import Path
from typing import Any

from spamlang.errors import UserError, describe
from spamlang.fields import is_int, is_number
from spamlang.plots.runs import check_dir, flatten_config, parse_cell
from spamlang.rundir.reading import is_run, read_json, read_lines, run_dirs
from spamlang.rundir.schema import (
    CONFIG,
    METRICS,
    RESULT,
    RESULT_COLUMNS,
    RESULTS_FILE,
    SETTING_COLUMNS,
)

# The first columns of load_metrics, before each row's metrics and the run's axes.
ROW_COLUMNS = ("run_id", "kind", "step", "tokens")
# A metrics.jsonl field named like an axis (the train rows' `lr`: the LR of that step, not the
# run's peak `lr`) gets this suffix, so that the axis keeps its name.
CLASH_SUFFIX = "_at_step"


class RunWarning(UserWarning):
    """A run that `load` or `load_metrics` left out, or read only in part."""


def load(sweep_dir: str | Path):
    """results.csv of `sweep_dir` as a DataFrame: one row per finished run, settings then
    outcomes, in the file's column order, typed as the module docstring says. A finished run
    directory missing from the table gets a RunWarning saying why (its config.json is gone or
    garbled, or the table predates it). A single finished run directory gives its one row, in
    results.csv's columns."""
    pd = _pandas()
    root = check_dir(sweep_dir)
    if not (root / RESULTS_FILE).is_file() and is_run(root):
        header, rows = _one_run(root)
    else:
        header, rows = _read_csv(root / RESULTS_FILE)
        if "run_id" in header:
            _warn_unlisted(root, {row[header.index("run_id")] for row in rows})
    return pd.DataFrame(
        {c: _column(pd, [row[i] for row in rows]) for i, c in enumerate(header)}, columns=header
    )


def load_metrics(sweep_dir: str | Path):
    """Every run's metrics.jsonl rows under `sweep_dir` as one long DataFrame, finished runs
    and runs still going alike.

    Columns: run_id, kind (train / eval / diag), step, tokens, every metric any row has (NaN
    where a row lacks it: eval rows have no train loss), then the run's axes, the settings
    columns of results.csv (taken from config.json for runs not in results.csv yet), and
    `finished` (the run has its result.json). A metric named like an axis is renamed with
    the suffix "_at_step" (the train rows' `lr`, the LR of that step, is `lr_at_step`; `lr` is
    the run's peak LR). A torn last line of a live run is skipped; anything else it cannot
    read is skipped with one RunWarning per run (module docstring).
    """
    pd = _pandas()
    root = check_dir(sweep_dir)
    axes, known = _axes(root)
    records: list[dict[str, Any]] = []
    for run_dir in run_dirs(root):
        problems = []
        finished = (run_dir / RESULT).is_file()
        settings = known.get(run_dir.name)
        if settings is None:
            config, why = _read_config(run_dir)
            if why:
                problems.append(f"{why}, so its settings are NaN")
            settings = _config_axes(config, axes)
        rows, dropped = _read_metrics(run_dir, finished)
        problems += dropped
        if problems:
            warnings.warn(f"{run_dir}: " + "; ".join(problems), RunWarning, stacklevel=2)
        for row in rows:
            metrics = {(k + CLASH_SUFFIX if k in settings else k): v for k, v in row.items()}
            records.append({"run_id": run_dir.name, **metrics, **settings, "finished": finished})
    names = dict.fromkeys([*ROW_COLUMNS, *(k for r in records for k in r)])
    # Metrics first, in order of appearance, then the axes, then `finished`.
    columns = [*(c for c in names if c not in axes and c != "finished"), *axes, "finished"]
    return pd.DataFrame(
        {c: _column(pd, [r.get(c) for r in records]) for c in columns}, columns=columns
    )


# ----- reading ---------------------------------------------------------------------------------


def _pandas():
    try:
        import pandas
    except ImportError:
        raise UserError('spamlang.results needs pandas: pip install "spamlang[analysis]"') from None
    return pandas


def _read_csv(path: Path) -> tuple[list[str], list[list[Any]]]:
    """results.csv as (header, rows of cells parsed by `spamlang.plots.runs.parse_cell`)."""
    import csv

    if not path.is_file():
        raise UserError(
            f"no {RESULTS_FILE} in {path.parent} (a sweep writes it when its first run finishes)"
        )
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
            rows.append(
                [
                    cell if name == "run_id" else parse_cell(cell)
                    for name, cell in zip(header, cells)
                ]
            )
    return header, rows


def _one_run(run_dir: Path) -> tuple[list[str], list[list[Any]]]:
    """A single run directory as results.csv would list it: (header, [its row])."""
    from spamlang.sweep.results_csv import read_run

    if not (run_dir / RESULT).is_file():
        raise UserError(
            f"{run_dir} is a run that has not finished (no {RESULT}); "
            "load_metrics reads its curves so far"
        )
    try:
        row = read_run(run_dir)
    except ValueError as e:
        raise UserError(f"{run_dir} cannot be read: {e}") from None
    header = [*SETTING_COLUMNS, *RESULT_COLUMNS]
    # As results.csv would hold it: containers as JSON text, the rest as the values are.
    return header, [
        [
            json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v
            for v in (row.get(c) for c in header)
        ]
    ]


def _warn_unlisted(root: Path, listed: set) -> None:
    """A RunWarning per finished run directory that results.csv does not list, saying why."""
    from spamlang.sweep.results_csv import read_run

    for run_dir in sorted(p for p in root.iterdir() if (p / RESULT).is_file()):
        if run_dir.name in listed:
            continue
        try:
            read_run(run_dir)
        except ValueError as e:
            why = f"{e}, so no table can list it"
        else:
            why = (
                f"{RESULTS_FILE} predates it (a rerun of the sweep, or "
                "spamlang.sweep.write_results, adds it)"
            )
        warnings.warn(
            f"{run_dir}: finished but not in {RESULTS_FILE}: {why}", RunWarning, stacklevel=3
        )


def _axes(root: Path) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """(the settings columns of results.csv but run_id, {run_id: those settings}). Settings are
    the columns before the first outcome, as `spamlang.plots.runs` reads the table; without
    results.csv, the columns a sweep would write."""
    if not (root / RESULTS_FILE).is_file():
        from spamlang.sweep.results_csv import SETTING_COLUMNS, extra_axes

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
            out[c] = params.get(c[len("param.") :])
        else:
            out[c] = model.get(c[len("model.") :] if c.startswith("model.") else c)
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


def _read_config(run_dir: Path) -> tuple[dict | None, str | None]:
    """(config.json as a dict, None), or (None, why it cannot be read, in words). config.json
    is written atomically before anything else, so a run's own writes never tear it."""
    try:
        config = read_json(run_dir / CONFIG)
    except FileNotFoundError:
        return None, f"it has no {CONFIG}"
    except (OSError, ValueError) as e:
        return None, f"its {CONFIG} cannot be parsed ({describe(e)})"
    if not isinstance(config, dict):
        return None, f"its {CONFIG} is not a JSON object"
    return config, None


def _read_metrics(run_dir: Path, finished: bool) -> tuple[list[dict], list[str]]:
    """(the rows of metrics.jsonl, what was dropped, in words). A live run's torn last line
    is a row being written, dropped without a word; every other line that is not a JSON
    object is counted."""
    path = run_dir / METRICS
    if not path.is_file():
        return [], ([f"it finished but has no {METRICS}"] if finished else [])
    lines = read_lines(path)
    dropped = []
    if lines.bad:
        where = ", ".join(map(str, lines.bad[:5])) + (", ..." if len(lines.bad) > 5 else "")
        dropped.append(f"dropped {len(lines.bad)} unreadable line(s) of {METRICS} (line {where})")
    if lines.torn and finished:
        dropped.append(
            f"dropped the torn last line of {METRICS} ({len(lines.torn)} bytes cut "
            "mid-row; the next `spamlang sweep` on it cuts it away)"
        )
    return lines.rows, dropped


# ----- typing ----------------------------------------------------------------------------------


def _column(pd, values: list[Any]):
    """A Series typed from its non-empty values (see the module docstring); None is NaN."""
    present = [v for v in values if v is not None]
    complete = len(present) == len(values)
    if present and all(isinstance(v, bool) for v in present):
        return pd.Series(
            values if complete else [_nan(v) for v in values], dtype=bool if complete else object
        )
    if present and all(is_int(v) for v in present):
        return pd.Series([_nan(v) for v in values], dtype="int64" if complete else "float64")
    if all(is_number(v) for v in present):
        return pd.Series([_nan(v) for v in values], dtype="float64")  # all empty: all NaN
    return pd.Series([_nan(v) for v in values])


def _nan(v: Any) -> Any:
    return math.nan if v is None else v
