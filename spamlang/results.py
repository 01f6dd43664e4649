"""A sweep's numbers as pandas DataFrames, for analysis in a notebook or a script.

    runs = spamlang.results.load("runs/paper_fig5")  # results.csv: one row per finished run
    curves = spamlang.results.load_metrics("runs/paper_fig5")  # every metrics.jsonl row

Both read only files (a live sweep too); what they cannot read is left out, with a RunWarning.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from spamlang import languages
from spamlang.errors import UserError
from spamlang.model.config import model_field
from spamlang.rundir.reading import (
    RunWarning,
    cell_value,
    check_dir,
    check_sweep_dir,
    damaged_cell,
    extra_axes,
    fill_older,
    flatten_config,
    frame,
    is_finished,
    is_run,
    pandas,
    read_lines,
    read_strict,
    read_table,
    run_dirs,
    scan,
    settings_columns,
)
from spamlang.rundir.schema import (
    CONFIG,
    METRICS,
    RESULT,
    RESULT_COLUMNS,
    RESULTS_FILE,
    SETTING_COLUMNS,
)
from spamlang.train.config import TrainConfig

# The first columns of load_metrics, before each row's metrics and the run's axes.
ROW_COLUMNS = ("run_id", "kind", "step", "tokens")
CLASH_SUFFIX = "_at_step"  # of a metrics.jsonl field named like an axis (load_metrics)


def load(sweep_dir: str | Path):
    """results.csv of `sweep_dir` as a DataFrame (`spamlang.rundir.reading.scan`): one row per
    finished run, settings then outcomes, typed from their cells (docs/guide/sweeps.md), a
    RunWarning for each finished run the table lacks; a damaged results.csv is refused, never
    read in part. A single finished run directory gives its one row, in
    results.csv's columns."""
    pandas()
    root = check_dir(sweep_dir)
    if (root / RESULTS_FILE).is_file() or not is_run(root):
        return scan(root)
    if not is_finished(root):
        raise UserError(
            f"{root} is a run that has not finished (no {RESULT}); "
            "load_metrics reads its curves so far"
        )
    try:
        result, config = read_strict(root / RESULT), read_strict(root / CONFIG)
    except ValueError as e:
        raise UserError(f"{root} cannot be read: {e}") from None
    row = {"run_id": root.name, **_config_axes(config, SETTING_COLUMNS[1:])}
    row.update({c: result.get(c) for c in RESULT_COLUMNS})
    why = next(filter(None, (damaged_cell(c, result.get(c)) for c in RESULT_COLUMNS)), None)
    if why:
        raise UserError(f"{root} cannot be read: its {RESULT} is damaged ({why})")
    fill_older(row, lambda: TrainConfig.from_json(config).return_time)
    header = [*SETTING_COLUMNS, *RESULT_COLUMNS]
    return frame(header, [[cell_value(v) for v in map(row.get, header)]])


def load_metrics(sweep_dir: str | Path):
    """Every run's metrics.jsonl rows under `sweep_dir` as one long DataFrame, finished runs
    and runs still going alike.

    Columns: run_id, kind (train / eval / diag), step, tokens, every metric any row has (NaN
    where a row lacks it: eval rows have no train loss), then the run's axes, the settings
    columns of results.csv (taken from config.json for runs not in results.csv yet), and
    `finished` (the run has its result.json). A metric named like an axis gets the suffix
    "_at_step": the train rows' `lr`, the LR of that step, is `lr_at_step`; `lr` is the run's
    peak LR.
    """
    pandas()
    root = check_sweep_dir(sweep_dir)
    axes, known = _axes(root)
    records: list[dict[str, Any]] = []
    for run_dir in run_dirs(root):
        problems = []
        finished = is_finished(run_dir)
        settings = known.get(run_dir.name)
        if settings is None:
            try:
                config = read_strict(run_dir / CONFIG)
            except ValueError as e:  # config.json is written atomically: never torn by a run
                config = None
                problems.append(f"{e}, so its settings are NaN")
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
    return frame(columns, [[r.get(c) for c in columns] for r in records])


def _axes(root: Path) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """(the settings columns of results.csv, `settings_columns`, {run_id: those settings});
    without results.csv, the columns a sweep would write."""
    if not (root / RESULTS_FILE).is_file():
        return [*SETTING_COLUMNS[1:], *extra_axes(root)], {}
    header, rows = read_table(root / RESULTS_FILE)
    axes = settings_columns(header)
    by_id = {}
    for row in rows:
        cells = dict(zip(header, row))
        by_id[cells.get("run_id")] = {c: cells.get(c) for c in axes}
    return axes, by_id


def _config_axes(config: Any, axes: list[str]) -> dict[str, Any]:
    """The `axes` of a run not in results.csv, from its config.json as results.csv would write
    them: `d_model` and `model.X` as its model saw them (`model_field`), `param.X` as its
    language did (`languages.param_of`)."""
    if not isinstance(config, dict):
        return dict.fromkeys(axes)
    flat = flatten_config(config)
    out = {}
    for c in axes:
        if c in flat:
            out[c] = flat[c]
        elif c.startswith("param."):
            out[c] = languages.param_of(config, c[len("param.") :])
        else:
            out[c] = model_field(config, c.removeprefix("model."))
    return out


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
