"""Writing results.csv, a row per finished run, and the symbols' binned history (symbols.csv.gz),
from the run directories alone: an interrupted sweep's next gather lists every run once."""

from __future__ import annotations

import csv
import errno
import gzip
import io
import json
import sys
from pathlib import Path

from spamlang.errors import describe
from spamlang.results import extra_axes, run_row
from spamlang.rundir.atomic import atomic_write_bytes, atomic_write_text
from spamlang.rundir.lock import locked
from spamlang.rundir.reading import is_finished, parse_row, run_dirs, symbols_damage
from spamlang.rundir.schema import (
    METRICS,
    RESULT_COLUMNS,
    RESULTS_FILE,
    RESULTS_LOCK,
    SETTING_COLUMNS,
    SYMBOLS_FILE,
)
from spamlang.train.config import TrainConfig

# errno values that mean "this storage will not take a write" rather than a bug or a full disk.
READ_ONLY_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
JSON = (dict, list, tuple)  # a results.csv cell holding one of these holds its JSON text
_TAIL_BYTES = 1 << 16  # a torn metrics row is looked for in this much of the file's end


def is_read_only(e: BaseException) -> bool:  # storage that takes no writes
    return isinstance(e, OSError) and e.errno in READ_ONLY_ERRNOS


class Report:
    """What gathering left out or repaired: a sweep keeps it to say each thing once, at the end;
    with `echo` (a gather outside a sweep) each line goes to stderr at once."""

    def __init__(self, echo: bool = False):
        self.echo = echo
        # The latest gather's finished runs it could not read (run directory -> why).
        self.unreadable: dict[str, str] = {}
        self.notes: dict[str, None] = {}  # every repair and write left undone, in order, once

    def note(self, line: str) -> None:
        if self.echo:
            print(line, file=sys.stderr)
        else:
            self.notes[line] = None

    def lines(self) -> list[str]:
        said = f"finished but left out of {RESULTS_FILE}"
        unreadable = [f"warning: {run}: {said}: {why}" for run, why in self.unreadable.items()]
        return unreadable + list(self.notes)


def repair_metrics(run_dir: str | Path) -> str | None:
    """Cut a torn last line (a row cut mid-JSON) from a finished run's metrics.jsonl; the line
    that says what was done (or could not be), or None when there was nothing to cut."""
    path = Path(run_dir) / METRICS
    try:
        with open(path, "rb") as f:
            size = f.seek(0, 2)
            f.seek(max(0, size - _TAIL_BYTES))
            tail = f.read()
    except OSError:
        return None
    if not tail or tail.endswith(b"\n"):
        return None
    cut = tail.rfind(b"\n")
    if cut < 0 and size > len(tail):
        return None  # one line longer than the tail: not a row this writer makes
    last = tail[cut + 1 :]
    if parse_row(last) is not None:
        return None  # a whole row without its newline: nothing lost, nothing to cut
    torn = f"torn last line ({len(last)} bytes cut mid-row)"
    try:
        with open(path, "rb") as f:
            kept = f.read(size - len(last))
        atomic_write_bytes(path, kept)
    except OSError as e:
        return f"warning: {path}: its {torn}; could not cut it away ({e.strerror or describe(e)})"
    return f"repaired {path}: cut its {torn}"


def gather(out_dir: str | Path, report: Report | None = None, check=None) -> list[dict]:
    """One `run_row` per finished run under `out_dir`, each once; a run that cannot be read or
    that `check` refuses is left out and recorded in `report` (None: a warning on stderr)."""
    report = Report(echo=True) if report is None else report
    report.unreadable = {}
    root = Path(out_dir)
    if not root.is_dir():
        return []
    extras, rows = extra_axes(root), []
    for run_dir in run_dirs(root):
        if run_dir == root or not is_finished(run_dir):
            continue
        if fixed := repair_metrics(run_dir):
            report.note(fixed)
        # A damaged symbols.npz: the run is listed all the same, only its per-symbol file is lost
        if damage := symbols_damage(run_dir):
            report.note(f"warning: {damage}; the run stays in {RESULTS_FILE} without it")
        try:
            rows.append(
                run_row(run_dir, extras, check, lambda c: TrainConfig.from_json(c).return_time)
            )
        except ValueError as e:
            report.unreadable[str(run_dir)] = str(e)
    if report.echo:
        for line in report.lines():
            print(line, file=sys.stderr)
    return rows


def write_results(out_dir: str | Path, report: Report | None = None, check=None) -> list[dict]:
    """Gather `out_dir` and rewrite its results.csv atomically under a lock (a sweep's shards take
    turns); return the rows, also where `out_dir` takes no writes (`report` says so)."""
    root = Path(out_dir)
    report = Report(echo=True) if report is None else report
    rows = None
    try:
        with locked(root / RESULTS_LOCK):
            rows = gather(root, report, check)
            _write_table(root, rows)
            _write_symbol_table(root, rows)
    except OSError as e:
        if not is_read_only(e):
            raise
        # Nothing else can write here either, so there is nothing to take turns with.
        rows = gather(root, report, check) if rows is None else rows
        why = f"{root} cannot be written ({e.strerror or describe(e)})"
        report.note(f"note: left {root / RESULTS_FILE} as it was: {why}")
    return rows


def _write_symbol_table(root: Path, rows: list[dict]) -> None:
    """symbols.csv.gz: every run's binned symbol history, a row per bin and evaluation; none
    while no run has a history."""
    from spamlang.coverage.history import COLUMNS

    histories = [(r["run_id"], h) for r in rows if isinstance(h := r.get("symbol_history"), dict)]
    if not histories:
        return
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(("run_id", *COLUMNS))
    for run_id, h in histories:
        for values in zip(*(h.get(c, ()) for c in COLUMNS)):
            # A float to 5 significant digits (the summary is a mean over symbols; git keeps it).
            cells = ("" if v is None else f"{v:.5g}" if isinstance(v, float) else v for v in values)
            writer.writerow((run_id, *cells))
    # mtime 0: the same runs give the same bytes, so a rerun leaves a committed copy unchanged
    data = gzip.compress(buf.getvalue().encode(), compresslevel=9, mtime=0)
    atomic_write_bytes(root / SYMBOLS_FILE, data)


def _write_table(root: Path, rows: list[dict]) -> None:
    columns = [*SETTING_COLUMNS, *extra_axes(root), *RESULT_COLUMNS]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for row in rows:  # csv writes None as "" and bools as True/False; a container is one cell
        cells = {k: json.dumps(v, sort_keys=True) for k, v in row.items() if isinstance(v, JSON)}
        writer.writerow({**row, **cells})
    atomic_write_text(root / RESULTS_FILE, buf.getvalue())
