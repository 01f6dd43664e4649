"""The one exception type that means "the user asked for something invalid", and how any
exception is told in one line.

The CLI turns a UserError into a single line on stderr and exit status 2; library callers catch
it (it is a ValueError) like any other bad-argument error.
"""

from __future__ import annotations

import re

# pybind11 objects (TensorStore's) put their bound methods' reprs, many lines long, into
# exception messages; the message says the same without them.
_NOISE = re.compile(r"\s*(?:See full TensorStore details:\s*)?<bound method .*$"
                    r"|\s*\[tensorstore_spec.*$")
_MAX_CHARS = 300


class UserError(ValueError):
    """Bad input from a user: a flag, a config, a sweep file or a path."""


def first_line(e: BaseException) -> str:
    """The first line of `e`'s message without library reprs, at most 300 characters ("" if none).

    A message that is only a pointer to its cause ("Encountered error while reading array
    index ... See full TensorStore details") is replaced by its cause's, which names the file.
    """
    text = _NOISE.sub("", (str(_speaker(e)).splitlines() or [""])[0]).strip()
    return text if len(text) <= _MAX_CHARS else text[: _MAX_CHARS - 3] + "..."


def describe(e: BaseException) -> str:
    """`Type: first line` of an exception (just `Type` when it has no message); the type is
    the cause's when `first_line` tells the cause's message."""
    text = first_line(e)
    name = type(_speaker(e)).__name__
    return f"{name}: {text}" if text else name


def _speaker(e: BaseException) -> BaseException:
    """`e`, or the cause its message points to."""
    while "See full TensorStore details" in str(e) and getattr(e, "__cause__", None) is not None:
        e = e.__cause__
    return e
