"""Evaluation on a fixed set of sequences that depends only on the language (and V).

The set's key is `PRNGKey(lang.fingerprint())`, so every run that trains on one language is
scored on the same sequences whatever its LR, head or seed. The `_seen` / `_unseen` metrics
split them by whether training has shown all their ids (`spamlang.coverage.exposure`): a model
that learned to copy repeats unseen symbols too.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from spamlang.coverage.exposure import seen_rows
from spamlang.loss import token_stats
from spamlang.model import generate


def sample_rows(lang, key: jax.Array, rows: jax.Array, seq_len: int) -> jax.Array:
    """int32[len(rows), L]: row r is `lang.sample(fold_in(key, r), 1, L)[0]`."""
    return jax.vmap(lambda r: lang.sample(jax.random.fold_in(key, r), 1, seq_len)[0])(rows)


def sharded_rows(n: int, mesh, shard: bool) -> jax.Array:  # arange(n), split over "data"
    rows = jnp.arange(n, dtype=jnp.uint32)
    if shard:
        rows = jax.lax.with_sharding_constraint(rows, NamedSharding(mesh, P("data")))
    return rows


_SUMS = ("nll_seen", "nll_unseen", "hits", "rep_seen", "rep_unseen", "n_seen")


def make_eval_fn(lang, seq_len: int, n_sequences: int, batch_size: int, chunk_size, mesh):
    """`(model, exposure_V) -> metrics`, summed per sequence so seen and unseen are exact."""
    n_dev = mesh.devices.size
    key = jax.random.PRNGKey(lang.fingerprint())
    prompt_len = min(lang.prompt_len, seq_len)
    n_full, remainder = divmod(n_sequences, batch_size)
    shard = n_dev > 1 and batch_size % n_dev == 0

    def batch_sums(model, exposure_V, tokens_BxL, split: bool):
        # split: the rows are spread over "data", so the head runs on each device's own rows.
        nll_BxLm1, hit_BxLm1 = token_stats(
            model, tokens_BxL, chunk_size=chunk_size, mesh=mesh if split else None
        )
        decoded_BxL = generate(model, tokens_BxL[:, :prompt_len], seq_len)
        # Column j of is_most_likely judges token j+1; only decoded tokens (>= prompt_len) count.
        ok_BxLm1 = lang.is_most_likely(decoded_BxL)[:, prompt_len - 1 :].astype(jnp.float32)
        rep_B = ok_BxLm1.mean(axis=1) if ok_BxLm1.shape[1] else jnp.ones(len(tokens_BxL))
        nll_B = nll_BxLm1.sum(axis=1)
        seen_B = seen_rows(tokens_BxL, exposure_V)
        return jnp.stack(
            [
                jnp.where(seen_B, nll_B, 0).sum(),
                jnp.where(seen_B, 0, nll_B).sum(),
                hit_BxLm1.sum(),
                jnp.where(seen_B, rep_B, 0).sum(),
                jnp.where(seen_B, 0, rep_B).sum(),
                seen_B.sum().astype(jnp.float32),
            ]
        )

    def eval_fn(model, exposure_V):
        total = jnp.zeros(len(_SUMS), jnp.float32)
        if n_full:

            def one_batch(b):
                rows = b * batch_size + sharded_rows(batch_size, mesh, shard)
                return batch_sums(model, exposure_V, sample_rows(lang, key, rows, seq_len), shard)

            total = total + jax.lax.map(one_batch, jnp.arange(n_full, dtype=jnp.uint32)).sum(0)
        if remainder:
            rows = jnp.arange(n_full * batch_size, n_sequences, dtype=jnp.uint32)
            total = total + batch_sums(
                model, exposure_V, sample_rows(lang, key, rows, seq_len), False
            )
        t = dict(zip(_SUMS, total))
        n_seen = t["n_seen"]
        n_unseen = n_sequences - n_seen
        per_row = seq_len - 1
        # 0 / 0 is NaN: the side with no sequences reports NaN, as documented.
        return {
            "eval_loss": (t["nll_seen"] + t["nll_unseen"]) / (n_sequences * per_row),
            "eval_accuracy": t["hits"] / (n_sequences * per_row),
            "repetition_accuracy": (t["rep_seen"] + t["rep_unseen"]) / n_sequences,
            "eval_loss_seen": _ratio(t["nll_seen"], n_seen * per_row),
            "eval_loss_unseen": _ratio(t["nll_unseen"], n_unseen * per_row),
            "repetition_accuracy_seen": _ratio(t["rep_seen"], n_seen),
            "repetition_accuracy_unseen": _ratio(t["rep_unseen"], n_unseen),
            "eval_seen_sequences": n_seen,
            "eval_unseen_sequences": n_unseen,
        }

    return eval_fn


def _ratio(num, den):
    return jnp.where(den > 0, num / jnp.maximum(den, 1), jnp.nan)
