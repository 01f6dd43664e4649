"""Languages with structure beyond one repeated symbol: a cycle, a permutation, a bigram graph."""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import jax
import jax.numpy as jnp

from spamlang.errors import UserError
from spamlang.languages.base import Deterministic, Language, as_tokens, check_shape, where_logprob


@dataclasses.dataclass(frozen=True)
class Cycle(Language):
    """A pattern of k uniform symbols (with replacement) repeated with period k: copy from k back.
    Positions 1..k-1 are unpredictable, the rest deterministic; greedy decoding is seeded with
    the whole pattern.

    >>> import jax
    >>> lang = Cycle(vocab_size=8, k=3)
    >>> x = lang.sample(jax.random.PRNGKey(0), 2, 7)
    >>> x.shape, bool((x[:, 3:] == x[:, :-3]).all())
    ((2, 7), True)
    >>> round(lang.optimal_loss(7), 4)  # 2 * ln 8 / 6
    0.6931"""

    k: int = 4  # period (>= 1); k = 1 is SpamLang

    name: ClassVar[str] = "cycle"
    summary: ClassVar[str] = "repeat a uniform pattern of k symbols: copy from k back"
    loss_formula: ClassVar[str] = "(min(k, L) - 1) * log V / (L - 1)"

    def _check(self):
        if self.k < 1:
            raise UserError(f"cycle: k must be >= 1, got {self.k}")

    @property
    def prompt_len(self) -> int:
        return self.k

    def sample(self, key, batch_size, seq_len):
        batch_size, seq_len = check_shape(batch_size, seq_len)
        n = min(self.k, seq_len)
        pattern_BxN = jax.random.randint(key, (batch_size, n), 0, self.vocab_size, dtype=jnp.int32)
        reps = -(-seq_len // n)
        return jnp.tile(pattern_BxN, (1, reps))[:, :seq_len]

    def optimal_loss(self, seq_len):
        seq_len = self._check_seq_len(seq_len)
        return (min(self.k, seq_len) - 1) * math.log(self.vocab_size) / (seq_len - 1)

    def _split(self, tokens_BxL):
        """(number of free positions among 1..L-1, copy-consistency of positions k..L-1)."""
        tokens_BxL = as_tokens(tokens_BxL)
        seq_len = tokens_BxL.shape[1]
        n_free = max(min(self.k, seq_len) - 1, 0)
        copied_ok = tokens_BxL[:, self.k :] == tokens_BxL[:, : max(seq_len - self.k, 0)]
        return n_free, copied_ok

    def bayes_logprob(self, tokens_BxL):
        n_free, copied_ok = self._split(tokens_BxL)
        free = jnp.full((copied_ok.shape[0], n_free), -math.log(self.vocab_size), jnp.float32)
        return jnp.concatenate([free, where_logprob(copied_ok, 0.0)], axis=1)

    def is_most_likely(self, tokens_BxL):
        n_free, copied_ok = self._split(tokens_BxL)
        # Free positions are uniform: every token is a maximiser.
        free = jnp.ones((copied_ok.shape[0], n_free), bool)
        return jnp.concatenate([free, copied_ok], axis=1)


def _walk(first_B, successor, length, steps_TxB=None):
    """Tokens [B, length+1]: first_B, then successor(previous, step input) `length` times."""

    def step(x_B, s_B):
        nxt_B = successor(x_B, s_B)
        return nxt_B, nxt_B

    _, rest_TxB = jax.lax.scan(step, first_B, steps_TxB, length=length)
    return jnp.concatenate([first_B[:, None], rest_TxB.T], axis=1)


@dataclasses.dataclass(frozen=True)
class Permutation(Deterministic):
    """w, pi(w), pi(pi(w)), ... with w uniform and pi a fixed random permutation drawn from `seed`:
    every token has its own deterministic successor (a bigram task, unlike SpamLang's copy).

    >>> import jax
    >>> lang = Permutation(vocab_size=16, seed=0)
    >>> x = lang.sample(jax.random.PRNGKey(0), 2, 5)
    >>> bool((lang.table()[x[:, :-1]] == x[:, 1:]).all())
    True
    >>> lang.optimal_loss(5)
    0.0"""

    seed: int = 0  # seed of the permutation itself (not of the sampled sequences)

    name: ClassVar[str] = "permutation"
    summary: ClassVar[str] = "w, pi(w), pi(pi(w)), ...: a fixed random successor per token"
    loss_formula: ClassVar[str] = "0"

    def table(self) -> jax.Array:
        """int32[V]: pi, with pi[t] the successor of token t."""
        return self._table(
            "perm",
            lambda: jax.random.permutation(jax.random.PRNGKey(self.seed), self.vocab_size).astype(
                jnp.int32
            ),
        )

    def sample(self, key, batch_size, seq_len):
        batch_size, seq_len = check_shape(batch_size, seq_len)
        pi_V = self.table()
        first_B = jax.random.randint(key, (batch_size,), 0, self.vocab_size, dtype=jnp.int32)
        return _walk(first_B, lambda x_B, _: pi_V[x_B], seq_len - 1)

    def is_most_likely(self, tokens_BxL):
        tokens_BxL = as_tokens(tokens_BxL)
        return self.table()[tokens_BxL[:, :-1]] == tokens_BxL[:, 1:]


@dataclasses.dataclass(frozen=True)
class Branching(Language):
    """A fixed random bigram graph from `seed` in which every token has b distinct, equally likely
    successors: multi-mode next-token distributions, the setting of Mixture of Softmaxes.

    In O(V) memory: the successors of t are P[(r[t] + j) mod V], j < b, for a random cyclic order P
    and a permutation r, so every token is also the successor of exactly b tokens.

    >>> import jax
    >>> lang = Branching(vocab_size=16, b=3, seed=0)
    >>> lang.successor_table().shape
    (16, 3)
    >>> x = lang.sample(jax.random.PRNGKey(0), 2, 8)
    >>> bool(lang.is_most_likely(x).all())
    True
    >>> round(lang.optimal_loss(8), 4)  # ln 3
    1.0986"""

    b: int = 2  # successors per token, in [1, vocab_size]
    seed: int = 0  # seed of the graph itself (not of the sampled sequences)

    name: ClassVar[str] = "branching"
    summary: ClassVar[str] = "random bigram graph, b equally likely successors per token"
    loss_formula: ClassVar[str] = "log b"

    def _check(self):
        if not 1 <= self.b <= self.vocab_size:
            raise UserError(
                f"branching: b must be in [1, vocab_size={self.vocab_size}], got {self.b}"
            )

    def _tables(self) -> tuple[jax.Array, jax.Array, jax.Array]:
        """(P: order -> token, P^-1: token -> place in the order, r: token -> window start)."""

        def build():
            k_order, k_start = jax.random.split(jax.random.PRNGKey(self.seed))
            order_V = jax.random.permutation(k_order, self.vocab_size).astype(jnp.int32)
            place_V = jnp.argsort(order_V).astype(jnp.int32)  # the inverse permutation
            start_V = jax.random.permutation(k_start, self.vocab_size).astype(jnp.int32)
            return order_V, place_V, start_V

        return self._table("graph", build)

    def successor_table(self) -> jax.Array:
        """int32[V, b]: the successors of every token (for small V only)."""
        order_V, _, start_V = self._tables()
        j_b = jnp.arange(self.b, dtype=jnp.int32)
        return order_V[(start_V[:, None] + j_b) % self.vocab_size]

    def sample(self, key, batch_size, seq_len):
        batch_size, seq_len = check_shape(batch_size, seq_len)
        order_V, _, start_V = self._tables()
        vocab = self.vocab_size
        k_first, k_branch = jax.random.split(key)
        first_B = jax.random.randint(k_first, (batch_size,), 0, vocab, dtype=jnp.int32)
        branch_TxB = jax.random.randint(
            k_branch, (seq_len - 1, batch_size), 0, self.b, dtype=jnp.int32
        )

        def successor(x_B, j_B):
            place_B = start_V[x_B] + j_B  # < 2V, no overflow since V <= 2^30
            return order_V[jnp.where(place_B >= vocab, place_B - vocab, place_B)]

        return _walk(first_B, successor, seq_len - 1, branch_TxB)

    def optimal_loss(self, seq_len):
        self._check_seq_len(seq_len)
        return math.log(self.b)

    def bayes_logprob(self, tokens_BxL):
        return where_logprob(self.is_most_likely(tokens_BxL), -math.log(self.b))

    def is_most_likely(self, tokens_BxL):
        tokens_BxL = as_tokens(tokens_BxL)
        _, place_V, start_V = self._tables()
        offset = jnp.mod(place_V[tokens_BxL[:, 1:]] - start_V[tokens_BxL[:, :-1]], self.vocab_size)
        return offset < self.b
