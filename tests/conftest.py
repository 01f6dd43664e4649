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
# LLVM at -O0: the suite's programs are tiny and most of its time is compiling them (-O0
# measured 10% off two compile-heavy test files); tests compare computations at one level,
# never against the speed or the bits of an optimised build. Multi-device tests run in
# subprocesses that add their device count to these flags; the main session uses one device.
os.environ["XLA_FLAGS"] = "--xla_backend_optimization_level=0"
# MFU divides by a peak; a process without one measures the CPU's matmul rate first (about
# 2 s of every training subprocess). Tests of the measurement itself unset these.
os.environ.setdefault("SPAMLANG_PEAK_FLOPS", "1e11")
os.environ.setdefault("SPAMLANG_PEAK_FLOPS_BF16", "1e11")
