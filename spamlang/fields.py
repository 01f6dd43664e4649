"""One checker for the fields of every config (`TrainConfig`, `ModelConfig`, the languages,
`Sweep`) and of the plain arguments that take the same values: a value against its field's type
annotation and limits, refused in one shape, `[<owner>: ]<field> must be <what>, got <value!r>`
(the owner where the field alone does not say whose it is: "spam: vocab_size ...", "sweep
'paper': lr ..."). Plain Python (no JAX or NumPy import): building a config stays cheap."""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import numbers
import operator
import os
import types
import typing
from collections.abc import Collection
from typing import Any, NoReturn

from spamlang.errors import UserError
from spamlang.notation import VOCAB_FIELDS, parse_int, parse_number

_NONE = type(None)


def refuse(name: str, what: str, value: Any, owner: str = "") -> NoReturn:
    """Raise the one message shape: `[owner: ]name must be what, got value!r`."""
    raise UserError(f"{owner + ': ' if owner else ''}{name} must be {what}, got {value!r}")


def is_int(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def is_number(value: Any) -> bool:
    """A real number that is not a bool (inf and nan too: see `as_float`)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def finite(value: Any) -> float | None:
    """`value` as a finite float, else None."""
    return float(value) if is_number(value) and math.isfinite(value) else None


def positive_env(var: str, what: str) -> float | None:
    """The variable `var` as a positive finite number (989T), None when unset, else UserError."""
    text = os.environ.get(var, "").strip()
    if not text:
        return None
    value = finite(parse_number(text)) if _reads(parse_number, text) else None
    if value is None or value <= 0:
        raise UserError(f"{var} must be {what}, got {text!r}")
    return value


def as_int(name: str, value: Any, *, owner: str = "", whole_floats: bool = False) -> int:
    """An int: not a bool; a whole float with `whole_floats`; or text as flags read it ("4K")."""
    binary = name in VOCAB_FIELDS  # "32K" symbols are 32,768
    if isinstance(value, str) and not _reads(lambda t: parse_int(t, binary), value):
        refuse(
            name, "an integer" + (" (K = 1,024 in a vocabulary)" if binary else ""), value, owner
        )
    if not _accepts(value, int, whole_floats):
        refuse(name, "an integer", value, owner)
    return parse_int(value, binary) if isinstance(value, str) else int(value)


def as_float(name: str, value: Any, *, owner: str = "") -> float:
    """A finite float: an int too (`lr=1` is `lr=1.0`), or text holding one."""
    if not _accepts(value, float, False):
        refuse(name, "a number", value, owner)
    try:
        number = parse_number(value) if isinstance(value, str) else float(value)
    except OverflowError:  # an int beyond the float range
        number = math.inf
    if not math.isfinite(number):
        refuse(name, "finite", value, owner)
    return number


def one_of(name: str, value: Any, choices: Collection, *, owner: str = "") -> Any:
    if not _among(value, choices):
        refuse(name, f"one of {', '.join(map(str, choices))}", value, owner)
    return value


def in_range(
    name: str,
    value: Any,
    *,
    owner: str = "",
    ge: Any = None,
    gt: Any = None,
    le: Any = None,
    lt: Any = None,
    why: str = "",
) -> Any:
    """`value` if within the limits (nan never is), else refused naming the limit and `why`."""
    ok = (
        (ge is None or value >= ge)
        and (gt is None or value > gt)
        and (le is None or value <= le)
        and (lt is None or value < lt)
    )
    if not ok:
        low = f"[{ge}" if ge is not None else f"({gt}" if gt is not None else None
        high = f"{le}]" if le is not None else f"{lt})" if lt is not None else None
        if low and high:
            what = f"in {low}, {high}"
        elif low:
            what = f">= {ge}" if ge is not None else f"> {gt}"
        else:
            what = f"<= {le}" if le is not None else f"< {lt}"
        refuse(name, f"{what} ({why})" if why else what, value, owner)
    return value


def _among(value: Any, choices: Collection) -> bool:  # `in`, but a bool never equals 0 or 1
    return any(value == c and isinstance(value, bool) == isinstance(c, bool) for c in choices)


def conform(name: str, value: Any, tp: Any, *, owner: str = "", whole_floats: bool = False) -> Any:
    """`value` checked against `tp`, stored canonically (an int for a float field as a float)."""
    if not _accepts(value, tp, whole_floats):
        refuse(name, kind_words(tp), value, owner)
    if typing.get_origin(tp) in (typing.Union, types.UnionType):  # the first member that fits
        tp = next(arg for arg in typing.get_args(tp) if _accepts(value, arg, whole_floats))
    if tp is int:
        return as_int(name, value, owner=owner, whole_floats=whole_floats)
    if tp is float:
        return as_float(name, value, owner=owner)
    return dict(value) if tp is dict or typing.get_origin(tp) is dict else value


def kind_words(tp: Any) -> str:
    """A type annotation in the words of a message: "an integer", "a string or null", ..."""
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        return " or ".join(kind_words(arg) for arg in typing.get_args(tp))
    if origin is typing.Literal:
        return f"one of {', '.join(map(str, typing.get_args(tp)))}"
    words = {
        int: "an integer",
        float: "a number",
        bool: "true or false",
        str: "a string",
        dict: "a mapping of names to values",
        list: "a list",
        tuple: "a list",
        _NONE: "null",
    }
    base = origin or tp
    return words[base] if base in words else f"a {getattr(base, '__name__', str(base))}"


def _accepts(value: Any, tp: Any, whole_floats: bool) -> bool:
    """Whether `value` has the kind `tp` names: a bool is never 0 or 1, a dict has string keys."""
    if tp is Any or tp is object:
        return True
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        return any(_accepts(value, arg, whole_floats) for arg in typing.get_args(tp))
    if origin is typing.Literal:
        return _among(value, typing.get_args(tp))
    if tp is _NONE or tp is None:
        return value is None
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return (
            is_int(value)
            or (whole_floats and isinstance(value, float) and value.is_integer())
            or (isinstance(value, str) and _reads(parse_int, value))
        )
    if tp is float:
        return is_number(value) or (isinstance(value, str) and _reads(parse_number, value))
    if tp is dict or origin is dict:
        return isinstance(value, dict) and all(isinstance(k, str) for k in value)
    if tp in (list, tuple) or origin in (list, tuple):
        return isinstance(value, (list, tuple))
    base = origin or tp
    return isinstance(value, base) if isinstance(base, type) else True


def _reads(parse, text: str) -> bool:
    try:
        parse(text)
    except ValueError:
        return False
    return True


def check(
    name: str, value: Any, tp: Any, *, owner="", whole_floats=False, choices=None, **limits
) -> Any:
    """One field: its kind, then `choices` and `in_range`'s `limits`, skipped for None."""
    value = conform(name, value, tp, owner=owner, whole_floats=whole_floats)
    if value is None:
        return None
    if choices is not None:
        one_of(name, value, choices, owner=owner)
    return in_range(name, value, owner=owner, **limits)


def check_dataclass(
    obj: Any, *, owner: str = "", limits: dict[str, dict] | None = None, whole_floats: bool = False
) -> None:
    """Check and store back every field of `obj` (`limits[name]` or `metadata["check"]`)."""
    hints = field_types(type(obj))
    limits = limits or {}
    for f in dataclasses.fields(obj):
        value = check(
            f.name,
            getattr(obj, f.name),
            hints[f.name],
            owner=owner,
            whole_floats=whole_floats,
            **limits.get(f.name, f.metadata.get("check", {})),
        )
        object.__setattr__(obj, f.name, value)


@functools.cache
def field_types(cls: type) -> dict[str, Any]:
    """{field name: resolved annotation} of a dataclass, in field order."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints.get(f.name, Any) for f in dataclasses.fields(cls)}


def tagged(cls: Any, key: str) -> dict[str, Any]:
    """{field name: metadata[key]} of the fields of dataclass `cls` that set `key`, in order."""
    return {f.name: f.metadata[key] for f in dataclasses.fields(cls) if key in f.metadata}


def closest(name: str, known: Collection[str], aliases: dict | None = None) -> str | None:
    """What `name` most likely means, for "did you mean": its alias, else the closest spelling."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return (aliases or {}).get(name) or (close[0] if close else None)
