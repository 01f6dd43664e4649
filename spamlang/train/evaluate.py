"""Evaluation on a fixed set of sequences that depends only on the language (and V).

The eval set's key is `PRNGKey(lang.fingerprint())`, a crc32 of the language name and its
parameters (vocab_size included): every run of a sweep that trains on the same language is
scored on the same sequences whatever its LR, tying, head or seed. Sequence i is
`lang.sample(fold_in(key, i), 1, L)[0]`, i.e. item i of
`spamlang.data.SequenceDataset(lang, seed=lang.fingerprint(), seq_len=L)`.

Metrics (device scalars; `Trainer.evaluate` adds the floor and converts to floats):
- eval_loss: mean next-token cross-entropy over the L-1 predicted positions;
- eval_accuracy: fraction of those positions where the argmax token is the target;
- repetition_accuracy: greedy decoding seeded with the first `lang.prompt_len` tokens of each
  eval sequence, continued to L tokens; the fraction of decoded tokens that are one of the
  language's most likely next tokens given what was decoded before them. For SpamLang that is
  "the model keeps repeating the seed symbol".
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P

from spamlang.loss import next_token_loss
from spamlang.model import generate


def sample_rows(lang, key: jax.Array, rows: jax.Array, seq_len: int) -> jax.Array:
    """int32[len(rows), L]: row r is `lang.sample(fold_in(key, r), 1, L)[0]`.

    Generating row by row from the row index (not one `sample(key, B, L)` call) makes each
    device produce only its own rows when `rows` is sharded, and makes the batch independent
    of how many devices there are.
    """
    return jax.vmap(lambda r: lang.sample(jax.random.fold_in(key, r), 1, seq_len)[0])(rows)


def sharded_rows(n: int, mesh, shard: bool) -> jax.Array:
    """jnp.arange(n) constrained to be split over the mesh's "data" axis (when `shard`)."""
    rows = jnp.arange(n, dtype=jnp.uint32)
    if shard:
        rows = jax.lax.with_sharding_constraint(rows, NamedSharding(mesh, P("data")))
    return rows


def make_eval_fn(lang, seq_len: int, n_sequences: int, batch_size: int, chunk_size, mesh):
    """A pure function `model -> {eval_loss, eval_accuracy, repetition_accuracy}` (device scalars).

    The set is processed in micro-batches of `batch_size` sequences (the training batch, so
    peak memory stays that of a training step) inside a `lax.map`; a last partial batch is
    handled separately with its own static shape, and the means are weighted by size.
    """
    n_dev = mesh.devices.size
    key = jax.random.PRNGKey(lang.fingerprint())
    prompt_len = min(lang.prompt_len, seq_len)
    n_full, remainder = divmod(n_sequences, batch_size)

    shard = n_dev > 1 and batch_size % n_dev == 0

    def batch_stats(model, tokens_BxL, split: bool):
        # split: the rows are spread over "data", so the loss runs on each device's own rows.
        loss, aux = next_token_loss(model, tokens_BxL, chunk_size=chunk_size,
                                    mesh=mesh if split else None)
        decoded_BxL = generate(model, tokens_BxL[:, :prompt_len], seq_len)
        # Column j of is_most_likely judges token j+1; only decoded tokens (>= prompt_len) count.
        ok_BxLm1 = lang.is_most_likely(decoded_BxL)[:, prompt_len - 1:]
        rep = jnp.mean(ok_BxLm1.astype(jnp.float32)) if ok_BxLm1.shape[1] else jnp.float32(1.0)
        return jnp.stack([loss, aux["accuracy"], rep])

    def eval_fn(model):
        total = jnp.zeros(3, jnp.float32)
        if n_full:
            def one_batch(b):
                rows = b * batch_size + sharded_rows(batch_size, mesh, shard)
                return batch_stats(model, sample_rows(lang, key, rows, seq_len), shard)

            stats = jax.lax.map(one_batch, jnp.arange(n_full, dtype=jnp.uint32))
            total = total + stats.sum(axis=0) * batch_size
        if remainder:
            rows = jnp.arange(n_full * batch_size, n_sequences, dtype=jnp.uint32)
            tokens_RxL = sample_rows(lang, key, rows, seq_len)
            total = total + batch_stats(model, tokens_RxL, False) * remainder
        mean = total / n_sequences
        return {"eval_loss": mean[0], "eval_accuracy": mean[1], "repetition_accuracy": mean[2]}

    return eval_fn
