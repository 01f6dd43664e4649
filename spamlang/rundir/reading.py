"""A run directory's files read one at a time, below every layer (`spamlang.results` reads whole
sweeps on them); `best_over` is the one choice of a cell's best LR."""

from __future__ import annotations

import dataclasses
import json
import zipfile
from pathlib import Path
from typing import Any

from spamlang.errors import UserError, describe
from spamlang.rundir.schema import (
    CONFIG,
    METRICS,
    RESULT,
    RESULT_COLUMNS,
    SYMBOL_ARRAYS,
    SYMBOL_HISTORY_ARRAYS,
    SYMBOLS,
)


def read_json(path: str | Path) -> Any:
    """A JSON file's value; OSError or ValueError when it cannot be read."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def read_named_json(path: Path, where: object = None) -> Any:
    """A JSON file a user named (a sweep file, a law): its value, or UserError in one line naming
    `where` (default the path) and, for bad JSON, the line."""
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
    """A JSON file holding an object, or None when it is not (missing, unreadable, being written)."""
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
    row when it parses, else `torn`."""
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


def last_row(path: str | Path, keep, tail_bytes: int = 8192) -> dict | None:
    """The newest row of a growing JSON-lines file for which `keep(row)` holds, from its last
    `tail_bytes` only; None when there is none."""
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
    """`root` if it is a run, then its subfolders that are runs, sorted by name, each once."""
    root = Path(root)
    found = [p for p in root.iterdir() if p.is_dir() and is_run(p)]
    seen: dict[Path, Path] = {}
    for p in sorted(found, key=lambda p: (p.is_symlink(), p.name)):  # real directories first
        seen.setdefault(p.resolve(), p)
    return ([root] if is_run(root) else []) + sorted(seen.values())


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


def read_result(out_dir: str | Path) -> dict | None:
    """The run's result.json, or None if the run is not finished."""
    path = Path(out_dir) / RESULT
    try:
        return read_json(path) if path.exists() else None
    except (OSError, ValueError) as e:
        raise UserError(f"cannot read {path}: {e}") from None


def read_symbols(out_dir: str | Path) -> dict | None:
    """symbols.npz as {name: array} (`steps` an int), or None if the run has none; an old file
    lacks SYMBOL_HISTORY_ARRAYS."""
    import numpy as np

    path = Path(out_dir) / SYMBOLS
    if not path.exists():
        return None
    try:
        with np.load(path) as data:
            names = [k for k in (*SYMBOL_ARRAYS, "steps") if k not in SYMBOL_HISTORY_ARRAYS]
            out = {k: data[k] for k in names + [k for k in SYMBOL_HISTORY_ARRAYS if k in data]}
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as e:
        raise UserError(f"cannot read {path}: {e}") from None
    out["steps"] = int(out["steps"])
    return out


def symbols_damage(out_dir: str | Path) -> str | None:
    """Why the run's symbols.npz cannot be read (one line), or None: absent or whole."""
    try:
        read_symbols(out_dir)
    except UserError as e:
        return str(e)
    return None


def check_dir(sweep_dir: str | Path) -> Path:
    path = Path(sweep_dir)
    if not path.is_dir():
        raise UserError(f"no such directory: {path}")
    return path


def settings_columns(columns: list[str]) -> list[str]:
    """The settings among results.csv's `columns`: before its first outcome, less run_id."""
    first = min((i for i, c in enumerate(columns) if c in RESULT_COLUMNS), default=len(columns))
    return [c for c in columns[:first] if c != "run_id"]


def fields_of(axis: str) -> list[str]:
    """The fields an axis sets: one, or several for a linked axis ("vocab_size,seq_len")."""
    return [name.strip() for name in axis.split(",")]


def best_over(table, key: str, over: str, value: str, highest: bool = False):
    """The best `over` per `key` group of `table`: lowest mean `value` (`highest`: highest), a tie
    to the smaller `over`; rows of `key`, `over`, mean, min, max and count, in order of
    appearance. An `over` with a NaN row (a diverged run) never wins: its group may be left out."""
    stats = table.groupby([key, over], sort=False)[value].agg(
        ["mean", "min", "max", "count", "size"]
    )
    stats = stats.reset_index()
    stats["first"] = stats.groupby(key, sort=False).ngroup()
    ranked = stats[stats.pop("size") == stats["count"]].sort_values(over, kind="stable")
    ranked = ranked.sort_values(["first", "mean"], ascending=[True, not highest], kind="stable")
    return ranked.drop_duplicates(key).drop(columns="first").reset_index(drop=True)
