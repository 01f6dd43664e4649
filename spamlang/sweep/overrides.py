"""`--set FIELD=VALUE`: a sweep's base changed for one invocation, in a directory of its own.

FIELD is what an axis may name (a TrainConfig field, `model.<field>`, `param.<name>`), but not
a field the sweep's axes set. VALUE is read as `spamlang train --param` reads one: JSON where it
parses (numbers, true/false, null), else the text ("200K", "lowrank:8"); a string field keeps
the text as typed. Both are checked as an axis value would be.

A sweep directory holds one base config (`spamlang.sweep.sweep_file`), so the changed sweep is
named `<name>-<one run-id piece per field>` (`--set tokens=200K`: `cpu_demo-tok200K`), whose
default directory is runs/<that name>: a variant never mixes with the original's runs, and a
later invocation without --set on it (or with it on the original's) is refused, naming the
fields and the --set. Its sweep.json records the --set fields ("set").
"""

from __future__ import annotations

import json
import typing
from typing import Any

from spamlang.errors import UserError
from spamlang.sweep.spec import Sweep, axis_type, build_point, check_value, fields_of, id_part

SET_HELP = (
    "change a field of the sweep's base for this invocation (repeatable): a run field "
    "(tokens=200K, batch_size=64), model.<field> (model.d_model=32) or "
    "param.<language parameter>, not one the axes set. The sweep is then named "
    "<name>-<field><value> (default dir runs/<name>-tok200K for tokens=200K), so it never "
    "mixes with the original's runs, and its sweep.json records the --set. This is how "
    "to train a larger budget: a finished run cannot be extended"
)


def _is_text(tp: Any) -> bool:
    """A field of type str or str | None: its value is the text as typed."""
    return tp is str or str in typing.get_args(tp)


def _read(raw: str, tp: Any) -> Any:
    if _is_text(tp):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw  # a count such as 200K, read by the field's check


def _field_words(message: str) -> str:
    """An axis lookup's message in the words of --set, which names fields."""
    return message.replace("unknown axis", "unknown field").replace("axis '", "field '")


def with_overrides(sweep: Sweep, texts: list[str] | tuple = ()) -> Sweep:
    """`sweep` with each "FIELD=VALUE" of `texts` set in its base, renamed (module doc);
    `sweep` itself when there are none. UserError naming the --set for anything bad."""
    if not texts:
        return sweep
    on_axes = {name for axis in sweep.axes for name in fields_of(axis)}
    changes: dict[str, Any] = {}
    for text in texts:
        name, sep, raw = str(text).partition("=")
        name = name.strip()
        if not sep or not name:
            raise UserError(f"--set must look like FIELD=VALUE (e.g. tokens=200K), got {text!r}")
        if name in changes:
            raise UserError(f"--set {name} is given twice")
        try:
            tp = axis_type(sweep.base, name)
        except UserError as e:
            raise UserError(f"--set {text}: {_field_words(str(e))}") from None
        if name in on_axes:
            raise UserError(
                f"--set {text}: {name} is an axis of sweep {sweep.name!r}, which "
                "sets it for every point; --set changes the fields the axes leave "
                "to the base"
            )
        try:
            changes[name] = check_value(sweep.base, name, _read(raw, tp))
        except ValueError as e:
            raise UserError(f"--set {text}: {str(e).splitlines()[0]}") from None
    try:
        base = build_point(sweep.base, changes)
    except (ValueError, TypeError) as e:
        said = " ".join(f"--set {t}" for t in texts)
        raise UserError(
            f"{said}: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
        ) from None
    name = "-".join([sweep.name, *(id_part(k, v) for k, v in changes.items())])
    return Sweep(
        name,
        base,
        sweep.axes,
        bracket_lr=sweep.bracket_lr,
        grown=sweep.grown,
        overrides={**sweep.overrides, **changes},
    )
