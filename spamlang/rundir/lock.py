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
from pathlib import Path
from typing import Iterable, Iterator

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
        super().__init__(f"{run_dir} is in use by {self.by} (another spamlang train or sweep); "
                         "wait for it or use another --out")

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
                raise UserError(f"cannot write to run directory {run_dir}: "
                                f"{e.strerror or e}") from None
        yield
