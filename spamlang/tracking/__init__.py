"""Experiment trackers (TensorBoard, Weights & Biases, extras `.[tensorboard]`, `.[wandb]`):
a run's metrics.jsonl rows, config and result mirrored to a tracker the user browses.

A tracker only reads what the loop wrote and feeds nothing back, so a run's numbers are the same
with or without one. `--tracker` that cannot start is a UserError; `Sweep(tracker=...)` only
warns; a tracker that fails later is dropped with one warning (docs/guide/trackers.md).
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from pathlib import Path

from spamlang.errors import UserError
from spamlang.tracking.common import KINDS, TrackerSpec

_ACTIVE: list[TrackerSpec] = []  # the innermost `session`'s spec (empty: no tracker)
_DROPPED: set = set()  # kinds that failed once in this process: warned about once, not retried


def parse_kind(text: str | None) -> str | None:  # --tracker / Sweep(tracker=): None for "none"
    if text is None or text == "none":
        return None
    if text not in KINDS:
        raise UserError(f"unknown tracker {text!r}: expected {', '.join(KINDS)} or none")
    return text


@contextlib.contextmanager
def session(spec: TrackerSpec | None):
    """Runs trained inside use `spec`'s tracker; an explicit one is checked before any training."""
    if spec is None:
        yield
        return
    if spec.explicit:  # UserError (one line naming the fix) when the tracker cannot start
        _backend(spec.kind).check(verify=True)
        _check_folder(spec.root / spec.kind)
    _ACTIVE.append(spec)
    try:
        yield
    finally:
        _ACTIVE.pop()


def _check_folder(folder: Path) -> None:
    for path in (folder, *folder.parents):
        if path.exists():
            if not path.is_dir():
                raise UserError(
                    f"--tracker {folder.name}: cannot make its folder {folder}: {path} is not "
                    "a folder"
                )
            return


def _backend(kind: str):
    return importlib.import_module(f"spamlang.tracking.{kind}_writer")


def attach(log, run_dir: Path, config, restored_step: int):
    """`log` mirrored to the active tracker, if any; `restored_step`: where the run resumes."""
    if not _ACTIVE or _ACTIVE[-1].kind in _DROPPED:
        return log
    spec = _ACTIVE[-1]
    try:
        writer = _backend(spec.kind).Writer(spec, Path(run_dir), config, log.records, restored_step)
    except Exception as e:  # noqa: BLE001 (a tracker never stops a run it was not asked for)
        if spec.explicit:  # asked for by name: its failure to start is the command's error
            if isinstance(e, UserError):
                raise
            text = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise UserError(f"--tracker {spec.kind} cannot start: {text}") from e
        _drop(spec.kind, e)
        return log
    return TrackedLog(log, writer, spec.kind)


def finished(log, result: dict) -> None:  # give the tracker result.json and end its run
    if isinstance(log, TrackedLog):
        log.finish(result)


def _drop(kind: str, error: Exception) -> None:
    _DROPPED.add(kind)
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    print(
        f"warning: {kind} tracker off for this process ({text}); training goes on without it",
        file=sys.stderr,
    )


class TrackedLog:
    """A MetricsLog whose rows also go to a writer, dropped with one warning if it raises."""

    def __init__(self, log, writer, kind: str):
        self._log, self._writer, self._kind = log, writer, kind

    def __getattr__(self, name):
        return getattr(self._log, name)

    def append(self, record: dict) -> None:
        self._log.append(record)
        self._call("row", self._log.records[-1])

    def finish(self, result: dict) -> None:
        self._call("finish", result)

    def close(self) -> None:
        try:
            self._call("close")
        finally:
            self._log.close()

    def _call(self, method: str, *args) -> None:
        if self._writer is None:
            return
        try:
            getattr(self._writer, method)(*args)
        except Exception as e:  # noqa: BLE001 (see the class doc)
            self._writer = None
            _drop(self._kind, e)
