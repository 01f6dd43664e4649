"""Reading run directories: the one place that parses a run's files (config.json,
metrics.jsonl, track.jsonl, result.json, diagnostics.json) and a sweep's results.csv.

A run directory holds any of config.json, metrics.jsonl and result.json (`is_run`), and has
finished when it holds result.json (`is_finished`); in a live run only the last line of a .jsonl
may be cut (`Lines.torn`). `best_over` is the one choice of a cell's best LR.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spamlang.errors import UserError, describe
from spamlang.fields import is_int, is_number
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

_INT = re.compile(r"[+-]?\d+")
# The columns of results.csv (and keys of result.json) that hold a number or nothing.
NUMBER_COLUMNS = frozenset(NUMBER_SETTINGS) | {
    c for c in RESULT_COLUMNS if c not in (*TEXT_RESULTS, *FLAG_COLUMNS)
}
# What a damaged results.csv's message says to do: the table is derived, the runs are the data.
REBUILD = "rerun its sweep (`spamlang sweep`), which rebuilds it from the run directories"
# config.json dicts whose entries are sweep axes of their own, under these prefixes.
# `model` was named model_overrides in configs written before 2026-12: both read as model.*.
_FLATTENED = {"language_params": "param.", "model": "model.", "model_overrides": "model."}


class RunWarning(UserWarning):
    """A run that `scan` or `spamlang.results` left out, or read only in part."""


class DamagedTable(UserError):
    """A results.csv that exists but cannot be trusted (`read_table`): refused, never read in
    part, where a missing one may be stood in for by the run directories."""


def read_json(path: str | Path) -> Any:
    """A JSON file's value; OSError or ValueError (UnicodeDecodeError, JSONDecodeError) when it
    cannot be read."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def read_named_json(path: Path, where: object = None) -> Any:
    """A JSON file a user named (a sweep file, a law): its value, or UserError in one line,
    `WHERE: reason` or `WHERE:LINE: bad JSON: message` (`where`: how to name it; the path)."""
    from spamlang.errors import UserError

    where = path if where is None else where
    try:
        return read_json(path)
    except json.JSONDecodeError as e:
        raise UserError(f"{where}:{e.lineno}: bad JSON: {e.msg}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"{where}: {describe(e)}") from None


def read_strict(path: Path) -> dict:
    """A run's JSON file as a dict; ValueError saying, in words, why it cannot be."""
    try:
        data = read_json(path)
    except FileNotFoundError:
        raise ValueError(f"its {path.name} is missing") from None
    except OSError as e:
        raise ValueError(f"its {path.name} cannot be read ({describe(e)})") from None
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
        raise ValueError(f"its {path.name} cannot be parsed ({describe(e)})") from None
    if not isinstance(data, dict):
        raise ValueError(f"its {path.name} is not a JSON object")
    return data


def read_object(path: str | Path) -> dict | None:
    """A JSON file holding an object, or None when it is missing, unreadable, being written
    or not an object: what a reader of live runs treats as absent."""
    try:
        return read_strict(Path(path))
    except ValueError:
        return None


def parse_row(line: str | bytes) -> dict | None:
    """One JSON-lines row as a dict, or None when the line is not a JSON object."""
    try:
        row = json.loads(line)
    except ValueError:
        return None
    return row if isinstance(row, dict) else None


@dataclasses.dataclass
class Lines:
    """A JSON-lines file (metrics.jsonl, track.jsonl) as read."""

    rows: list[dict]  # every line that is a JSON object, in order
    bad: list[int]  # numbers (from 1) of the whole lines that are not JSON objects
    torn: bytes = b""  # a last line without its newline that is no JSON object (cut mid-row)


def read_lines(path: str | Path) -> Lines:
    """`path` as `Lines`; OSError when it cannot be read. A last line without its newline is a
    row when it parses (a whole row not yet ended), else `torn`."""
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")  # the last: b"" unless the last row is cut
    out = Lines([], [])
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        row = parse_row(line)
        if row is not None:
            out.rows.append(row)
        elif number == len(lines):
            out.torn = line
        else:
            out.bad.append(number)
    return out


def iter_metrics(run_dir: str | Path | None, kind: str | None = None) -> list[dict]:
    """The rows of a run's metrics.jsonl of the given kind (None: every row), lines that are
    not JSON objects (a live run's torn last line) skipped; [] without the file."""
    try:
        rows = read_lines(Path(run_dir) / METRICS).rows if run_dir else []
    except OSError:
        return []
    return [r for r in rows if kind is None or r.get("kind") == kind]


def last_row(path: str | Path, keep, tail_bytes: int = 8192) -> dict | None:
    """The newest row of a growing JSON-lines file for which `keep(row)` holds, read from its
    last `tail_bytes` only (a live run's file is long); None when there is none."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, 2) - tail_bytes))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):  # the first line of the tail may be cut: it does not parse
        row = parse_row(line)
        if row is not None and keep(row):
            return row
    return None


def is_run(path: Path) -> bool:
    """Does `path` hold a run (any of the files a run writes), damaged or not?"""
    return any((path / name).is_file() for name in (CONFIG, METRICS, RESULT))


def is_finished(path: Path) -> bool:
    """Has the run in `path` finished (result.json, written last, is there)?"""
    return (path / RESULT).is_file()


def run_dirs(root: str | Path) -> list[Path]:
    """The run directories of a sweep directory: `root` itself if it is a run, then its
    subfolders that are runs, sorted by name, each once: a symbolic link to a run listed
    already (under its own name or by another link) is left out."""
    root = Path(root)
    found = [p for p in root.iterdir() if p.is_dir() and is_run(p)]
    seen: dict[Path, Path] = {}
    for p in sorted(found, key=lambda p: (p.is_symlink(), p.name)):  # real directories first
        seen.setdefault(p.resolve(), p)
    return ([root] if is_run(root) else []) + sorted(seen.values())


def is_sweep(path: Path) -> bool:
    """Does `path` hold a sweep of its own (its sweep.json or results.csv) and is no run?"""
    return not is_run(path) and any((path / n).is_file() for n in (SWEEP_FILE, RESULTS_FILE))


def check_sweep_dir(sweep_dir: str | Path) -> Path:
    """`check_dir`, and UserError when its subfolders are sweeps of their own: readers list a
    directory's runs, not its sweeps', so a parent of sweep folders beside stray runs would
    show the stray runs alone, as if they were the sweep (and without runs, nothing)."""
    root = check_dir(sweep_dir)
    if is_run(root):
        return root
    subs = sorted(p for p in root.iterdir() if p.is_dir())
    sweeps = [p.name for p in subs if is_sweep(p)]
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


@dataclasses.dataclass
class RunFiles:
    """A run directory's JSON objects as read: None for a file missing or unreadable."""

    path: Path
    config: dict | None
    result: dict | None


def read_run(run_dir: str | Path) -> RunFiles:
    """config.json and result.json of a run, leniently (`read_object`)."""
    run_dir = Path(run_dir)
    return RunFiles(run_dir, read_object(run_dir / CONFIG), read_object(run_dir / RESULT))


def flatten_config(config: dict) -> dict[str, Any]:
    """config.json as settings columns: every field by its name, the entries of
    `language_params` and `model` as `param.NAME` and `model.NAME` (the names results.csv gives
    sweep axes over them), dicts and lists as JSON text."""
    out = {}
    for key, v in config.items():
        if key in _FLATTENED and isinstance(v, dict):
            out.update({_FLATTENED[key] + k: cell_value(x) for k, x in v.items()})
        else:
            out[key] = cell_value(v)
    return out


def cell_value(v: Any) -> Any:
    """A value as results.csv holds it: containers as JSON text, the rest as they are."""
    return json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v


def check_dir(sweep_dir: str | Path) -> Path:
    path = Path(sweep_dir)
    if not path.is_dir():
        raise UserError(f"no such directory: {path}")
    return path


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
    """Why `value` (parsed: `parse_cell`, or as result.json holds it) cannot be the `column` of
    results.csv, in words; None when it can. Empty (None) always can; a NUMBER_COLUMNS column
    takes a number, a FLAG_COLUMNS one True or False (or 0 or 1, as readers take it), any
    other anything."""
    if value is None:
        return None
    if column in FLAG_COLUMNS and not (isinstance(value, bool) or value in (0, 1)):
        return f"{column} must be True or False, got {value!r}"
    if column in NUMBER_COLUMNS and not is_number(value):
        return f"{column} must be a number, got {value!r}"
    return None


def read_table(path: Path) -> tuple[list[str], list[list[Any]]]:
    """results.csv as (header, rows of cells parsed by `parse_cell`); UserError when it is
    missing or empty, `DamagedTable` when it is not the table a sweep writes: not UTF-8 text
    (binary), its last row cut (no newline at its end: the writer ends every row), a row of
    another length than the header, or a cell that `damaged_cell` refuses. One line, naming
    the file: a table read in part would silently lose runs or use a cut value."""
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
        header = next(reader)
        rows = []
        for row in reader:
            if not row:
                continue
            if len(row) != len(header):
                raise damaged(
                    f"line {reader.line_num} has {len(row)} cells for {len(header)} columns"
                )
            # run_id is a directory name, never a number ("1e-3" must not become 0.001)
            cells = [c if h == "run_id" else parse_cell(c) for h, c in zip(header, row)]
            why = next(filter(None, map(damaged_cell, header, cells)), None)
            if why:
                raise damaged(f"line {reader.line_num}: {why}")
            rows.append(cells)
    except csv.Error as e:
        raise damaged(f"line {reader.line_num}: {e}") from None
    return header, rows


def settings_columns(columns: list[str]) -> list[str]:
    """The settings among results.csv's `columns`: those before its first outcome column
    (settings come first, then extra sweep axes, then outcomes), less run_id."""
    first = min((i for i, c in enumerate(columns) if c in RESULT_COLUMNS), default=len(columns))
    return [c for c in columns[:first] if c != "run_id"]


def fields_of(axis: str) -> list[str]:
    """The fields an axis sets: one, or several for a linked axis ("vocab_size,seq_len")."""
    return [name.strip() for name in axis.split(",")]


def extra_axes(out_dir: str | Path) -> list[str]:
    """Axis names of the sweep in `out_dir` (its sweep.json) that are not already standard
    columns: the columns results.csv holds between the settings and the outcomes."""
    try:
        axes = read_json(Path(out_dir) / SWEEP_FILE).get("axes", {})
    except (OSError, ValueError, AttributeError):
        return []
    names = [n for a in axes for n in fields_of(a)]  # a linked axis sets several
    standard = {*SETTING_COLUMNS, *RESULT_COLUMNS, "model.d_model", "model.n_layers"}  # columns
    return [n for n in dict.fromkeys(names) if n not in standard]


def fill_older(row: dict, return_time: Callable[[], dict]) -> None:
    """Fill in a results.csv `row` the outcomes that a run written before they were reported
    lacks: updates_per_symbol under its old name, and the return time, from `return_time()`
    (the run's `TrainConfig.return_time`: the caller builds it, as this layer sits below the
    trainer); left empty where that config cannot be built (ValueError, TypeError)."""
    if row["updates_per_symbol"] is None:  # the column's old name
        row["updates_per_symbol"] = row["sequences_per_symbol"]
    missing = [k for k in ("symbol_return_steps", "adam_memory_steps") if row[k] is None]
    if not missing:
        return
    try:
        row.update({k: return_time()[k] for k in missing})
    except (ValueError, TypeError):  # a foreign config (UserError is a ValueError): leave empty
        pass


def scan(sweep_dir: str | Path):
    """results.csv of a sweep directory as a pandas DataFrame: one row per finished run,
    settings then outcomes, in the file's column order, typed by `frame`. A finished run of
    `run_dirs` missing from the table gets a `RunWarning` saying why (its config.json or
    result.json is gone or garbled, or the table predates it)."""
    pandas()  # without it nothing is read
    root = check_sweep_dir(sweep_dir)
    header, rows = read_table(root / RESULTS_FILE)
    if "run_id" in header:
        listed = {row[header.index("run_id")] for row in rows}
        for run_dir in run_dirs(root):
            if run_dir == root or not is_finished(run_dir) or run_dir.name in listed:
                continue
            try:
                for name in (RESULT, CONFIG):
                    read_strict(run_dir / name)
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
    return frame(header, rows)


def pandas():
    try:
        import pandas
    except ImportError:
        raise UserError('spamlang.results needs pandas: pip install "spamlang[analysis]"') from None
    return pandas


def frame(columns: list[str], rows: list[list[Any]]):
    """A DataFrame of `rows`, each column typed from its cells as `spamlang.results` says."""
    pd = pandas()

    def column(values: list[Any]):
        present = [v for v in values if v is not None]
        complete = len(present) == len(values)
        nan = [math.nan if v is None else v for v in values]
        if present and all(isinstance(v, bool) for v in present):
            return pd.Series(values if complete else nan, dtype=bool if complete else object)
        if present and all(is_int(v) for v in present):
            return pd.Series(nan, dtype="int64" if complete else "float64")
        if all(is_number(v) for v in present):
            return pd.Series(nan, dtype="float64")  # all empty: all NaN
        return pd.Series(nan)

    return pd.DataFrame(
        {c: column([row[i] for row in rows]) for i, c in enumerate(columns)}, columns=columns
    )


def best_over(table, key: str, over: str, value: str, highest: bool = False):
    """The best value of `over` in each group of `table`'s rows that share `key`: the one whose
    rows have the lowest mean `value` (with `highest`, the highest), a tie going to the smaller
    `over`. One row per group, in order of first appearance: `key`, `over`, and that value's
    mean, min, max and count over the rows. A value with a NaN row (a diverged run) never wins:
    its mean would hide the runs it lost; a group with no other value is left out."""
    stats = table.groupby([key, over], sort=False)[value].agg(
        ["mean", "min", "max", "count", "size"]
    )
    stats = stats.reset_index()
    stats["first"] = stats.groupby(key, sort=False).ngroup()
    ranked = stats[stats.pop("size") == stats["count"]].sort_values(over, kind="stable")
    ranked = ranked.sort_values(["first", "mean"], ascending=[True, not highest], kind="stable")
    return ranked.drop_duplicates(key).drop(columns="first").reset_index(drop=True)
