"""Read a sweep directory from disk as runs: results.csv, run directories, metrics.jsonl.

Used by the figures and `spamlang sample --where`: only files, so a sweep that another host is
still running can be read, and the trainer is never imported. A run's columns are settings (what
it was asked: results.csv's settings and every config.json field, `param.NAME`, `model.NAME`) and
outcomes (what it measured); any column, or `1-COL`, works as a plot axis or in `--where`.
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spamlang.errors import UserError
from spamlang.fields import finite, is_int, is_number
from spamlang.notation import VOCAB_FIELDS, format_count, format_lr, parse_int
from spamlang.rundir.reading import (
    DamagedTable,
    check_sweep_dir,
    flatten_config,
    read_run,
    read_table,
    run_dirs,
    settings_columns,
)
from spamlang.rundir.schema import RESULTS_FILE

ALIASES = {"tied": "tie_embeddings"}
# '1-COL' names 1 - COL of any numeric column (1-kernel_fraction), an outcome of its own.
COMPLEMENT = "1-"


@dataclass(frozen=True)
class Run:
    """One run as the plots see it: its settings, its outcomes and where it lives."""

    run_id: str  # the run directory's name (or results.csv's run_id)
    settings: dict[str, Any] = field(default_factory=dict)  # bool, int, float, str or None
    result: dict[str, Any] = field(default_factory=dict)  # outcomes; {} while running
    path: Path | None = None  # run directory, when it exists

    @property
    def finished(self) -> bool:
        return bool(self.result)

    @property
    def diverged(self) -> bool:
        return bool(self.result.get("diverged"))

    @property
    def lr(self) -> float:
        return float(self.settings["lr"])

    def get(self, column: str) -> Any:
        """The column's value (a setting first, else an outcome); None when the run lacks it."""
        column = ALIASES.get(column, column)
        if column in self.settings:
            return self.settings[column]
        if column not in self.result and (base := complement_of(column)):
            v = self.get(base)
            return 1.0 - v if is_number(v) else None
        return self.result.get(column)

    def value(self, column: str) -> float | None:
        """A finite float, or None when missing, not a number or not finite."""
        return finite(self.get(column))


def complement_of(column: str) -> str | None:
    """'kernel_fraction' for the derived column '1-kernel_fraction' (whose differences near 1
    a log axis shows), else None."""
    return column[len(COMPLEMENT) :] or None if column.startswith(COMPLEMENT) else None


def _read_csv(root: Path) -> dict[str, tuple[dict, dict]]:
    """results.csv as run_id -> (settings, outcomes); {} when it is missing or empty (the run
    directories stand in for it), `reading.DamagedTable` when it is damaged."""
    if not (root / RESULTS_FILE).is_file():
        return {}
    try:
        header, rows = read_table(root / RESULTS_FILE)
    except DamagedTable:
        raise
    except UserError:  # empty
        return {}
    settings = settings_columns([c for c in header if c])
    outcomes = [c for c in header if c and c not in settings and c != "run_id"]
    table = {}
    for n, row in enumerate(rows):
        cells = dict(zip(header, row))
        result = {c: cells.get(c) for c in outcomes}
        result["diverged"] = bool(result.get("diverged"))
        table[cells.get("run_id") or f"row{n + 1}"] = ({c: cells.get(c) for c in settings}, result)
    return table


def _run(
    run_id: str, path: Path | None, csv_row: tuple[dict, dict] | None, on_disk: bool = False
) -> Run | None:
    """A run from its directory and/or its results.csv row. With `on_disk`, the directory says
    whether it has finished (result.json), and the row only adds columns to a finished run."""
    files = read_run(path) if path else None
    config = files.config if files else None
    if on_disk and config is None:
        return None
    row_settings, result = csv_row or ({}, {})
    # results.csv names a model.X axis plainly X (d_model): one column, not two.
    settings = {
        k: v
        for k, v in (flatten_config(config) if config else {}).items()
        if not (k.startswith("model.") and k[len("model.") :] in row_settings)
    }
    settings.update(row_settings)
    if on_disk:
        result = {**result, **files.result} if files.result is not None else {}
    return Run(run_id=run_id, settings=settings, result=result, path=path)


def scan_runs(sweep_dir: str | Path) -> list[Run]:
    """Every run directory under `sweep_dir` (and `sweep_dir` itself if it is one), finished or
    not (result.json decides); a finished run listed in results.csv also gets that row's columns."""
    root = check_sweep_dir(sweep_dir)
    table = _read_csv(root)
    runs = (_run(p.name, p, table.get(p.name), on_disk=True) for p in run_dirs(root))
    return [r for r in runs if r is not None]


def finished_runs(sweep_dir: str | Path) -> list[Run]:
    """Finished runs: rows of results.csv, or run directories with result.json when it is absent."""
    root = check_sweep_dir(sweep_dir)
    table = _read_csv(root)
    runs = [
        _run(run_id, root / run_id if (root / run_id).is_dir() else None, row)
        for run_id, row in table.items()
    ]
    if not runs:
        runs = [r for r in scan_runs(root) if r.finished]
    if not runs:
        raise UserError(f"no finished runs in {root}")
    return runs


def check_column(runs: list[Run], column: str, flag: str) -> str:
    """`column` (aliases resolved) if some run has it, else a UserError naming the known ones."""
    name = ALIASES.get(column, column)
    # Every setting and outcome name, settings first, in order of appearance.
    known = list(
        dict.fromkeys([k for r in runs for k in r.settings] + [k for r in runs for k in r.result])
    )
    if name not in known and (base := complement_of(name)):
        return COMPLEMENT + check_column(runs, base, flag)
    if name not in known:
        raise UserError(f"unknown column {column!r} for {flag}; known columns: {', '.join(known)}")
    return name


def text(v: Any) -> str:
    """A value as `--where` compares it: floats by repr, so that 1e-2 == 0.01."""
    return repr(v) if isinstance(v, float) else str(v)


def shown(column: str, v: Any) -> str:
    """A value as messages list it, in the figures' notation: counts as `format_count` writes
    them (4096, 100K), learning rates as `format_lr` (3e-2), other floats by repr."""
    if is_int(v):
        return format_count(v)
    if column == "lr" and isinstance(v, float) and v > 0:
        return format_lr(v)
    return text(v)


def _number(s: str, binary: bool = False) -> float | None:
    """A text's number: a count in the notation of every integer flag and figure (4096, 4K =
    4,000, 1.5M: `spamlang.notation.parse_int`; `binary`, a vocabulary: 4K = 4,096), else a
    float (1e-2); None for other text."""
    for read in (lambda t: parse_int(t, binary), float):
        try:
            return float(read(s))
        except (ValueError, OverflowError):
            pass
    return None


def matches(value: Any, wanted: str, binary: bool = False) -> bool:
    """Does a run's value match a `--where` value? Numbers by value (1K is 1000, the figures'
    notation; 1e-2 is 0.01; `binary`, a vocabulary size: 4K is 4,096, as `--vocab-size` reads
    it), booleans case-insensitively, text as is or as a * / ? pattern."""
    have = text(value)
    x, y = _number(have), _number(wanted, binary)
    if x is not None and y is not None:
        same = math.isclose(x, y, rel_tol=1e-9)
    elif {have.lower(), wanted.lower()} <= {"true", "false"}:
        same = have.lower() == wanted.lower()
    else:
        same = have == wanted
    return same or (any(c in wanted for c in "*?[") and fnmatch.fnmatchcase(have, wanted))


def select(runs: list[Run], where: dict[str, str | list[str]] | None) -> list[Run]:
    """Runs matching every `key=value` of `where` (a list of values: any of them); a key
    ending in "!" drops the runs that match instead (`key!=value` on the command line).

    A key is any setting or outcome column, or run_id; numbers compare by value (lr=1e-2
    matches 0.01, tokens=100K matches 100000, as figures write it), text may be a wildcard
    pattern (`matches`).
    """
    for key, wanted in (where or {}).items():
        exclude = key.endswith("!")
        key = key[:-1] if exclude else key
        # run_id (the directory's name) is no setting or outcome, but selects like one.
        name = key if key == "run_id" else check_column(runs, key, "--where")
        get = (lambda r: r.run_id) if name == "run_id" else (lambda r, name=name: r.get(name))
        wanted = [wanted] if isinstance(wanted, str) else list(wanted)
        binary = name in VOCAB_FIELDS
        kept = [
            r
            for r in runs
            if (v := get(r)) is not None
            and any(matches(v, str(w), binary) for w in wanted) != exclude
        ]
        if exclude and not kept:
            raise UserError(f"--where {key}!={'|'.join(map(str, wanted))} leaves no run")
        if not kept:
            values = {shown(name, v): v for r in runs if (v := get(r)) is not None}
            order = sorted(
                values, key=lambda t: (0, values[t], "") if is_number(values[t]) else (1, 0, t)
            )
            raise UserError(
                f"no run has {key}={'|'.join(map(str, wanted))}; "
                f"its values are: {', '.join(order) or 'none'}"
            )
        runs = kept
    return runs


def varying_settings(runs: list[Run]) -> list[str]:
    """Settings that take more than one value among `runs`, in column order."""
    keys = dict.fromkeys(k for r in runs for k in r.settings)
    return [k for k in keys if len({text(r.settings.get(k)) for r in runs}) > 1]
