"""Reading run directories: the one place that parses a run's files (config.json,
metrics.jsonl, track.jsonl, result.json, diagnostics.json) and says what a run is.

A run directory is a directory holding any of config.json, metrics.jsonl and result.json,
damaged or not (`is_run`); it has finished when it holds result.json (`is_finished`). Readers
of live runs meet files being written: config.json and result.json are written atomically
(whole or absent), metrics.jsonl and track.jsonl grow by whole lines, so only their last line
may be cut mid-row (`Lines.torn`). Imports no JAX and nothing above the run-directory layer.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from spamlang.rundir.schema import CONFIG, METRICS, RESULT


def read_json(path: str | Path) -> Any:
    """A JSON file's value; OSError or ValueError (UnicodeDecodeError, JSONDecodeError) when it
    cannot be read."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def read_object(path: str | Path) -> dict | None:
    """A JSON file holding an object, or None when it is missing, unreadable, being written
    or not an object: what a reader of live runs treats as absent."""
    try:
        value = read_json(path)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


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
        lines = f.read().split(b"\n")
    tail = lines.pop()  # after the last newline: b"" unless the last row is cut
    out = Lines([], [])
    for number, line in enumerate(lines, 1):
        if line.strip():
            row = parse_row(line)
            if row is None:
                out.bad.append(number)
            else:
                out.rows.append(row)
    if tail.strip():
        row = parse_row(tail)
        if row is None:
            out.torn = tail
        else:
            out.rows.append(row)
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


@dataclasses.dataclass
class RunFiles:
    """A run directory's JSON objects as read: None for a file missing or unreadable."""

    path: Path
    config: dict | None
    result: dict | None

    @property
    def finished(self) -> bool:
        return self.result is not None


def read_run(run_dir: str | Path) -> RunFiles:
    """config.json and result.json of a run, leniently (`read_object`)."""
    run_dir = Path(run_dir)
    return RunFiles(run_dir, read_object(run_dir / CONFIG), read_object(run_dir / RESULT))
