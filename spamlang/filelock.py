"""Exclusive advisory file locks (`fcntl.flock`) that die with their process.

The kernel drops a flock when the last descriptor of the locked open file closes, so a crash
or SIGKILL never leaves a stale lock behind: the next process simply takes it. The holder
writes who it is (pid, host, start time) into the lock file, for the message of whoever finds
the lock taken, and deletes the file when it lets go (a file left by a killed holder is taken
over as it is). Deleting is safe because a taker checks, once it holds the flock, that the
path still names the file it locked, and starts over on the new file if not.

flock belongs to an open file, not to a process: two `open()`s of one lock file in the same
process exclude each other as two processes do. Python opens the descriptor close-on-exec, so
an exec'd child never inherits the lock; a bare `fork()` child would share it.

Filesystems: local ones, and NFS (Linux turns flock into NFS byte-range locks, seen by every
client, but those belong to a process: there, two open()s in one process do not exclude each
other, and closing either lets go). Lustre needs its `flock` mount option; where a
filesystem refuses locks, a warning says so once per lock file and the work goes on unlocked,
as it did before locks existed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

# A taker that finds the lock held but the file still empty has caught the holder between its
# flock and its note (or a holder letting go); it looks again this long before saying "unknown".
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
    """The lock is held by another open file: another process, or another open() here.

    `holder` is None when the holder's note could not be read.
    """

    def __init__(self, path: Path, holder: Holder | None):
        super().__init__(f"{path} is locked by {holder or 'another process'}")
        self.path, self.holder = path, holder


@contextlib.contextmanager
def locked(path: str | os.PathLike, *, wait: bool = True) -> Iterator[None]:
    """Hold an exclusive flock on `path` (created if missing) for the body of the `with`.

    `wait` False raises `Taken` when another open file holds it (within half a second, the
    time a holder that has just taken it gets to write its note); True waits for it.
    OSError when the lock file cannot be created (a read-only or missing directory).
    """
    path = Path(path)
    fd = _acquire(path, wait)
    try:
        yield
    finally:
        if fd is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)  # while still locked: a taker that opened it starts over
            os.close(fd)


def _acquire(path: Path, wait: bool) -> int | None:
    """The descriptor that holds the lock, or None where the filesystem has no locks."""
    give_up = time.monotonic() + _NOTE_WAIT_S
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_note(fd)
            os.close(fd)
            if holder is None and time.monotonic() < give_up:
                time.sleep(0.02)
                continue
            raise Taken(path, holder) from None
        except OSError as e:
            os.close(fd)
            if e.errno not in _UNSUPPORTED:
                raise
            _warn_unsupported(path, e)
            return None
        except BaseException:
            os.close(fd)
            raise
        try:
            named = _still_named(fd, path)
        except BaseException:
            os.close(fd)
            raise
        if named:
            _write_note(fd)
            return fd
        os.close(fd)  # the previous holder deleted the file after we opened it


def _still_named(fd: int, path: Path) -> bool:
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (now.st_dev, now.st_ino)


def _write_note(fd: int) -> None:
    note = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "since": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(note) + "\n").encode(), 0)
    except OSError:
        pass  # the lock holds without its note; a taker then names no holder


def _read_note(fd: int) -> Holder | None:
    try:
        note = json.loads(os.pread(fd, 4096, 0).decode("utf-8"))
        return Holder(int(note["pid"]), str(note["host"]), str(note["since"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _warn_unsupported(path: Path, e: OSError) -> None:
    if str(path) not in _warned:
        _warned.add(str(path))
        print(
            f"warning: cannot lock {path} ({e.strerror or e}); this filesystem has no file "
            "locks, so another process using it at the same time goes undetected",
            file=sys.stderr,
        )
