"""`--dry-run`: the points of a shard with their status and budget, and how long the rest
should take, from the files alone: nothing is trained or compiled, so it stays fast on any
grid the size limit lets through.

The time estimate says where it comes from. Runs whose group has finished runs are timed at
those runs' median tokens/s (a vmapped group's members train at once, so a group costs its
slowest member; runs trained one by one add up); runs of a group with none, at the median
tokens/s of the directory's finished runs of the same preset and V (a similar group: another
LR grid, b2 or seed set of the same model); the others get a lower bound, their FLOPs at the
matmul peak, only where that peak is known without measuring it (SPAMLANG_PEAK_FLOPS, or a
known accelerator's datasheet: `spamlang.perf.KNOWN_PEAKS`). Partial runs that are no point
of the grid (LR bracketing's, which extend a cell's grid) are listed after the table.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from spamlang.rundir.reading import read_json, read_object
from spamlang.rundir.schema import CONFIG, RESULT
from spamlang.sweep.logs import checkpoint_step
from spamlang.sweep.spec import Sweep, shard_groups, warn_empty_shard
from spamlang.sweep.sweep_file import check_sweep_file

# How each way of timing runs reads in the time line (`estimate`).
_TIMED_BY = {
    "group": "about {t} for {n} run(s), at the tokens/s of finished runs of their groups",
    "alike": "about {t} for {n} run(s) with no finished run in their group, at the tokens/s "
    "of finished runs of the same preset and V",
    "bound": "at least {t} for {n} run(s) with no finished run in their group (their FLOPs "
    "at the matmul peak: a lower bound)",
    "unknown": "no estimate for {n} run(s) with no finished run in their group "
    "(SPAMLANG_PEAK_FLOPS=<FLOP/s> gives a lower bound)",
}


def _status(run_dir: Path, steps: Any) -> str:
    if (run_dir / RESULT).is_file():
        return "done"
    if not run_dir.is_dir():
        return "new"
    return f"partial (step {checkpoint_step(run_dir) or 0}/{steps})"


def _left_tokens(config: Any, run_dir: Path) -> int:
    """Tokens a run has still to train: all of them, less its newest checkpoint's."""
    if (run_dir / RESULT).is_file():
        return 0
    return (config.steps - (checkpoint_step(run_dir) or 0)) * config.tokens_per_step


def _rate(run_dir: Path) -> float | None:
    """A finished run's tokens/s from its result.json (None when it has none)."""
    rate = (read_object(run_dir / RESULT) or {}).get("tokens_per_s")
    return float(rate) if isinstance(rate, (int, float)) and rate > 0 else None


def _finished_runs(out: Path) -> dict[tuple, list[float]]:
    """{(preset, vocab_size): tokens/s of each finished run} of every run directory in `out`."""
    rates: dict[tuple, list[float]] = {}
    for run_dir in sorted(out.iterdir()) if out.is_dir() else ():
        rate = _rate(run_dir)
        config = read_object(run_dir / CONFIG) if rate is not None else None
        if config is not None:
            rates.setdefault((config.get("preset"), config.get("vocab_size")), []).append(rate)
    return rates


def other_partial_runs(out: Path, points: list) -> list[str]:
    """Lines for the partial runs in `out` that are no point of the sweep (LR bracketing's)."""
    known = {run_id for run_id, _ in points}
    lines = []
    for run_dir in sorted(out.iterdir()) if out.is_dir() else ():
        if (
            run_dir.name in known
            or not (run_dir / CONFIG).is_file()
            or (run_dir / RESULT).is_file()
        ):
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


def estimate(mine: list, out: Path, vmap: bool | None, flops: list) -> str:
    """The time line of a dry run (module doc); `flops[k]`: the FLOPs per token of the k-th
    point of `mine` (groups flattened)."""
    from spamlang.perf import peak_flops
    from spamlang.sweep.runner import trains_together

    timed = {way: [0, 0.0] for way in _TIMED_BY}  # way -> [runs, seconds]
    similar = _finished_runs(out)
    peak: dict = {}  # dtype -> its known peak or None, looked up once
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
            way = "group" if rates else "alike"
            each = [tokens / statistics.median(near) for tokens, _, _ in todo]
            seconds = max(each) if trains_together(vmap, config) else sum(each)
        else:
            for _, c, _ in todo:
                if c.dtype not in peak:
                    peak[c.dtype] = peak_flops(c.dtype, measure=False)
            known = all(peak[c.dtype] is not None for _, c, _ in todo)
            way = "bound" if known else "unknown"
            seconds = sum(t * f / peak[c.dtype] for t, c, f in todo) if known else 0.0
        timed[way][0] += len(todo)
        timed[way][1] += seconds
    parts = [_TIMED_BY[way].format(t=duration(s), n=n) for way, (n, s) in timed.items() if n]
    return "time: " + ("; ".join(parts) or "nothing left to train")


def dry_run(
    sweep: Sweep, out: Path, shard: tuple[int, int], group_size: int, vmap: bool | None = None
) -> int:
    """Print the points of this shard with their group, status and budget, and the time the
    rest should take; run nothing. UserError, as the real run would raise, when `out` holds a
    different sweep."""
    from spamlang.law.law import dry_run_notes
    from spamlang.perf import flops_per_token

    shard_groups(sweep, shard, group_size)  # bad arguments first, as the real run
    # What the real run would refuse (another sweep in `out`), without writing sweep.json.
    sweep = check_sweep_file(sweep, out, write=False)
    mine = shard_groups(sweep, shard, group_size)
    warn_empty_shard(sweep, shard, group_size, mine)
    points = [p for g in mine for p in g]
    status = {run_id: _status(out / run_id, config.steps) for run_id, config in points}
    width = max((len(run_id) for run_id, _ in points), default=6)
    wide = max((len(s) for s in status.values()), default=7)
    law = dry_run_notes(points)  # the shipped law's prediction of each point's cell, or {}
    print(
        f"{'run id':<{width}}  {'status':<{wide}}  {'group':>5}  {'steps':>8}  "
        f"{'tokens':>13}  {'upd/symbol':>10}" + ("  law loss" if law else "")
    )
    for k, group in enumerate(mine):
        for run_id, c in group:
            print(
                f"{run_id:<{width}}  {status[run_id]:<{wide}}  {k:>5}  {c.steps:>8}  "
                f"{c.steps * c.tokens_per_step:>13,}  {c.updates_per_symbol:>10.1f}"
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
    where = (
        f" (shard {shard[0]}/{shard[1]} of {len(sweep.points())} points)" if shard[1] > 1 else ""
    )
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
