"""Train one run (or a vmapped group of runs) into run directories, resumably.

`run_training(config, out_dir)` and `run_group(configs, out_dirs)` are the same loop over K
members (`spamlang.train.loop`). Each directory follows the run-directory contract
(`spamlang.rundir`): config.json first, metrics.jsonl as the run goes, checkpoints/ and
result.json last; a finished one is returned as it is, an unfinished one resumes from its
newest good checkpoint to the numbers of an uninterrupted run. A diverged run is a result;
SIGINT / SIGTERM checkpoint at the next log step and raise `Interrupted` (exit 130 / 143);
a directory another process trains raises `RunDirBusy`. Several hosts: call
`jax.distributed.initialize()` first (`--distributed`); process 0 writes the run files, all
write the checkpoints, and a signal is acted on once the processes agree. README: "Training
one run", "Several hosts (SLURM)" and "Concurrent runs, and when something goes wrong".
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

from spamlang import rundir
from spamlang.errors import Interrupted, UserError
from spamlang.perf import peak_flops
from spamlang.rundir.checkpoint import RunCheckpoints
from spamlang.rundir.lock import hold_for_job
from spamlang.signals import stop_requests
from spamlang.train.config import MEMBER_FIELDS

__all__ = ["Interrupted", "load_run", "run_group", "run_training"]


def run_training(
    config, out_dir, *, quiet: bool = False, stop_after_step: int | None = None
) -> dict:
    """Train `config` into `out_dir` (or resume it, or return its result if finished).

    Returns the result dict (the contents of result.json). `stop_after_step` checkpoints and
    raises `Interrupted` at the first log step from that step on, as a signal would (for
    time-sliced jobs and tests). UserError for an unusable `out_dir` or one holding a different
    config.
    """
    return run_group([config], [out_dir], quiet=quiet, stop_after_step=stop_after_step)[0]


def run_group(
    configs, out_dirs, *, quiet: bool = False, stop_after_step: int | None = None
) -> list[dict]:
    """Train configs that differ only in MEMBER_FIELDS (lr, seed, b1, b2, eps, momentum)
    together (vmapped), one run dir each.

    Finished members are skipped; the rest resume from their own newest checkpoints (members
    at different steps train as subgroups, `spamlang.train.loop`). Each member's files
    are those of its own `run_training`; its numbers equal a sequential run's up to float
    rounding of the batched matmuls. Returns the results in member order.
    """
    configs, out_dirs = list(configs), [Path(d) for d in out_dirs]
    if len(configs) != len(out_dirs):
        raise UserError(f"run_group: {len(configs)} configs but {len(out_dirs)} out dirs")
    if len({d.resolve() for d in out_dirs}) != len(out_dirs):
        raise UserError("run_group: out dirs must be distinct")
    check_groupable(configs)
    import jax

    from spamlang.model.hf_checkpoint import check_unstarted_weights

    writer = jax.process_index() == 0
    check_unstarted_weights(configs, out_dirs)
    # A finished member is only read (prepare() writes nothing when result.json exists), so
    # it needs no lock; the others are locked before config.json is written and before the
    # loop cuts back metrics.jsonl. One that finishes meanwhile is read as finished below.
    pending = [rundir.make_dir(d) for d in out_dirs if not (Path(d) / rundir.RESULT).exists()]
    with hold_for_job(pending, writer):
        dirs = [rundir.prepare(d, c, write=writer) for c, d in zip(configs, out_dirs)]
        results = [rundir.read_result(d) for d in dirs]
        todo = [i for i, r in enumerate(results) if r is None]
        if todo:
            from spamlang.train.loop import train_members

            with stop_requests() as received:
                # One process's progress is enough: under srun every process prints to one log.
                done = train_members(
                    [configs[i] for i in todo],
                    [dirs[i] for i in todo],
                    quiet=quiet or not writer,
                    writer=writer,
                    stop_after_step=stop_after_step,
                    received=received,
                    peak=functools.partial(peak_flops, configs[0].dtype),
                )
            for i, result in zip(todo, done):
                results[i] = result
    return results


def load_run(run_dir):
    """(TrainConfig, nnx model) of a run directory, from its newest readable checkpoint.

    The model runs the plain ("xla") kernels, whatever `config.kernels` trained it."""
    from spamlang.train.config import TrainConfig
    from spamlang.train.step import program

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
    # The plain path, whatever the run trained with: readers sample and take forward-mode
    # Jacobians, which the cpu kernels' custom VJPs do not support (same parameters either way).
    prog = program(config if config.kernels == "xla" else config.replace(kernels="xla"))
    ckpt = RunCheckpoints(run_dir / rundir.CHECKPOINTS, config.keep_checkpoints, read_only=True)
    try:
        restored = ckpt.restore_latest(prog.abstract_state())
    finally:
        ckpt.close()
    if restored is None:
        raise UserError(f"{run_dir} has no checkpoints yet")
    return config, prog.model(prog.stack([restored[1]]))


def check_groupable(configs) -> None:
    """UserError unless `configs` is non-empty and differs only in MEMBER_FIELDS (lr, seed and
    the optimizer's b1, b2, eps, momentum)."""
    if not configs:
        raise UserError("a run group needs at least one config")
    first = configs[0]
    for i, other in enumerate(configs[1:], start=1):
        for f in dataclasses.fields(first):
            if f.name not in MEMBER_FIELDS and getattr(first, f.name) != getattr(other, f.name):
                raise UserError(
                    f"configs in a run group may differ only in {', '.join(MEMBER_FIELDS)}; "
                    f"config {i} differs "
                    f"in {f.name} ({getattr(first, f.name)!r} vs {getattr(other, f.name)!r})"
                )
