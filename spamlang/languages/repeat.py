"""SpamLang and its two variants: one symbol repeated (Zipf-distributed, or with noise)."""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from spamlang.errors import UserError
from spamlang.languages.base import Deterministic, Language, as_tokens, check_shape, where_logprob


@dataclasses.dataclass(frozen=True)
class Spam(Deterministic):
    """The paper's SpamLang: one symbol drawn uniformly from the vocabulary, repeated (loss floor
    0).

    >>> import jax
    >>> lang = Spam(vocab_size=8)
    >>> x = lang.sample(jax.random.PRNGKey(0), 2, 5)
    >>> x.shape, bool((x == x[:, :1]).all())
    ((2, 5), True)
    >>> lang.optimal_loss(5)
    0.0

    `holdout` > 0 sets aside round(holdout x V) symbols, a fixed set drawn from V alone, that
    `sample` never draws; `heldout_view()` draws only those."""

    holdout: float = 0.0  # fraction of the symbols training never draws, in [0, 1)

    name: ClassVar[str] = "spam"
    summary: ClassVar[str] = "repeat one uniform symbol: the paper's SpamLang"
    loss_formula: ClassVar[str] = "0"
    position_invariant: ClassVar[bool] = True  # one symbol repeated (Language's comment)
    # Uniform over its drawn symbols: an epoch dealing each once reorders the iid stream.
    permutable: ClassVar[bool] = True

    def _check(self):
        if not 0.0 <= self.holdout < 1.0:
            raise UserError(f"{self.name}: holdout must be in [0, 1), got {self.holdout}")
        if self.holdout and not 1 <= self.n_heldout <= self.vocab_size - 2:
            raise UserError(
                f"{self.name}: holdout={self.holdout} holds out {self.n_heldout} of "
                f"{self.vocab_size} symbols; it must leave at least 1 out and 2 in"
            )

    def params(self):
        # Without a holdout: as before the field existed (fingerprint, eval set, run ids).
        params = super().params()
        if not params["holdout"]:
            del params["holdout"]
        return params

    @property
    def n_heldout(self) -> int:
        return int(round(self.holdout * self.vocab_size))

    def _split(self) -> tuple[np.ndarray, np.ndarray]:
        """(kept ids, held-out ids), sorted, from a fixed permutation of V (PCG64 is stable)."""

        def build():
            perm = np.random.default_rng(0x5EED_0FF).permutation(self.vocab_size)
            held = np.sort(perm[: self.n_heldout]).astype(np.int32)
            kept = np.sort(perm[self.n_heldout :]).astype(np.int32)
            return kept, held

        return self._table("split", build)

    def drawn_ids(self) -> np.ndarray:
        """int32[n]: the symbols training draws, sorted."""
        return self._split()[0]

    def symbol_probabilities(self) -> np.ndarray:
        """float64[V]: each symbol's probability under the training distribution."""
        p = np.zeros(self.vocab_size)
        p[self.drawn_ids()] = 1.0 / (self.vocab_size - self.n_heldout)
        return p

    def heldout_ids(self) -> np.ndarray:
        return self._split()[1]

    def _sample(self, key, batch_size, seq_len, ids: np.ndarray | None) -> jax.Array:
        """Sequences of one symbol drawn uniformly from `ids` (None: the whole vocabulary)."""
        batch_size, seq_len = check_shape(batch_size, seq_len)
        n = self.vocab_size if ids is None else len(ids)
        w_Bx1 = jax.random.randint(key, (batch_size, 1), 0, n, dtype=jnp.int32)
        if ids is not None:
            w_Bx1 = jnp.asarray(ids)[w_Bx1]
        return jnp.broadcast_to(w_Bx1, (batch_size, seq_len))

    def sample(self, key, batch_size, seq_len):
        return self._sample(key, batch_size, seq_len, self.drawn_ids() if self.n_heldout else None)

    def heldout_view(self) -> HeldOut:
        if not self.n_heldout:
            raise UserError(f"{self.name}: no held-out symbols (holdout=0)")
        return HeldOut(self)

    def is_most_likely(self, tokens_BxL):
        tokens_BxL = as_tokens(tokens_BxL)
        return tokens_BxL[:, 1:] == tokens_BxL[:, :1]


class HeldOut:
    """A SpamLang with a holdout seen through its held-out symbols: what an evaluation needs."""

    def __init__(self, lang: Spam):
        self.lang = lang
        self.vocab_size = lang.vocab_size
        self.prompt_len = lang.prompt_len
        self.is_most_likely = lang.is_most_likely

    def fingerprint(self) -> int:
        # Another eval set than the language's own (whose key is the plain fingerprint).
        return self.lang.fingerprint() ^ 0x4E1D0

    def sample(self, key, batch_size, seq_len):
        return self.lang._sample(key, batch_size, seq_len, self.lang.heldout_ids())


@dataclasses.dataclass(frozen=True)
class ZipfSpam(Spam):
    """SpamLang whose symbol follows a Zipf law: P(token i) ∝ (i + 1)^-s, token 0 most frequent.

    The symbol is drawn by inverse CDF on 64-bit integer thresholds (two uint32 words, since JAX
    runs in 32 bits), so every symbol keeps at least 2^-64 even at V = 2^20 with a large s.

    >>> import jax
    >>> lang = ZipfSpam(vocab_size=1000, s=1.0)
    >>> x = lang.sample(jax.random.PRNGKey(0), 4, 6)
    >>> x.shape, bool((x == x[:, :1]).all())
    ((4, 6), True)
    >>> round(float(lang.probabilities()[0]), 4)  # 1 / H_1000
    0.1336
    >>> lang.optimal_loss(6)
    0.0"""

    s: float = 1.0  # Zipf exponent (> 0); larger s concentrates mass on the first tokens

    name: ClassVar[str] = "zipf-spam"
    summary: ClassVar[str] = "repeat one Zipf(s)-distributed symbol: rare tokens, few updates"
    loss_formula: ClassVar[str] = "0"
    permutable: ClassVar[bool] = False  # its symbols are drawn by frequency, not dealt

    def _check(self):
        if not self.s > 0:
            raise UserError(f"zipf-spam: s must be > 0, got {self.s}")
        if self.holdout:
            raise UserError(
                "zipf-spam: holdout is for uniform spam only (held-out symbols of a "
                "Zipf law would be picked by frequency); use language spam"
            )

    def _counts(self) -> np.ndarray:
        """uint64 weight of each token, summing to exactly 2^64."""
        ranks = np.arange(1, self.vocab_size + 1, dtype=np.float64)
        logw = -self.s * np.log(ranks)
        p = np.exp(logw - logw.max())
        p /= p.sum()
        # The largest float64 below 2^64 keeps the uint64 conversion in range when p[0] ~ 1.
        scaled = np.minimum(np.floor(p * 2.0**64), np.nextafter(2.0**64, 0))
        counts = np.maximum(scaled, 1.0).astype(np.uint64)
        # Exact total in Python ints (a uint64 sum could wrap); token 0 absorbs the remainder.
        low = np.uint64(0xFFFFFFFF)
        total = (int((counts >> np.uint64(32)).sum()) << 32) + int((counts & low).sum())
        counts[0] = np.uint64(int(counts[0]) + 2**64 - total)
        return counts

    def symbol_probabilities(self) -> np.ndarray:
        return self._counts() / 2.0**64

    probabilities = symbol_probabilities

    def _thresholds(self) -> tuple[jax.Array, jax.Array]:
        """Cumulative counts without the last (== 2^64), as (high, low) uint32 words."""

        def build():
            cum = np.cumsum(self._counts(), dtype=np.uint64)[:-1]
            return (
                jnp.asarray((cum >> np.uint64(32)).astype(np.uint32)),
                jnp.asarray((cum & np.uint64(0xFFFFFFFF)).astype(np.uint32)),
            )

        return self._table("thresholds", build)

    def sample(self, key, batch_size, seq_len):
        batch_size, seq_len = check_shape(batch_size, seq_len)
        hi_N, lo_N = self._thresholds()
        u_2xB = jax.random.bits(key, (2, batch_size), dtype=jnp.uint32)
        w_B = _count_le(hi_N, lo_N, u_2xB[0], u_2xB[1])
        return jnp.broadcast_to(w_B[:, None], (batch_size, seq_len))


def _count_le(hi_N, lo_N, q_hi_B, q_lo_B):
    """int32[B]: how many 64-bit thresholds (hi, lo) are <= each query: a binary search."""
    n = hi_N.shape[0]
    lo_B = jnp.zeros(q_hi_B.shape, jnp.int32)
    hi_B = jnp.full(q_hi_B.shape, n, jnp.int32)
    for _ in range(max(n, 1).bit_length()):  # static: ceil(log2(n + 1)) halvings
        mid_B = (lo_B + hi_B) // 2
        at = jnp.minimum(mid_B, n - 1)
        le_B = (hi_N[at] < q_hi_B) | ((hi_N[at] == q_hi_B) & (lo_N[at] <= q_lo_B))
        le_B = le_B & (mid_B < hi_B)
        lo_B = jnp.where(le_B, mid_B + 1, lo_B)
        hi_B = jnp.where(le_B | (mid_B >= hi_B), hi_B, mid_B)
    return lo_B


@dataclasses.dataclass(frozen=True)
class NoisySpam(Language):
    """SpamLang with each position after the first replaced, with probability eps, by a uniform
    symbol. Position 0 reveals the base symbol w, so the next-token law is the same at every
    predicted position, P(w) = 1 - eps + eps/V, and the optimal loss is its entropy.

    >>> import jax
    >>> lang = NoisySpam(vocab_size=4, eps=0.5)
    >>> lang.sample(jax.random.PRNGKey(0), 3, 10).shape
    (3, 10)
    >>> round(lang.optimal_loss(10), 4)  # -(5/8 ln 5/8 + 3 * 1/8 ln 1/8)
    1.0735"""

    eps: float = 0.1  # noise probability per position after the first, in [0, 1)

    name: ClassVar[str] = "noisy-spam"
    summary: ClassVar[str] = "repeat one uniform symbol, each later position noised w.p. eps"
    loss_formula: ClassVar[str] = "H(1-eps+eps/V, eps/V x (V-1)) at every position"

    def _check(self):
        if not 0.0 <= self.eps < 1.0:
            raise UserError(f"noisy-spam: eps must be in [0, 1), got {self.eps}")

    def _logp(self) -> tuple[float, float]:
        """(log P(next == first token), log P(next == a given other token))."""
        p_miss = self.eps / self.vocab_size
        p_hit = 1.0 - self.eps + p_miss
        return math.log(p_hit), (math.log(p_miss) if p_miss > 0 else -math.inf)

    def sample(self, key, batch_size, seq_len):
        batch_size, seq_len = check_shape(batch_size, seq_len)
        k_w, k_mask, k_noise = jax.random.split(key, 3)
        w_Bx1 = jax.random.randint(k_w, (batch_size, 1), 0, self.vocab_size, dtype=jnp.int32)
        noisy_BxL = jax.random.bernoulli(k_mask, self.eps, (batch_size, seq_len))
        noisy_BxL = noisy_BxL.at[:, 0].set(False)
        noise_BxL = jax.random.randint(
            k_noise, (batch_size, seq_len), 0, self.vocab_size, dtype=jnp.int32
        )
        return jnp.where(noisy_BxL, noise_BxL, w_Bx1)

    def optimal_loss(self, seq_len):
        self._check_seq_len(seq_len)
        logp_hit, logp_miss = self._logp()
        p_miss = self.eps / self.vocab_size
        entropy = -math.exp(logp_hit) * logp_hit
        if p_miss > 0:
            entropy -= (self.vocab_size - 1) * p_miss * logp_miss
        # An entropy is >= 0; eps = 0 computes -(1 * log 1) = -0.0, printed as "-0.0000".
        return max(0.0, float(entropy))

    def bayes_logprob(self, tokens_BxL):
        logp_hit, logp_miss = self._logp()
        return where_logprob(self.is_most_likely(tokens_BxL), logp_hit, logp_miss)

    is_most_likely = Spam.is_most_likely  # the first token is the likeliest next one
