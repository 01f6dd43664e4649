"""The synthetic languages and their registry; each is a frozen dataclass (`base.Language`).

>>> from spamlang import languages
>>> lang = languages.make("cycle", vocab_size=16, k=2)
>>> lang.params(), lang.prompt_len
({'vocab_size': 16, 'k': 2}, 2)
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Iterable
from typing import Any

from spamlang import fields
from spamlang.errors import UserError
from spamlang.notation import parse_setting

# name -> "module.Class", in names()' order; imported when built (they import JAX), not listed.
_REGISTRY = {
    "spam": "repeat.Spam",
    "zipf-spam": "repeat.ZipfSpam",
    "noisy-spam": "repeat.NoisySpam",
    "cycle": "structured.Cycle",
    "permutation": "structured.Permutation",
    "branching": "structured.Branching",
}
_EXPORTS = {
    "Language": "base",
    "MAX_VOCAB_SIZE": "base",
    **{where.partition(".")[2]: where.partition(".")[0] for where in _REGISTRY.values()},
}
__all__ = [*_EXPORTS, "names", "make", "language_class", "parse_params", "param_defaults"]


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"spamlang.languages.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'spamlang.languages' has no attribute {name!r}")


def names() -> list[str]:
    return list(_REGISTRY)


def language_class(name: str) -> type:
    """The class registered as `name` (UserError listing the known names otherwise)."""
    try:
        where = _REGISTRY[name]
    except (KeyError, TypeError):
        raise UserError(f"unknown language {name!r}; known: {', '.join(_REGISTRY)}") from None
    return __getattr__(where.partition(".")[2])


def param_defaults(name: str) -> dict[str, Any]:
    """{parameter: default} for a language, vocab_size excluded (it has no default)."""
    return {
        f.name: f.default
        for f in dataclasses.fields(language_class(name))
        if f.default is not dataclasses.MISSING
    }


def make(name: str, **params: Any):
    """Build language `name` (`vocab_size` required); UserError for anything wrong."""
    cls = language_class(name)
    known = fields.field_types(cls)
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise UserError(f"{name}: unknown parameter {unknown[0]!r}; known: {', '.join(known)}")
    if "vocab_size" not in params:
        raise UserError(f"{name}: vocab_size is required")
    return cls(**params)


def param_of(config: dict, name: str) -> Any:
    """A language parameter as a config.json saw it; None for a config this version cannot build."""
    params = config.get("language_params") or {}
    if name in params:
        return params[name]
    try:
        lang = make(config["language"], vocab_size=config["vocab_size"], **params)
        return lang.params().get(name)
    except Exception:  # an old or foreign config: the caller leaves the cell empty
        return None


def parse_params(name: str, items: Iterable[str]) -> dict[str, Any]:
    """`["k=v", ...]` as typed parameters of language `name` (for the CLI)."""
    types = fields.field_types(language_class(name))
    out: dict[str, Any] = {}
    for item in items:
        try:
            key, value = parse_setting(item)
        except ValueError:
            raise UserError(f"malformed --param {item!r}; expected NAME=VALUE") from None
        if key not in types:
            raise UserError(f"{name}: unknown parameter {key!r}; known: {', '.join(types)}")
        out[key] = fields.conform(key, value, types[key], owner=name)
    return out
