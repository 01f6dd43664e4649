"""The data order of training: which sequence each row of each step holds.

- "iid": row r of step t is `lang.sample(fold_in(fold_in(data_key, t), r), 1, L)[0]`. A
  SpamLang symbol then occurs in a step with probability about B / V, so it returns every V / B
  steps on average, with a geometric tail.
- "permuted": the stream of rows is cut into epochs of n = the language's drawn symbols; epoch
  e deals a permutation of them, seeded by (data_key, e), so position t * B + r of the stream
  holds symbol `perm_e[(t * B + r) mod n]`. Every symbol then occurs once per epoch: when B
  divides n it returns every n / B steps exactly, and B = n is full-batch training (every
  symbol in every step, the setting of the paper's section 2.3).
Both are pure functions of (data_key, step, row): a resumed run sees the same batches, and
each device generates only its own rows.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from spamlang.evaluate.sets import sample_rows

# Folded into the data key for the permutations, so they never reuse an iid step's key.
_PERMUTED = 0x5045524D


def batch_rows(
    sampling: str,
    lang,
    data_key: jax.Array,
    step: jax.Array,
    rows: jax.Array,
    batch_size: int,
    seq_len: int,
) -> jax.Array:
    """int32[len(rows), L]: the training rows `rows` (indices into the step's batch of
    `batch_size`) of step `step`."""
    if sampling == "iid":
        return sample_rows(lang, jax.random.fold_in(data_key, step), rows, seq_len)
    ids_N = jnp.asarray(lang.drawn_ids())
    n = ids_N.shape[0]
    # uint32 positions: up to 2^32 rows per run (TrainConfig checks the budget).
    first = step.astype(jnp.uint32) * jnp.uint32(batch_size)
    epoch0 = first // n
    # A batch of B rows touches at most this many epochs (static).
    n_epochs = (batch_size - 1) // n + 2
    key = jax.random.fold_in(data_key, _PERMUTED)
    perm_ExN = jax.vmap(lambda e: jax.random.permutation(jax.random.fold_in(key, epoch0 + e), n))(
        jnp.arange(n_epochs, dtype=jnp.uint32)
    )
    position = first + rows.astype(jnp.uint32)
    symbol = ids_N[
        perm_ExN[(position // n - epoch0).astype(jnp.int32), (position % n).astype(jnp.int32)]
    ]
    return jnp.broadcast_to(symbol[:, None], (rows.shape[0], seq_len)).astype(jnp.int32)
