"""How counts, learning rates and NAME=VALUE settings are written, read and printed: once for
every place a user types or reads one (flags, JSON configs, sweep files, `plot --where`, figures,
samples). Every count a figure prints can be typed back: a suffix only where it is exact with
at most one decimal (100K, 1.5K, 2M), the digits otherwise (1024, 131072)."""

from __future__ import annotations

import contextlib
import json
import operator
from decimal import Decimal
from typing import Any

from spamlang.errors import UserError

SUFFIXES = {"K": 10**3, "M": 10**6, "B": 10**9}  # decimal, as in "41M tokens"
# A real quantity (FLOP/s, seconds) reads T too: 989T = 989e12 FLOP/s, as datasheets write it.
NUMBER_SUFFIXES = {**SUFFIXES, "T": 10**12}
NUMBER_TEXT = "a number such as 3e-3 or 989T (K/M/B/T = 1e3/1e6/1e9/1e12)"
# A vocabulary size counts in binary, as vocabularies are written: 32K = 32,768, 128K = 131,072.
BINARY_SUFFIXES = {"K": 2**10, "M": 2**20}
# Fields that count symbols: their K and M are binary (`parse_int(binary=True)`).
VOCAB_FIELDS = ("vocab_size",)
INT_TEXT = "an integer such as 4096 or 4K (K/M/B = 1e3/1e6/1e9)"  # parse_int's text, in words
VOCAB_TEXT = "an integer such as 4096 or 4K (K/M = 1,024 / 1,048,576: a vocabulary is binary)"
_MAX_DIGITS = 30  # no count has more; "1e999999" would build a million-digit int


def _read(text: Any, units: dict[str, int]) -> Decimal:
    """The number `text` writes, exactly: float syntax and a suffix of `units` ("4K", "1.5 m")."""
    body = text.strip() if isinstance(text, str) else ""
    unit = units.get(body[-1:].upper(), 1)
    body = body[:-1] if unit != 1 else body
    float(body)  # the syntax check: Decimal alone takes "1__0"
    try:
        return Decimal(body) * unit
    except ArithmeticError:  # beyond Decimal's range: "1e999999K"
        raise ValueError(f"{text!r} is too large") from None


def parse_int(text: str, binary: bool = False) -> int:
    """A whole number from text ("4K", "1e6"); `binary`: K, M are 1,024 and 1,048,576, no B."""
    try:
        number = _read(text, BINARY_SUFFIXES if binary else SUFFIXES)
    except ValueError:
        number = None
    if number is None or not number.is_finite() or number.adjusted() > _MAX_DIGITS or number % 1:
        raise ValueError(f"expected {VOCAB_TEXT if binary else INT_TEXT}, got {text!r}")
    return int(number)


def parse_number(text: str) -> float:
    """A real number from text ("989T", "3e-3"); inf and nan for the caller to refuse."""
    try:
        return float(_read(text, NUMBER_SUFFIXES))
    except ValueError:
        raise ValueError(f"expected {NUMBER_TEXT}, got {text!r}") from None


def parse_count(value: Any) -> int:
    """A token count >= 0 from an int, a whole float or text ("2M"); UserError otherwise."""
    try:
        if isinstance(value, str):
            count = parse_int(value)
        elif isinstance(value, float) and value.is_integer():
            count = int(value)
        elif isinstance(value, bool):
            raise TypeError
        else:
            count = operator.index(value)
    except (ValueError, TypeError):
        raise UserError(f"a token count must be {INT_TEXT}, got {value!r}") from None
    if count < 0:
        raise UserError(f"a token count must be >= 0, got {value!r}")
    return count


def format_count(value: Any, decimals: int = 1) -> str:
    """1000 -> '1K', 1500 -> '1.5K', 1024 -> '1024': a suffix only where exact to `decimals`."""
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
    """A learning rate as figures print it: 0.00025 -> '2.5e-4', 0.01 -> '1e-2'."""
    mantissa, exponent = f"{float(lr):.3e}".split("e")
    return f"{float(mantissa):g}e{int(exponent)}"


def parse_setting(text: str, raw: bool = False) -> tuple[str, Any]:
    """(NAME, VALUE) of "NAME=VALUE": VALUE JSON where it parses, else (or with `raw`) text."""
    name, sep, value = str(text).partition("=")
    name = name.strip()
    if not sep or not all(part.isidentifier() for part in name.split(".")):
        raise ValueError(f"expected NAME=VALUE, got {text!r}")
    if not raw:
        with contextlib.suppress(ValueError):
            value = json.loads(value)
    return name, value
