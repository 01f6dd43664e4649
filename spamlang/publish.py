"""Crash-safe output of a file pair: temporaries named after their target, published together.

A large output (a token file) and its description (a JSON sidecar) are written to temporaries
beside their targets, `.<name>.tmp-<host>-<pid>`, fsynced, and only then renamed into place in
three renames: a "publishing" sidecar (one that says the pair is being replaced) over the old
sidecar, the data over the old data, the final sidecar last. So a final sidecar always
describes the data beside it, and a pair cut between the renames still carries a sidecar of
the writer's own, which says so: a file with no sidecar at all was never written here (see
`spamlang.token_files`). Until the renames the old pair is untouched.

SIGINT already raises KeyboardInterrupt; inside `signals_raise()` SIGTERM raises `Terminated`,
so the `staged()` cleanup runs for both. Temporaries that a SIGKILL or a power cut left behind
carry a pid that is no longer alive; `clean_stale_temps` removes them on the next run.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

_TMP_TAG = ".tmp-"


class Terminated(SystemExit):
    """SIGTERM as an exception; uncaught, the process exits 143 (128 + SIGTERM) quietly."""

    def __init__(self):
        super().__init__(128 + signal.SIGTERM)


def _host() -> str:
    # Part of the temporary's name: a pid means nothing on another host sharing the directory.
    return re.sub(r"[^A-Za-z0-9_.]", "_", socket.gethostname()) or "host"


def temp_path(target: Path) -> Path:
    """This process's temporary for `target`: `.<name>.tmp-<host>-<pid>` in the same directory."""
    return target.with_name(f".{target.name}{_TMP_TAG}{_host()}-{os.getpid()}")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: alive, another user's
        return True
    return True


def clean_stale_temps(target: Path) -> list[Path]:
    """Remove temporaries of `target` left by dead processes of this host; returns them."""
    prefix = f".{target.name}{_TMP_TAG}{_host()}-"
    removed = []
    try:
        names = os.listdir(target.parent)
    except OSError:
        return removed
    for name in names:
        pid = name[len(prefix) :]
        if name.startswith(prefix) and pid.isdigit() and not _pid_alive(int(pid)):
            stale = target.parent / name
            stale.unlink(missing_ok=True)
            removed.append(stale)
    return removed


@contextlib.contextmanager
def signals_raise() -> Iterator[None]:
    """Within the block SIGTERM raises `Terminated` (main thread only, and only where SIGTERM
    had its default action), so cleanup code runs instead of the process vanishing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous is not signal.SIG_DFL:  # ignored or handled by the caller: theirs to decide
        yield
        return

    def raise_terminated(signum, frame):
        raise Terminated()

    signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def staged(target: Path) -> Iterator[Path]:
    """Yield this process's temporary path for `target`; remove it if the block raises anything
    (an error, Ctrl-C, `Terminated`). A fresh temporary is created by `open_temp`."""
    tmp = temp_path(target)
    try:
        yield tmp
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def open_temp(tmp: Path):
    """Create `tmp` afresh for writing, with the mode a plain open() would give (umask)."""
    tmp.unlink(missing_ok=True)  # a leftover of an earlier process that had our pid
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    return os.fdopen(os.open(tmp, flags, 0o666), "wb")


def publish_pair(
    data_tmp: Path, data: Path, side_tmp: Path, side: Path, publishing_tmp: Path
) -> None:
    """Rename complete, fsynced temporaries into place (see the module doc): `publishing_tmp`
    (a sidecar marking the pair as being replaced) over `side`, then the data, then `side_tmp`.
    Ctrl-C and SIGTERM wait until the renames are done, so they never split the pair."""
    with _signals_deferred():
        # Atomically: an old sidecar must never describe the new data, and the pair must
        # never be left without a sidecar of ours (that would look like someone else's file).
        os.replace(publishing_tmp, side)
        os.replace(data_tmp, data)
        os.replace(side_tmp, side)
    _fsync_dir(data.parent)


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _fsync_dir(directory: Path) -> None:
    # Makes the renames durable; some filesystems cannot open or fsync a directory.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
