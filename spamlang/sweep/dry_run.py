"""`--dry-run`: the points of a shard with their status and budget, how long the rest should
take, and what `spamlang train` would refuse or warn of (memory, output), from the files alone:
nothing is trained or compiled. The time model: a program (a vmapped group, or one run) takes a
fixed time (compiling, evaluating, checkpointing) plus its steps times a step's time, each
measured where it can be (`Estimator`), else assumed and named with its variable (`ASSUMPTIONS`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import statistics
from pathlib import Path
from typing import Any

from spamlang.fields import positive_env
from spamlang.rundir.reading import is_finished, read_json, read_object
from spamlang.rundir.schema import CONFIG, RESULT
from spamlang.sweep.logs import checkpoint_step
from spamlang.sweep.spec import Sweep, cell_key, shard_groups, warn_empty_shard
from spamlang.sweep.sweep_file import check_sweep_file

ASSUMED_MFU = 0.3  # of the dense matmul peak, on an accelerator
# Assumed where nothing measured it (variable, (CPU, accelerator) defaults, words): a step's
# least time whatever its FLOPs, a program's fixed time (compile, evaluations, checkpoints).
ASSUMPTIONS = {
    "floor": ("SPAMLANG_STEP_FLOOR", (0.001, 0.01), "a floor of {:g} s a step"),
    "compile": (
        "SPAMLANG_COMPILE_SECONDS",
        (20.0, 60.0),
        "{:g} s a program to compile, evaluate and checkpoint",
    ),
    "mfu": ("SPAMLANG_MFU", (ASSUMED_MFU, ASSUMED_MFU), "{:.0%}"),
}
_TEXT = "a positive number (seconds, or for SPAMLANG_MFU a fraction such as 0.3)"

# How each way of timing programs reads in the time line; {notes}: what it used; {on}: the
# machines it was measured on where a timing names one ("; measured on ...", else empty).
_TIMED_BY = {
    "measured": "about {t} for {n} run(s) at the step and fixed times of finished runs of the "
    "same shape ({notes}{on})",
    "committed": "about {t} for {n} run(s) at the step and fixed times of committed runs of the "
    "same shape ({notes}{on})",
    "scaled": "about {t} for {n} run(s) scaled by FLOPs a step from finished runs of the nearest "
    "shape ({notes}{on})",
    "table": "about {t} for {n} run(s) with no finished run of their shape, from CPU-measured "
    "throughput (spamlang/throughput.csv or committed runs, scaled by FLOPs from the nearest "
    "{notes}{on})",
    "assumed": "about {t} for {n} run(s) with no finished run of their shape, assumed: their "
    "FLOPs at an MFU of {mfu} of {notes}",
    "unknown": "no estimate for {n} run(s) with no finished run of their shape "
    "(SPAMLANG_PEAK_FLOPS=<FLOP/s> gives one at an assumed MFU)",
}


def assumed(backend: str) -> dict[str, tuple[float, str]]:
    """Each assumption on `backend`: (its variable's positive value, else its default; in words)."""
    out = {}
    for name, (var, defaults, words) in ASSUMPTIONS.items():
        given = positive_env(var, _TEXT)
        value = defaults[backend != "cpu"] if given is None else given
        said = f"(default; {var} sets it)" if given is None else f"({var})"
        out[name] = value, f"{words.format(value)} {said}"
    return out


def _status(run_dir: Path, steps: Any) -> str:
    if (run_dir / RESULT).is_file():
        return "done"
    return f"partial (step {checkpoint_step(run_dir) or 0}/{steps})" if run_dir.is_dir() else "new"


def _left_steps(config: Any, run_dir: Path) -> int:
    return 0 if (run_dir / RESULT).is_file() else config.steps - (checkpoint_step(run_dir) or 0)


def _run_dirs(out: Path) -> list[Path]:
    return sorted(out.iterdir()) if out.is_dir() else []


def run_timings(out: Path) -> list:
    from spamlang.model.config import model_field
    from spamlang.throughput import timings

    rows = []
    for run_dir in _run_dirs(out):
        result = read_object(run_dir / RESULT) if run_dir.is_dir() else None
        config = read_object(run_dir / CONFIG) if result is not None else None
        if config is not None:
            model = {k: model_field(config, k) for k in ("n_layers", "d_model")}
            rows.append({**config, **model, **result})
    return timings(rows, str(out))


def other_partial_runs(out: Path, points: list) -> list[str]:
    """Lines for the partial runs in `out` that are no point of the sweep (LR bracketing's)."""
    from spamlang.train.config import TrainConfig

    known, lines = {run_id for run_id, _ in points}, []
    for run_dir in _run_dirs(out):
        if run_dir.name in known or is_finished(run_dir) or not (run_dir / CONFIG).is_file():
            continue
        try:
            steps = TrainConfig.from_json(read_json(run_dir / CONFIG)).steps
        except (OSError, ValueError, TypeError):  # UserError is a ValueError
            steps = "?"
        lines.append(f"  {run_dir.name}  {_status(run_dir, steps)}")
    return lines


def duration(seconds: float) -> str:
    """45 s, 12 min, 3.2 h, 2.5 days."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _platform() -> tuple[str, int]:
    import jax  # here, where the dry run already needed it (the peak's lookup)

    return jax.default_backend(), jax.device_count()


def _this_machine() -> tuple:
    """This machine as its results would name it: (cpu, cores), or () where JAX runs on an
    accelerator, whose speed is not its host CPU's."""
    from spamlang.perf import timing_machine
    from spamlang.throughput import row_machine

    return row_machine(timing_machine())


def _cpu_note(cpu: str, cores: int) -> str:
    """The CPU a timing was measured on, and a warning when this machine's is another."""
    here = _this_machine()
    note = f"measured on {cpu}, {cores} cores"
    if here != (cpu, cores):
        this = f"{here[0]} with {here[1]} cores" if here else "an accelerator host"
        note += (
            f"; WARNING: this machine is {this}, not {cpu} with {cores}, so the time is off by "
            "the two machines' speed ratio"
        )
    return note


@dataclasses.dataclass(frozen=True)
class Program:
    """`members` runs of `config` trained together for `steps` steps at `flops` FLOPs a token."""

    config: Any
    members: int
    steps: int
    flops: float

    @property
    def step_flops(self) -> float:
        return self.members * self.config.tokens_per_step * self.flops

    @functools.cached_property
    def shape(self) -> tuple:
        from spamlang.throughput import shape_of

        c, model = self.config, self.config.model_config()
        return shape_of(
            {**c.to_json(), "n_layers": model.n_layers, "d_model": model.d_model, "head": c.head}
        )


class Estimator:
    """Seconds of programs, from the first of: finished runs of the same shape in `out`; on a CPU,
    committed runs of it; the nearest finished shape in `out`, scaled by FLOPs; a known peak at
    an assumed MFU; on a CPU, the nearest committed run or table row, scaled. Assumptions:
    `used`."""

    def __init__(self, out: Path, backend: str, devices: int, committed=None, table=None):
        from spamlang.throughput import committed_timings, table_timings
        from spamlang.throughput import table as table_rows

        self.devices, self.mine = devices, run_timings(out)
        self.here = _this_machine()  # a Timing's machine when measured here
        cpu = backend == "cpu"
        self.committed = (
            list(committed_timings() if committed is None else committed) if cpu else []
        )
        self.table = table_timings(table_rows() if table is None else table) if cpu else []
        self.assumed = assumed(backend)
        self.used: dict[str, None] = {}  # the assumptions a time used, in words, once each

    def seconds(self, program: Program) -> tuple[str, float, list[str], list[str]]:
        """(way, seconds, notes, machines) of one program."""
        shape = program.shape
        for way, pool in (("measured", self.mine), ("committed", self.committed)):
            same = [t for t in pool if t.shape == shape]
            # This machine's own timings where it has any: another CPU's are off by its speed.
            same = [t for t in same if t.machine in ((), self.here)] or same
            if same:
                step = statistics.median(t.step_seconds * program.members / t.members for t in same)
                fixed = [t.fixed_seconds for t in same if t.fixed_seconds is not None]
                return way, self._fixed(fixed) + program.steps * step, *_sources(same)
        if self.mine and (near := self._scaled(program, self.mine)):
            return "scaled", *near
        from spamlang.perf import peak_and_source

        peak, source = peak_and_source(program.config.dtype, measure=False)
        if peak is not None:
            rate = self.assumed["mfu"][0] * peak * self.devices
            step = self._assume("floor") + program.step_flops / rate
            seconds = self._fixed([]) + program.steps * step
            note = (
                f"{peak:.3g} FLOP/s {program.config.dtype} from {source} x {self.devices} device(s)"
            )
            return "assumed", seconds, [note], []
        if near := self._scaled(program, self.committed + self.table):
            return "table", *near
        return "unknown", 0.0, [], []

    def _scaled(self, program: Program, pool: list) -> tuple | None:
        """(seconds, notes, machines) from `pool`'s nearest timings, scaled."""
        known = [(t, f) for t in pool if (f := t.flops_per_token or _flops_of(t.shape))]
        if not known:
            return None
        shape = program.shape

        def distance(item):
            t, f = item
            far = abs(math.log(t.step_tokens * f / program.step_flops))
            return (t.model != shape[:3], t.shape[8] != shape[8], round(far, 9))

        best = min(distance(item) for item in known)
        near = [(t, f) for t, f in known if distance((t, f)) == best]
        floor = self._assume("floor")
        steps = []
        for t, f in near:
            low = min(floor, t.step_seconds)  # a measured step faster than the floor bounds it
            steps.append(low + (t.step_seconds - low) * program.step_flops / (t.step_tokens * f))
        fixed = [t.fixed_seconds for t, _ in near if t.fixed_seconds is not None]
        seconds = self._fixed(fixed) + program.steps * statistics.median(steps)
        return seconds, *_sources([t for t, _ in near])

    def _fixed(self, measured: list[float]) -> float:
        return statistics.median(measured) if measured else self._assume("compile")

    def _assume(self, name: str) -> float:
        value, words = self.assumed[name]
        self.used[words] = None
        return value


@functools.cache
def _flops_of(shape: tuple) -> float | None:
    """FLOPs a token of a measured shape (None: a preset this version lacks)."""
    from spamlang.model.config import ModelConfig, preset_fields
    from spamlang.perf import flops_per_token

    preset, n_layers, d_model, vocab, _, seq_len, tied, head, _ = shape
    try:
        own = preset_fields(preset)  # depth and width only where they differ from it
        given = {"n_layers": n_layers, "d_model": d_model}
        changes = {k: v for k, v in given.items() if own.get(k) != v}
        model = ModelConfig.preset(
            preset, vocab_size=vocab, tie_embeddings=tied, head=head, **changes
        )
        return flops_per_token(model, seq_len)
    except (ValueError, TypeError):
        return None


def estimate(
    mine: list, out: Path, vmap: bool | None, flops: dict, bracket: int = 0, cells: dict = None
) -> str:
    """The time line; `flops`: run id -> FLOPs a token; `cells`: what bracketing may extend."""
    timer = Estimator(out, *_platform())
    timed = {way: [] for way in _TIMED_BY}  # way -> (runs, seconds, notes, machines) a program
    for group in mine:
        todo = [(n, c, flops[r]) for r, c in group if (n := _left_steps(c, out / r)) > 0]
        for program in _programs(vmap, todo) if todo else []:
            way, *timing = timer.seconds(program)
            timed[way].append((program.members, *timing))
    mfu = timer.assumed["mfu"][1]
    parts = [_part(_TIMED_BY[way], got, mfu) for way, got in timed.items() if got]
    total = sum(seconds for got in timed.values() for _, seconds, _, _ in got)
    head = f"time: about {duration(total)} in all: " if len(parts) > 1 else "time: "
    line = head + ("; ".join(parts) or "nothing left to train")
    if bracket and cells:
        line += "; " + _bracketing(timer, vmap, bracket, cells)
    if timer.used:
        line += "; assumed: " + ", ".join(timer.used)
    return line


def _part(text: str, programs: list, mfu: str) -> str:
    """One way's part of the time line: at most 3 notes, but every machine (a warning about the
    CPU must never be cut off)."""
    notes = list(dict.fromkeys(note for p in programs for note in p[2]))
    shown = " ".join(notes[:3]) + (f" and {len(notes) - 3} more" if len(notes) > 3 else "")
    on = "".join(f"; {m}" for m in dict.fromkeys(m for p in programs for m in p[3]))
    runs, seconds = sum(p[0] for p in programs), sum(p[1] for p in programs)
    return text.format(t=duration(seconds), n=runs, notes=shown, on=on, mfu=mfu)


def _bracketing(timer: Estimator, vmap: bool | None, limit: int, cells: dict) -> str:
    """LR bracketing's part of the time line: a range, 0 to `limit` LRs per side of a cell."""
    most, runs = 0.0, 0
    for configs, flops in cells.values():  # a cell's runs differ in lr and seed alone
        config, seeds = next(iter(configs.values())), len(configs)
        programs = _programs(vmap, [(config.steps, config, flops)] * seeds)
        timed = [timer.seconds(p) for p in programs]
        if all(way != "unknown" for way, *_ in timed):
            most += limit * sum(seconds for _, seconds, *_ in timed)
            runs += limit * seeds
    if not runs:
        return f"LR bracketing (up to {limit} LRs per side): no estimate"
    return (
        f"LR bracketing (up to {limit} LRs per side of a cell's grid, every seed): 0 to about "
        f"{duration(most)} more, for 0 to {runs} run(s) in {len(cells)} cell(s)"
    )


def _programs(vmap: bool | None, runs: list) -> list[Program]:
    """The programs that train `runs` ((steps, config, flops) each): one, or one a run."""
    from spamlang.sweep.runner import trains_together

    steps, config, flops = runs[0]
    if trains_together(vmap, config):
        return [Program(config, len(runs), max(s for s, _, _ in runs), flops)]
    return [Program(c, 1, s, f) for s, c, f in runs]


def _sources(timings) -> tuple[list[str], list[str]]:
    notes = list(dict.fromkeys(t.source for t in timings))
    return notes, list(dict.fromkeys(_cpu_note(*t.machine) for t in timings if t.machine))


def dry_run(
    sweep: Sweep,
    out: Path,
    shard: tuple[int, int],
    group_size: int,
    vmap: bool | None = None,
    notes=None,
    only: tuple = (),
    bracket_lr: int | None = None,
) -> int:
    """Print the points of this shard with their group, status and budget, and the time the rest
    should take; run nothing. `notes(points) -> {run id: text}`: a column beside each run (the
    law's prediction); `only`, `bracket_lr` (None: the sweep's): as the real run takes them."""
    from spamlang.perf import flops_per_token

    group_size = group_size or sweep.group_size  # as the real run
    shard_groups(sweep, shard, group_size, only)  # bad arguments first, as the real run
    # What the real run would refuse (another sweep in `out`), without writing sweep.json.
    sweep = check_sweep_file(sweep, out, write=False)
    mine = shard_groups(sweep, shard, group_size, only)
    warn_empty_shard(sweep, shard, group_size, mine, only)
    points = [p for g in mine for p in g]
    status = {run_id: _status(out / run_id, config.steps) for run_id, config in points}
    width = max((len(run_id) for run_id, _ in points), default=6)
    wide = max((len(s) for s in status.values()), default=7)
    law = notes(points) if notes else {}  # e.g. the law's prediction of each point's cell
    # A finished run's own final eval loss, beside the law's for its cell (best LR, seed mean).
    losses = {r: read_object(out / r / RESULT) or {} for r, _ in points if status[r] == "done"}
    losses = {r: result.get("final_eval_loss") for r, result in losses.items()}
    measured = {r: f"{x:.3g}" if isinstance(x, (int, float)) else "?" for r, x in losses.items()}
    print(
        f"{'run id':<{width}}  {'status':<{wide}}  {'group':>5}  {'steps':>8}  "
        f"{'tokens':>13}  {'upd/symbol':>10}"
        + (f"  {'loss':>8}" if measured else "")
        + ("  law loss" if law else "")
    )
    for k, group in enumerate(mine):
        for run_id, c in group:
            print(
                f"{run_id:<{width}}  {status[run_id]:<{wide}}  {k:>5}  {c.steps:>8}  "
                f"{c.steps * c.tokens_per_step:>13,}  {c.updates_per_symbol:>10.1f}"
                + (f"  {measured.get(run_id, '-'):>8}" if measured else "")
                + (f"  {law[run_id]}" if law else "")
            )
    tokens = sum(c.steps * c.tokens_per_step for _, c in points)
    per_token, flops = {}, {}  # group key, run id -> FLOPs a token: a group shares the model
    for run_id, c in points:
        key = sweep.group_key_of(run_id, c)
        if key not in per_token:
            per_token[key] = flops_per_token(c.model_config(), c.seq_len)
        flops[run_id] = per_token[key]
    total = sum(flops[r] * c.steps * c.tokens_per_step for r, c in points)
    i, n = shard
    where = f" (shard {i}/{n} of {len(sweep.points())} points)" if n > 1 else ""
    print(
        f"{len(points)} runs in {len(mine)} group(s){where}; {tokens:,} training tokens"
        + (f"; about {total:.3g} training FLOPs" if flops else "")
        + f"; out: {out}"
    )
    others = other_partial_runs(out, sweep.points())
    if others:
        print(
            f"{len(others)} partial run(s) outside the grid (LR bracketing's; they resume when "
            "their cell is bracketed again):"
        )
        print("\n".join(others))
    limit = sweep.bracket_lr if bracket_lr is None else bracket_lr
    cells: dict = {}  # cell key -> ({seed: a config}, FLOPs a token): what bracketing may add to
    for r, c in points if limit else ():  # a limit comes with an lr axis (`check_bracket`)
        cells.setdefault(cell_key(c), ({}, flops[r]))[0][c.seed] = c
    print(estimate(mine, out, vmap, flops, limit, cells))
    from spamlang.sweep import fit

    files = {}  # output file name -> bytes the shard's runs write to it
    for group in mine:
        run_id, config = group[0]
        if line := fit.memory_refusal(config):
            print(f"warning: {run_id} and its group: {line}")
        for name, n in fit.output_bytes(config).items():
            files[name] = files.get(name, 0) + n * len(group)
    if line := fit.output_warning(files, "these runs"):
        print(line)
    return 0
