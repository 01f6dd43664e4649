"""Session-wide test setup.

Compile time dominates every test that trains a model, and many tests build programs of the
same shapes. A persistent compilation cache shared by the whole session (and inherited by the
subprocesses the CLI tests spawn) compiles each program once. It must be configured before
JAX is imported, hence environment variables set at conftest import time.
"""

import os
import shutil
import sys
import tempfile

import pytest

# The suite starts hundreds of Python processes (xdist workers, the CLI tests' subprocesses), and
# CI installs with `pip install --no-compile`. Where PYTHONDONTWRITEBYTECODE is set, every one
# of them would compile jax, flax and the rest from source again; the first import writes the
# bytecode cache, and the others load it.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


# Temporary files in memory where the machine has a tmpfs: a run of the suite leaves about
# 10,000 files (checkpoints, mostly), and pytest deletes its fourth-newest run's at the end;
# on this project's CI disk that deletion alone took 20 s of wall time (`rm -rf` of one run's
# tmp_path tree, beside a training job), against well under a second in /dev/shm.
# PYTEST_DEBUG_TEMPROOT is pytest's documented root for tmp_path; a user's own setting wins.
# A run keeps about 75 MB there, and pytest keeps three runs: a small /dev/shm (Docker's is
# 64 MB) is passed over for the system's temporary folder.
def _fast_tmp(path: str = "/dev/shm", need_bytes: int = 1 << 30) -> str | None:
    try:
        stat = os.statvfs(path)
    except OSError:
        return None
    roomy = stat.f_bavail * stat.f_frsize >= need_bytes
    return path if roomy and os.access(path, os.W_OK) else None


FAST_TMP = _fast_tmp()
if FAST_TMP:
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", FAST_TMP)

# The process that makes the cache removes it at its end (`pytest_unconfigure`); the xdist
# workers and the subprocesses inherit the variable, so they make none of their own.
OWN_CACHE_DIR = None
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    OWN_CACHE_DIR = tempfile.mkdtemp(prefix="spamlang-xla-", dir=FAST_TMP)
    os.environ["JAX_COMPILATION_CACHE_DIR"] = OWN_CACHE_DIR
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
# LLVM at -O0 and XLA's older loop emitters, not its fusion emitters: the suite's programs are
# tiny and most of its time is compiling them (-O0 took 10% off two compile-heavy test files;
# the loop emitters compile a train step in a third of the CPU time, each step a quarter
# slower). Tests compare computations at one level, never against the speed or the bits of an
# optimised build. One LLVM module per program, not XLA's split into parallel parts: every core
# already runs a worker, and one module took a sixth off test_optimizers.py's CPU time (24.5 to
# 20.6 CPU-s, three runs each beside a training run). Multi-device test children add their
# device count; the main session has one.
os.environ["XLA_FLAGS"] = (
    "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"
    " --xla_cpu_parallel_codegen_split_count=1"
)
# One BLAS / OpenMP thread per process: xdist already runs a worker on every core, and a
# worker whose OpenBLAS spins a thread per core too waits on the others' (spamlang.law's fit,
# scipy SVDs of a 4,000 x 11 Jacobian: 0.09 s each with 2 threads beside another worker, 0.0008
# s with 1; tests/test_law_fit.py under `-n 2` took 27 s of wall time, 11 s with one thread).
# Set before numpy is imported; the CLI tests' subprocesses inherit it.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# MFU divides by a peak; a process without one measures the CPU's matmul rate first (about
# 2 s of every training subprocess). Tests of the measurement itself unset these.
os.environ.setdefault("SPAMLANG_PEAK_FLOPS", "1e11")
os.environ.setdefault("SPAMLANG_PEAK_FLOPS_BF16", "1e11")


# A skip must have a reason the suite expects: the machine (a GPU present, a runner that owns
# SIGTERM) or, outside CI, a module of the optional `hf` / `loaders` / `tensorboard` / `text` / `wandb`
# extras.
# Any other skip (pandas, which `.[dev]` brings, or a new one) fails the run, naming the test;
# SPAMLANG_ALLOW_SKIPS=1 accepts every skip.
# In CI (CI set), which installs every extra, a missing module is unexpected too.
EXPECTED_SKIPS = (
    "this machine has a GPU",
    "the test runner handles SIGTERM itself",
    *(
        ()
        if os.environ.get("CI")
        else (
            f"could not import '{m}'"
            for m in (
                "torch",
                "transformers",
                "safetensors",
                "tokenizers",
                "grain",
                "tensorboard",
                "wandb",
            )
        )
    ),
)


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    return longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    if hasattr(session.config, "workerinput") or os.environ.get("SPAMLANG_ALLOW_SKIPS") == "1":
        return  # an xdist worker: the controller sees every report
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    unexpected = [r for r in skipped if not any(s in _skip_reason(r) for s in EXPECTED_SKIPS)]
    if not unexpected:
        return
    reporter.write_line(
        f"{len(unexpected)} unexpected skip(s) (SPAMLANG_ALLOW_SKIPS=1 accepts them):", red=True
    )
    for r in unexpected:
        reporter.write_line(f"  {r.nodeid}: {_skip_reason(r)}")
    if exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config):
    if OWN_CACHE_DIR is not None:
        shutil.rmtree(OWN_CACHE_DIR, ignore_errors=True)


@pytest.fixture
def small_reference(monkeypatch):
    """The reference corpus cut to 40 small stdlib files (the whole one is 10 s of BPE
    training); returns (the stdlib folder, the files)."""
    from spamlang.corpus import reference

    root, files = reference.reference_files()
    subset = sorted((f for f in files if 200 < (root / f).stat().st_size < 3000), key=str)[:40]
    monkeypatch.setattr(reference, "reference_files", lambda: (root, subset))
    return root, subset
