"""One checker for the fields of every config: `TrainConfig`, `ModelConfig`, the languages and
`Sweep` (and the plain arguments that take the same kinds of values).

A field is checked against its type annotation and, where it has one, a limit; a value that
fails is refused with one `UserError` line of one shape everywhere:

    [<owner>: ]<field> must be <what>, got <value!r>

- <owner> is set where the field name alone does not say whose it is: a language's parameters
  ("spam: vocab_size must be ..."), a sweep's axes ("sweep 'paper': lr must be ..."). Fields of
  `TrainConfig` and `ModelConfig` are named alone, as their command-line flags are.
- <what> is the kind when the type is wrong ("an integer", "a number", "true or false",
  "a string", "an integer or null", "one of a, b"), "finite" for inf or nan, and the limit when
  the value is out of range (">= 1", "> 0", "in [0, 1)", "in (0, 1]").

The rules, the same for every owner:
- int: an integer that is not a bool (NumPy integers included), stored as a Python int;
  with `whole_floats` a whole float (16.0) is accepted too (TrainConfig's JSON does). A string
  is read by `parse_int` ("4096", "4K", "1.5M"), so a JSON config, a sweep file and a flag
  take the same text.
- float: a real number that is not a bool, stored as a finite Python float, so an int is fine
  (`lr=1` and `lr=1.0` are the same config, fingerprint and run id); a string holding a
  number ("3e-3") is read as that number.
- bool: True or False, not 0 or 1. str: a string. dict: a mapping with string keys (copied).
  list: a list or tuple. `X | None`: null or an X. `Literal[...]`: one of its values. `Any`.

How counts are written, read and printed is decided here too, once for every place a user
types or reads one (flags, JSON configs, sweep files, `plot --where`, figures, samples):
K, M and B are decimal (1K = 1,000, 2M = 2,000,000, as in "41M tokens"); `format_count`
prints a suffix only where it is exact with at most one decimal (100K, 1.5K, 2M) and the
digits otherwise (1024, 131072), so that every count a figure shows can be typed back.
Learning rates print as `format_lr` does (3e-2, 2.5e-4).

Plain Python (no JAX or NumPy import): building a config stays cheap.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import operator
import re
import types
import typing
from collections.abc import Collection
from decimal import Decimal
from typing import Any, NoReturn

from spamlang.errors import UserError

_NONE = type(None)
SUFFIXES = {"K": 10**3, "M": 10**6, "B": 10**9}  # decimal, as in "41M tokens"
INT_TEXT = "an integer such as 4096 or 4K (K/M/B = 1e3/1e6/1e9)"  # parse_int's text, in words
_INT_RE = re.compile(r"\s*([+-]?[0-9][0-9_]*(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)\s*([kKmMbB]?)\s*")
_MAX_DIGITS = 30  # no count has more; "1e999999" would build a million-digit int


# ----- numbers as text ------------------------------------------------------------------------
def parse_int(text: str) -> int:
    """An integer from text: digits (with "_" between them), optionally a decimal part or an
    exponent, and a K / M / B suffix; the value must be whole. "4096", "4K" (4,000), "1.5M",
    "1_048_576", "1e6", "-3". ValueError otherwise (`INT_TEXT` says what is expected)."""
    m = _INT_RE.fullmatch(text) if isinstance(text, str) else None
    if m is None or "__" in m.group(1) or m.group(1).endswith("_"):
        raise ValueError(f"expected {INT_TEXT}, got {text!r}")
    number = Decimal(m.group(1).replace("_", "")) * SUFFIXES.get(m.group(2).upper(), 1)
    if number.adjusted() > _MAX_DIGITS:
        raise ValueError(f"{text!r} is too large")
    if number != number.to_integral_value():
        raise ValueError(f"{text!r} is not a whole number")
    return int(number)


def parse_float(text: str) -> float:
    """A float from text ("3e-3", "0.1", "1_000.5"); ValueError otherwise. Finiteness is the
    caller's check (`as_float` names it)."""
    if not isinstance(text, str):
        raise ValueError(f"expected a number, got {text!r}")
    return float(text)


def format_count(value: Any, decimals: int = 1) -> str:
    """A count as figures and summaries print it (module docstring): 1000 -> '1K', 1500 ->
    '1.5K', 100000 -> '100K', 2000000 -> '2M', 1024 -> '1024', 64 -> '64'; a number that is
    not whole as '%g'. A suffix is used where it is exact with at most `decimals` decimals
    (tick labels of a tokens axis allow more: 1250 -> '1.25K' beside 1K and 1.5K).
    `parse_int` reads every result back to the same value."""
    if isinstance(value, float) and not value.is_integer():
        return f"{value:g}"
    n = int(value)
    sign, n = ("-" if n < 0 else ""), abs(n)
    scale = 10**decimals
    for suffix, unit in sorted(SUFFIXES.items(), key=lambda item: -item[1]):
        scaled, rest = divmod(scale * n, unit)
        if n >= unit and rest == 0:
            whole, fraction = divmod(scaled, scale)
            fraction = f".{fraction:0{decimals}d}".rstrip("0") if fraction else ""
            return f"{sign}{whole}{fraction}{suffix}"
    return f"{sign}{n}"


def format_lr(lr: float) -> str:
    """A learning rate as every figure, legend and caption prints it: 5e-4 -> '5e-4',
    0.00025 -> '2.5e-4', 0.01 -> '1e-2' (3 significant digits)."""
    mantissa, exponent = f"{float(lr):.3e}".split("e")
    return f"{float(mantissa):g}e{int(exponent)}"


def parse_count(value: Any) -> int:
    """A token count from an int or a string with an optional K / M / B suffix.

    Suffixes are decimal (K = 1e3, M = 1e6, B = 1e9), as in "41M tokens" in papers, and the
    text is read by `parse_int`, the one reader of every integer flag and field:
    parse_count("2M") == 2_000_000, parse_count("1.5K") == 1500, parse_count("1_048_576") == 1048576.
    The result must be a whole, non-negative number (UserError otherwise).
    """
    if is_int(value):
        count = int(value)
    elif isinstance(value, float) and value.is_integer():
        count = int(value)
    elif isinstance(value, str):
        try:
            count = parse_int(value)
        except ValueError:
            raise UserError(f"a token count must be {INT_TEXT}, got {value!r}") from None
    else:
        raise UserError(f"a token count must be {INT_TEXT}, got {value!r}")
    if count < 0:
        raise UserError(f"a token count must be >= 0, got {value!r}")
    return count


# ----- the message ----------------------------------------------------------------------------
def label(name: str, owner: str = "") -> str:
    """How a field is named in a message: `name`, or `owner: name`."""
    return f"{owner}: {name}" if owner else name


def refuse(name: str, what: str, value: Any, owner: str = "") -> NoReturn:
    """Raise the one message shape: `[owner: ]name must be what, got value!r`."""
    raise UserError(f"{label(name, owner)} must be {what}, got {value!r}")


def limit_text(*, ge: Any = None, gt: Any = None, le: Any = None, lt: Any = None) -> str:
    """A limit in words: ">= 1", "> 0", "<= 8", "in [0, 1)", "in (0, 1]"."""
    low = f"[{ge}" if ge is not None else f"({gt}" if gt is not None else None
    high = f"{le}]" if le is not None else f"{lt})" if lt is not None else None
    if low and high:
        return f"in {low}, {high}"
    if low:
        return f">= {ge}" if ge is not None else f"> {gt}"
    if high:
        return f"<= {le}" if le is not None else f"< {lt}"
    return "anything"


# ----- predicates -----------------------------------------------------------------------------
def is_int(value: Any) -> bool:
    """An integer that is not a bool (Python or NumPy)."""
    if isinstance(value, bool):
        return False
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def is_number(value: Any) -> bool:
    """A real number that is not a bool (an int counts; inf and nan too: see `as_float`)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def finite(value: Any) -> float | None:
    """`value` as a finite float, else None (None, a bool, text, inf and nan among them)."""
    return float(value) if is_number(value) and math.isfinite(value) else None


# ----- one value of one kind ------------------------------------------------------------------
def as_int(name: str, value: Any, *, owner: str = "", whole_floats: bool = False) -> int:
    """`value` as an int, a string read by `parse_int` ("4K"); a bool, other text or a
    fraction is refused ("must be an integer")."""
    if isinstance(value, str):
        try:
            return parse_int(value)
        except ValueError:
            refuse(name, "an integer", value, owner)
    if is_int(value):
        return operator.index(value)
    if whole_floats and isinstance(value, float) and value.is_integer():
        return int(value)
    refuse(name, "an integer", value, owner)


def as_float(name: str, value: Any, *, owner: str = "") -> float:
    """`value` as a finite float; an int or a string holding a number ("3e-3") is fine, a bool
    or other text is not."""
    given = value  # what the message quotes: the text as written, not its number
    if isinstance(value, str):
        try:
            value = parse_float(value)
        except ValueError:
            refuse(name, "a number", given, owner)
    if not is_number(value):
        refuse(name, "a number", given, owner)
    try:
        number = float(value)
    except OverflowError:  # an int beyond the float range
        number = math.inf
    if not math.isfinite(number):
        refuse(name, "finite", given, owner)
    return number


def as_bool(name: str, value: Any, *, owner: str = "") -> bool:
    if not isinstance(value, bool):
        refuse(name, "true or false", value, owner)
    return value


def as_str(name: str, value: Any, *, owner: str = "") -> str:
    if not isinstance(value, str):
        refuse(name, "a string", value, owner)
    return value


def one_of(name: str, value: Any, choices: Collection, *, owner: str = "") -> Any:
    """`value` if it is one of `choices` ("must be one of a, b, c" otherwise)."""
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
    """`value` if it lies within the limits (nan never does); the limit named otherwise.
    `why`, if given, follows the limit in parentheses."""
    ok = (
        (ge is None or value >= ge)
        and (gt is None or value > gt)
        and (le is None or value <= le)
        and (lt is None or value < lt)
    )
    if not ok:
        what = limit_text(ge=ge, gt=gt, le=le, lt=lt)
        refuse(name, f"{what} ({why})" if why else what, value, owner)
    return value


def _among(value: Any, choices: Collection) -> bool:
    """`value in choices`, except that a bool never equals 0 or 1 here."""
    return any(value == c and isinstance(value, bool) == isinstance(c, bool) for c in choices)


# ----- a value against a type annotation ------------------------------------------------------
def conform(name: str, value: Any, tp: Any, *, owner: str = "", whole_floats: bool = False) -> Any:
    """`value` checked against the annotation `tp` and stored canonically (an int for a float
    field becomes a float; a dict is copied). Refused with the kind in words otherwise."""
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        args = typing.get_args(tp)
        if value is None and _NONE in args:
            return None
        for arg in args:
            if arg is not _NONE and _accepts(value, arg, whole_floats):
                return conform(name, value, arg, owner=owner, whole_floats=whole_floats)
        refuse(name, kind_words(tp), value, owner)
    if not _accepts(value, tp, whole_floats):
        refuse(name, kind_words(tp), value, owner)
    if tp is int:
        return as_int(name, value, owner=owner, whole_floats=whole_floats)
    if tp is float:
        return as_float(name, value, owner=owner)
    if tp is dict or origin is dict:
        return dict(value)
    return value


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
    if base in words:
        return words[base]
    return f"a {getattr(base, '__name__', str(base))}"


def _accepts(value: Any, tp: Any, whole_floats: bool) -> bool:
    """Whether `value` has the kind `tp` names (limits and finiteness come after)."""
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
        return is_number(value) or (isinstance(value, str) and _reads(parse_float, value))
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


# ----- a whole field --------------------------------------------------------------------------
def check(
    name: str,
    value: Any,
    tp: Any,
    *,
    owner: str = "",
    whole_floats: bool = False,
    choices: Collection | None = None,
    ge: Any = None,
    gt: Any = None,
    le: Any = None,
    lt: Any = None,
    why: str = "",
) -> Any:
    """One field: its kind (`conform`), then its choices and limits (skipped for None)."""
    value = conform(name, value, tp, owner=owner, whole_floats=whole_floats)
    if value is None:
        return None
    if choices is not None:
        one_of(name, value, choices, owner=owner)
    return in_range(name, value, owner=owner, ge=ge, gt=gt, le=le, lt=lt, why=why)


def check_dataclass(
    obj: Any, *, owner: str = "", limits: dict[str, dict] | None = None, whole_floats: bool = False
) -> None:
    """Check every field of the (frozen) dataclass `obj` against its annotation and
    `limits[name]` (keyword arguments of `check`: choices, ge, gt, le, lt, why), in field
    order, and store each canonical value back. Checks that relate fields stay with `obj`."""
    hints = field_types(type(obj))
    limits = limits or {}
    for f in dataclasses.fields(obj):
        value = check(
            f.name,
            getattr(obj, f.name),
            hints[f.name],
            owner=owner,
            whole_floats=whole_floats,
            **limits.get(f.name, {}),
        )
        object.__setattr__(obj, f.name, value)


@functools.cache
def field_types(cls: type) -> dict[str, Any]:
    """{field name: resolved annotation} of a dataclass, in field order (cached per class)."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints.get(f.name, Any) for f in dataclasses.fields(cls)}
