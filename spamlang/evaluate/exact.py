"""Exact evaluation of position-invariant languages: every symbol scored once, weighted by its
probability.

Each symbol s is scored on its own sequence `s s`, weighted by P(s): the population loss, with
no sampling noise. Under RoPE every position of `s s ... s` has the same hidden state, so this
is the loss at every position of any L, at V x 2 tokens of forward pass.
"""

from __future__ import annotations

import numpy as np

from spamlang.rundir.schema import HELDOUT_COLUMNS

SCORE_LEN = 2  # `s s`: one predicted position, the same loss as at every position of any L


def applies(lang) -> bool:  # one symbol repeated (spam, zipf-spam)
    return bool(getattr(lang, "position_invariant", False))


def make_symbol_fn(vocab_size: int, batch_size: int, chunk_size, mesh):
    """`model -> (loss[V], hit[V])` on each `s s`, `batch_size` symbols at a time."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from spamlang.loss import chunk_rows, token_stats, unchunk_rows

    batch = min(batch_size, vocab_size)
    n_dev = mesh.devices.size
    split = n_dev > 1 and batch % n_dev == 0
    ids_KxB = chunk_rows(np.arange(vocab_size, dtype=np.int32), batch)  # NumPy, padded with 0

    def symbol_fn(model):
        def one(ids_b):
            tokens_bx2 = jnp.broadcast_to(ids_b[:, None], (batch, SCORE_LEN))
            if split:
                tokens_bx2 = jax.lax.with_sharding_constraint(
                    tokens_bx2, NamedSharding(mesh, P("data", None))
                )
            nll_bx1, hit_bx1 = token_stats(
                model, tokens_bx2, chunk_size=chunk_size, mesh=mesh if split else None
            )
            return nll_bx1[:, 0], hit_bx1[:, 0] > 0

        if len(ids_KxB) == 1:  # V <= the eval batch: no loop to compile
            loss_b, hit_b = one(jnp.asarray(ids_KxB[0]))
            return loss_b[:vocab_size], hit_b[:vocab_size]
        loss_KxB, hit_KxB = jax.lax.map(one, jnp.asarray(ids_KxB))
        return unchunk_rows(loss_KxB, vocab_size), unchunk_rows(hit_KxB, vocab_size)

    return symbol_fn


def metrics(loss_V, hit_V, probability_V, exposure_V, heldout_ids=()) -> dict:
    """One member's eval metrics from its per-symbol scores, keyed as the sampled evaluation's."""
    loss = np.asarray(loss_V, np.float64)
    hit = np.asarray(hit_V, np.float64)
    p = np.asarray(probability_V, np.float64)
    drawn = p > 0
    seen = drawn & (np.asarray(exposure_V) > 0)
    unseen = drawn & ~seen

    def mean(values, where):
        w = p[where]
        return float(np.sum(values[where] * w) / np.sum(w)) if where.any() else float("nan")

    out = {
        "eval_loss": mean(loss, drawn),
        "eval_accuracy": mean(hit, drawn),
        "repetition_accuracy": mean(hit, drawn),
        "eval_loss_seen": mean(loss, seen),
        "eval_loss_unseen": mean(loss, unseen),
        "repetition_accuracy_seen": mean(hit, seen),
        "repetition_accuracy_unseen": mean(hit, unseen),
        "eval_seen_sequences": int(seen.sum()),
        "eval_unseen_sequences": int(unseen.sum()),
    }
    held = np.asarray(heldout_ids, np.int64)
    if held.size:
        # Unweighted: a held-out symbol's training probability is 0.
        held_hit = float(hit[held].mean())
        out.update(zip(HELDOUT_COLUMNS, (float(loss[held].mean()), held_hit, held_hit)))
    return out
