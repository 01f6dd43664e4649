"""Session-wide test setup.

Compile time dominates every test that trains a model, and many tests build programs of the
same shapes. A persistent compilation cache shared by the whole session (and inherited by the
subprocesses the CLI tests spawn) compiles each program once. It must be configured before
JAX is imported, hence environment variables set at conftest import time.
"""

import os
import tempfile

os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", tempfile.mkdtemp(prefix="spamlang-xla-"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
# Multi-device tests run in subprocesses with their own XLA_FLAGS; the main session uses one device.
os.environ.pop("XLA_FLAGS", None)
