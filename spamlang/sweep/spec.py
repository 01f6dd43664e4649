"""A sweep as data: a base config, named axes, their cartesian product and stable run ids.

An axis is a field of the base config, `model.<field>` (a ModelConfig field) or `param.<name>`
(a language parameter), or a linked axis (`"vocab_size,seq_len": [[256, 64], [4096, 4]]`) that
sets several fields together. Points that differ only in MEMBER_FIELDS form a group, trainable
as one vmapped program (`groups`); shard i of n takes whole groups, round-robin (`shard_groups`)."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import math
import re
import sys
from decimal import Decimal
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from tqdm import tqdm

from spamlang.errors import UserError, first_line
from spamlang.fields import as_int, check, closest, conform, field_types, in_range, is_int, tagged
from spamlang.model.config import ModelConfig
from spamlang.notation import format_count, parse_count
from spamlang.rundir.reading import fields_of  # sweep.json's axes are read below the sweep
from spamlang.tracking.common import KINDS as TRACKERS
from spamlang.train.config import FIELD_ALIASES, MEMBER_FIELDS, TrainConfig

MODEL_PREFIX, PARAM_PREFIX = "model.", "param."
# Run-id pieces (`spamlang.train.config`); another `model.*` axis appears under its name.
_SHORT = {
    **tagged(TrainConfig, "short"),
    "model.d_model": "D",
    "model.n_layers": "layers",
    "model.n_heads": "heads",
    "model.n_kv_heads": "kv",
    "model.d_ff": "ff",
    "model.init_std": "init",
}
_DECIMAL = tagged(TrainConfig, "decimal")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# Points a sweep runs unless `--max-points` says more (a larger one is not expanded at once).
MAX_POINTS = 100_000
PROGRESS_POINTS = 20_000  # expanding at least this many points shows progress on stderr


def format_number(x: int | float) -> str:
    """Shortest run-id form: ints as is, floats as `<mantissa>e<exp>` (2.5e-4, 1e0)."""
    if isinstance(x, int):  # bools too: True -> "1"
        return str(int(x))
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    sign, digits, exp = Decimal(repr(float(x))).normalize().as_tuple()
    text = "".join(map(str, digits))
    mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
    return f"{'-' if sign else ''}{mantissa}e{exp + len(digits) - 1}"


def _sanitise(text: str) -> str:  # safe inside a directory name
    return re.sub(r"[^\w.+-]", "_", text.replace(":", "").replace("/", "_"))


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return format_number(value)
    if isinstance(value, dict):
        return "_".join(f"{_sanitise(str(k))}{_value_text(v)}" for k, v in sorted(value.items()))
    if isinstance(value, (list, tuple)):
        return "_".join(_value_text(v) for v in value)
    return _sanitise(str(value))


def id_part(axis: str, value: Any) -> str:
    """One axis' piece of a run id: `V4096`, `lr5e-4`, `tied`, `seed1`, `init-SmolLM2-135M`."""
    short = _SHORT.get(axis, axis.split(".", 1)[-1])
    if isinstance(short, tuple) and isinstance(value, bool):  # a word for each side
        return short[0 if value else 1]
    if axis == "init_from":  # a checkpoint directory: its own name; none is a random init
        return "init-" + _sanitise(Path(value).name) if value else "scratch"
    if axis == "corpus":  # a corpus folder: its own name; none is the language
        return "corpus-" + _sanitise(Path(value).name) if value else "language"
    if value is None:  # an optional field left unset (head_b2: the run's b2) adds nothing
        return ""
    if axis in _DECIMAL and isinstance(value, float):
        return f"{axis}_{value!r}"
    if axis == "tokens" and isinstance(value, int):
        return short + format_count(value, decimals=0)  # 41M, not 41000000: exact multiples only
    if isinstance(value, bool):
        return short if value else "no" + short
    return short + _value_text(value)


def axis_type(base: Any, axis: str) -> Any:
    """The annotated type of `axis` (Any for `param.*`); UserError naming the known axes."""
    fields = field_types(type(base))
    if axis.startswith(MODEL_PREFIX):
        name = axis[len(MODEL_PREFIX) :]
        model_fields = field_types(ModelConfig)
        if name in fields:
            raise UserError(f"axis {axis!r}: {name} is a run field, use the axis {name!r}")
        if name not in model_fields:
            raise UserError(
                f"unknown axis {axis!r}: {name!r} is not a model field; "
                f"known: {', '.join(sorted(model_fields))}"
            )
        return model_fields[name]
    if axis.startswith(PARAM_PREFIX):
        if not axis[len(PARAM_PREFIX) :]:
            raise UserError(f"unknown axis {axis!r}: expected param.<language parameter>")
        return Any
    if axis not in fields:
        model = [MODEL_PREFIX + n for n in field_types(ModelConfig) if n not in fields]
        close = closest(axis, [*fields, *model], FIELD_ALIASES)
        hint = f" (did you mean {close!r}?)" if close else ""
        if close == "preset":  # a width: the width family of presets is the one way to sweep it
            hint = " (did you mean the width family of presets, e.g. preset: "
            hint += "['tiny-w32', 'tiny-w64']?)"
        raise UserError(
            f"unknown axis {axis!r}{hint}; known: {', '.join(sorted(fields))}, model.<model "
            f"field> ({', '.join(sorted(model))}), param.<language parameter>"
        )
    return fields[axis]


def _pairs(axis: str, value: Any) -> list[tuple[str, Any]]:
    """(field, value) pairs of one axis value: a linked axis' value lists one per field."""
    names = fields_of(axis)
    return list(zip(names, value)) if len(names) > 1 else [(axis, value)]


def axis_id(axis: str, value: Any) -> str:
    return "-".join(p for name, v in _pairs(axis, value) if (p := id_part(name, v)))


def check_value(base: Any, axis: str, value: Any, owner: str = "") -> Any:
    """One value of a one-field axis, checked and normalised (`spamlang.fields.conform`)."""
    tp = axis_type(base, axis)
    if axis == "tokens" and isinstance(value, str):
        value = parse_count(value)  # "2M"-style budgets, stored (and named) as ints
    return conform(axis, value, tp, owner=owner)


def canonical(value: Any) -> str:  # `value` as compared
    return json.dumps(value, sort_keys=True)


def differing(a: dict, b: dict) -> list[str]:
    """The keys, sorted, whose values differ between `a` and `b` (a key one lacks: None)."""
    return [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def _check_axes(base: Any, axes: Any, owner: str = "") -> dict[str, list]:
    if not isinstance(axes, dict):
        raise UserError(
            f"axes must be a dict of axis name -> list of values, got {type(axes).__name__}"
        )
    normalised: dict[str, list] = {}
    for axis, values in axes.items():
        if not isinstance(axis, str):
            raise UserError(f"axis names must be strings, got {axis!r}")
        names = fields_of(axis)
        for name in names:
            axis_type(base, name)
        if len(set(names)) != len(names):
            raise UserError(f"linked axis {axis!r} names a field twice")
        if not isinstance(values, (list, tuple)):
            raise UserError(f"axis {axis!r} must be a list of values, got {values!r}")
        if not values:
            raise UserError(f"axis {axis!r} is empty")
        clean, seen = [], set()
        for value in values:
            if len(names) == 1:
                value = check_value(base, axis, value, owner)
            elif not isinstance(value, (list, tuple)) or len(value) != len(names):
                raise UserError(
                    f"linked axis {axis!r}: each value must list {len(names)} values "
                    f"({', '.join(names)}), got {value!r}"
                )
            else:
                value = [check_value(base, n, v, owner) for n, v in zip(names, value)]
            if canonical(value) in seen:
                raise UserError(f"axis {axis!r} lists {value!r} twice")
            seen.add(canonical(value))
            clean.append(value)
        normalised[axis] = clean
    every = [n for axis in normalised for n in fields_of(axis)]
    twice = sorted({n for n in every if every.count(n) > 1})
    if twice:
        raise UserError(f"field(s) {', '.join(twice)} set by more than one axis")
    for whole, prefix in (("model", MODEL_PREFIX), ("language_params", PARAM_PREFIX)):
        if whole in every and any(a.startswith(prefix) for a in every):
            raise UserError(
                f"axis {whole!r} conflicts with the {prefix}* axes; use one or the other"
            )
    return normalised


def build_point(base: Any, assignment: dict[str, Any]) -> Any:
    """`base` with each axis set (dotted axes merged into their dicts)."""
    changes: dict[str, Any] = {}
    overrides, params = dict(base.model), dict(base.language_params)
    for axis, value in assignment.items():
        if axis.startswith(MODEL_PREFIX):
            overrides[axis[len(MODEL_PREFIX) :]] = value
            changes["model"] = overrides
        elif axis.startswith(PARAM_PREFIX):
            params[axis[len(PARAM_PREFIX) :]] = value
            changes["language_params"] = params
        else:
            changes[axis] = value
    return base.replace(**changes)


def _key_without(config: Any, fields) -> str:
    return canonical({k: v for k, v in config.to_json().items() if k not in fields})


def group_key(config: Any) -> str:
    """Points with the same key differ only in MEMBER_FIELDS: one vmapped program."""
    return _key_without(config, MEMBER_FIELDS)


def cell_key(config: Any) -> str:
    """Points with the same key differ only in lr and seed: one cell of an LR grid."""
    return _key_without(config, ("lr", "seed"))


def _progress(name: str, total: int) -> tqdm:
    big, tty = total >= PROGRESS_POINTS, sys.stderr.isatty()
    if big and not tty:
        print(f"sweep {name}: expanding {total:,} points", file=sys.stderr)
    kw = dict(unit="point", unit_scale=True, file=sys.stderr, mininterval=0.5)
    return tqdm(total=total, desc=f"sweep {name}: expanding", disable=not (big and tty), **kw)


@dataclasses.dataclass(frozen=True)
class Sweep:
    """A named grid of runs: `base` with every combination of `axes` (cartesian, in axis order).

    A run id joins one piece per axis (`V4096-lr5e-4-untied`; no axes: "base") and depends only on
    the axis names, that point's values and `grown`, so adding values never moves an id."""

    name: str  # label; also the default output directory runs/<name>
    base: Any  # the TrainConfig every point starts from
    axes: dict[str, list]  # axis name -> values, in the order the run id lists them
    # LRs added at most beyond an end of a cell's grid where its best LR sits (`--bracket-lr`).
    bracket_lr: int = 0
    # Axes added to a directory after its runs: axis -> their value, left out of their ids.
    grown: dict = dataclasses.field(default_factory=dict)
    # Base fields `--set FIELD=VALUE` changed (already in `base`), so sweep.json says so.
    overrides: dict = dataclasses.field(default_factory=dict)
    # The runs' default tracker (`--tracker` overrides); not in sweep.json: it changes no run.
    tracker: str | None = dataclasses.field(default=None, compare=False)
    # Runs per vmapped program at most (0: no cap; `--group-size` overrides); not in sweep.json.
    group_size: int = dataclasses.field(default=0, compare=False)
    _points: tuple | None = dataclasses.field(init=False, repr=False, compare=False, default=None)
    _group_keys: dict = dataclasses.field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self):
        if not isinstance(self.name, str) or not _NAME_RE.match(self.name):
            raise UserError(
                f"sweep name must be a non-empty [A-Za-z0-9._-] string, got {self.name!r}"
            )
        if not isinstance(self.base, TrainConfig):
            raise UserError(
                f"sweep {self.name!r}: base must be a TrainConfig, got {type(self.base).__name__}"
            )
        owner = f"sweep {self.name!r}"
        axes = _check_axes(self.base, self.axes, owner)
        object.__setattr__(self, "axes", axes)
        check_bracket(self.bracket_lr, axes, owner)
        if not isinstance(self.grown, dict) or set(self.grown) - set(axes):
            raise UserError(
                f"{owner}: grown must map axes of the sweep to a value, got {self.grown!r}"
            )
        object.__setattr__(self, "grown", as_json(self.grown))
        object.__setattr__(self, "overrides", as_json(dict(self.overrides or {})))
        if self.tracker not in (None, *TRACKERS):
            raise UserError(
                f"{owner}: tracker must be 'tensorboard', 'wandb' or None, got {self.tracker!r}"
            )
        size = check("group_size", self.group_size, int, owner=owner, ge=0)
        object.__setattr__(self, "group_size", size)
        if self.size <= MAX_POINTS:
            self._expand()

    @property
    def size(self) -> int:  # from the axes alone: nothing is expanded
        return math.prod(len(values) for values in self.axes.values())

    def _expand(self) -> tuple:
        """Build and check every point once: each shell (the point less its MEMBER_FIELDS, per-run
        scalars checked alone) once, and each member value once."""
        if self._points is not None:
            return self._points
        owner = f"sweep {self.name!r}"
        shells: dict[str, tuple[Any, str]] = {}  # other fields' values -> (config, group key)
        checked: dict[tuple[str, str], Any] = {}  # (member field, value) -> stored value
        points, seen, keys = [], {}, {}
        with _progress(self.name, self.size) as bar:
            for combo in itertools.product(*self.axes.values()):
                assignment = dict(p for a, v in zip(self.axes, combo) for p in _pairs(a, v))
                run_id = self._join_id(zip(self.axes, combo))
                if run_id in seen:
                    raise UserError(
                        f"{owner}: points {seen[run_id]} and {assignment} "
                        f"share the run id {run_id!r}"
                    )
                seen[run_id] = assignment
                rest = {k: v for k, v in assignment.items() if k not in MEMBER_FIELDS}
                members, shell_key = [k for k in assignment if k in MEMBER_FIELDS], canonical(rest)
                try:
                    if shell_key not in shells:
                        shell = build_point(self.base, rest)
                        shell.model_config()
                        shell.make_language()
                        shells[shell_key] = (shell, group_key(shell))
                    shell, keys[run_id] = shells[shell_key]
                    config = copy.copy(shell) if members else shell
                    for name in members:
                        check = (name, canonical(assignment[name]))
                        if check not in checked:
                            point = build_point(shell, {name: assignment[name]})
                            checked[check] = getattr(point, name)
                        object.__setattr__(config, name, checked[check])
                except (ValueError, TypeError) as e:
                    msg = first_line(e) or type(e).__name__
                    raise UserError(f"{owner}, run {run_id}: {msg}") from None
                points.append((run_id, config))
                bar.update()
        object.__setattr__(self, "_points", tuple(points))
        object.__setattr__(self, "_group_keys", keys)
        return self._points

    def group_key_of(self, run_id: str, config: Any) -> str:  # computed once per group
        return (self._group_keys or {}).get(run_id) or group_key(config)

    def run_id(self, config: Any) -> str:
        """The run id of a config that differs from the base only in axis fields."""
        return self._join_id((axis, axis_value(config.to_json(), axis)) for axis in self.axes)

    def _join_id(self, axis_values) -> str:
        """A grown axis at the value of the runs made before it existed adds nothing."""
        pieces = [
            piece
            for axis, value in axis_values
            if not (axis in self.grown and canonical(value) == canonical(self.grown[axis]))
            and (piece := axis_id(axis, value))
        ]
        return "-".join(pieces) or "base"

    def points(self) -> list[tuple[str, Any]]:  # cartesian order, the first axis slowest
        return list(self._expand())

    def to_json(self) -> dict:
        """What sweep.json holds; `grown` and `set` (--set's fields) only when there are any."""
        data = {
            "name": self.name,
            "base": self.base.to_json(),
            "axes": self.axes,
            "axis_order": list(self.axes),
        }
        if self.grown:
            data["grown"] = self.grown
        if self.overrides:
            data["set"] = self.overrides
        return data


def as_json(obj: Any) -> Any:
    """`obj` as it reads back from JSON (tuples as lists, keys sorted)."""
    return json.loads(json.dumps(obj, sort_keys=True))


def check_size(sweep: Sweep, limit: int = MAX_POINTS) -> int:
    """`sweep.size`, or a UserError when it is larger than `limit` (`--max-points`)."""
    limit = in_range("max_points", as_int("max_points", limit), ge=1)
    size = sweep.size
    if size > limit:
        shape = " x ".join(f"{len(v):,} {a}" for a, v in sweep.axes.items())
        raise UserError(
            f"sweep {sweep.name!r} has {size:,} points ({shape}), more than the limit of "
            f"{limit:,}; pass --max-points {size} (max_points={size} from Python) to run it anyway"
        )
    return size


def config_field(data: dict, field: str) -> Any:
    """An axis field's value in a config's JSON (`model.*` and `param.*` read their dicts)."""
    for prefix, key in ((PARAM_PREFIX, "language_params"), (MODEL_PREFIX, "model")):
        if field.startswith(prefix):
            return (data.get(key) or {}).get(field[len(prefix) :])
    return data.get(field)


def axis_value(data: dict, axis: str) -> Any:  # a linked axis': a list
    values = [config_field(data, name) for name in fields_of(axis)]
    return values if len(values) > 1 else values[0]


def check_bracket(limit: Any, axes: dict, owner: str = "") -> int:
    """A valid `bracket_lr` (LRs added per side): >= 0, and an `lr` axis to extend when > 0."""
    limit = in_range("bracket_lr", as_int("bracket_lr", limit, owner=owner), ge=0, owner=owner)
    if limit and "lr" not in [n for axis in axes for n in fields_of(axis)]:
        raise UserError("LR bracketing needs an 'lr' axis (the runs it adds are named by it)")
    return limit


def groups(sweep: Sweep, group_size: int = 0) -> list[list[tuple[str, Any]]]:
    """The points in groups trainable together, sorted; `group_size` > 0 cuts them in chunks."""
    group_size = in_range("group_size", as_int("group_size", group_size), ge=0)
    by_key: dict[str, list] = {}
    for point in sweep.points():
        by_key.setdefault(sweep.group_key_of(*point), []).append(point)
    out = []
    for members in by_key.values():
        size = group_size or len(members)
        out.extend(members[i : i + size] for i in range(0, len(members), size))
    return sorted(out, key=lambda g: g[0][0])


def parse_shard(shard: Any) -> tuple[int, int]:
    """(i, n) with 0 <= i < n (shards are numbered from 0) from a pair, or text "i/n" (--shard)."""
    text = isinstance(shard, str)
    try:
        i, n = map(int, shard.split("/")) if text else shard
    except (TypeError, ValueError):
        what = "--shard must look like i/n (e.g. 0/4)" if text else "shard must be a pair (i, n)"
        raise UserError(f"{what}, got {shard!r}") from None
    if not (is_int(i) and is_int(n)) or not 0 <= i < n:
        raise UserError(f"shard (i, n) needs integers with 0 <= i < n, got {shard!r}")
    return int(i), int(n)


def shard_groups(
    sweep: Sweep, shard: tuple[int, int] = (0, 1), group_size: int = 0, only: tuple = ()
):
    """Shard i of n: groups i, i+n, ... of `groups`, so every host computes the same list. `only`:
    run-id globs applied after dealing; a pattern no point matches is a UserError."""
    i, n = parse_shard(shard)
    mine = groups(sweep, group_size)[i::n]
    order = {run_id: k for k, (run_id, _) in enumerate(sweep.points())}
    for pattern in only:
        if not isinstance(pattern, str) or not any(fnmatchcase(r, pattern) for r in order):
            raise UserError(
                f"--only {pattern!r} matches no run id of sweep {sweep.name!r} "
                "(--dry-run lists them)"
            )
    if only:
        picked = {r for r in order if any(fnmatchcase(r, q) for q in only)}
        mine = [kept for g in mine if (kept := [p for p in g if p[0] in picked])]
    return sorted(mine, key=lambda g: order[g[0][0]])


def warn_empty_shard(
    sweep: Sweep, shard: tuple[int, int], group_size: int, mine: list, only: tuple = ()
) -> None:
    """A warning, even when quiet (a job array sized wrong), when shard i of n holds no group."""
    if not mine and only:
        print(
            f"warning: no run of shard {shard[0]}/{shard[1]} matches --only "
            f"{' '.join(only)}; nothing to do here",
            file=sys.stderr,
        )
    elif not mine:
        count = len(groups(sweep, group_size))
        print(
            f"warning: shard {shard[0]}/{shard[1]} is empty: the sweep has {count} group(s) of "
            f"runs, dealt round-robin to shards 0..{min(count, shard[1]) - 1}; nothing to do "
            f"here (use n <= {count} to give every shard work)",
            file=sys.stderr,
        )
