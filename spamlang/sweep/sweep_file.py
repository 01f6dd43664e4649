"""A sweep directory's sweep.json: what a sweep may do to a directory that already has one.

The same base config, and the same axes, which may only grow:
- an axis may gain values (new points; old runs keep their ids);
- an axis may be added, anywhere among the old ones, when it lists the value the existing
  runs have, the base's: `"seed": [0, 1]` on a sweep whose base has seed 0.
  The old points are then the new axis' points at that value, and their runs are finished
  already; so that their ids stay, the axis is recorded in sweep.json's `grown` (axis -> that
  value) and a point at that value leaves it out of its id (`Sweep.grown`): the old runs are
  `V16-lr1e-3`, the new ones `V16-lr1e-3-seed1`. Renaming the old run directories instead
  would break whatever else points at them (a plot script, a second shard running meanwhile).
Anything else (another base, a lost value or axis, a new axis without the old runs' value) is
refused with one line saying why and what to do: a base that differs only in tokens says why a
run's budget is fixed (`spamlang.rundir.BUDGET_FIXED`), one changed by --set where its own
directory is, one made with --set which --set to pass. The axes keep their order (`axis_order`; a
sweep.json written before it had none, and its order is not compared).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from spamlang.errors import UserError
from spamlang.rundir import BUDGET_FIXED, BUDGET_INSTEAD
from spamlang.rundir.atomic import atomic_write_json
from spamlang.rundir.lock import locked
from spamlang.rundir.reading import read_json
from spamlang.rundir.schema import CONFIG, SWEEP_FILE
from spamlang.sweep.results_csv import is_read_only
from spamlang.sweep.spec import Sweep, as_json, axis_id, axis_value, canonical, fields_of

# The lock that sweep.json's read-check-write holds (`check_sweep_file`).
SWEEP_LOCK = ".sweep.lock"


def _normal_base(sweep: Sweep, stored: Any) -> Any:
    """The stored base as the current config class would write it (new fields get defaults)."""
    try:
        return as_json(type(sweep.base).from_json(stored).to_json())
    except (ValueError, TypeError):
        return as_json(stored)


def _set_text(overrides: dict) -> str:
    return " ".join(f"--set {k}={json.dumps(v)}" for k, v in overrides.items())


def _check_base(sweep: Sweep, old: dict, new: dict, out_dir: Path) -> None:
    """UserError when the stored base differs from the sweep's, naming the fields and, where
    it applies, why (a budget, a --set) and what to do."""
    base = _normal_base(sweep, old.get("base")) or {}
    if base == new["base"]:
        return
    keys = sorted(set(base) | set(new["base"]))
    diff = [k for k in keys if base.get(k) != new["base"].get(k)]
    line = f"{out_dir} holds a sweep with a different base config (fields: {', '.join(diff)})"
    stored_set = old.get("set") if isinstance(old.get("set"), dict) else {}
    if sweep.overrides and set(diff) <= set(sweep.overrides):
        why = (
            f"--set changed the base, and a directory holds one base: without --out this "
            f"--set sweep goes to its own, runs/{sweep.name}; or use another --out"
        )
    elif stored_set:
        why = f"it was run with {_set_text(stored_set)}: pass the same, or use another --out"
    elif diff == ["tokens"]:
        why = f"{BUDGET_FIXED}; {BUDGET_INSTEAD}"
    else:
        why = "use another --out"
    raise UserError(f"{line}; {why}")


def _grown(sweep: Sweep, old: dict, out_dir: Path) -> dict:
    """The sweep's `grown` axes in this directory: those recorded, and the axes this sweep adds
    to the stored ones (each must list the old runs' value). UserError for anything else."""
    new_axes = list(sweep.axes)
    # Shown in the sweep's order: sweep.json keeps its keys sorted.
    old_axes = [a for a in new_axes if a in old["axes"]] + [
        a for a in old["axes"] if a not in new_axes
    ]
    stored = old.get("axis_order")
    if isinstance(stored, list) and set(stored) == set(old["axes"]):
        old_axes = list(stored)  # sweep.json records the order its runs' ids use
    else:  # written before it recorded the order: its runs' ids tell it
        stored = _order_of_runs(sweep, old, out_dir)
        if stored is not None:
            old_axes = stored + [a for a in old_axes if a not in stored]
    head = f"{out_dir} holds a sweep with axes {old_axes}, not {new_axes}"
    if isinstance(stored, list) and [a for a in new_axes if a in old_axes] != [
        a for a in old_axes if a in new_axes
    ]:
        raise UserError(
            f"{head}; the axes in another order would rename every run (a run id "
            f"lists the axes in order) and retrain them all: keep the order "
            f"{old_axes}, adding new axes anywhere, or use another --out"
        )
    if set(old_axes) - set(new_axes):
        raise UserError(
            f"{head}; axes may be added (listing the value the existing runs "
            "have) but not removed or renamed; use another --out"
        )
    grown = dict(old.get("grown") or {})
    base = sweep.base.to_json()
    for axis in new_axes:
        if axis in old_axes:
            continue
        value = axis_value(base, axis)
        shown = ", ".join(fields_of(axis))
        if value is None or (isinstance(value, list) and None in value):
            raise UserError(
                f"{head}: its runs take {shown} from the preset or the language, "
                "not from a value the new axis can list; use another --out"
            )
        if canonical(value) not in {canonical(v) for v in sweep.axes[axis]}:
            raise UserError(
                f"{head}: its runs have {axis}={json.dumps(value)} (the base's), "
                f"which the new axis {axis!r} does not list; add it to extend this "
                "directory (those runs keep their ids), or use another --out"
            )
        grown[axis] = value
    return grown


def _order_of_runs(sweep: Sweep, old: dict, out_dir: Path) -> list | None:
    """The order of the stored axes that the existing run ids use, when they show one the
    sweep's order contradicts (None: no run, or every run id reads in the sweep's order).
    For a sweep.json written before it recorded `axis_order`."""
    axes = [a for a in sweep.axes if a in old["axes"]]
    grown = old.get("grown") if isinstance(old.get("grown"), dict) else {}
    pieces = {
        axis: {
            axis_id(axis, value)
            for value in sweep.axes[axis]
            if not (axis in grown and canonical(value) == canonical(grown[axis]))
        }
        for axis in axes
    }
    try:
        names = sorted(p.name for p in out_dir.iterdir() if (p / CONFIG).is_file())
    except OSError:
        return None
    for name in names:
        orders = _parses(name, pieces, optional=set(grown))
        if orders and not any([a for a in axes if a in o] == o for o in orders):
            return orders[0]
    return None


def _parses(name: str, pieces: dict[str, set], optional: set, limit: int = 8) -> list[list]:
    """The axis orders in which `name` is a run id: one piece of each axis joined by '-'
    (an axis in `optional` may be absent: a grown axis at its old value); at most `limit`."""
    found: list[list] = []

    def walk(pos: int, seq: list) -> None:
        if len(found) >= limit:
            return
        if pos == len(name) + 1:
            if all(a in seq or a in optional for a in pieces):
                found.append(list(seq))
            return
        for axis, options in pieces.items():
            if axis in seq:
                continue
            for piece in options:
                end = pos + len(piece)
                if piece and name.startswith(piece, pos) and (end == len(name) or name[end] == "-"):
                    walk(end + 1, seq + [axis])

    walk(0, [])
    return found


def check_sweep_file(sweep: Sweep, out_dir: Path) -> Sweep:
    """Write `<out_dir>/sweep.json`, refusing a directory that holds a different sweep; return
    the sweep as this directory names its runs (with its `grown` axes, module doc).

    An existing sweep.json must have the same base config. Its axes may only grow: every
    value it lists must still be listed, and new axes must list the old runs' value. The
    sweep's name is a label and may change. The read, the checks and the write hold the
    directory's sweep lock (`SWEEP_LOCK`, waited for): of two growths at the same time, the
    second sees the first's sweep.json, so no axis is lost (the second is refused when it
    lacks the first's new axis).
    """
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(locked(out_dir / SWEEP_LOCK))
        except OSError as e:
            if not is_read_only(e):
                raise
            # Read-only storage: nothing can write sweep.json meanwhile, no lock is needed.
        return _check_sweep_file(sweep, out_dir)


def _check_sweep_file(sweep: Sweep, out_dir: Path) -> Sweep:
    path = out_dir / SWEEP_FILE
    old = None
    if path.is_file():
        try:
            old = read_json(path)
            if (
                not isinstance(old, dict)
                or not isinstance(old.get("axes"), dict)
                or not isinstance(old.get("grown", {}), dict)
            ):
                raise ValueError("not a sweep description")
        except (OSError, ValueError) as e:
            raise UserError(
                f"{path} is unreadable ({e}); move it away or use another --out"
            ) from None
        _check_base(sweep, old, as_json(sweep.to_json()), out_dir)
        grown = _grown(sweep, old, out_dir)
        if grown != sweep.grown:
            sweep = dataclasses.replace(sweep, grown=grown)
        new = as_json(sweep.to_json())
        for axis, values in old["axes"].items():
            lost = [v for v in values if v not in new["axes"][axis]]
            if lost:
                raise UserError(
                    f"{out_dir} holds a sweep whose axis {axis!r} also lists {lost}; "
                    "axes may only grow; use another --out"
                )
        if old == new:
            return sweep
    new = as_json(sweep.to_json())
    try:
        atomic_write_json(path, new)
    except OSError as e:
        if not (is_read_only(e) and old is not None and old["axes"] == new["axes"]):
            raise
        # Same sweep, stored in an older spelling: nothing to record on storage that takes
        # no writes (a finished sweep read from a read-only copy).
        print(
            f"note: left {path} as it was: {out_dir} cannot be written ({e.strerror or e})",
            file=sys.stderr,
        )
    return sweep
