"""One owner per run directory: a flock on `<run_dir>/.lock` for the whole training of a run.

Two processes training one directory corrupt it (duplicated and truncated metrics.jsonl rows,
orbax tripping over the other's temporary checkpoint directories), so `spamlang.train.run`
takes this lock before it writes anything there, and a second trainer gets `RunDirBusy`
naming the holder. The lock dies with its process (`spamlang.filelock`): a crashed or killed
run never blocks the rerun that resumes it.

Only training needs it. A finished run (result.json) is only read, and reading a run
(`load_run`, plots, diagnose) never takes it, so both work while a run is in progress and on
read-only storage.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from spamlang.errors import UserError
from spamlang.filelock import Holder, Taken, locked
from spamlang.schema import RUN_LOCK


class RunDirBusy(UserError):
    """The run directory is being trained by another process (a `spamlang train` or sweep).

    `holder` is None when it is unknown (an unreadable note, or a multi-host process other
    than 0, which only learns that process 0 found the directory busy).
    """

    def __init__(self, run_dir: str | os.PathLike, holder: Holder | None):
        self.run_dir, self.holder = Path(run_dir), holder
        super().__init__(
            f"{run_dir} is in use by {self.by} (another spamlang train or sweep); "
            "wait for it or use another --out"
        )

    @property
    def by(self) -> str:
        """The holder in words: "pid 1234 on host h since 2026-11-30 14:02:11"."""
        return str(self.holder) if self.holder else "another process"


@contextlib.contextmanager
def hold_run_dirs(run_dirs: Iterable[str | os.PathLike]) -> Iterator[None]:
    """Hold the lock of every directory in `run_dirs` (which must exist), or raise at once.

    All or none: when one is busy, the ones already taken are let go and `RunDirBusy` names
    the busy one; nothing waits, so two processes locking overlapping groups never deadlock.
    UserError when a lock file cannot be created (an unwritable directory).
    """
    with contextlib.ExitStack() as stack:
        for run_dir in run_dirs:
            try:
                stack.enter_context(locked(Path(run_dir) / RUN_LOCK, wait=False))
            except Taken as e:
                raise RunDirBusy(run_dir, e.holder) from None
            except OSError as e:
                raise UserError(
                    f"cannot write to run directory {run_dir}: {e.strerror or e}"
                ) from None
        yield


@contextlib.contextmanager
def hold_for_job(run_dirs: list[Path], writer: bool) -> Iterator[None]:
    """`hold_run_dirs` for a job of one process or several: the body holds the locks, or raise.

    Only process 0 of a multi-host job locks: it is the one that writes the run files, and
    the processes of one job, sharing the directory on purpose, must not exclude each other
    (flock on a shared filesystem is seen by every host). The job's processes then agree on
    the outcome (one allgather), so that all raise `RunDirBusy` together rather than the
    others waiting in the first collective of a loop that process 0 never enters.
    """
    import jax

    busy: UserError | None = None
    with contextlib.ExitStack() as stack:
        if writer:
            try:
                stack.enter_context(hold_run_dirs(run_dirs))
            except UserError as e:
                busy = e
        if jax.process_count() > 1:
            # 0: all locked; i: run_dirs[i - 1] is busy; len + 1: another error.
            code = (
                0
                if busy is None
                else len(run_dirs) + 1
                if not isinstance(busy, RunDirBusy)
                else run_dirs.index(busy.run_dir) + 1
            )
            code = _max_over_processes(code)
            if busy is None and code:
                busy = (
                    RunDirBusy(run_dirs[code - 1], None)
                    if code <= len(run_dirs)
                    else UserError("process 0 could not lock the run directories (see its error)")
                )
        if busy is not None:
            raise busy
        yield


def _max_over_processes(value: int) -> int:
    import numpy as np
    from jax.experimental import multihost_utils

    return int(np.max(multihost_utils.process_allgather(np.int32(value))))
