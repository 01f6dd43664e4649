"""`diag_metrics`: the bottleneck numbers the trainer logs every `diag_every` steps."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from flax import nnx

from spamlang.diagnostics.head_chunks import head_inputs, head_of
from spamlang.diagnostics.linalg import BottleneckStats, total
from spamlang.loss import chunk_mask, chunk_rows, next_token_loss

# A mos head needs a V x D Jacobian and its QR per token: logged on a few tokens only.
MOS_DIAG_TOKENS = 16


def _group(path) -> str:  # a parameter's group, from its path in the model state
    top = path[0].key
    if top == "blocks":
        return f"block_{path[1].key}"
    # E and the narrow embedding's projection embed_proj; the final RMSNorm gain acts only on the
    # head's input.
    return "embedding" if top.startswith("embed") else "head"


def grad_norms(grads: nnx.State) -> dict[str, jax.Array]:
    """The gradient's norm per group: embedding, block_<i>, head (with the final RMSNorm)."""
    sq: dict[str, jax.Array] = {}
    for path, leaf in jax.tree_util.tree_leaves_with_path(grads):
        name = "grad_norm/" + _group(path)
        sq[name] = sq.get(name, 0.0) + jnp.sum(jnp.square(leaf.astype(jnp.float32)))
    return {name: jnp.sqrt(value) for name, value in sq.items()}


def _scan_stats(head, h_NxD, y_N, chunk: int) -> BottleneckStats:  # the last chunk zero-padded
    xs = (chunk_rows(h_NxD, chunk), chunk_rows(y_N, chunk), chunk_mask(h_NxD.shape[0], chunk))

    def body(acc, xs):
        return acc + total(head.terms(*xs)[0]), None

    stats, _ = jax.lax.scan(body, BottleneckStats.zeros(), xs)
    return stats


def diag_metrics(
    model, tokens_BxL: jax.Array, *, chunk_size: int | None = None
) -> dict[str, jax.Array]:
    """Jittable scalars on a batch: kernel_fraction, projected_cosine, `grad_norms`."""
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)

    def loss_fn(p):
        return next_token_loss(nnx.merge(graphdef, p, rest), tokens_BxL, chunk_size=chunk_size)[0]

    metrics = grad_norms(jax.grad(loss_fn)(params))
    D = model.config.d_model
    h_NxD = model.hidden(tokens_BxL)[:, :-1].reshape(-1, D).astype(jnp.float32)
    y_N = tokens_BxL[:, 1:].reshape(-1)
    head = head_of(model)
    if model.config.head_kind == "mos":
        n = min(MOS_DIAG_TOKENS, h_NxD.shape[0])
        stats = _scan_stats(head, h_NxD[:n], y_N[:n], n)
    else:
        chunk = h_NxD.shape[0] if chunk_size is None else min(chunk_size, h_NxD.shape[0])
        stats = _scan_stats(head, head_inputs(model, h_NxD), y_N, chunk)
    metrics["kernel_fraction"] = stats.kernel_fraction
    metrics["projected_cosine"] = stats.projected_cosine
    return metrics


@functools.lru_cache(maxsize=4)
def logged_diagnostics(lang, batch_size: int, seq_len: int, chunk_size: int | None):
    """(jitted `diag_metrics`, its batch, keyed by the language: one batch for a whole sweep)."""
    key = jax.random.fold_in(jax.random.PRNGKey(lang.fingerprint()), 0x0D1A6)
    tokens = lang.sample(key, min(batch_size, 32), seq_len)
    return jax.jit(lambda model, t: diag_metrics(model, t, chunk_size=chunk_size)), tokens
