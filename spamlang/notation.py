"""How counts and learning rates are written, read and printed: once for every place a user types
or reads one (flags, JSON configs, sweep files, `plot --where`, figures, samples).

K, M and B are decimal (1K = 1,000, 2M = 2,000,000, as in "41M tokens"), except in a vocabulary
size, which is counted in binary as vocabularies are written (32K = 32,768, 128K = 131,072;
`VOCAB_FIELDS`); `format_count` prints
a suffix only where it is exact with at most one decimal (100K, 1.5K, 2M) and the digits
otherwise (1024, 131072), so that every count a figure shows can be typed back. Learning rates
print as `format_lr` does (3e-2, 2.5e-4). Checking values is `spamlang.fields`' concern.
"""

from __future__ import annotations

import operator
import re
from decimal import Decimal
from typing import Any

from spamlang.errors import UserError

SUFFIXES = {"K": 10**3, "M": 10**6, "B": 10**9}  # decimal, as in "41M tokens"
# A real quantity (FLOP/s, seconds) reads T too: 989T = 989e12 FLOP/s, as datasheets write it.
NUMBER_SUFFIXES = {**SUFFIXES, "T": 10**12}
NUMBER_TEXT = "a number such as 989e12 or 989T (K/M/B/T = 1e3/1e6/1e9/1e12)"
BINARY_SUFFIXES = {"K": 2**10, "M": 2**20}  # a vocabulary: 32K = 32,768, as V is written
# Fields that count symbols: their K and M are binary (`parse_int(binary=True)`).
VOCAB_FIELDS = ("vocab_size",)
INT_TEXT = "an integer such as 4096 or 4K (K/M/B = 1e3/1e6/1e9)"  # parse_int's text, in words
VOCAB_TEXT = "an integer such as 4096 or 4K (K/M = 1,024 / 1,048,576: a vocabulary is binary)"
_INT_RE = re.compile(r"\s*([+-]?[0-9][0-9_]*(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)\s*([kKmMbB]?)\s*")
_MAX_DIGITS = 30  # no count has more; "1e999999" would build a million-digit int


def parse_int(text: str, binary: bool = False) -> int:
    """An integer from text: digits (with "_" between them), optionally a decimal part or an
    exponent, and a K / M / B suffix; the value must be whole. "4096", "4K" (4,000), "1.5M",
    "1_048_576", "1e6", "-3". `binary` (a vocabulary size): K and M are 1,024 and 1,048,576
    ("4K" = 4,096) and B is refused. ValueError otherwise (`INT_TEXT` / `VOCAB_TEXT`)."""
    units = BINARY_SUFFIXES if binary else SUFFIXES
    m = _INT_RE.fullmatch(text) if isinstance(text, str) else None
    if (
        m is None
        or "__" in m.group(1)
        or m.group(1).endswith("_")
        or (m.group(2) and m.group(2).upper() not in units)
    ):
        raise ValueError(f"expected {VOCAB_TEXT if binary else INT_TEXT}, got {text!r}")
    number = Decimal(m.group(1).replace("_", "")) * units.get(m.group(2).upper(), 1)
    if number.adjusted() > _MAX_DIGITS:
        raise ValueError(f"{text!r} is too large")
    if number != number.to_integral_value():
        raise ValueError(f"{text!r} is not a whole number")
    return int(number)


def parse_number(text: str) -> float:
    """A real number from text, optionally with a K / M / B / T suffix (NUMBER_SUFFIXES,
    decimal): "989T" == 989e12, "1.5K" == 1500.0, "3e-3". ValueError otherwise
    (`NUMBER_TEXT`); inf and nan are numbers here, for the caller to refuse."""
    text = text.strip() if isinstance(text, str) else text
    if not isinstance(text, str) or not text:
        raise ValueError(f"expected {NUMBER_TEXT}, got {text!r}")
    scale = NUMBER_SUFFIXES.get(text[-1].upper()) if text[-1].isalpha() else None
    body = text[:-1].rstrip() if scale else text
    try:
        value = float(body)
    except ValueError:
        raise ValueError(f"expected {NUMBER_TEXT}, got {text!r}") from None
    return value * scale if scale else value


def parse_count(value: Any) -> int:
    """A token count, >= 0, from an int, a whole float or text read by `parse_int`:
    parse_count("2M") == 2_000_000, parse_count("1.5K") == 1500. UserError otherwise."""
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
    """A count as figures and summaries print it: 1000 -> '1K', 1500 -> '1.5K', 2000000 -> '2M',
    1024 -> '1024'; a number that is not whole as '%g'. A suffix is used where it is exact with
    at most `decimals` decimals (tick labels of a tokens axis allow more: 1250 -> '1.25K')."""
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
