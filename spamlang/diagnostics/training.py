"""`diag_metrics`: the bottleneck numbers the trainer logs every `diag_every` steps."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from flax import nnx

from spamlang.diagnostics.head_chunks import head_inputs, head_of
from spamlang.diagnostics.linalg import BottleneckStats, total
from spamlang.loss import chunk_mask, chunk_rows, next_token_loss

# A mos head needs one V x D Jacobian (D forward passes of the head) and its QR per token, so
# training-time logging measures it on the first few predicted tokens of the batch only.
MOS_DIAG_TOKENS = 16


def _group(path) -> str:
    """Which reported group a parameter belongs to, from its path in the model state."""
    top = path[0].key
    if top == "blocks":
        return f"block_{path[1].key}"
    if top.startswith("embed"):  # E, and the narrow embedding's projection embed_proj
        return "embedding"
    # The final RMSNorm gain acts only on the head's input: it is counted with the head.
    return "head"


def grad_norms(grads: nnx.State) -> dict[str, jax.Array]:
    """L2 norm of the gradient per group of `_group`, under "grad_norm/<group>"."""
    sq: dict[str, jax.Array] = {}
    for path, leaf in jax.tree_util.tree_leaves_with_path(grads):
        name = "grad_norm/" + _group(path)
        sq[name] = sq.get(name, 0.0) + jnp.sum(jnp.square(leaf.astype(jnp.float32)))
    return {name: jnp.sqrt(value) for name, value in sq.items()}


def _scan_stats(head, h_NxD, y_N, chunk: int) -> BottleneckStats:
    """Sum of BottleneckStats over chunks of `chunk` tokens (the last one zero-padded)."""
    xs = (chunk_rows(h_NxD, chunk), chunk_rows(y_N, chunk), chunk_mask(h_NxD.shape[0], chunk))

    def body(acc, xs):
        return acc + total(head.terms(*xs)[0]), None

    stats, _ = jax.lax.scan(body, BottleneckStats.zeros(), xs)
    return stats


def diag_metrics(
    model, tokens_BxL: jax.Array, *, chunk_size: int | None = None
) -> dict[str, jax.Array]:
    """Jittable float32 scalars on one batch: "kernel_fraction" (equation 10),
    "projected_cosine" (see BottleneckStats), and the norm of the mean loss's gradient per
    group, "grad_norm/embedding", "grad_norm/block_<i>" and "grad_norm/head". A tied head's
    matrix IS the embedding: its gradient is reported once, under "grad_norm/embedding". The
    final RMSNorm always counts with the head.

    Linear heads measure every predicted token (`head_of`); a mos head the first
    MOS_DIAG_TOKENS against their own Jacobians. chunk_size: tokens per chunk for the loss
    and the statistics; None = all. Cost for smollm2-106m at V = 131,072 and a 32 x 64 batch:
    ~4.8 TFLOPs, 1.5x a training step, so diag_every = 100 adds ~1.5% to training.
    """
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
    """(jitted `diag_metrics(model, tokens)`, its fixed batch) for a training run: the batch
    is keyed by the language, like the eval set, so every diag row of every run of a sweep
    is measured on the same tokens."""
    key = jax.random.fold_in(jax.random.PRNGKey(lang.fingerprint()), 0x0D1A6)
    tokens = lang.sample(key, min(batch_size, 32), seq_len)
    return jax.jit(lambda model, t: diag_metrics(model, t, chunk_size=chunk_size)), tokens
