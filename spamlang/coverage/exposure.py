"""Exposure counts: in how many training sequences each token id occurs as an input.

At a fixed token budget a sweep over V alone changes both the head's rank ratio D / V and how
often each symbol is seen; these counts say which was measured. The train state carries them
(int32[V] per member, checkpointed, so a resume counts exactly), and the evaluation splits its
sequences into seen and unseen by them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P


def sequence_counts(tokens_BxL: jax.Array, vocab_size: int) -> jax.Array:
    """int32[V]: how many of the B sequences hold each id among their inputs (once per row)."""
    inputs_BxLm1 = jnp.sort(tokens_BxL[:, :-1], axis=1)
    # Sorted, an id's first position differs from its left neighbour: one count per row.
    first_BxLm1 = jnp.diff(inputs_BxLm1, axis=1, prepend=-1) != 0
    return (
        jnp.zeros(vocab_size, jnp.int32)
        .at[inputs_BxLm1.reshape(-1)]
        .add(first_BxLm1.reshape(-1).astype(jnp.int32), mode="drop")
    )


def _summed(count, tokens_BxL: jax.Array, mesh) -> jax.Array:
    """`count(rows)` of a batch whose rows may be split over "data", summed in one psum."""
    if mesh is None or mesh.shape.get("data", 1) == 1:
        return count(tokens_BxL)

    def local(tokens_bxL):
        return jax.lax.psum(count(tokens_bxL), "data")

    return jax.shard_map(local, mesh=mesh, in_specs=P("data"), out_specs=P())(tokens_BxL)


def count_batch(tokens_BxL: jax.Array, vocab_size: int, mesh=None) -> jax.Array:  # rows split
    return _summed(lambda t: sequence_counts(t, vocab_size), tokens_BxL, mesh)


def present_ids(tokens_BxL: jax.Array, vocab_size: int, mesh=None) -> jax.Array:  # bool[V], any
    def count(tokens_bxL):
        return jnp.zeros(vocab_size, jnp.int32).at[tokens_bxL.reshape(-1)].max(1, mode="drop")

    return _summed(count, tokens_BxL, mesh) > 0


def count_targets(tokens_BxL: jax.Array, vocab_size: int, mesh=None) -> jax.Array:  # int32[V]
    def count(tokens_bxL):
        targets = tokens_bxL[:, 1:].reshape(-1)
        return jnp.zeros(vocab_size, jnp.int32).at[targets].add(1, mode="drop")

    return _summed(count, tokens_BxL, mesh)


def seen_rows(tokens_BxL: jax.Array, exposure_V: jax.Array) -> jax.Array:  # all ids ever inputs
    return jnp.all(exposure_V[tokens_BxL] > 0, axis=1)


def summary(exposure_V, training_sequences: int) -> dict[str, float]:
    """The coverage fields of result.json from one member's counts (host side)."""
    counts = np.asarray(exposure_V)
    per_symbol = training_sequences / counts.size
    return {
        # B x steps / V; `sequences_per_symbol`: its old name, for earlier results.csv readers.
        "updates_per_symbol": per_symbol,
        "sequences_per_symbol": per_symbol,
        "exposure_min": int(counts.min()),
        "exposure_median": float(np.median(counts)),
        "exposure_max": int(counts.max()),
        "unseen_fraction": float(np.mean(counts == 0)),
    }
