"""Next-token cross-entropy, plain or chunked so that N x V log-probabilities never exist.

Plain: every position's log-probs at once, the reference. Chunked (`chunk_size=C`): a scan over
chunks of C hidden states, a fused cross-entropy with a custom VJP for heads with a linear last
step, `jax.checkpoint`-ed chunks for mos. Losses are float32; the per-token math at the end of
this file is shared with `spamlang.diagnostics`. Measurements: benchmarks/README.md.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.sharding import PartitionSpec as P

from spamlang.errors import UserError
from spamlang.model.kernels import first_argmax


def next_token_loss(
    model,
    tokens_BxL: jax.Array,
    *,
    chunk_size: int | None = None,
    fused: bool = True,
    mesh: jax.sharding.Mesh | None = None,
):
    """Mean next-token cross-entropy (nats) over positions 1..L-1, and {"accuracy"}.

    chunk_size: None for the plain form, else tokens per chunk; fused=False: the checkpointed scan
    on linear heads too (a reference); mesh: each device's own rows, summed in one `psum`."""
    _check_chunk_size(chunk_size)
    if tokens_BxL.ndim != 2 or tokens_BxL.shape[1] < 2:
        raise UserError(
            f"next_token_loss needs tokens of shape [B, L] with L >= 2, got {tokens_BxL.shape}"
        )
    if mesh is not None and mesh.shape.get("data", 1) > 1:
        # Left to XLA, the chunk scan all-gathered the hidden states onto every device.
        return _data_parallel_loss(model, tokens_BxL, chunk_size, fused, mesh)
    h_NxD, targets_N = _predicted(model.hidden(tokens_BxL), tokens_BxL)
    return loss_from_hidden(model, h_NxD, targets_N, chunk_size=chunk_size, fused=fused)


def _predicted(h_BxLxD, tokens_BxL):  # (h_NxD, targets_N) of positions 1..L-1
    return h_BxLxD[:, :-1].reshape(-1, h_BxLxD.shape[-1]), tokens_BxL[:, 1:].reshape(-1)


def _data_parallel_loss(model, tokens_BxL, chunk_size, fused, mesh):
    """Each device's rows under one shard_map; every parameter is cast to varying once, on entry, so
    that a tied embedding's two uses add up before one all-reduce."""
    graph, state = nnx.split(model)

    def local(state, tokens_bxL):
        replica = nnx.merge(
            graph, jax.tree.map(lambda x: jax.lax.pcast(x, ("data",), to="varying"), state)
        )
        h_nxD, targets_n = _predicted(replica.hidden(tokens_bxL), tokens_bxL)
        mask_n = jnp.ones(targets_n.shape, jnp.float32)
        nll, hits = _sums(replica, h_nxD, targets_n, mask_n, chunk_size, fused)
        return jax.lax.psum(nll, "data"), jax.lax.psum(hits, "data")

    nll_sum, hit_sum = jax.shard_map(
        local, mesh=mesh, in_specs=(P(), P("data")), out_specs=(P(), P())
    )(state, tokens_BxL)
    count = jnp.float32(tokens_BxL.shape[0] * (tokens_BxL.shape[1] - 1))
    return nll_sum / count, {"accuracy": hit_sum / count}


def token_stats(
    model,
    tokens_BxL: jax.Array,
    *,
    chunk_size: int | None = None,
    mesh: jax.sharding.Mesh | None = None,
):
    """Per-position (nll_BxLm1, hit_BxLm1), float32, for evaluation (no custom VJP)."""
    _check_chunk_size(chunk_size)
    h_BxLxD = model.hidden(tokens_BxL)
    L = tokens_BxL.shape[1]

    def local(head, h_bxLxD, tokens_bxL):
        h_nxD, targets_n = _predicted(h_bxLxD, tokens_bxL)
        nll_n, hit_n = _position_stats(head, h_nxD, targets_n.astype(jnp.int32), chunk_size)
        return nll_n.reshape(-1, L - 1), hit_n.reshape(-1, L - 1)

    if mesh is None or mesh.shape.get("data", 1) == 1:
        return local(model, h_BxLxD, tokens_BxL)
    graph, state = nnx.split(model)

    def on_device(state, h_bxLxD, tokens_bxL):
        return local(nnx.merge(graph, state), h_bxLxD, tokens_bxL)

    rows = P("data")
    return jax.shard_map(on_device, mesh=mesh, in_specs=(P(), rows, rows), out_specs=rows)(
        state, h_BxLxD, tokens_BxL
    )


def _position_stats(model, h_NxD, targets_N, chunk_size):  # (nll_N, hit_N), chunk by chunk
    kernels = model.config.kernels

    def stats(h_CxD, t_C):
        return _per_position(model.log_probs(h_CxD), t_C, kernels)

    N = h_NxD.shape[0]
    if chunk_size is None or chunk_size >= N:
        return stats(h_NxD, targets_N)
    xs = (chunk_rows(h_NxD, chunk_size), chunk_rows(targets_N, chunk_size))
    nll_KxC, hit_KxC = jax.lax.map(lambda x: stats(*x), xs)
    return unchunk_rows(nll_KxC, N), unchunk_rows(hit_KxC, N)


def loss_from_hidden(
    model,
    h_NxD: jax.Array,
    targets_N: jax.Array,
    mask_N: jax.Array | None = None,
    *,
    chunk_size: int | None = None,
    fused: bool = True,
):
    """Mean cross-entropy of `targets_N` at `h_NxD` over mask_N (None: all), and {"accuracy"}."""
    targets_N = targets_N.astype(jnp.int32)
    mask_N = (
        jnp.ones(targets_N.shape, jnp.float32) if mask_N is None else mask_N.astype(jnp.float32)
    )
    count = jnp.maximum(mask_N.sum(), 1.0)
    nll_sum, correct_sum = _sums(model, h_NxD, targets_N, mask_N, chunk_size, fused)
    return nll_sum / count, {"accuracy": correct_sum / count}


@jax.named_scope("head_loss")
def _sums(model, h_NxD, targets_N, mask_N, chunk_size, fused):  # (NLL sum, argmax hits), masked
    targets_N = targets_N.astype(jnp.int32)
    kernels = model.config.kernels
    if chunk_size is None:
        return _target_stats(model.log_probs(h_NxD), targets_N, mask_N, kernels)
    _check_chunk_size(chunk_size)
    if fused and model.config.head_kind != "mos":
        features_NxR, w_VxR = model.linear_head(h_NxD)
        return fused_linear_cross_entropy(
            features_NxR, w_VxR, targets_N, mask_N, chunk_size, model.config.dtype, kernels
        )
    return _checkpointed_scan(model, h_NxD, targets_N, mask_N, chunk_size, kernels)


def _check_chunk_size(chunk_size) -> None:
    if chunk_size is not None and (
        isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1
    ):
        raise UserError(f"chunk_size must be a positive integer or None, got {chunk_size!r}")


def _target_stats(logp_NxV: jax.Array, targets_N: jax.Array, mask_N: jax.Array, kernels: str):
    nll_N, hit_N = _per_position(logp_NxV, targets_N, kernels)
    return (nll_N * mask_N).sum(), jax.lax.stop_gradient((hit_N * mask_N).sum())


def _per_position(logp_NxV: jax.Array, targets_N: jax.Array, kernels: str):  # (nll_N, hit_N)
    hit_N = (first_argmax(logp_NxV, kernels) == targets_N).astype(jnp.float32)
    return target_nll(logp_NxV, targets_N), hit_N


def _varying_axes(x: jax.Array) -> tuple:  # the manual mesh axes along which x varies
    aval = jax.typeof(x)
    manual = getattr(aval, "manual_axis_type", None)  # jax >= 0.10; earlier jax calls it vma
    return tuple(manual.varying if manual is not None else getattr(aval, "vma", ()))


def _varying_like(init, ref: jax.Array):
    """`init` typed as varying where `ref` is: a shard_map scan carry of per-device rows."""
    axes = _varying_axes(ref)
    return jax.tree.map(lambda x: jax.lax.pcast(x, axes, to="varying"), init) if axes else init


def _checkpointed_scan(model, h_NxD, targets_N, mask_N, chunk, kernels):
    chunk = min(chunk, h_NxD.shape[0])

    @jax.checkpoint
    def chunk_stats(h_CxD, t_C, m_C):
        return _target_stats(model.log_probs(h_CxD), t_C, m_C, kernels)

    def body(carry, xs):
        nll, hits = chunk_stats(*xs)
        return (carry[0] + nll, carry[1] + hits), None

    xs = tuple(chunk_rows(x, chunk) for x in (h_NxD, targets_N, mask_N))
    init = _varying_like((jnp.float32(0), jnp.float32(0)), h_NxD)
    (nll_sum, correct_sum), _ = jax.lax.scan(body, init, xs)
    return nll_sum, correct_sum


@functools.partial(jax.custom_vjp, nondiff_argnums=(4, 5, 6))
def fused_linear_cross_entropy(
    features_NxR, w_VxR, targets_N, mask_N, chunk: int, dtype: str, kernels: str = "xla"
):
    """(sum of mask * -log softmax(f W^T)[target], masked argmax hits), in chunks of `chunk` rows,
    reverse mode only: the forward computes each chunk's gradient, the backward only scales it."""
    nll_sum, correct_sum, _, _ = _fused_scan(
        features_NxR, w_VxR, targets_N, mask_N, chunk, dtype, kernels, with_grad=False
    )
    return nll_sum, correct_sum


def _fused_fwd(features_NxR, w_VxR, targets_N, mask_N, chunk, dtype, kernels):
    nll_sum, correct_sum, d_features, d_w = _fused_scan(
        features_NxR, w_VxR, targets_N, mask_N, chunk, dtype, kernels, with_grad=True
    )
    # w_VxR[:0] carries w's mesh-axis type (not its values) to the backward pass.
    return (nll_sum, correct_sum), (d_features, d_w, targets_N, mask_N, w_VxR[:0])


def _fused_bwd(chunk, dtype, kernels, residuals, cotangents):
    d_features, d_w, targets_N, mask_N, w_type = residuals
    g = cotangents[0]  # the hit count is piecewise constant: its cotangent is dropped
    # Under shard_map d_w holds only this device's rows: W's cotangent is their sum.
    d_w = g * d_w
    extra = tuple(set(_varying_axes(d_w)) - set(_varying_axes(w_type)))
    if extra:
        d_w = jax.lax.psum(d_w, extra)
    return (
        (g * d_features).astype(d_features.dtype),
        d_w.astype(w_type.dtype),
        np.zeros(targets_N.shape, jax.dtypes.float0),  # integer inputs take float0 cotangents
        jnp.zeros_like(mask_N),
    )


fused_linear_cross_entropy.defvjp(_fused_fwd, _fused_bwd)


def _fused_scan(features_NxR, w_VxR, targets_N, mask_N, chunk, dtype, kernels, *, with_grad: bool):
    N, R = features_NxR.shape
    V = w_VxR.shape[0]
    chunk = min(chunk, N)
    w_c = w_VxR.astype(dtype)

    def body(carry, xs):
        f_CxR, t_C, m_C = xs
        f_c = f_CxR.astype(dtype)
        logits_CxV = jnp.einsum("cr,vr->cv", f_c, w_c, preferred_element_type=jnp.float32)
        # logits - lse, not `log_softmax`: the form every run so far was trained with.
        logp_CxV = logits_CxV - jax.nn.logsumexp(logits_CxV, axis=-1)[:, None]
        nll, hits = _target_stats(logp_CxV, t_C, m_C, kernels)
        nll_sum, hit_sum, dw_RxV = carry
        if not with_grad:
            return (nll_sum + nll, hit_sum + hits, dw_RxV), None
        dlogits_CxV = nll_logit_gradient(logp_CxV, t_C, m_C).astype(dtype)  # masked rows zeroed
        # dW accumulated transposed (R x V): XLA:CPU runs the wide output faster.
        dw_RxV = dw_RxV + jnp.einsum(
            "cr,cv->rv", f_c, dlogits_CxV, preferred_element_type=jnp.float32
        )
        df_CxR = jnp.einsum("cv,vr->cr", dlogits_CxV, w_c, preferred_element_type=jnp.float32)
        return (nll_sum + nll, hit_sum + hits, dw_RxV), df_CxR

    xs = tuple(chunk_rows(x, chunk) for x in (features_NxR, targets_N, mask_N))
    dw0 = jnp.zeros((R, V) if with_grad else (0, 0), jnp.float32)
    init = _varying_like((jnp.float32(0), jnp.float32(0), dw0), features_NxR)
    (nll_sum, hit_sum, dw_RxV), df = jax.lax.scan(body, init, xs)
    if not with_grad:
        return nll_sum, hit_sum, None, None
    d_features = unchunk_rows(df, N).astype(features_NxR.dtype)
    return nll_sum, hit_sum, d_features, dw_RxV.T.astype(w_VxR.dtype)


def log_softmax(logits_NxV: jax.Array) -> jax.Array:
    """float32 log-probabilities (precise near 0; the fused scan's x - logsumexp(x) is not)."""
    return jax.nn.log_softmax(logits_NxV.astype(jnp.float32), axis=-1)


def target_nll(logp_NxV: jax.Array, targets_N: jax.Array) -> jax.Array:
    """-logp_NxV[n, targets_N[n]] from normalised log-probs (a gather, no one-hot)."""
    return -jnp.take_along_axis(logp_NxV, targets_N[:, None], axis=-1)[:, 0]


def token_nll(logits_NxV: jax.Array, targets_N: jax.Array) -> jax.Array:
    return target_nll(log_softmax(logits_NxV), targets_N)


def nll_logit_gradient(logp_NxV: jax.Array, targets_N: jax.Array, weight=None) -> jax.Array:
    """(softmax - onehot) * weight from the log-probs; weight: None, 1 / N or a mask."""
    is_target_NxV = jnp.arange(logp_NxV.shape[-1])[None, :] == targets_N[:, None]
    p_NxV = jnp.exp(logp_NxV)
    grad_NxV = jnp.where(is_target_NxV, p_NxV - 1.0, p_NxV)  # p - onehot without the one-hot
    if weight is None:
        return grad_NxV
    weight = jnp.asarray(weight, jnp.float32)
    return grad_NxV * (weight[:, None] if weight.ndim else weight)


def num_chunks(n: int, chunk: int) -> int:  # the last one padded
    return -(-n // chunk)


def chunk_rows(x_N, chunk: int, fill=0):
    """x_N padded with `fill` and folded to [num_chunks, chunk, ...]; NumPy stays NumPy."""
    xp = np if isinstance(x_N, np.ndarray) else jnp
    K = num_chunks(x_N.shape[0], chunk)
    pad = [(0, K * chunk - x_N.shape[0])] + [(0, 0)] * (x_N.ndim - 1)
    return xp.pad(x_N, pad, constant_values=fill).reshape(K, chunk, *x_N.shape[1:])


def unchunk_rows(x_KxC, n: int):
    """The inverse of `chunk_rows`: [n, ...] with the padding dropped."""
    return x_KxC.reshape(-1, *x_KxC.shape[2:])[:n]


def chunk_mask(n: int, chunk: int) -> np.ndarray:
    """float32 [num_chunks, chunk]: 1 on the n real rows of `chunk_rows`, 0 on its padding."""
    return chunk_rows(np.ones(n, np.float32), chunk)
