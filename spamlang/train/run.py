"""The run loop: train one run (or a vmapped group of runs) into run directories, resumably.

`run_training(config, out_dir)` and `run_group(configs, out_dirs)` share one loop over K
members (K = 1 uses `Trainer`, K > 1 `GroupTrainer`). Each member's directory follows the
run-directory contract (see `spamlang.train.rundir`): config.json first, metrics.jsonl
appended as the run goes, checkpoints/ every `checkpoint_every` steps and at the end,
result.json last. A directory with result.json is returned as is; one without resumes from
its newest readable checkpoint and ends with the same metrics.jsonl (timing fields aside) and
result as an uninterrupted run: the batches come from `fold_in(data_key, step)`, and the
checkpoint also holds the train metrics of the steps not yet logged.

Metrics reach the host only every `log_every` steps; a logged train row holds the means of
loss, accuracy and gradient norm over the steps since the previous row, the LR of its step,
and the interval's tokens/s and MFU (tokens/s x FLOPs per token / measured matmul peak; in a
group each member is credited with its own tokens, so members' rates sum to the group's).
`step` in metrics.jsonl and `diverged_step` in result.json count optimizer steps done: the
row for step n describes the n-th batch.

Failures: a diverged run (non-finite loss, or loss above `diverge_loss`) is a result
(`diverged: true`), not an error; in a group the other members keep training. SIGINT and
SIGTERM finish the current step, save a checkpoint and raise `Interrupted` (exit status 130
or 143 in the CLI); a second signal acts as usual. Rerunning the same command resumes.

Several hosts (e.g. SLURM, one process per host, the same command on each):

    srun --nodes=4 --ntasks-per-node=1 spamlang train --distributed ... --out /shared/runs/x

`--distributed` calls `jax.distributed.initialize()` first, which reads the coordinator
address, process count and index from SLURM's (or the TPU / Kubernetes) environment; in
Python call it yourself before any other JAX call. The default mesh then spans every device
of every host, each process generates its own rows of each batch, and the loop runs the same
on all processes. Only process 0 writes config.json, metrics.jsonl and result.json; orbax
writes the checkpoints cooperatively from all processes. `out_dir` must be on a filesystem
every host sees. A signal (scancel / preemption sends SIGTERM to every task) is acted on at
the next log step, once the processes have agreed on it (a one-scalar allgather per log
step), so that they all save the same step.
"""

from __future__ import annotations

import contextlib
import functools
import signal
import threading
import warnings
from pathlib import Path

from spamlang.errors import UserError
from spamlang.train import rundir
from spamlang.train.checkpoint import RunCheckpoints, restore_latest


class Interrupted(KeyboardInterrupt):
    """The run stopped early on request (SIGINT / SIGTERM / `stop_after_step`), checkpointed.

    A KeyboardInterrupt, so that a broad `except Exception` in a sweep does not swallow it.
    `exit_status` is what a CLI should return (130 for SIGINT, 143 for SIGTERM).
    """

    def __init__(self, step: int, signum: int | None = None):
        self.step = step
        self.signum = signum
        what = signal.Signals(signum).name if signum else "stop requested"
        super().__init__(f"{what}: stopped at step {step} with a checkpoint saved; "
                         f"rerun the same command to resume")

    @property
    def exit_status(self) -> int:
        return 128 + int(self.signum or signal.SIGINT)


def run_training(config, out_dir, *, quiet: bool = False,
                 stop_after_step: int | None = None) -> dict:
    """Train `config` into `out_dir` (or resume it, or return its result if finished).

    Returns the result dict (the contents of result.json). `stop_after_step` checkpoints and
    raises `Interrupted` after that many steps, as a signal would (for time-sliced jobs and
    tests). Raises UserError for an unusable `out_dir` or one holding a different config.
    """
    return _run([config], [out_dir], quiet=quiet, stop_after_step=stop_after_step)[0]


def run_group(configs, out_dirs, *, quiet: bool = False,
              stop_after_step: int | None = None) -> list[dict]:
    """Train configs that differ only in lr and seed together (vmapped), one run dir each.

    Finished members are skipped; the rest resume from their newest common checkpoint. Each
    member's files are those of its own `run_training`; its numbers equal a sequential run's
    up to float rounding of the batched matmuls. Returns the results in member order.
    """
    configs, out_dirs = list(configs), [Path(d) for d in out_dirs]
    if len(configs) != len(out_dirs):
        raise UserError(f"run_group: {len(configs)} configs but {len(out_dirs)} out dirs")
    if len({d.resolve() for d in out_dirs}) != len(out_dirs):
        raise UserError("run_group: out dirs must be distinct")
    from spamlang.train.group import check_groupable

    check_groupable(configs)
    return _run(configs, out_dirs, quiet=quiet, stop_after_step=stop_after_step)


def load_run(run_dir):
    """(TrainConfig, nnx model) of a run directory, from its newest readable checkpoint."""
    from spamlang.train.config import TrainConfig
    from spamlang.train.step import Trainer

    run_dir = Path(run_dir)
    path = run_dir / rundir.CONFIG
    if not run_dir.is_dir():
        raise UserError(f"run directory {run_dir} does not exist")
    if not path.is_file():
        raise UserError(f"{run_dir} is not a run directory (no {rundir.CONFIG})")
    try:
        config = TrainConfig.from_json(rundir.read_json(path))
    except (OSError, ValueError) as e:
        raise UserError(f"cannot read {path}: {str(e).splitlines()[0] if str(e) else e}") from None
    if not (run_dir / rundir.CHECKPOINTS).is_dir():
        raise UserError(f"{run_dir} has no checkpoints yet")
    trainer = Trainer(config)
    ckpt = RunCheckpoints(run_dir / rundir.CHECKPOINTS, config.keep_checkpoints, read_only=True)
    try:
        restored = restore_latest([ckpt], [trainer.abstract_state()])
    finally:
        ckpt.close()
    if restored is None:
        raise UserError(f"{run_dir} has no checkpoints yet")
    return config, trainer.model(restored[1][0])


# ----- internals ------------------------------------------------------------------------------

def _run(configs, out_dirs, *, quiet, stop_after_step) -> list[dict]:
    import jax

    writer = jax.process_index() == 0
    dirs = [rundir.prepare(d, c, write=writer) for c, d in zip(configs, out_dirs)]
    results = [rundir.read_result(d) for d in dirs]
    todo = [i for i, r in enumerate(results) if r is None]
    if todo:
        from spamlang.train.loop import Loop

        loop = Loop([configs[i] for i in todo], [dirs[i] for i in todo],
                    quiet=quiet, writer=writer, stop_after_step=stop_after_step)
        with _stop_signals() as received:
            done = loop.run(received)
        for i, result in zip(todo, done):
            results[i] = result
    return results


@contextlib.contextmanager
def _stop_signals():
    """Turn the first SIGINT / SIGTERM into a flag the loop polls at step boundaries.

    Yields the list the received signal numbers are appended to. The handlers restore the
    previous ones on the first signal, so a second Ctrl-C interrupts at once.
    """
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received  # signals are only delivered to the main thread
        return
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    def handler(signum, frame):
        received.append(signum)
        for s, h in previous.items():
            signal.signal(s, h)

    for s in previous:
        signal.signal(s, handler)
    try:
        yield received
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


@functools.cache
def matmul_peak() -> float | None:
    """The float32 matmul FLOP/s that MFU divides by: SPAMLANG_PEAK_FLOPS if set (e.g. a
    datasheet number, or to skip the few-second measurement), else measured once per process."""
    import os

    if os.environ.get("SPAMLANG_PEAK_FLOPS"):
        try:
            return float(os.environ["SPAMLANG_PEAK_FLOPS"])
        except ValueError:
            raise UserError(f"SPAMLANG_PEAK_FLOPS must be a number, got "
                            f"{os.environ['SPAMLANG_PEAK_FLOPS']!r}") from None
    try:
        from spamlang.perf import matmul_peak_flops
    except ImportError:
        return None
    return float(matmul_peak_flops())


@functools.cache
def diag_function():
    """`spamlang.diagnostics.diag_metrics`, or None (with a warning) when it is unavailable."""
    try:
        from spamlang.diagnostics import diag_metrics
    except ImportError as e:
        warnings.warn(f"diag_every > 0 but spamlang.diagnostics.diag_metrics is unavailable "
                      f"({e}); no diag rows", stacklevel=2)
        return None
    return diag_metrics
