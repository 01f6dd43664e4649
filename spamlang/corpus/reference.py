"""The reference corpus: real text that every fresh machine has, the running interpreter's
standard-library `.py` files (code, not prose), without tests, codecs tables and installed
packages. Its content differs between Python versions, so a result names the version."""

from __future__ import annotations

import os
import platform
import sysconfig
from pathlib import Path

NAME = "reference:stdlib"  # how meta.json's "inputs" names it
# Installed packages are no standard library; tests, codec tables and pydoc topics no code.
EXCLUDED_FOLDERS = frozenset(
    {"site-packages", "dist-packages", "test", "tests", "idle_test", "encodings", "pydoc_data"}
)


def python_version() -> str:
    return platform.python_version()


def reference_files() -> tuple[Path, list[Path]]:
    """(the stdlib folder, its sorted `.py` files but EXCLUDED_FOLDERS' and `test_*.py`)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = []
    # os.walk follows no symlinked folder: a link out of the stdlib is not the stdlib.
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [name for name in subfolders if name not in EXCLUDED_FOLDERS]
        for name in names:
            path = Path(folder, name)
            if name.endswith(".py") and not name.startswith("test_") and path.is_file():
                files.append(path.relative_to(root))
    return root, sorted(files, key=lambda p: p.parts)
