"""Atomic writes: a reader never sees a half-written file, a crash never leaves one.

Output files follow one rule: their folder must exist (`check_output_file`). A command creates
only the directories that are its own output (a run or sweep directory, `diagnose -o DIR`,
`sweep --figures DIR`), never the folder of a file it was asked to write: a typo in that
folder is more likely than a wish for a new one.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from spamlang.errors import UserError, no_space


def _default_mode() -> int:
    # mkstemp creates files 0600; a run directory or token file is usually shared, so give the
    # final file the permissions an ordinary open() would have under the current umask.
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


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
    """Write `data` to a temporary file beside `path`, fsync it, then rename over `path`."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, _default_mode())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        # Any failure (including KeyboardInterrupt) must not leave the temporary behind.
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        full = no_space(path, e)
        if full is not None:
            raise full from e
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def read_json(path: str | os.PathLike) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)
