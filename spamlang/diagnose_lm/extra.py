"""The optional `hf` extra (torch, transformers, safetensors): `require()` checks it is installed.

Its own module, below the rest of `spamlang.diagnose_lm`, so that the submodules share it without
importing the package's facade (`spamlang.diagnose_lm`), which imports them.
"""

from __future__ import annotations

import importlib

from spamlang.errors import UserError

INSTALL_HINT = 'pip install "spamlang[hf]" (or pip install -e ".[hf]" in a clone)'


def require(*modules: str) -> None:
    """Import-check the `hf` extra; UserError naming what is missing and how to install it."""
    missing = []
    for name in modules or ("torch", "transformers", "safetensors"):
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise UserError(f"this needs {', '.join(missing)} (the 'hf' extra): {INSTALL_HINT}")
