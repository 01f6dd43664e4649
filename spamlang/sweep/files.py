"""A sweep from a file, and the command line's variants of one: `load_sweep_file` reads a
sweeps/*.py script (defining SWEEP, optionally PLOTS and SAMPLES) or a JSON description;
`with_overrides` (`--set`) and `at_seq_len` (`--seq-len`) make a variant of a sweep that runs in
a directory of its own. The command line itself is `spamlang.cli.sweep_cmd`."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import typing
from pathlib import Path
from typing import Any

from spamlang.errors import UserError, describe, first_line
from spamlang.notation import parse_setting
from spamlang.rundir.reading import read_named_json
from spamlang.sweep.spec import Sweep, axis_type, build_point, check_value, fields_of, id_part


def with_overrides(sweep: Sweep, texts: list[str] | tuple = ()) -> Sweep:
    """`sweep` with each `--set` "FIELD=VALUE" set in its base, under a name of its own."""
    if not texts:
        return sweep
    on_axes = {name for axis in sweep.axes for name in fields_of(axis)}
    changes: dict[str, Any] = {}
    for text in texts:
        try:
            name, raw = parse_setting(text, raw=True)
        except ValueError:
            raise UserError(
                f"--set must look like FIELD=VALUE (e.g. tokens=200K), got {text!r}"
            ) from None
        if name in changes:
            raise UserError(f"--set {name} is given twice")
        try:
            tp = axis_type(sweep.base, name)
        except UserError as e:  # in the words of --set, which names fields
            words = str(e).replace("unknown axis", "unknown field").replace("axis '", "field '")
            raise UserError(f"--set {text}: {words}") from None
        if name in on_axes:
            raise UserError(
                f"--set {text}: {name} is an axis of sweep {sweep.name!r}, which sets it for "
                "every point; --set changes the fields the axes leave to the base"
            )
        if not (tp is str or str in typing.get_args(tp)):
            raw = parse_setting(text)[1]  # a count such as 200K stays text, checked below
        try:
            changes[name] = check_value(sweep.base, name, raw)
        except ValueError as e:
            raise UserError(f"--set {text}: {str(e).splitlines()[0]}") from None
    try:
        base = build_point(sweep.base, changes)
    except (ValueError, TypeError) as e:
        said = " ".join(f"--set {t}" for t in texts)
        raise UserError(f"{said}: {first_line(e) or type(e).__name__}") from None
    name = "-".join([sweep.name, *(id_part(k, v) for k, v in changes.items())])
    return dataclasses.replace(
        sweep, name=name, base=base, overrides={**sweep.overrides, **changes}
    )


def _budget(tokens: int, batch_size: int, old_len: int, new_len: int) -> int:  # same steps
    return tokens // (batch_size * old_len) * batch_size * new_len


def at_seq_len(sweep: Sweep, seq_len: int) -> Sweep:
    """`sweep` at `seq_len`, same batches and steps, as `<name>-L<seq_len>`: with RoPE a SpamLang
    sequence has one hidden state at every position, so L only multiplies the compute. Refused
    where positions differ or seq_len is an axis."""
    if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len < 2:
        raise UserError(f"--seq-len must be an integer >= 2, got {seq_len!r}")
    fields = [n for axis in sweep.axes for n in fields_of(axis)]
    if "seq_len" in fields:
        raise UserError(
            f"sweep {sweep.name!r} varies seq_len itself; --seq-len would erase that axis"
        )
    for run_id, config in sweep.points():
        if not config.make_language().position_invariant:
            raise UserError(
                f"--seq-len: run {run_id} trains on {config.language!r}, whose "
                "positions differ (context matters), so its length changes the "
                "run; only position-invariant languages (spam, zipf-spam) can"
            )
    base = sweep.base
    old = base.seq_len

    def scaled(axis: str, value: Any) -> Any:
        names = fields_of(axis)
        if "tokens" not in names:
            return value
        v = dict(zip(names, value if len(names) > 1 else [value]))
        v["tokens"] = _budget(v["tokens"], v.get("batch_size", base.batch_size), old, seq_len)
        return list(v.values()) if len(names) > 1 else v["tokens"]

    short = dataclasses.replace(
        sweep,
        name=f"{sweep.name}-L{seq_len}",
        base=base.replace(
            seq_len=seq_len, tokens=_budget(base.tokens, base.batch_size, old, seq_len)
        ),
        axes={axis: [scaled(axis, v) for v in values] for axis, values in sweep.axes.items()},
        grown={},
    )
    for (run_id, a), (_, b) in zip(sweep.points(), short.points()):
        if (a.steps, a.batch_size) != (b.steps, b.batch_size):
            # One budget over several batch sizes that do not divide it evenly.
            raise UserError(
                f"--seq-len: run {run_id} would change from {a.steps} to {b.steps} "
                "steps; give each batch size its own tokens (a linked axis)"
            )
    return short


def load_sweep_file(path: str | os.PathLike) -> tuple[Sweep, bool, tuple]:
    """(sweep, plots default, sample cells) of a .py file (SWEEP, optionally PLOTS and SAMPLES) or a
    .json one; any problem is a UserError naming the file."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"no such sweep file: {path}")
    if path.suffix == ".py":
        return _load_py(path)
    if path.suffix == ".json":
        return _load_json(path), False, ()
    raise UserError(f"{path}: a sweep file must be a .py (defining SWEEP) or a .json file")


def _load_py(path: Path) -> tuple[Sweep, bool, tuple]:
    name = f"_spamlang_sweep_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UserError(f"{path}: cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except UserError as e:
        raise UserError(f"{path}: {str(e).splitlines()[0]}") from None
    except SyntaxError as e:
        raise UserError(f"{path}:{e.lineno}: SyntaxError: {e.msg}") from None
    except Exception as e:  # the file's own bug: report it in one line, like any bad input
        raise UserError(f"{path}: {describe(e)}") from None
    except SystemExit as e:
        # Whatever the status, nothing was swept: a quiet exit 0 would read as success.
        raise UserError(
            f"{path} called sys.exit({e.code!r}) while being loaded; a sweep file "
            "defines SWEEP and runs nothing on import (put `main(SWEEP)` under "
            '`if __name__ == "__main__":`)'
        ) from None
    sweep = getattr(module, "SWEEP", None)
    if not isinstance(sweep, Sweep):
        what = (
            "does not define SWEEP"
            if sweep is None
            else f"defines SWEEP as a {type(sweep).__name__}, not a spamlang.sweep.Sweep"
        )
        raise UserError(f"{path} {what}")
    samples = getattr(module, "SAMPLES", ())
    if not isinstance(samples, (list, tuple)) or not all(isinstance(c, dict) for c in samples):
        raise UserError(f"{path}: SAMPLES must be a list of {{setting: value}} dicts")
    return sweep, bool(getattr(module, "PLOTS", False)), tuple(samples)


def _load_json(path: Path) -> Sweep:
    from spamlang.train.config import TrainConfig

    data = read_named_json(path)
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a JSON object with name, base and axes")
    # grown, set and axis_order: what a sweep directory's own sweep.json adds, so it loads too.
    known = {"name", "base", "axes", "bracket_lr", "grown", "set", "axis_order"}
    unknown, missing = set(data) - known, {"name", "axes"} - set(data)
    pairs = (("unknown", unknown), ("missing", missing))
    wrong = [f"{what} key(s) {', '.join(sorted(keys))}" for what, keys in pairs if keys]
    if wrong:
        expected = "(expected name, base, axes, optionally bracket_lr)"
        raise UserError(f"{path}: {'; '.join(wrong)} {expected}")
    base = data.get("base", {})
    if not isinstance(base, dict):
        raise UserError(f"{path}: base must be an object of TrainConfig fields")
    order = data.get("axis_order")
    if (
        isinstance(data["axes"], dict)
        and isinstance(order, list)
        and sorted(map(str, order)) == sorted(data["axes"])
    ):
        # A sweep directory's sweep.json (sorted keys): the axes in the order its runs use.
        data["axes"] = {axis: data["axes"][axis] for axis in order}
    try:
        return Sweep(
            data["name"],
            TrainConfig.from_json(base),
            data["axes"],
            bracket_lr=data.get("bracket_lr", 0),
            grown=data.get("grown") or {},
            overrides=data.get("set") or {},
        )
    except (ValueError, TypeError) as e:
        raise UserError(f"{path}: {first_line(e) or type(e).__name__}") from None
