"""Run a sweep (or one shard of it): skip finished runs, resume the others, gather results.csv.

`out_dir` holds `sweep.json`, one run directory per point (named by its run id) and
`results.csv`, rebuilt after every run or group; re-running into it is always safe. Sweeps on
one directory at the same time (shards, or one command started twice) cooperate: each skips the
runs another process holds (`spamlang.rundir.lock`) and goes on with the rest.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any

from spamlang.errors import UserError
from spamlang.fields import finite, is_number
from spamlang.rundir.lock import RunDirBusy
from spamlang.rundir.reading import is_finished, read_run
from spamlang.sweep import fit
from spamlang.sweep.best_lr import bracket_cell, cell_lines, edge_warnings, swept_values
from spamlang.sweep.logs import announce_resumes, watch
from spamlang.sweep.results_csv import Report, write_results
from spamlang.sweep.spec import (
    MAX_POINTS,
    MODEL_PREFIX,
    PARAM_PREFIX,
    Sweep,
    as_json,
    canonical,
    cell_key,
    check_bracket,
    check_size,
    differing,
    fields_of,
    group_key,
    groups,
    parse_shard,
    shard_groups,
    warn_empty_shard,
)
from spamlang.sweep.sweep_file import SWEEP_FILES, SWEEP_FOLDER, check_sweep_file

# On CPU, groups vmap by default up to this many tokens a step (benchmarks/README.md).
CPU_VMAP_TOKENS = 256


def _fmt(x: Any, spec: str = ".4f") -> str:
    return format(x, spec) if is_number(x) else "-"


def summary_line(run_id: str, result: dict) -> str:
    """One line per finished run: id, losses, repetition accuracy, divergence."""
    floor = result.get("optimal_loss")
    above = f" (above floor {_fmt(result.get('loss_above_floor'))})"
    above = above if isinstance(floor, (int, float)) and floor else ""
    line = (
        f"{run_id}: loss {_fmt(result.get('final_eval_loss'))}{above}, "
        f"repetition acc {_fmt(result.get('repetition_accuracy'), '.3f')}"
    )
    if result.get("diverged"):
        line += f", DIVERGED at step {result.get('diverged_step')}"
    return line


def trains_together(vmap: bool | None, config: Any) -> bool:
    """`vmap`, or when None: on accelerators, and on CPU up to CPU_VMAP_TOKENS tokens a step."""
    if vmap is not None:
        return vmap
    import jax

    return jax.default_backend() != "cpu" or config.tokens_per_step <= CPU_VMAP_TOKENS


def _others(out: Path, rows: list[dict], points: list) -> list[tuple[str, Any]]:
    """(run id, config) of the finished runs in `out` that are none of `points`."""
    from spamlang.train.config import TrainConfig

    known = {run_id for run_id, _ in points}
    found = []
    for row in rows:
        if row.get("run_id") in known:
            continue
        config = read_run(out / str(row.get("run_id"))).config  # None: missing or unreadable
        if config is not None:
            found.append((row["run_id"], TrainConfig.from_json(config)))
    return found


def run_sweep(
    sweep: Sweep,
    out_dir: str | Path,
    shard: tuple[int, int] = (0, 1),
    *,
    quiet: bool = False,
    group_size: int = 0,
    vmap: bool | None = None,
    bracket_lr: int | None = None,
    max_points: int = MAX_POINTS,
    only: tuple = (),
) -> list[dict]:
    """Train every unfinished point of shard `shard` = (i, n) of `sweep` under `out_dir`; return the
    rows of results.csv (every finished run there). A group trains as one vmapped program
    (`vmap`; None: `trains_together`) of at most `group_size` members (0: the sweep's, else what
    fits the device); `bracket_lr` (None: the sweep's) extends edge LR grids; `only`: run-id
    globs."""
    shard = parse_shard(shard)
    group_size = group_size or sweep.group_size
    check_size(sweep, max_points)
    memory = fit.device_memory()  # before anything is written: a bad variable is a UserError
    limit = check_bracket(sweep.bracket_lr if bracket_lr is None else bracket_lr, sweep.axes)
    my_groups = shard_groups(sweep, shard, group_size, only)
    warn_empty_shard(sweep, shard, group_size, my_groups, only)
    from spamlang.perf import check_peak_env
    from spamlang.rundir import claim_folder
    from spamlang.rundir.atomic import clean_stale_temps

    # Before any directory exists: someone else's folder, or a step that does not fit, is refused.
    out = claim_folder(out_dir, SWEEP_FOLDER, "--out")
    check_peak_env()
    for group in my_groups:
        if line := fit.memory_refusal(group[0][1]):
            raise UserError(f"{group[0][0]}: {line}")
    out.mkdir(parents=True, exist_ok=True)
    clean_stale_temps(*(out / name for name in SWEEP_FILES))  # left by a killed sweep
    grown = check_sweep_file(sweep, out)  # the sweep as this directory names its runs
    if grown is not sweep:
        sweep, my_groups = grown, shard_groups(grown, shard, group_size, only)
    check = point_check(sweep)  # results.csv lists a run only with its own point's settings
    desc = sweep.name + (f" shard {shard[0]}/{shard[1]}" if shard[1] > 1 else "")
    train = _Trainer(out, my_groups, desc, quiet, vmap, group_size, memory, check, only)
    try:
        for group in my_groups:
            todo = [(run_id, cfg) for run_id, cfg in group if not is_finished(out / run_id)]
            if todo:
                train(todo)  # a run another process holds is left to it
            if limit:  # cells whose every run is finished: the last process to finish brackets
                train.bracket(group, sweep, limit)
    finally:
        train.bar.close()
        rows = write_results(out, train.report, check)
    _say_summary(sweep, out, rows, train.report, train.held, quiet)
    points = sweep.points() + train.added
    swept = swept_values(points + _others(out, rows, points), sweep.axes)
    if not quiet and rows:
        print("best lr per cell (seed-mean final eval loss, its min .. max over seeds):")
        for line in cell_lines(rows, swept=swept):
            print("  " + line)
    if train.at_limit:
        print(
            f"LR bracketing stopped at its limit ({limit} LRs per side) in {len(train.at_limit)} "
            f"cell(s), whose optimum may lie further out: {', '.join(train.at_limit)}",
            file=sys.stderr,
        )
    # Even when quiet: a best LR at the edge of the grid questions the sweep's conclusions.
    for line in edge_warnings(rows, swept=swept):
        print(line, file=sys.stderr)
    return rows


class _Trainer:
    """Trains a sweep's runs, counting them on a bar (on a terminal only); a call is
    `bracket_cell`'s `train`; `report` gathers what results.csv could not list."""

    def __init__(self, out, my_groups, desc, quiet, vmap, group_size, memory, check, only):
        from tqdm.auto import tqdm

        self.out, self.quiet, self.vmap, self.check = out, quiet, vmap, check
        self.group_size, self.memory, self.report = group_size, memory, Report()
        self.known = {run_id for g in my_groups for run_id, _ in g}
        self.total = sum(len(g) for g in my_groups)
        self.done = sum(is_finished(out / run_id) for g in my_groups for run_id, _ in g)
        self.held = 0  # runs skipped because another process is training them
        self.added, self.at_limit = [], []  # bracketing: points added, cells left at its limit
        self.fits: dict = {}  # (group key, members) -> fit.Fit: bracketing does not recompile
        self.only = only  # run-id globs that cut the groups
        off = quiet or not sys.stderr.isatty()
        kw = dict(unit="run", dynamic_ncols=True, disable=off, desc=desc)
        self.bar = tqdm(total=self.total, initial=self.done, **kw)

    def __call__(self, todo: list) -> bool:
        """Train `todo`; False if another process holds a run."""
        out, bar = self.out, self.bar
        fresh = [run_id for run_id, _ in todo if run_id not in self.known]
        self.total += sum(not is_finished(out / run_id) for run_id in fresh)
        self.known.update(run_id for run_id, _ in todo)
        bar.total = self.total
        together = trains_together(self.vmap, todo[0][1])
        parts = [todo] if together else [[run] for run in todo]
        if together and len(todo) > 1 and self.memory is not None:
            write = functools.partial(bar.write, file=sys.stderr)
            parts = _fit_parts(todo, self.memory, self.group_size, self.fits, write)
        all_done = True
        for part in parts:
            try:
                self._run(part)
            except RunDirBusy as e:
                # Even when quiet: these runs are left to another process, not done here.
                first, more = part[0][0], len(part) - 1
                what = f"{first} +{more} vmapped: {e.run_dir.name}" if more else f"{first}:"
                bar.write(f"skip {what} in use by {e.by}", file=sys.stderr)
                self.held += len(part)
                all_done = False
                continue
            write_results(out, self.report, self.check)
        return all_done

    def _run(self, todo: list) -> None:
        from spamlang.train import run as train_run  # looked up at call time (tests spy on it)

        ids, bar, total, quiet = [run_id for run_id, _ in todo], self.bar, self.total, self.quiet
        label = ids[0] if len(ids) == 1 else f"{ids[0]} +{len(ids) - 1} vmapped"
        dirs = [self.out / i for i in ids]
        if not quiet:
            announce_resumes(bar, ids, dirs, self.done, total)
        steps, first = todo[0][1].steps, self.done + 1
        with watch(bar, label, dirs, steps=steps, first=first, total=total, quiet=quiet):
            if len(todo) == 1:
                results = [train_run.run_training(todo[0][1], dirs[0], quiet=True)]
            else:
                results = train_run.run_group([c for _, c in todo], dirs, quiet=True)
        for run_id, result in zip(ids, results):
            self.done += 1
            if not quiet:
                bar.write(f"[{self.done}/{total}] " + summary_line(run_id, result))
        bar.update(len(todo))

    def bracket(self, group: list, sweep: Sweep, limit: int) -> None:
        # Whole cells (a cap or --only may have cut them): a decision needs every seed. Only the
        # cells this process was given: a vmapped group may hold other cells (arms that differ in
        # a member field, such as b2), which --only left out and which it must not extend.
        mine = {cell_key(config) for _, config in group}
        if self.group_size or self.only:
            group = next(g for g in groups(sweep, 0) if group[0] in g)
        cells: dict[str, list] = {}
        for point in group:
            if (key := cell_key(point[1])) in mine:
                cells.setdefault(key, []).append(point)
        for cell in cells.values():
            # A cell not finished (a capped group's other part) or held elsewhere: "busy".
            if not all(is_finished(self.out / run_id) for run_id, _ in cell):
                continue
            status, extra = bracket_cell(cell, sweep.run_id, self.out, limit, self)
            self.added.extend(extra)
            if status == "limit":
                self.at_limit.append(cell[0][0])


def _say_summary(sweep: Sweep, out: Path, rows: list, report: Report, held: int, quiet: bool):
    if not quiet:
        diverged = sum(bool(r.get("diverged")) for r in rows)
        best = [v for r in rows if (v := finite(r.get("final_eval_loss"))) is not None]
        line = f"{sweep.name}: {len(rows)} finished run(s) in {out} ({diverged} diverged"
        line += f", best eval loss {min(best):.4f})" if best else ")"
        if report.unreadable:
            line += (
                f", and {len(report.unreadable)} more finished run(s) it could not read (left "
                "out of the table; see below)"
            )
        line += f"; {held} skipped, in use by another process" if held else ""
        print(line + f"; table: {out / 'results.csv'}")
    # Even when quiet, once each: results it cannot list, and what it repaired or left alone.
    for line in report.lines():
        print(line, file=sys.stderr)


def point_check(sweep: Sweep):
    """`check(run id, config dict)` for `write_results`: why a config.json is not the point its run
    id names (edited by hand?), else None."""
    points = dict(sweep.points())
    axis_fields = {n for axis in sweep.axes for n in fields_of(axis)}
    axis_fields |= {
        whole
        for whole, prefix in (("model", MODEL_PREFIX), ("language_params", PARAM_PREFIX))
        if any(n.startswith(prefix) for n in axis_fields)
    }
    base = as_json(sweep.base.to_json())

    @functools.cache  # one verdict per run id and config
    def verdict(run_id: str, text: str) -> str | None:
        try:  # a config.json of an older version: its missing fields take their defaults
            config = type(sweep.base).from_json(json.loads(text))
        except (ValueError, TypeError) as e:
            return f"its config.json is not a valid config ({str(e).splitlines()[0]})"
        data = as_json(config.to_json())
        if run_id in points:
            want = as_json(points[run_id].to_json())
            diff = differing(data, want)[:4]
            if not diff:
                return None
            shown = ", ".join(f"{k}={json.dumps(data.get(k))}" for k in diff)
            wanted = ", ".join(f"{k}={json.dumps(want.get(k))}" for k in diff)
            return (
                f"its config.json has {shown}, but its run id {run_id} is the sweep's point "
                f"with {wanted} (config.json edited?)"
            )
        diff = [k for k in differing(data, base) if k not in axis_fields]
        named = sweep.run_id(config)
        if not diff and named == run_id:
            return None
        why = ", ".join(diff[:4])
        why = f"differs from the base in {why}" if diff else f"names the point {named}"
        return f"its config.json is not the sweep's point {run_id} (it {why})"

    return lambda run_id, data: verdict(run_id, canonical(data))


def _fit_parts(
    todo: list, memory: fit.DeviceMemory, group_size: int, known: dict, write
) -> list[list]:
    """`todo` cut into parts that fit `memory` (whole when asked for)."""
    config, k = todo[0][1], len(todo)
    key = group_key(config)
    if any(kk == key and k <= f.members for (kk, _), f in known.items()):
        return [todo]  # a larger group of the same program already fitted
    if (key, k) not in known:
        known[key, k] = fit.members_that_fit(
            config, k, memory_bytes=memory.bytes, source=memory.source
        )
    found = known[key, k]
    if found.members >= k:
        return [todo]
    # Even when quiet: the sweep trains differently from what was asked, or may run out.
    write(found.line(todo[0][0], group_size))
    if group_size:
        return [todo]
    size = max(found.members, 1)
    return [todo[i : i + size] for i in range(0, k, size)]
