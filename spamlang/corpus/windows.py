"""Training windows of a corpus: row r of step t is `seq_len` consecutive train.bin tokens whose
start is drawn from `fold_in(fold_in(data_key, t), r)`, a pure function of (seed, step, row),
so a resumed run sees the same rows on any device count. Two ways to the same rows: gathered
on device from a replicated train.bin (`gather`), or from the host's memory map (`HostWindows`)
when train.bin is over SPAMLANG_CORPUS_DEVICE_MB."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np

from spamlang.errors import UserError

DEVICE_MB_VAR = "SPAMLANG_CORPUS_DEVICE_MB"
DEFAULT_DEVICE_MB = 512


def device_limit_bytes() -> int:  # the largest train.bin kept on device
    raw = os.environ.get(DEVICE_MB_VAR, str(DEFAULT_DEVICE_MB))
    try:
        mb = float(raw)
    except ValueError:
        mb = -1.0
    if not mb >= 0:
        raise UserError(f"{DEVICE_MB_VAR} must be a number of MB >= 0, got {raw!r}")
    return int(mb * 2**20)


def on_device(train: np.ndarray) -> bool:
    return train.nbytes <= device_limit_bytes()


def window_starts(data_key, step, rows, n_tokens: int, seq_len: int) -> jax.Array:
    """int32[len(rows)]: each row's first token index in [0, n_tokens - seq_len]."""
    key = jax.random.fold_in(data_key, step)
    high = n_tokens - seq_len + 1  # static: the draw is exact for every start

    def start(r):
        return jax.random.randint(jax.random.fold_in(key, r), (), 0, high, dtype=jnp.int32)

    return jax.vmap(start)(rows)


def gather(tokens_N: jax.Array, starts_B: jax.Array, seq_len: int) -> jax.Array:
    """int32[B, L]: the windows of `tokens_N` (uint16 or uint32, replicated) at `starts_B`."""
    index_BxL = starts_B[:, None] + jnp.arange(seq_len, dtype=jnp.int32)
    return tokens_N[index_BxL].astype(jnp.int32)


class HostWindows:
    """The same windows from the host's memory map (the same jitted `window_starts`)."""

    def __init__(self, train: np.ndarray, batch_size: int, seq_len: int):
        self.train, self.seq_len = train, seq_len
        rows = jnp.arange(batch_size, dtype=jnp.uint32)
        n = int(train.shape[0])

        def starts_KxB(keys_K, step):
            return jax.vmap(lambda k: window_starts(k, step, rows, n, seq_len))(keys_K)

        self._starts = jax.jit(starts_KxB)

    def batch(self, data_keys_K, step: int) -> np.ndarray:  # int32[K, B, L] of step `step`
        starts_KxB = np.asarray(self._starts(data_keys_K, np.int32(step)))
        index_KxBxL = starts_KxB[..., None] + np.arange(self.seq_len)
        return self.train[index_KxBxL].astype(np.int32)
