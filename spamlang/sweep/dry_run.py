"""`--dry-run`: the points of a shard with their status and budget, and how long the rest
should take, from the files alone: nothing is trained or compiled, so it stays fast on any
grid the size limit lets through.

The time estimate says where it comes from. Runs whose group has finished runs are timed at
those runs' median tokens/s (a vmapped group's members train at once, so a group costs its
slowest member; runs trained one by one add up); runs of a group with none, at the median
tokens/s of the directory's finished runs of the same preset and V (a similar group: another
LR grid, b2 or seed set of the same model). The others, nothing here has timed:
- on an accelerator (jax's default backend is not the CPU), or wherever the matmul peak is
  given (SPAMLANG_PEAK_FLOPS), their FLOPs at an ASSUMED MFU (`ASSUMED_MFU` of the peak: the
  variable, or a known accelerator's datasheet, `spamlang.perf.KNOWN_PEAKS`, times the
  devices), labelled "assumed";
- on a CPU, their FLOPs at the FLOP/s of the nearest row of the package's CPU-measured
  throughput table (`spamlang.throughput`, `benchmarks/bench_throughput.py`), naming the row's
  CPU, with a warning in the same line when this machine's CPU is another.
Partial runs that are no point of the grid (LR bracketing's, which extend a cell's grid) are
listed after the table.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
from pathlib import Path
from typing import Any

from spamlang.rundir.reading import is_finished, read_json, read_object
from spamlang.rundir.schema import CONFIG, RESULT
from spamlang.sweep.logs import checkpoint_step
from spamlang.sweep.spec import Sweep, shard_groups, warn_empty_shard
from spamlang.sweep.sweep_file import check_sweep_file

# The MFU a dry run assumes on an accelerator, of the dense matmul peak: an assumption, not a
# measurement. The paper grid's 576-wide model often reaches 20-30% (sweeps/paper_fig5.py), and
# an L = 2 step of 128 tokens per member is small for an accelerator, so 30% is the hopeful end.
ASSUMED_MFU = 0.3

# How each way of timing runs reads in the time line (`estimate`); {notes}: what it used.
_NEW = "with no finished run in their group"
_TIMED_BY = {
    "group": "about {t} for {n} run(s), at the tokens/s of finished runs of their groups",
    "alike": "about {t} for {n} run(s) " + _NEW + ", at the tokens/s "
    "of finished runs of the same preset and V",
    "table": "about {t} for {n} run(s) " + _NEW + ", from CPU-measured throughput "
    "(spamlang/throughput.csv, scaled by FLOPs from its nearest row(s) {notes}, {machines})",
    "assumed": "about {t} for {n} run(s) " + _NEW + ", assumed: their FLOPs at an assumed "
    f"MFU of {ASSUMED_MFU:.0%} of {{notes}} (SPAMLANG_PEAK_FLOPS(_BF16) or the datasheet peak)",
    "unknown": "no estimate for {n} run(s) " + _NEW + " (SPAMLANG_PEAK_FLOPS=<FLOP/s> gives "
    f"one at an assumed MFU of {ASSUMED_MFU:.0%})",
}


@dataclasses.dataclass
class _Tally:
    """The runs one way times, their seconds, what it used and the machines that measured
    it (dicts as ordered sets: in first-use order, each once)."""

    runs: int = 0
    seconds: float = 0.0
    notes: dict = dataclasses.field(default_factory=dict)
    machines: dict = dataclasses.field(default_factory=dict)

    def line(self, text: str) -> str:
        # Every machine is named: a warning about the CPU must never be cut off.
        notes, machines = _join(list(self.notes)), "; ".join(self.machines)
        return text.format(t=duration(self.seconds), n=self.runs, notes=notes, machines=machines)


def _status(run_dir: Path, steps: Any) -> str:
    if (run_dir / RESULT).is_file():
        return "done"
    return f"partial (step {checkpoint_step(run_dir) or 0}/{steps})" if run_dir.is_dir() else "new"


def _left_tokens(config: Any, run_dir: Path) -> int:
    """Tokens a run has still to train: all of them, less its newest checkpoint's."""
    if (run_dir / RESULT).is_file():
        return 0
    return (config.steps - (checkpoint_step(run_dir) or 0)) * config.tokens_per_step


def _result(run_dir: Path, key: str) -> Any:  # None when the run has no such number
    value = (read_object(run_dir / RESULT) or {}).get(key)
    return value if isinstance(value, (int, float)) else None


def _rate(run_dir: Path) -> float | None:
    rate = _result(run_dir, "tokens_per_s")
    return float(rate) if rate is not None and rate > 0 else None


def _run_dirs(out: Path) -> list[Path]:
    return sorted(out.iterdir()) if out.is_dir() else []


def _finished_runs(out: Path) -> dict[tuple, list[float]]:
    """{(preset, vocab_size): tokens/s of each finished run} of every run directory in `out`."""
    rates: dict[tuple, list[float]] = {}
    for run_dir in _run_dirs(out):
        rate = _rate(run_dir)
        config = read_object(run_dir / CONFIG) if rate is not None else None
        if config is not None:
            rates.setdefault((config.get("preset"), config.get("vocab_size")), []).append(rate)
    return rates


def other_partial_runs(out: Path, points: list) -> list[str]:
    """Lines for the partial runs in `out` that are no point of the sweep (LR bracketing's)."""
    known, lines = {run_id for run_id, _ in points}, []
    for run_dir in _run_dirs(out):
        if run_dir.name in known or is_finished(run_dir) or not (run_dir / CONFIG).is_file():
            continue
        try:
            config = read_json(run_dir / CONFIG)
            steps = int(config["tokens"]) // (int(config["batch_size"]) * int(config["seq_len"]))
        except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError):
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
    """jax's default backend and its device count: the machine the runs would train on."""
    import jax  # here, where the dry run already needed it (the peak's lookup)

    return jax.default_backend(), jax.device_count()


def _cpu_note(row: Any) -> str:
    """The CPU a table row was measured on, and a warning when this machine's is another."""
    from spamlang.perf import cpu_model

    here, cores = cpu_model(), os.cpu_count()
    note = f"measured on {row.cpu}, {row.cores} cores"
    if (here, cores) != (row.cpu, row.cores):
        note += (
            f"; WARNING: this machine is {here} with {cores} cores, not the table's CPU, so "
            "the time is off by the two machines' speed ratio"
        )
    return note


def _from_table(todo: list, config: Any, members: int, rows: tuple) -> tuple[float, Any]:
    """Seconds for `todo` at the nearest table row's FLOP/s, and the row.

    `members`: the runs one program steps at once (1 for runs one by one). A vmapped program
    of K members does K members' FLOPs a step; on a CPU one member's step already keeps the
    cores busy (benchmarks/bench_group.py: a vmapped group ran at 0.6-1.0x the throughput of
    its runs one by one), so K members take about K times one member's time: the group's
    FLOPs, all members summed, over the FLOP/s of the row nearest its step (K x B x L tokens;
    the rows of committed sweeps measured vmapped groups too). Not the slowest member's time,
    which holds only where the members' work runs in parallel (an accelerator)."""
    from spamlang.throughput import nearest

    model = config.model_config()
    f = todo[0][2]  # a group's runs share the model
    step = members * config.tokens_per_step
    row = nearest(rows, (config.preset, model.n_layers, model.d_model), config.dtype, f, step)
    return sum(tokens * flops for tokens, _, flops in todo) / row.flops, row


def _untimed(todo: list, config: Any, vmap: bool | None, cache: dict) -> tuple:
    """(way, seconds, notes, machines) for runs nothing in the directory has timed."""
    from spamlang.perf import peak_flops
    from spamlang.sweep.runner import trains_together
    from spamlang.throughput import table

    if "platform" not in cache:
        cache["platform"] = _platform()
    backend, devices = cache["platform"]
    peak = cache.setdefault("peak", {})  # dtype -> its known peak or None, looked up once
    for _, c, _ in todo:
        if c.dtype not in peak:
            peak[c.dtype] = peak_flops(c.dtype, measure=False)
    if all(peak[c.dtype] is not None for _, c, _ in todo):
        # Members vmapped or one by one, every FLOP at the assumed rate: the sum.
        seconds = sum(t * f / (ASSUMED_MFU * peak[c.dtype] * devices) for t, c, f in todo)
        notes = [f"{peak[c.dtype]:.3g} FLOP/s {c.dtype} x {devices} device(s)" for _, c, _ in todo]
        return "assumed", seconds, notes, []
    rows = table()
    if backend != "cpu" or not rows:
        return "unknown", 0.0, [], []
    members = len(todo) if trains_together(vmap, config) else 1
    seconds, row = _from_table(todo, config, members, rows)
    return "table", seconds, [f"[{row.describe()}]"], [_cpu_note(row)]


def estimate(mine: list, out: Path, vmap: bool | None, flops: list) -> str:
    """The time line of a dry run (module doc); `flops[k]`: the FLOPs per token of the k-th
    point of `mine` (groups flattened)."""
    from spamlang.sweep.runner import trains_together

    timed = {way: _Tally() for way in _TIMED_BY}
    similar = _finished_runs(out)
    cache: dict = {}  # what `_untimed` looks up once: the platform, the peaks
    k = 0
    for group in mine:
        left = [(_left_tokens(c, out / r), c, flops[k + j]) for j, (r, c) in enumerate(group)]
        k += len(group)
        todo = [item for item in left if item[0] > 0]
        if not todo:
            continue
        config = group[0][1]
        rates = [x for x in (_rate(out / r) for r, _ in group) if x is not None]
        near = rates or similar.get((config.preset, config.vocab_size))
        if near:
            way, notes, machines = ("group" if rates else "alike"), [], []
            each = [tokens / statistics.median(near) for tokens, _, _ in todo]
            seconds = max(each) if trains_together(vmap, config) else sum(each)
        else:
            way, seconds, notes, machines = _untimed(todo, config, vmap, cache)
        tally = timed[way]
        tally.runs, tally.seconds = tally.runs + len(todo), tally.seconds + seconds
        tally.notes.update(dict.fromkeys(notes))
        tally.machines.update(dict.fromkeys(machines))
    parts = [x.line(_TIMED_BY[way]) for way, x in timed.items() if x.runs]
    return "time: " + ("; ".join(parts) or "nothing left to train")


def _join(notes: list[str], most: int = 3) -> str:
    """Up to `most` notes joined, then how many more (a time line stays one readable line)."""
    more = f" and {len(notes) - most} more" if len(notes) > most else ""
    return " ".join(notes[:most]) + more


def dry_run(
    sweep: Sweep,
    out: Path,
    shard: tuple[int, int],
    group_size: int,
    vmap: bool | None = None,
    notes=None,
    only: tuple = (),
) -> int:
    """Print the points of this shard with their group, status and budget, and the time the
    rest should take; run nothing. UserError, as the real run would raise, when `out` holds a
    different sweep. `notes(points) -> {run id: text}`: a column beside each run (the command
    line's: the shipped law's prediction of its cell, `spamlang.law.law.dry_run_notes`). `only`:
    run-id globs, as the real run takes them."""
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
    losses = {r: _result(out / r, "final_eval_loss") for r, _ in points if status[r] == "done"}
    measured = {r: "?" if loss is None else f"{loss:.3g}" for r, loss in losses.items()}
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
    per_token, flops = {}, []  # group key -> FLOPs per token: a group's runs share the model
    for run_id, c in points:
        key = sweep.group_key_of(run_id, c)
        if key not in per_token:
            per_token[key] = flops_per_token(c.model_config(), c.seq_len)
        flops.append(per_token[key])
    total = sum(f * c.steps * c.tokens_per_step for f, (_, c) in zip(flops, points))
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
    print(estimate(mine, out, vmap, flops))
    return 0
