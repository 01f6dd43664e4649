"""The `Language` base class: parameter checks, fixed tables, identity (params, fingerprint).

A language is a frozen dataclass whose fields are its parameters (`vocab_size` first); its
sampler is a pure function of a JAX key with static shapes, so it jits, vmaps and shards. Fixed
tables (a permutation, a bigram graph, a CDF) are built once per instance (`_table`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import zlib
from collections.abc import Callable
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from spamlang import fields
from spamlang.errors import UserError

# Tokens are int32 and the branching sampler adds two ids below V, so 2V must fit in int32.
MAX_VOCAB_SIZE = 2**30


@dataclasses.dataclass(frozen=True)
class Language:
    """Base class of every language. No BOS token: position 0 is never predicted; losses average
    over positions 1..L-1. An impossible continuation has `bayes_logprob == -inf` exactly."""

    vocab_size: int  # number of symbols; token ids are 0..vocab_size-1

    name: ClassVar[str] = ""  # registry name, what users type
    summary: ClassVar[str] = ""  # one line: what the language tests
    loss_formula: ClassVar[str] = ""  # optimal_loss(L) in words, for `spamlang languages`
    # One token repeated: under RoPE every position has one hidden state, whatever seq_len.
    position_invariant: ClassVar[bool] = False

    def __post_init__(self):
        # An int for a float parameter is stored as a float: `s=1` and `s=1.0` fingerprint alike.
        fields.check_dataclass(
            self, owner=self.name, limits={"vocab_size": dict(ge=2, le=MAX_VOCAB_SIZE)}
        )
        self._check()

    def _check(self) -> None:
        """Subclass hook: raise UserError naming the violated constraint."""

    def params(self) -> dict[str, Any]:
        """The parameters as a JSON-able dict (vocab_size included, name excluded)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def fingerprint(self) -> int:
        """A stable id of (name, params): crc32 of their canonical JSON."""
        canon = json.dumps(
            {"name": self.name, "params": self.params()}, sort_keys=True, separators=(",", ":")
        )
        return zlib.crc32(canon.encode("utf-8"))

    @property
    def prompt_len(self) -> int:
        """Tokens greedy decoding must be seeded with before the rest is predictable."""
        return 1

    def sample(self, key: jax.Array, batch_size: int, seq_len: int) -> jax.Array:
        """`int32[batch_size, seq_len]` sequences; a pure, jittable function of `key`."""
        raise NotImplementedError

    def optimal_loss(self, seq_len: int) -> float:
        """Exact Bayes-optimal mean next-token cross-entropy (nats) over positions 1..L-1."""
        raise NotImplementedError

    def bayes_logprob(self, tokens_BxL: jax.Array) -> jax.Array:
        """`float32[B, L-1]`: true log-prob of token t+1 given tokens 0..t (-inf: impossible)."""
        raise NotImplementedError

    def is_most_likely(self, tokens_BxL: jax.Array) -> jax.Array:
        """`bool[B, L-1]`: token t+1 is one of the most likely next tokens given tokens 0..t."""
        raise NotImplementedError

    def _table(self, name: str, build: Callable[[], Any]) -> Any:
        """Build a fixed table once per instance, concrete even when first called while tracing."""
        cache = self.__dict__.setdefault("_table_cache", {})
        if name not in cache:
            with jax.ensure_compile_time_eval():
                cache[name] = build()
        return cache[name]

    def _check_seq_len(self, seq_len: int) -> int:
        seq_len = fields.as_int("seq_len", seq_len)
        if seq_len < 2:
            raise UserError(
                f"{self.name}: optimal_loss needs seq_len >= 2 (one predicted "
                f"position), got {seq_len}"
            )
        return seq_len


class Deterministic(Language):
    """Every predicted token is determined by its context (floor 0): log p is 0 or -inf."""

    def optimal_loss(self, seq_len):
        self._check_seq_len(seq_len)
        return 0.0

    def bayes_logprob(self, tokens_BxL):
        return where_logprob(self.is_most_likely(tokens_BxL), 0.0)


def check_shape(batch_size: int, seq_len: int) -> tuple[int, int]:
    return tuple(
        fields.in_range(name, fields.as_int(name, value), ge=1)
        for name, value in (("batch_size", batch_size), ("seq_len", seq_len))
    )


def as_tokens(tokens_BxL: Any) -> jax.Array:
    """Tokens as an int32 [B, L] array (UserError otherwise)."""
    tokens_BxL = jnp.asarray(tokens_BxL)
    if tokens_BxL.ndim != 2 or not jnp.issubdtype(tokens_BxL.dtype, jnp.integer):
        raise UserError(
            f"tokens must be an integer [B, L] array, got {tokens_BxL.dtype}"
            f"{list(tokens_BxL.shape)}"
        )
    return tokens_BxL.astype(jnp.int32)


def where_logprob(ok: jax.Array, logp_ok: float, logp_bad: float = -math.inf) -> jax.Array:
    return jnp.where(ok, jnp.float32(logp_ok), jnp.float32(logp_bad))
