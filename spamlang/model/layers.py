"""The blocks of the decoder: RMSNorm, rotary embeddings, grouped-query attention, SwiGLU.

Weights are stored in param_dtype as input x output matrices (x_BxLxD @ w_DxF) and cast to
the compute dtype at each matmul (through `spamlang.model.kernels`). Every matrix here is
initialised N(0, init_std^2), the Llama/SmolLM2 convention (`initializer_range`), with no
depth-scaled output projections; RMSNorm scales start at 1.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from spamlang.model import kernels
from spamlang.model.config import ModelConfig


def normal_param(
    rngs: nnx.Rngs, shape: tuple[int, ...], config: ModelConfig, *, std: float | None = None
) -> nnx.Param:
    """A parameter drawn from N(0, std^2) (default: config.init_std), stored in param_dtype."""
    std = config.init_std if std is None else std
    value = jax.random.normal(rngs.params(), shape, jnp.float32) * std
    return nnx.Param(value.astype(config.param_dtype))


class RMSNorm(nnx.Module):
    """y = x / sqrt(mean(x^2) + eps) * scale, computed in float32 whatever the input dtype."""

    def __init__(self, config: ModelConfig):
        self.eps = config.norm_eps
        self.scale = nnx.Param(jnp.ones((config.d_model,), config.param_dtype))

    @jax.named_scope("norm")
    def __call__(self, x_BxLxD: jax.Array) -> jax.Array:
        x = x_BxLxD.astype(jnp.float32)
        x = x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + self.eps)
        return x * self.scale[...].astype(jnp.float32)


def rope_tables(positions_L: jax.Array, head_dim: int, theta: float):
    """cos and sin [L, head_dim] in the transformers layout (Llama's exactly)."""
    inv_freq = theta ** (-jnp.arange(0, head_dim, 2, dtype=jnp.float32) / head_dim)
    angles_LxH = positions_L.astype(jnp.float32)[:, None] * inv_freq[None, :]
    angles_LxH = jnp.concatenate([angles_LxH, angles_LxH], axis=-1)
    return jnp.cos(angles_LxH), jnp.sin(angles_LxH)


def apply_rope(x_BxLxNxH: jax.Array, cos_LxH: jax.Array, sin_LxH: jax.Array) -> jax.Array:
    """Rotate pairs (x_i, x_{i+H/2}) by the position angle ("rotate half"), in float32."""
    x = x_BxLxNxH.astype(jnp.float32)
    half = x.shape[-1] // 2
    rotated = jnp.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    cos, sin = cos_LxH[None, :, None, :], sin_LxH[None, :, None, :]
    return (x * cos + rotated * sin).astype(x_BxLxNxH.dtype)


class _Projections(nnx.Module):  # matmuls in config.dtype through config.kernels
    def __init__(self, config: ModelConfig):
        self.dtype = config.dtype
        self.kernels = config.kernels

    def _dense(self, x: jax.Array, w: nnx.Param) -> jax.Array:
        return kernels.dense(x, w[...].astype(self.dtype), self.kernels)


class Attention(_Projections):
    """Causal grouped-query attention; cached decoding masks explicitly (queries start at `pos`)."""

    def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
        super().__init__(config)
        D, N, K, H = config.d_model, config.n_heads, config.n_kv_heads, config.head_dim
        self.n_heads, self.n_kv_heads, self.head_dim = N, K, H
        self.rope_theta = config.rope_theta
        self.wq = normal_param(rngs, (D, N * H), config)
        self.wk = normal_param(rngs, (D, K * H), config)
        self.wv = normal_param(rngs, (D, K * H), config)
        self.wo = normal_param(rngs, (N * H, D), config)

    def _qkv(self, x_BxLxD: jax.Array, positions_L: jax.Array):
        B, L, _ = x_BxLxD.shape
        x = x_BxLxD.astype(self.dtype)
        q = self._dense(x, self.wq).reshape(B, L, self.n_heads, self.head_dim)
        k = self._dense(x, self.wk).reshape(B, L, self.n_kv_heads, self.head_dim)
        v = self._dense(x, self.wv).reshape(B, L, self.n_kv_heads, self.head_dim)
        cos, sin = rope_tables(positions_L, self.head_dim, self.rope_theta)
        return apply_rope(q, cos, sin), apply_rope(k, cos, sin), v

    def _out(self, o_BxLxNxH: jax.Array) -> jax.Array:
        B, L = o_BxLxNxH.shape[:2]
        return self._dense(o_BxLxNxH.reshape(B, L, -1), self.wo)

    @jax.named_scope("attention")
    def __call__(self, x_BxLxD: jax.Array) -> jax.Array:
        q, k, v = self._qkv(x_BxLxD, jnp.arange(x_BxLxD.shape[1]))
        return self._out(kernels.attention(q, k, v, self.kernels))

    def cached(self, x_BxTxD: jax.Array, kv: dict, pos: jax.Array):
        """Write T new tokens at pos..pos+T-1 into the cache kv, then attend to it."""
        T, S = x_BxTxD.shape[1], kv["k"].shape[1]
        q, k, v = self._qkv(x_BxTxD, pos + jnp.arange(T))
        start = (0, pos, 0, 0)
        kv = {
            "k": jax.lax.dynamic_update_slice(kv["k"], k.astype(kv["k"].dtype), start),
            "v": jax.lax.dynamic_update_slice(kv["v"], v.astype(kv["v"].dtype), start),
        }
        visible_TxS = jnp.arange(S)[None, :] <= pos + jnp.arange(T)[:, None]
        o = jax.nn.dot_product_attention(
            q, kv["k"].astype(q.dtype), kv["v"].astype(q.dtype), mask=visible_TxS[None, None]
        )
        return self._out(o), kv


class MLP(_Projections):
    """SwiGLU: down(silu(x W_gate) * (x W_up))."""

    def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
        super().__init__(config)
        D, F = config.d_model, config.d_ff
        self.w_gate = normal_param(rngs, (D, F), config)
        self.w_up = normal_param(rngs, (D, F), config)
        self.w_down = normal_param(rngs, (F, D), config)

    @jax.named_scope("mlp")
    def __call__(self, x_BxLxD: jax.Array) -> jax.Array:
        x = x_BxLxD.astype(self.dtype)
        gate_BxLxF = self._dense(x, self.w_gate)
        up_BxLxF = self._dense(x, self.w_up)
        return self._dense(jax.nn.silu(gate_BxLxF) * up_BxLxF, self.w_down)


class Block(nnx.Module):
    """Pre-norm block. residual: x + attn(norm(x)), then + mlp(norm(x)); else replace x."""

    def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
        self.residual = config.residual
        self.attn_norm = RMSNorm(config)
        self.attn = Attention(config, rngs=rngs)
        self.mlp_norm = RMSNorm(config)
        self.mlp = MLP(config, rngs=rngs)

    def _add(self, x: jax.Array, update: jax.Array) -> jax.Array:
        return x + update.astype(x.dtype) if self.residual else update.astype(x.dtype)

    def __call__(self, x_BxLxD: jax.Array) -> jax.Array:
        x = self._add(x_BxLxD, self.attn(self.attn_norm(x_BxLxD)))
        return self._add(x, self.mlp(self.mlp_norm(x)))

    def cached(self, x_BxTxD: jax.Array, kv: dict, pos: jax.Array):
        update, kv = self.attn.cached(self.attn_norm(x_BxTxD), kv, pos)
        x = self._add(x_BxTxD, update)
        return self._add(x, self.mlp(self.mlp_norm(x))), kv
