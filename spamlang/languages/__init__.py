"""The synthetic languages and their registry.

>>> from spamlang import languages
>>> languages.names()
['spam', 'zipf-spam', 'noisy-spam', 'cycle', 'permutation', 'branching']
>>> lang = languages.make("cycle", vocab_size=16, k=2)
>>> lang.params(), lang.prompt_len
({'vocab_size': 16, 'k': 2}, 2)

Every language is a frozen dataclass (see `base.Language` for the shared interface); `make`
validates parameters and `parse_params` turns `k=v` strings (CLI `--param`) into typed values.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable

from spamlang.errors import UserError
from spamlang.languages.base import MAX_VOCAB_SIZE, Language, field_types
from spamlang.languages.repeat import NoisySpam, Spam, ZipfSpam
from spamlang.languages.structured import Branching, Cycle, Permutation

__all__ = [
    "Language", "Spam", "ZipfSpam", "NoisySpam", "Cycle", "Permutation", "Branching",
    "MAX_VOCAB_SIZE", "names", "make", "language_class", "parse_params", "param_defaults",
]

_REGISTRY: dict[str, type[Language]] = {
    cls.name: cls for cls in (Spam, ZipfSpam, NoisySpam, Cycle, Permutation, Branching)
}


def names() -> list[str]:
    """Registered language names, in a fixed order."""
    return list(_REGISTRY)


def language_class(name: str) -> type[Language]:
    """The class registered as `name` (UserError listing the known names otherwise)."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise UserError(f"unknown language {name!r}; known: {', '.join(_REGISTRY)}") from None


def param_defaults(name: str) -> dict[str, Any]:
    """{parameter: default} for a language, vocab_size excluded (it has no default)."""
    return {f.name: f.default for f in dataclasses.fields(language_class(name))
            if f.default is not dataclasses.MISSING}


def make(name: str, **params: Any) -> Language:
    """Build language `name` with typed parameters; `vocab_size` is required.

    Unknown names, unknown or missing parameters and violated constraints raise UserError.
    """
    cls = language_class(name)
    known = field_types(cls)
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise UserError(f"{name}: unknown parameter {unknown[0]!r}; known: {', '.join(known)}")
    if "vocab_size" not in params:
        raise UserError(f"{name}: vocab_size is required")
    return cls(**params)


def parse_params(name: str, items: Iterable[str]) -> dict[str, Any]:
    """Parse `["k=v", ...]` strings into typed parameters of language `name` (for the CLI)."""
    types = field_types(language_class(name))
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UserError(f"malformed --param {item!r}; expected NAME=VALUE")
        if key not in types:
            raise UserError(f"{name}: unknown parameter {key!r}; known: {', '.join(types)}")
        kind = types[key]
        try:
            out[key] = kind(raw.strip())
        except ValueError:
            what = "an integer" if kind is int else "a number"
            raise UserError(f"{name}: parameter {key} expects {what}, got {raw!r}") from None
    return out
