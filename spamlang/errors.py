"""The exception types a command maps to its exit status -- `UserError` (the user asked for
something invalid, 2) and `Interrupted` (a run stopped on request, 130 / 143) -- and how any
exception is told in one line.

The CLI turns a UserError into a single line on stderr and exit status 2; library callers catch
it (it is a ValueError) like any other bad-argument error.
"""

from __future__ import annotations

import re
import signal

# TensorStore puts its bound methods' reprs, many lines long, into exception messages.
_NOISE = re.compile(
    r"\s*(?:See full TensorStore details:\s*)?<bound method .*$"
    r"|\s*\[tensorstore_spec.*$"
)
_MAX_CHARS = 300


class UserError(ValueError):
    """Bad input from a user: a flag, a config, a sweep file or a path."""


class Interrupted(KeyboardInterrupt):
    """A run stopped on request, checkpointed; not an Exception, so nothing swallows it."""

    def __init__(self, step: int, signum: int | None = None):
        self.step, self.signum = step, signum
        what = signal.Signals(signum).name if signum else "stop requested"
        super().__init__(
            f"{what}: stopped at step {step} with a checkpoint saved; "
            f"rerun the same command to resume"
        )

    @property
    def exit_status(self) -> int:
        return 128 + int(self.signum or signal.SIGINT)


def first_line(e: BaseException) -> str:
    """`e`'s first line without library reprs, at most 300 characters (a UserError's whole)."""
    text = _NOISE.sub("", (str(_speaker(e)).splitlines() or [""])[0]).strip()
    if isinstance(e, UserError):  # written for people, whole: a list it names stays whole
        return text
    return text if len(text) <= _MAX_CHARS else text[: _MAX_CHARS - 3] + "..."


def describe(e: BaseException) -> str:
    """`Type: first line` of an exception (just `Type` without a message)."""
    text = first_line(e)
    name = type(_speaker(e)).__name__
    return f"{name}: {text}" if text else name


def _speaker(e: BaseException) -> BaseException:  # `e`, or the cause its message points to
    while "See full TensorStore details" in str(e) and getattr(e, "__cause__", None) is not None:
        e = e.__cause__
    return e


def no_space(path, e: BaseException) -> UserError | None:
    """A UserError naming `path` and its free space when `e` (or its cause) is a full disk."""
    import errno
    import os
    import shutil

    seen = e
    while seen is not None:
        if (
            (isinstance(seen, OSError) and seen.errno in (errno.ENOSPC, errno.EDQUOT))
            or "No space left on device" in str(seen)
            or "RESOURCE_EXHAUSTED" in str(seen)
        ):
            break
        seen = seen.__cause__ or seen.__context__
    else:
        return None
    folder = os.fspath(path)
    while folder and not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    try:
        free = f"{shutil.disk_usage(folder or '.').free / 2**20:,.1f} MiB free there"
    except OSError:
        free = "free space unknown"
    return UserError(
        f"no space left on device writing {path} ({free}); free some space and "
        f"rerun the same command to resume"
    )
