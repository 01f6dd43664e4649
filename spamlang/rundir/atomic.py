"""Atomic writes: a reader never sees a half-written file, a crash never leaves one.

One scheme serves a single file and a file pair alike. Each output is written to a temporary
beside its target, `.<name>.tmp-<host>-<pid>` (`staged`, `open_temp`), fsynced, and only then
renamed into place (`publish`) with Ctrl-C and SIGTERM held until the renames are done, then
the directory is fsynced. Until the renames the old file is untouched; whatever stops the
writer before them (an error, a full disk, Ctrl-C, `Terminated`) removes its temporaries.
Temporaries that a SIGKILL or a power cut left behind carry a pid that is no longer alive;
`clean_stale_temps` removes them.

A pair (a token file and its JSON sidecar, `spamlang.token_files`) is published in three
renames: a "publishing" sidecar (one that says the pair is being replaced) over the old
sidecar, the data over the old data, the final sidecar last. So a final sidecar always
describes the data beside it, and a pair cut between the renames still carries a sidecar of
the writer's own, which says so.

Output files follow one rule: their folder must exist (`check_output_file`). A command creates
only the directories that are its own output (a run or sweep directory, `diagnose -o DIR`,
`sweep --figures DIR`), never the folder of a file it was asked to write: a typo in that
folder is more likely than a wish for a new one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from spamlang.errors import UserError, no_space

_TMP_TAG = ".tmp-"


class Terminated(SystemExit):
    """SIGTERM as an exception; uncaught, the process exits 143 (128 + SIGTERM) quietly."""

    def __init__(self):
        super().__init__(128 + signal.SIGTERM)


def check_output_file(path: str | os.PathLike) -> Path:
    """`path` as a Path; UserError unless its folder exists and it is not itself a folder."""
    path = Path(path)
    parent = path.parent
    if parent.exists() and not parent.is_dir():
        raise UserError(f"{parent} is not a directory")
    if not parent.is_dir():
        raise UserError(f"no such directory: {parent} (create it first)")
    if path.is_dir():
        raise UserError(f"{path} is a directory, not a file")
    return path


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write `data` to `path` by the scheme of the module doc; a full disk is a UserError."""
    path = Path(path)
    try:
        with staged(path) as tmp:
            with open_temp(tmp) as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            publish((tmp, path))
    except BaseException as e:
        full = no_space(path, e)
        if full is not None:
            raise full from e
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


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
    previous = signal.getsignal(signal.SIGTERM)
    # Not SIG_DFL: ignored or handled by the caller, theirs to decide.
    if threading.current_thread() is not threading.main_thread() or previous is not signal.SIG_DFL:
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
    """Create `tmp` afresh for writing, with the mode a plain open() would give (umask), not
    mkstemp's private 0600: a run directory or token file is usually shared."""
    tmp.unlink(missing_ok=True)  # a leftover of an earlier process that had our pid
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    return os.fdopen(os.open(tmp, flags, 0o666), "wb")


def publish(*renames: tuple[Path, Path]) -> None:
    """Rename complete, fsynced temporaries onto their targets, (temporary, target) in the
    order given, then fsync the directory. Ctrl-C and SIGTERM wait until the renames are done,
    so they never split a pair."""
    with _signals_deferred():
        for tmp, target in renames:
            os.replace(tmp, target)
    _fsync_dir(renames[-1][1].parent)


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
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
