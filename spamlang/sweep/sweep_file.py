"""A sweep directory's sweep.json: what a sweep may do to a directory that already has one. The
same base config, and the same axes in the same order, which may only grow: an axis may gain
values, or be added when it lists the existing runs' value (`_grown`). Anything else is refused
with one line saying why and what to do. sweep.json is also what makes a folder a sweep
directory (`SWEEP_FOLDER`): a sweep writes nowhere else."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
from pathlib import Path

from spamlang.errors import UserError
from spamlang.rundir import BUDGET_FIXED, BUDGET_INSTEAD, RUN_FOLDER, Folder
from spamlang.rundir.atomic import atomic_write_json
from spamlang.rundir.lock import locked
from spamlang.rundir.reading import fields_of, read_json, read_object
from spamlang.rundir.schema import CONFIG, RESULTS_FILE, RESULTS_LOCK, SWEEP_FILE, SYMBOLS_FILE
from spamlang.sweep.results_csv import is_read_only
from spamlang.sweep.spec import Sweep, as_json, axis_id, axis_value, canonical, differing

SWEEP_LOCK = ".sweep.lock"
# The files a sweep writes at its directory's top, beside its run directories.
SWEEP_FILES = (SWEEP_FILE, RESULTS_FILE, SYMBOLS_FILE)


# sweep.json, written first, marks a sweep directory (before it: locks, temps, run dirs).
SWEEP_FOLDER = Folder(
    "a sweep directory",
    marks=(
        (SWEEP_FILE, lambda data: isinstance(data, dict) and isinstance(data.get("axes"), dict)),
    ),
    files=SWEEP_FILES,
    locks=(SWEEP_LOCK, RESULTS_LOCK),
    subfolders=RUN_FOLDER,
)


def _check_base(sweep: Sweep, old: dict, new: dict, out_dir: Path) -> None:
    """UserError when the stored base differs from the sweep's, naming the fields and the fix."""
    try:  # as the current config class writes it: fields added since take their defaults
        base = as_json(type(sweep.base).from_json(old.get("base")).to_json())
    except (ValueError, TypeError):
        base = as_json(old.get("base")) or {}
    if base == new["base"]:
        return
    diff = differing(base, new["base"])
    line = f"{out_dir} holds a sweep with a different base config (fields: {', '.join(diff)})"
    stored_set = old.get("set") if isinstance(old.get("set"), dict) else {}
    if sweep.overrides and set(diff) <= set(sweep.overrides):
        why = (
            f"--set changed the base, and a directory holds one base: without --out this "
            f"--set sweep goes to its own, runs/{sweep.name}; or use another --out"
        )
    elif stored_set:
        said = " ".join(f"--set {k}={json.dumps(v)}" for k, v in stored_set.items())
        why = f"it was run with {said}: pass the same, or use another --out"
    elif diff == ["tokens"]:
        why = f"{BUDGET_FIXED}; {BUDGET_INSTEAD}"
    else:
        why = "use another --out"
    raise UserError(f"{line}; {why}")


def _order_of_runs(old: dict, out_dir: Path) -> list | None:
    """For a sweep.json without `axis_order`: the axis order a run's id shows (None: none does)."""
    grown = old.get("grown") or {}
    for path in sorted(out_dir.glob(f"*/{CONFIG}")):
        config, name = read_object(path), path.parent.name
        values = {axis: axis_value(config or {}, axis) for axis in old["axes"]}
        pieces = {
            axis: axis_id(axis, value)
            for axis, value in values.items()
            if not (axis in grown and canonical(value) == canonical(grown[axis]))
        }
        order = sorted(pieces, key=lambda a: f"-{name}-".find(f"-{pieces[a]}-"))
        if config is not None and "-".join(pieces[a] for a in order) == name:
            return order
    return None


def _grown(sweep: Sweep, old: dict, out_dir: Path) -> dict:
    """The sweep's `grown` axes here: those recorded, and those it adds, each of which must list the
    value the existing runs have, so that their ids stay. UserError for anything else."""
    new_axes = list(sweep.axes)
    order = old.get("axis_order")
    if not (isinstance(order, list) and set(order) == set(old["axes"])):
        order = _order_of_runs(old, out_dir)
    # Without an order, shown in the sweep's: sweep.json keeps its keys sorted.
    old_axes = order or [a for a in new_axes if a in old["axes"]] + [
        a for a in old["axes"] if a not in new_axes
    ]
    head = f"{out_dir} holds a sweep with axes {old_axes}, not {new_axes}"
    if order and [a for a in new_axes if a in old_axes] != [a for a in old_axes if a in new_axes]:
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
        if value is None or (isinstance(value, list) and None in value):
            raise UserError(
                f"{head}: its runs take {', '.join(fields_of(axis))} from the preset or the "
                "language, not from a value the new axis can list; use another --out"
            )
        if canonical(value) not in {canonical(v) for v in sweep.axes[axis]}:
            raise UserError(
                f"{head}: its runs have {axis}={json.dumps(value)} (the base's), "
                f"which the new axis {axis!r} does not list; add it to extend this "
                "directory (those runs keep their ids), or use another --out"
            )
        grown[axis] = value
    return grown


def check_sweep_file(sweep: Sweep, out_dir: Path, write: bool = True) -> Sweep:
    """Write `<out_dir>/sweep.json` (not with `write` False) under its lock, refusing another
    sweep's directory; return the sweep as this directory names its runs."""
    path = out_dir / SWEEP_FILE
    with contextlib.ExitStack() as stack:
        try:
            if write:
                stack.enter_context(locked(out_dir / SWEEP_LOCK))
        except OSError as e:
            if not is_read_only(e):
                raise
            # Read-only storage: nothing can write sweep.json meanwhile, no lock is needed.
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
            for axis, values in old["axes"].items():
                lost = [v for v in values if v not in as_json(sweep.axes[axis])]
                if lost:
                    raise UserError(
                        f"{out_dir} holds a sweep whose axis {axis!r} also lists {lost}; "
                        "axes may only grow; use another --out"
                    )
        new = as_json(sweep.to_json())
        if old == new or not write:
            return sweep
        try:
            atomic_write_json(path, new)
        except OSError as e:
            if not (is_read_only(e) and old is not None and old["axes"] == new["axes"]):
                raise
            # The same sweep in an older spelling, on storage that takes no writes.
            print(
                f"note: left {path} as it was: {out_dir} cannot be written ({e.strerror or e})",
                file=sys.stderr,
            )
    return sweep
