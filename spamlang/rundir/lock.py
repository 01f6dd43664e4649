"""Exclusive advisory locks that die with their process (`filelock`); one owner per run directory.

Two trainers of one directory would corrupt it, so `spamlang.train.run` holds `<run_dir>/.lock`
before it writes there and a second one gets `RunDirBusy` naming the holder (who writes its pid,
host and start time into the file). Reading a run never takes the lock. Where a filesystem has
no locks, a warning says so once and the work goes on unlocked.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import filelock

from spamlang.errors import UserError
from spamlang.rundir.schema import RUN_LOCK

# A taker that finds the lock held but no note in the file has caught the holder between its
# flock and its note (or a holder letting go); it tries again this long before saying "unknown".
_NOTE_WAIT_S = 0.5
_UNSUPPORTED = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}
_warned: set[str] = set()


@dataclasses.dataclass(frozen=True)
class Holder:
    """Who holds a lock, as its holder wrote it into the lock file."""

    pid: int
    host: str
    since: str  # local time the lock was taken, "YYYY-MM-DD HH:MM:SS"

    def __str__(self) -> str:
        return f"pid {self.pid} on host {self.host} since {self.since}"


class Taken(Exception):
    """The lock is held by another process or `locked` here; `holder` None: its note unread."""

    def __init__(self, path: Path, holder: Holder | None):
        super().__init__(f"{path} is locked by {holder or 'another process'}")
        self.path, self.holder = path, holder


@contextlib.contextmanager
def locked(path: str | os.PathLike, *, wait: bool = True) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if missing) for the body; `wait` False: `Taken`
    when another holds it. OSError when the lock file cannot be created."""
    path = Path(path)
    if not path.parent.is_dir():  # filelock would create it
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path.parent))
    if not is_lock_file(path):  # taking it would truncate it, letting go delete it
        raise UserError(
            f"{path} is not a spamlang lock (no holder note in it), so it is neither taken nor "
            "deleted; move it away, or choose another folder"
        )
    # A flock, which the kernel drops with its process: a crash or SIGKILL leaves no stale lock
    # (the soft fallback would). Two locks of one path in one process exclude each other.
    lock = filelock.FileLock(path, fallback_to_soft=False, on_acquired=_write_note)
    held = _acquire(lock, path, wait)
    try:
        yield
    finally:
        if held:
            with contextlib.suppress(OSError):
                os.unlink(path)  # while still locked: a taker that opened it starts over
            lock.release()


def _read_note(path: Path) -> Holder | None:
    """The holder note in the lock file at `path`, or None (no file, or no note in it)."""
    try:
        note = json.loads(path.read_bytes())
        return Holder(int(note["pid"]), str(note["host"]), str(note["since"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None


def is_lock_file(path: str | os.PathLike) -> bool:
    """Whether the file at `path` may be a lock of ours: absent, empty (a lock being taken or
    let go, or one on a filesystem without locks, where no note is written) or holding a
    holder note (one held now, or left by a killed holder)."""
    path = Path(path)
    try:
        if path.is_symlink() or not path.is_file():
            return not os.path.lexists(path)
        if path.stat().st_size == 0:
            return True
    except OSError:
        return False
    return _read_note(path) is not None


def _write_note(fd: int) -> None:
    """Who holds the lock, into the lock file (`filelock`'s `on_acquired`)."""
    since = time.strftime("%Y-%m-%d %H:%M:%S")
    note = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": since})
    with contextlib.suppress(OSError):  # the lock holds without its note
        os.ftruncate(fd, 0)
        os.pwrite(fd, (note + "\n").encode(), 0)


def _acquire(lock: filelock.BaseFileLock, path: Path, wait: bool) -> bool:
    """Take `lock`: True, or False where the filesystem has no locks (said once)."""
    give_up = time.monotonic() + _NOTE_WAIT_S
    while True:
        try:
            lock.acquire(blocking=wait)
            return True
        except filelock.Timeout:  # an OSError too: caught first
            holder = _read_note(path)  # None: no note yet, or an unreadable one
            if holder is None and time.monotonic() < give_up:
                time.sleep(0.02)
                continue
            raise Taken(path, holder) from None
        except OSError as e:
            if e.errno not in _UNSUPPORTED:
                raise
            if str(path) not in _warned:
                _warned.add(str(path))
                print(
                    f"warning: cannot lock {path} ({e.strerror or e}); this filesystem has no "
                    "file locks, so another process using it at the same time goes undetected",
                    file=sys.stderr,
                )
            return False


class RunDirBusy(UserError):
    """The run directory is being trained by another process; `holder` None: unknown (an
    unreadable note, or a multi-host process other than 0, told only that it is busy)."""

    def __init__(self, run_dir: str | os.PathLike, holder: Holder | None):
        self.run_dir, self.holder = Path(run_dir), holder
        super().__init__(
            f"{run_dir} is in use by {self.by} (another spamlang train or sweep); "
            "wait for it or use another --out"
        )

    @property
    def by(self) -> str:
        """The holder in words: "pid 1234 on host h since 2026-11-30 14:02:11"."""
        return str(self.holder) if self.holder else "another process"


@contextlib.contextmanager
def hold_run_dirs(run_dirs: list[Path], writer: bool = True) -> Iterator[None]:
    """Hold the lock of every directory in `run_dirs` (which must exist), all or none: a busy one
    is `RunDirBusy` at once, so that two processes locking overlapping groups never deadlock.
    In a job of several processes only process 0, the `writer`, locks: they share the directory
    on purpose (flock is seen by every host); all agree (one allgather) and raise together, not
    wait in a loop process 0 never enters."""
    import jax

    busy: UserError | None = None
    with contextlib.ExitStack() as stack:
        for run_dir in run_dirs if writer else ():
            try:
                stack.enter_context(locked(Path(run_dir) / RUN_LOCK, wait=False))
            except Taken as e:
                busy = RunDirBusy(run_dir, e.holder)
            except OSError as e:
                busy = UserError(f"cannot write to run directory {run_dir}: {e.strerror or e}")
            if busy is not None:  # all or none: the ones taken are let go when it is raised
                break
        if jax.process_count() > 1:
            import numpy as np
            from jax.experimental import multihost_utils

            # 0: all locked; i: run_dirs[i - 1] is busy; len + 1: another error.
            code = 0 if busy is None else len(run_dirs) + 1
            if isinstance(busy, RunDirBusy):
                code = run_dirs.index(busy.run_dir) + 1
            code = int(np.max(multihost_utils.process_allgather(np.int32(code))))
            if busy is None and code > len(run_dirs):
                busy = UserError("process 0 could not lock the run directories (see its error)")
            elif busy is None and code:
                busy = RunDirBusy(run_dirs[code - 1], None)
        if busy is not None:
            raise busy
        yield
