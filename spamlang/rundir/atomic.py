"""Atomic writes: a reader never sees a half-written file, a crash never leaves one.

Each output is written to a temporary beside its target (`.<name>.tmp-<host>-<pid>`), fsynced,
then renamed into place (`publish`) with Ctrl-C and SIGTERM held (`signals_held`); an error
removes the temporaries, and `clean_stale_temps` those of dead processes. An output file's
folder must exist (`check_output_file`): a typo there is likelier than a wish for a new folder.
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

# `temp_path`'s names; a host as `_host` writes it holds no "-".
_TEMP_NAME = re.compile(r"\.(?P<target>.+)\.tmp-(?P<host>[A-Za-z0-9_.]+)-(?P<pid>[0-9]+)")


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
    """Write `data` to `path` through a temporary (module docstring), first removing what dead
    writers of `path` left (`clean_stale_temps`); a full disk is a UserError."""
    path = Path(path)
    clean_stale_temps(path)
    try:
        with staged(path) as tmp:
            with open_temp(tmp) as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            publish((tmp, path))
    except BaseException as e:
        if (full := no_space(path, e)) is not None:
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
    return target.with_name(f".{target.name}.tmp-{_host()}-{os.getpid()}")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: alive, another user's
        return True
    return True


def temp_target(name: str) -> str | None:
    """The name of the file whose temporary `name` is (`.<target>.tmp-<host>-<pid>`), or None
    for a name that is no temporary of this scheme."""
    match = _TEMP_NAME.fullmatch(name)
    return match["target"] if match else None


def clean_stale_temps(*targets: Path) -> None:
    """Remove the temporaries of `targets` that dead processes of this host left (a SIGKILL,
    a power cut). A live process's (this one's, or a writer's now) stay, and so do another
    host's, whose pid means nothing here, and one that cannot be removed (storage that takes no
    writes: it is harmless there)."""
    wanted: dict[Path, set[str]] = {}
    for target in map(Path, targets):
        wanted.setdefault(target.parent, set()).add(target.name)
    host = _host()
    for folder, names in wanted.items():
        try:
            listing = os.listdir(folder)
        except OSError:
            continue
        for name in listing:
            match = _TEMP_NAME.fullmatch(name)
            if not (match and match["target"] in names and match["host"] == host):
                continue
            if not _pid_alive(int(match["pid"])):
                with contextlib.suppress(OSError):
                    (folder / name).unlink()


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
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block is done, then run the handler in place before it
    (or the default action). For work that must not be cut: a pair's renames (`publish`), and
    any JAX call (`spamlang.data`): Ctrl-C in a JAX compile returns while XLA compiles on, and
    teardown frees the device under it (exit 139, not 130)."""
    # `pthread_sigmask` in the main thread would not do: the kernel hands the signal to a thread
    # that does not block it (JAX's), and Python runs the handler in the main thread anyway.
    if threading.current_thread() is not threading.main_thread():  # no Python handler here
        with _signals_blocked():
            yield
        return
    held: list[int] = []

    def hold(signum, frame):
        held.append(signum)

    # A handler not installed from Python (None) cannot be put back: that signal is left alone.
    kept = [s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) is not None]
    previous = {s: signal.signal(s, hold) for s in kept}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        for s in dict.fromkeys(held):  # each signal once, in the order they came
            if previous[s] is signal.SIG_DFL:
                signal.raise_signal(s)  # the default action: for SIGINT and SIGTERM, the end
            elif previous[s] is not signal.SIG_IGN:
                previous[s](s, None)


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
    with signals_held():
        for tmp, target in renames:
            os.replace(tmp, target)
    _fsync_dir(renames[-1][1].parent)


@contextlib.contextmanager
def _signals_blocked() -> Iterator[None]:
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
