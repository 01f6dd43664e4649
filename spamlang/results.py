"""Runs as pandas DataFrames: the one reader of sweep and run folders, from their files alone.
What cannot be read is left out with a RunWarning; a damaged results.csv is refused."""

from __future__ import annotations

import csv
import fnmatch
import io
import json
import math
import re
import warnings
from pathlib import Path
from typing import Any

from spamlang import languages
from spamlang.errors import UserError, describe
from spamlang.fields import is_int, is_number
from spamlang.model.config import model_field
from spamlang.notation import VOCAB_FIELDS, format_count, format_lr, parse_int
from spamlang.rundir.reading import (
    check_dir,
    fields_of,
    is_finished,
    is_run,
    read_lines,
    read_object,
    read_strict,
    run_dirs,
    settings_columns,
)
from spamlang.rundir.schema import (
    CONFIG,
    FLAG_COLUMNS,
    METRICS,
    NUMBER_SETTINGS,
    RESULT,
    RESULT_COLUMNS,
    RESULTS_FILE,
    SETTING_COLUMNS,
    SWEEP_FILE,
    TEXT_RESULTS,
)

ROW_COLUMNS = ("run_id", "kind", "step", "tokens")  # load_metrics' first columns
CLASH_SUFFIX = "_at_step"  # of a metrics.jsonl field named like an axis (load_metrics)
RUN_COLUMNS = ("finished", "path")  # read_runs' last: its folder is None for a table row alone
# The columns of results.csv (and keys of result.json) that hold a number or nothing.
NUMBER_COLUMNS = frozenset(NUMBER_SETTINGS) | {
    c for c in RESULT_COLUMNS if c not in (*TEXT_RESULTS, *FLAG_COLUMNS)
}
# What a damaged results.csv's message says to do: the table is derived, the runs are the data.
REBUILD = "rerun its sweep (`spamlang sweep`), which rebuilds it from the run directories"
# config.json dicts whose entries are settings of their own; `model` was named model_overrides
# in configs written before 2026-12.
_FLATTENED = {"language_params": "param.", "model": "model.", "model_overrides": "model."}
_INT = re.compile(r"[+-]?\d+")
ALIASES = {"tied": "tie_embeddings"}
COMPLEMENT = "1-"  # '1-COL' is 1 - COL of a numeric column (1-kernel_fraction)


class RunWarning(UserWarning):
    """A run that a reader left out, or read only in part."""


class DamagedTable(UserError):
    """A results.csv that exists but cannot be trusted: refused, never read in part."""


# --- results.csv's cells and rows ----------------------------------------------------------


def parse_cell(text: str | None) -> Any:
    """A results.csv cell as a value: '' -> None, True/False -> bool, then int, float, text."""
    s = (text or "").strip()
    if s == "":
        return None
    if s.lower() in ("true", "false"):
        return s.lower() == "true"
    if _INT.fullmatch(s):
        return int(s)
    try:
        return float(s)
    except ValueError:
        return s


def damaged_cell(column: str, value: Any) -> str | None:
    """Why `value` cannot be the `column` of results.csv, in words; None when it can."""
    if value is None:
        return None
    if column in FLAG_COLUMNS and not (isinstance(value, bool) or value in (0, 1)):
        return f"{column} must be True or False, got {value!r}"
    if column in NUMBER_COLUMNS and not is_number(value):
        return f"{column} must be a number, got {value!r}"
    return None


def read_table(path: Path) -> tuple[list[str], list[list[Any]]]:
    """results.csv as (header, rows of `parse_cell` values); UserError when missing or empty,
    `DamagedTable` when not as a sweep writes it (read in part, it would silently lose runs)."""
    if not path.is_file():
        raise UserError(
            f"no {RESULTS_FILE} in {path.parent} (a sweep writes it when its first run finishes)"
        )
    try:
        data = path.read_bytes()
    except OSError as e:
        raise UserError(f"cannot read {path}: {describe(e)}") from None
    if not data.strip():
        raise UserError(f"{path} is empty")

    def damaged(why: str) -> DamagedTable:
        return DamagedTable(f"{path} is damaged ({why}); {REBUILD}")

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise damaged(f"not text: byte {e.start} is not UTF-8") from None
    if "\0" in text:  # csv would stop at it with an error of its own
        raise damaged(f"not text: a NUL byte at character {text.index(chr(0))}")
    if not text.endswith("\n"):
        raise damaged("its last row is cut: no newline at its end")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header, rows = next(reader), []
        for row in filter(None, reader):
            if len(row) != len(header):
                raise damaged(
                    f"line {reader.line_num} has {len(row)} cells for {len(header)} columns"
                )
            # run_id is a directory name, never a number ("1e-3" must not become 0.001)
            cells = [c if h == "run_id" else parse_cell(c) for h, c in zip(header, row)]
            if why := next(filter(None, map(damaged_cell, header, cells)), None):
                raise damaged(f"line {reader.line_num}: {why}")
            rows.append(cells)
    except csv.Error as e:
        raise damaged(f"line {reader.line_num}: {e}") from None
    return header, rows


def extra_axes(out_dir: str | Path) -> list[str]:
    """The axes of the sweep.json in `out_dir` that are no standard column of results.csv."""
    axes = (read_object(Path(out_dir) / SWEEP_FILE) or {}).get("axes") or {}
    names = [n for a in axes for n in fields_of(a)]  # a linked axis sets several
    standard = {*SETTING_COLUMNS, *RESULT_COLUMNS, "model.d_model", "model.n_layers"}
    return [n for n in dict.fromkeys(names) if n not in standard]


def cell_value(v: Any) -> Any:
    """A value as results.csv holds it: containers as JSON text, the rest as they are."""
    return json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v


def setting(config: dict, column: str) -> Any:
    """The settings column `column` of a run's config.json as results.csv writes it (model.X and
    param.X as its model and language saw them)."""
    if column in ("d_model", "n_layers") or column.startswith("model."):
        return model_field(config, column.removeprefix("model."))
    if column.startswith("param."):
        return languages.param_of(config, column[len("param.") :])
    return cell_value(config.get(column))


# --- folders ----------------------------------------------------------------------------


def check_sweep_dir(sweep_dir: str | Path) -> Path:
    """`check_dir`, and UserError when its subfolders are sweeps of their own: a parent of sweep
    folders beside stray runs would show the stray runs alone, as if they were the sweep."""
    root = check_dir(sweep_dir)
    if is_run(root):
        return root
    subs = sorted(p for p in root.iterdir() if p.is_dir())
    own = (SWEEP_FILE, RESULTS_FILE)  # a sweep of its own: its sweep.json or results.csv, no run
    sweeps = [p.name for p in subs if not is_run(p) and any((p / n).is_file() for n in own)]
    if not sweeps:
        return root
    runs = [p.name for p in subs if is_run(p)]
    if runs:
        raise UserError(
            f"{root} holds sweep folders ({_listed(sweeps)}) and runs outside them "
            f"({_listed(runs)}): give one sweep folder, or move the stray runs into their own"
        )
    if (root / RESULTS_FILE).is_file():  # a sweep's table without its runs: read as a sweep
        return root
    raise UserError(f"{root} holds sweep folders ({_listed(sweeps)}), not runs: give one of them")


def _listed(names: list[str], shown: int = 4) -> str:
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


# --- the frames -------------------------------------------------------------------------


def frame(columns: list[str], rows: list[list[Any]], nullable: bool = False):
    """A DataFrame of `rows`, each column typed from its cells (bool, int64, float64, object); an
    int column with empty cells is float64 (`nullable`: Int64); empty is NaN."""
    import pandas as pd

    def column(values: list[Any]):
        present = [v for v in values if v is not None]
        complete = len(present) == len(values)
        nan = [math.nan if v is None else v for v in values]
        if present and all(isinstance(v, bool) for v in present):
            return pd.Series(values if complete else nan, dtype=bool if complete else object)
        if present and all(is_int(v) for v in present):
            return pd.Series(nan, dtype="int64" if complete else "Int64" if nullable else float)
        if all(is_number(v) for v in present):
            return pd.Series(nan, dtype="float64")  # all empty: all NaN
        return pd.Series(nan, dtype=object)

    data = {c: column([row[i] for row in rows]) for i, c in enumerate(columns)}
    return pd.DataFrame(data, columns=columns)


def records(runs) -> list[dict]:
    """The rows of a frame as dicts of Python values, None where a cell is empty."""
    return runs.astype(object).where(runs.notna(), None).to_dict("records")


def load(sweep_dir: str | Path):
    """results.csv of `sweep_dir` as a `frame`, a RunWarning for each finished run it lacks; a
    finished run directory gives its one row, in results.csv's columns."""
    root = check_dir(sweep_dir)
    if (root / RESULTS_FILE).is_file() or not is_run(root):
        root = check_sweep_dir(root)
        header, rows = read_table(root / RESULTS_FILE)
        listed = {row[header.index("run_id")] for row in rows} if "run_id" in header else None
        for run_dir in run_dirs(root) if listed is not None else ():
            if run_dir != root and is_finished(run_dir) and run_dir.name not in listed:
                warnings.warn(f"{run_dir}: {_unlisted(run_dir)}", RunWarning, stacklevel=2)
        return frame(header, rows)
    if not is_finished(root):
        how = "load_metrics reads its curves so far"
        raise UserError(f"{root} is a run that has not finished (no {RESULT}); {how}")
    try:
        row = run_row(root)
    except ValueError as e:
        raise UserError(f"{root} cannot be read: {e}") from None
    header = [*SETTING_COLUMNS, *RESULT_COLUMNS]
    return frame(header, [[cell_value(row[c]) for c in header]])


def run_row(run_dir: str | Path, extras=(), check=None, return_time=None) -> dict:
    """The results.csv row of a finished run folder plus "symbol_history"; ValueError saying why
    it cannot be read, or why `check(run id, config)` refuses it."""
    run_dir = Path(run_dir)
    result, config = read_strict(run_dir / RESULT), read_strict(run_dir / CONFIG)
    if check is not None and (wrong := check(run_dir.name, config)):
        raise ValueError(wrong)
    row = {"run_id": run_dir.name}
    row.update({c: setting(config, c) for c in [*SETTING_COLUMNS[1:], *extras]})
    row.update({c: result.get(c) for c in RESULT_COLUMNS})
    # A value a reader would refuse in the table ("final_eval_loss": "low", edited by hand)
    # leaves the run out, said once, rather than writing a table no reader takes.
    if why := next(filter(None, (damaged_cell(c, result.get(c)) for c in RESULT_COLUMNS)), None):
        raise ValueError(f"its {RESULT} is damaged ({why})")
    row["symbol_history"] = result.get("symbol_history")
    if row["updates_per_symbol"] is None:  # the column's old name, in runs written before it
        row["updates_per_symbol"] = row["sequences_per_symbol"]
    missing = [k for k in ("symbol_return_steps", "adam_memory_steps") if row[k] is None]
    try:  # runs written before the return time was reported: the trainer's layer says it
        row.update({k: return_time(config)[k] for k in missing if return_time})
    except (ValueError, TypeError):  # a foreign config (UserError is a ValueError): left empty
        pass
    return row


def _unlisted(run_dir: Path) -> str:
    """Why a finished run is missing from results.csv."""
    try:
        for name in (RESULT, CONFIG):
            read_strict(run_dir / name)
    except ValueError as e:
        return f"finished but not in {RESULTS_FILE}: {e}, so no table can list it"
    return (
        f"finished but not in {RESULTS_FILE}: {RESULTS_FILE} predates it (a rerun of the "
        "sweep, or spamlang.sweep.write_results, adds it)"
    )


def read_runs(path: str | Path):
    """Every run of the sweep (or run) folder `path`, finished or going: run_id, its settings
    (`attrs["settings"]`; results.csv's are `attrs["axes"]`), outcomes and RUN_COLUMNS. A row
    of results.csv without a folder is a finished run; a folder without config.json is left out."""
    root = check_sweep_dir(path)
    header, rows = [], []
    if (root / RESULTS_FILE).is_file():
        try:
            header, rows = read_table(root / RESULTS_FILE)
        except UserError as e:  # empty: the run folders stand in for it
            if isinstance(e, DamagedTable):
                raise
    axes = settings_columns(header) if header else [*SETTING_COLUMNS[1:], *extra_axes(root)]
    outcomes = [c for c in header if c and c not in axes and c != "run_id"] or RESULT_COLUMNS
    named = [dict(zip(header, cells)) for cells in rows]
    table = {row.get("run_id") or f"row{n + 1}": row for n, row in enumerate(named)}
    runs = {k: {**row, "run_id": k, "finished": True, "path": None} for k, row in table.items()}
    config_keys = {}
    for folder in run_dirs(root):
        if (config := read_object(folder / CONFIG)) is None:
            continue
        flat = {}  # every field; language_params' and model's entries as param.X and model.X
        for key, v in config.items():
            if key in _FLATTENED and isinstance(v, dict):
                flat.update({_FLATTENED[key] + k: x for k, x in v.items()})
            else:
                flat[key] = v
        # results.csv names a model.X axis plainly X (d_model): one column, not two.
        model_axes = {"model." + c for c in axes}
        flat = {k: cell_value(v) for k, v in flat.items() if k not in model_axes}
        config_keys.update(dict.fromkeys(flat))
        listed, finished = table.get(folder.name) or {}, is_finished(folder)
        run = {**flat, **{c: listed.get(c, setting(config, c)) for c in axes}}
        if finished:  # result.json, where it has a value; results.csv's may be filled in
            result = read_object(folder / RESULT) or {}
            found = {**listed, **{k: v for k, v in result.items() if v is not None}}
            run.update({c: found.get(c) for c in outcomes if c not in run})  # a setting wins
        runs[folder.name] = {**run, "run_id": folder.name, "finished": finished, "path": folder}
    settings = list(dict.fromkeys([*config_keys, *axes]))
    columns = ["run_id", *settings, *(c for c in outcomes if c not in settings), *RUN_COLUMNS]
    out = frame(columns, [[run.get(c) for c in columns] for run in runs.values()], nullable=True)
    out.attrs.update(settings=settings, axes=axes)
    return out


def load_metrics(runs, warn: bool = True):
    """Every metrics.jsonl row of `runs` (a folder, or `read_runs`' frame): ROW_COLUMNS, every
    metric (a metric named like an axis gets CLASH_SUFFIX: `lr_at_step`), the run's axes and
    `finished`. `warn=False`: what cannot be read is left out without a RunWarning."""
    folders = None
    if isinstance(runs, (str, Path)):
        root = check_sweep_dir(runs)
        runs, folders = read_runs(root), run_dirs(root)
    axes = runs.attrs["axes"]
    known = {run["path"]: run for run in records(runs) if run["path"] is not None}
    out: list[dict[str, Any]] = []
    for folder in known if folders is None else folders:
        run, problems = known.get(folder), []
        if run is None:  # config.json is written atomically: never torn by a run
            try:
                read_strict(folder / CONFIG)
            except ValueError as e:
                problems.append(f"{e}, so its settings are NaN")
            run = {"run_id": folder.name, "finished": is_finished(folder)}
        rows, dropped = _read_metrics(folder, run["finished"])
        if warn and problems + dropped:
            warnings.warn(f"{folder}: " + "; ".join(problems + dropped), RunWarning, stacklevel=2)
        values = {c: run.get(c) for c in axes}
        for row in rows:
            metrics = {(k + CLASH_SUFFIX if k in values else k): v for k, v in row.items()}
            out.append({"run_id": run["run_id"], **metrics, **values, "finished": run["finished"]})
    names = dict.fromkeys([*ROW_COLUMNS, *(k for r in out for k in r)])
    # Metrics first, in order of appearance, then the axes, then `finished`.
    columns = [*(c for c in names if c not in axes and c != "finished"), *axes, "finished"]
    return frame(columns, [[r.get(c) for c in columns] for r in out])


def _read_metrics(run_dir: Path, finished: bool) -> tuple[list[dict], list[str]]:
    """(the rows of metrics.jsonl, what was dropped, in words); a live run's torn last line is a
    row being written, dropped without a word."""
    path = run_dir / METRICS
    if not path.is_file():
        return [], ([f"it finished but has no {METRICS}"] if finished else [])
    lines = read_lines(path)
    dropped = []
    if lines.bad:
        where = ", ".join(map(str, lines.bad[:5])) + (", ..." if len(lines.bad) > 5 else "")
        dropped.append(f"dropped {len(lines.bad)} unreadable line(s) of {METRICS} (line {where})")
    if lines.torn and finished:
        cut = f"{len(lines.torn)} bytes cut mid-row; the next `spamlang sweep` on it cuts it away"
        dropped.append(f"dropped the torn last line of {METRICS} ({cut})")
    return lines.rows, dropped


# --- --where: runs by their columns ---------------------------------------------------------


def complement_of(column: str) -> str | None:
    """'kernel_fraction' for the derived column '1-kernel_fraction', else None."""
    return column[len(COMPLEMENT) :] or None if column.startswith(COMPLEMENT) else None


def check_column(runs, column: str, flag: str) -> str:
    """`column` (aliases resolved; a '1-COL' of a known COL added to `runs`) if `runs` has it,
    else a UserError naming the known ones."""
    name = ALIASES.get(column, column)
    known = [c for c in runs.columns if c not in ("run_id", *RUN_COLUMNS)]
    if name not in known and (base := complement_of(name)):
        name = COMPLEMENT + check_column(runs, base, flag)
        runs[name] = [1.0 - v if is_number(v) else None for v in column_values(runs, name[2:])]
        return name
    if name not in known:
        raise UserError(f"unknown column {column!r} for {flag}; known columns: {', '.join(known)}")
    return name


def column_values(runs, column: str) -> list[Any]:
    """A column of a frame as Python values, None where a cell is empty."""
    series = runs[column]
    return series.astype(object).where(series.notna(), None).tolist()


def text(v: Any) -> str:
    """A value as `--where` compares it: floats by repr, so that 1e-2 == 0.01."""
    return repr(v) if isinstance(v, float) else str(v)


def shown(column: str, v: Any) -> str:
    """A value as messages list it, in the figures' notation (100K, 3e-2), other floats by repr."""
    if is_int(v):
        return format_count(v)
    if column == "lr" and isinstance(v, float) and v > 0:
        return format_lr(v)
    return text(v)


def _number(s: str, binary: bool = False) -> float | None:
    """A text's number: a count as integer flags read it (4K; `binary`: 4,096), else a float."""
    for read in (lambda t: parse_int(t, binary), float):
        try:
            return float(read(s))
        except (ValueError, OverflowError):
            pass
    return None


def matches(value: Any, wanted: str, binary: bool = False) -> bool:
    """Does a run's value match a `--where` value? Numbers by value (`_number`), booleans
    case-insensitively, text as is or as a * / ? pattern."""
    have = text(value)
    x, y = _number(have), _number(wanted, binary)
    if x is not None and y is not None:
        same = math.isclose(x, y, rel_tol=1e-9)
    elif {have.lower(), wanted.lower()} <= {"true", "false"}:
        same = have.lower() == wanted.lower()
    else:
        same = have == wanted
    return same or (any(c in wanted for c in "*?[") and fnmatch.fnmatchcase(have, wanted))


def parse_where(items: list[str] | None) -> dict[str, list[str]]:
    """`select`'s {"key": [values]} from --where key=value, {"key!": [values]} from key!=value."""
    where: dict[str, list[str]] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or key == "!":
            raise UserError(f"--where takes key=value or key!=value, got {item!r}")
        key = key[:-1].strip() + "!" if key.endswith("!") else key
        where.setdefault(key, []).append(value.strip())
    return where


def select(runs, where: dict[str, str | list[str]] | None):
    """The rows of `runs` matching every `key=value` of `where` (a list of values: any of them);
    a key ending in "!" drops the runs that match instead (`key!=value`); see `matches`."""
    for key, wanted in (where or {}).items():
        key, exclude = key.removesuffix("!"), key.endswith("!")
        name = key if key == "run_id" else check_column(runs, key, "--where")
        wanted = [wanted] if isinstance(wanted, str) else list(wanted)
        have = column_values(runs, name)
        hit = [
            v is not None
            and any(matches(v, str(w), name in VOCAB_FIELDS) for w in wanted) != exclude
            for v in have
        ]
        if exclude and not any(hit):
            raise UserError(f"--where {key}!={'|'.join(map(str, wanted))} leaves no run")
        if not any(hit):
            seen = {shown(name, v): v for v in have if v is not None}
            order = sorted(
                seen, key=lambda t: (0, seen[t], "") if is_number(seen[t]) else (1, 0, t)
            )
            values = ", ".join(order) or "none"
            raise UserError(
                f"no run has {key}={'|'.join(map(str, wanted))}; its values are: {values}"
            )
        runs = runs[hit]
    return runs
