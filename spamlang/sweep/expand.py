"""A sweep's points: one built from the base and its axis values, checked, and keyed by the
vmapped group and the LR cell it belongs to; and the whole grid expanded, fast enough for
large grids.

`Sweep` (in `spamlang.sweep.spec`) calls `Builder` for each point of the cartesian product and
`Progress` around the loop; the grid's size was checked against its limit first
(`spec.check_size`), so this module only has to make an allowed grid quick and visible.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import sys
from typing import Any

from spamlang.errors import UserError

_MODEL_PREFIX = "model."
_PARAM_PREFIX = "param."

# Expanding at least this many points shows progress on stderr (about 0.4 s of expanding).
PROGRESS_POINTS = 20_000


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _replace(base: Any, changes: dict[str, Any]) -> Any:
    replace = getattr(base, "replace", None)
    return replace(**changes) if callable(replace) else dataclasses.replace(base, **changes)


def build_point(base: Any, assignment: dict[str, Any]) -> Any:
    """The config at one point: `base` with each axis set (dotted axes merged into their dicts)."""
    changes: dict[str, Any] = {}
    overrides = dict(getattr(base, "model_overrides", None) or {})
    params = dict(getattr(base, "language_params", None) or {})
    for axis, value in assignment.items():
        if axis.startswith(_MODEL_PREFIX):
            overrides[axis[len(_MODEL_PREFIX) :]] = value
            changes["model_overrides"] = overrides
        elif axis.startswith(_PARAM_PREFIX):
            params[axis[len(_PARAM_PREFIX) :]] = value
            changes["language_params"] = params
        else:
            changes[axis] = value
    return _replace(base, changes)


def _deep_check(config: Any) -> None:
    """Build the model config and language a run would build (cheap, nothing compiled)."""
    for method in ("model_config", "make_language"):
        fn = getattr(config, method, None)
        if callable(fn):
            fn()


def _key_without(config: Any, fields) -> str:
    data = config.to_json() if hasattr(config, "to_json") else dataclasses.asdict(config)
    return _canonical({k: v for k, v in data.items() if k not in fields})


def group_key(config: Any) -> str:
    """Points with the same key differ only in MEMBER_FIELDS (lr, seed, b1, b2, eps, momentum)
    and can share one vmapped program."""
    from spamlang.train.config import MEMBER_FIELDS

    return _key_without(config, MEMBER_FIELDS)


def cell_key(config: Any) -> str:
    """Points with the same key differ only in lr and seed: one cell of an LR grid, whose best
    LR the summary reports and LR bracketing brackets."""
    return _key_without(config, ("lr", "seed"))


class Builder:
    """Builds the points' configs, each group's checks once.

    A config built from scratch is checked whole (`build_point`, then `_deep_check`). Points that differ only in MEMBER_FIELDS (lr, seed, the optimizer's scalars) share
    everything else, so each such shell is built and checked once, and each member value once
    (on the first shell that meets it); a point is then its shell with the member fields set.
    That is sound because a member field is a per-run scalar whose checks involve no other
    field (it is a state array of the vmapped step: `spamlang.train.step`); it makes a point
    some 25x cheaper (`benchmarks/bench_sweep_expand.py`). Also records each point's
    `group_key`, once per shell.
    """

    def __init__(self, base: Any, owner: str):
        self.base, self.owner = base, owner
        self.members = member_fields(base)
        self.shells: dict[str, tuple[Any, str]] = {}  # other fields' values -> (config, key)
        self.checked: dict[tuple[str, str], Any] = {}  # (member field, value) -> stored value
        self.group_keys: dict[str, str] = {}

    def __call__(self, run_id: str, assignment: dict[str, Any]) -> Any:
        member = {k: v for k, v in assignment.items() if k in self.members}
        rest = {k: v for k, v in assignment.items() if k not in self.members}
        shell_key = _canonical(rest)
        try:
            if shell_key not in self.shells:
                shell = build_point(self.base, rest)
                _deep_check(shell)
                self.shells[shell_key] = (shell, group_key(shell))
            shell, key = self.shells[shell_key]
            self.group_keys[run_id] = key
            if not member:
                return shell
            stored = {}
            for name, value in member.items():
                check = (name, _canonical(value))
                if check not in self.checked:
                    self.checked[check] = getattr(build_point(shell, {name: value}), name)
                stored[name] = self.checked[check]
        except (ValueError, TypeError) as e:
            msg = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise UserError(f"{self.owner}, run {run_id}: {msg}") from None
        config = copy.copy(shell)
        for name, value in stored.items():
            object.__setattr__(config, name, value)
        return config


def member_fields(base: Any) -> frozenset[str]:
    """The MEMBER_FIELDS of a TrainConfig base; none for another class (built whole)."""
    from spamlang.train.config import MEMBER_FIELDS, TrainConfig

    return frozenset(MEMBER_FIELDS) if isinstance(base, TrainConfig) else frozenset()


class Progress:
    """A tick per expanded point; a bar on a terminal (a line elsewhere) for large sweeps."""

    def __init__(self, name: str, total: int):
        self.name, self.total, self.bar = name, total, None

    def __enter__(self):
        if self.total < PROGRESS_POINTS:
            return lambda: None
        if not sys.stderr.isatty():
            print(f"sweep {self.name}: expanding {self.total:,} points", file=sys.stderr)
            return lambda: None
        from tqdm import tqdm

        self.bar = tqdm(
            total=self.total,
            desc=f"sweep {self.name}: expanding",
            unit="point",
            unit_scale=True,
            file=sys.stderr,
            mininterval=0.5,
        )
        return self.bar.update

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.close()
