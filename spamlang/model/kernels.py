"""The model's matmul, attention and argmax, in two implementations chosen by `ModelConfig.kernels`.

"xla" is the plain, backend-neutral path, which leaves XLA free to pick its fused kernels
(cuDNN attention on GPUs). "cpu" gives the same results in layouts tuned for XLA:CPU
(measurements: benchmarks/README.md); its dense and attention are custom VJPs, reverse mode
only, so forward-mode code (the diagnostics' head Jacobians) must use "xla".
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from spamlang.errors import UserError
from spamlang.model.config import KERNELS

__all__ = ["KERNELS", "attention", "dense", "first_argmax", "resolve", "weight_grad"]


def resolve(name: str, platform: str) -> str:
    """The kernels for `name` ("auto" or one of KERNELS) on a device platform."""
    if name == "auto":
        return "cpu" if platform == "cpu" else "xla"
    if name in KERNELS:
        return name
    raise UserError(f"kernels must be one of auto, {', '.join(KERNELS)}; got {name!r}")


def dense(x_xA: jax.Array, w_AxB: jax.Array, kernels: str) -> jax.Array:
    if kernels == "cpu":
        return _cpu_dense(x_xA, w_AxB)
    return x_xA @ w_AxB


def attention(
    q_BxLxNxH: jax.Array, k_BxLxKxH: jax.Array, v_BxLxKxH: jax.Array, kernels: str
) -> jax.Array:
    if kernels == "cpu":
        return causal_gqa_attention(q_BxLxNxH, k_BxLxKxH, v_BxLxKxH)
    return jax.nn.dot_product_attention(q_BxLxNxH, k_BxLxKxH, v_BxLxKxH, is_causal=True)


def first_argmax(x: jax.Array, kernels: str, axis: int = -1) -> jax.Array:
    """int32 index of the first maximum along `axis`; "cpu": a min-reduce over the indices of the
    max, faster on XLA:CPU (on a NaN slice it gives x.shape[axis], argmax the first NaN)."""
    if kernels != "cpu":
        return jnp.argmax(x, axis=axis).astype(jnp.int32)
    axis = axis % x.ndim
    n = x.shape[axis]
    index = lax.broadcasted_iota(jnp.int32, x.shape, axis)
    is_max = x == x.max(axis=axis, keepdims=True)
    return jnp.min(jnp.where(is_max, index, n), axis=axis)


def _materialised_t(x: jax.Array) -> jax.Array:
    """x with its last two axes swapped as a real copy (a plain .T would be folded into the dot)."""
    return lax.optimization_barrier(jnp.swapaxes(x, -1, -2))


def weight_grad(x_NxA: jax.Array, g_NxB: jax.Array) -> jax.Array:
    """x^T g, [A, B], float32-accumulated, in the layout XLA:CPU runs fast."""
    f32 = jnp.float32
    if g_NxB.shape[-1] >= x_NxA.shape[-1]:
        return jnp.matmul(_materialised_t(x_NxA), g_NxB, preferred_element_type=f32)
    return jnp.matmul(_materialised_t(g_NxB), x_NxA, preferred_element_type=f32).T


def _rows(x: jax.Array) -> jax.Array:
    return x.reshape(-1, x.shape[-1])


@jax.custom_vjp
def _cpu_dense(x_xA: jax.Array, w_AxB: jax.Array) -> jax.Array:
    return x_xA @ w_AxB


def _dense_bwd(res, g):
    x, w = res
    g = g.astype(x.dtype)
    dx = g @ w.T
    return dx.astype(x.dtype), weight_grad(_rows(x), _rows(g)).astype(w.dtype)


_cpu_dense.defvjp(lambda x, w: (x @ w, (x, w)), _dense_bwd)


def _causal_probs(q_BxKxTxH, k_BxKxSxH):
    """Row-softmax of q k^T (float32) with the causal mask; row t is position t % S."""
    S = k_BxKxSxH.shape[2]
    s = jnp.einsum("bkth,bksh->bkts", q_BxKxTxH, k_BxKxSxH, preferred_element_type=jnp.float32)
    pos_T = jnp.arange(q_BxKxTxH.shape[2]) % S
    s = jnp.where(pos_T[:, None] >= jnp.arange(S)[None, :], s, -jnp.inf)
    e = jnp.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@jax.custom_vjp
def _attention_core(q_t, k_t, v_t):
    return _causal_probs(q_t, k_t).astype(v_t.dtype) @ v_t


def _core_fwd(q_t, k_t, v_t):
    p = _causal_probs(q_t, k_t)
    return p.astype(v_t.dtype) @ v_t, (q_t, k_t, v_t, p)


def _core_bwd(res, do):
    q_t, k_t, v_t, p = res
    dt = v_t.dtype
    do = do.astype(dt)
    dv = _materialised_t(p).astype(dt) @ do
    dp = jnp.einsum("bkth,bksh->bkts", do, v_t, preferred_element_type=jnp.float32)
    ds = (p * (dp - (dp * p).sum(-1, keepdims=True))).astype(dt)
    return ds @ k_t, _materialised_t(ds) @ q_t, dv


_attention_core.defvjp(_core_fwd, _core_bwd)


def causal_gqa_attention(
    q_BxLxNxH: jax.Array, k_BxLxKxH: jax.Array, v_BxLxKxH: jax.Array
) -> jax.Array:
    """Causal GQA attention, the G = N / K query heads of a KV head stacked in one product."""
    B, L, N, H = q_BxLxNxH.shape
    K = k_BxLxKxH.shape[2]
    G = N // K
    q = q_BxLxNxH * jnp.asarray(H**-0.5, q_BxLxNxH.dtype)
    q_t = q.reshape(B, L, K, G, H).transpose(0, 2, 3, 1, 4).reshape(B, K, G * L, H)
    o_t = _attention_core(q_t, k_BxLxKxH.transpose(0, 2, 1, 3), v_BxLxKxH.transpose(0, 2, 1, 3))
    return o_t.reshape(B, K, G, L, H).transpose(0, 3, 1, 2, 4).reshape(B, L, N, H)


# Auto micro-batches keep the widest activation within half an L2 cache (benchmarks/README.md).
_CPU_MICRO_FLOATS = 2**18


def micro_batches(config, mesh: jax.sharding.Mesh, kernels: str) -> int:
    """Micro-batches a step scans over: `micro_batch`'s, or auto (0) with the cpu kernels only."""
    n_dev = mesh.devices.size
    rows = config.batch_size // n_dev  # per device
    if config.micro_batch:
        if config.micro_batch % n_dev:
            raise UserError(
                f"micro_batch ({config.micro_batch}) must be divisible by the number "
                f"of devices ({n_dev})"
            )
        return config.batch_size // config.micro_batch
    if kernels != "cpu":
        return 1
    model = config.model_config()
    width = max(model.d_ff, model.n_heads * config.seq_len)
    want = max(1, _CPU_MICRO_FLOATS // (width * config.seq_len))  # rows per micro-batch
    micro_rows = max(r for r in range(1, min(want, rows) + 1) if rows % r == 0)
    return rows // micro_rows
