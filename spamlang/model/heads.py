"""The four LM heads: softmax (tied or untied), low-rank W = A B, Mixture of Softmaxes, and
the nonlinear wide head mlp (logits = gelu(h B^T) A^T).

Every head maps hidden states h_NxD to float32 log-probabilities; a tied head owns no matrix (the
Transformer passes E_VxD to every call). Heads with a linear last step also expose `linear(h, E)
-> (features_NxR, W_VxR)`, the narrowest factorisation that the chunked loss fuses.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from spamlang.errors import UserError
from spamlang.model.config import ModelConfig
from spamlang.model.layers import normal_param

# sqrt(E[gelu(x)^2]), x ~ N(0, 1): the mlp head's A is divided by it (the softmax's scale).
PHI_RMS = math.sqrt(1 / 3 + 1 / (2 * math.pi * math.sqrt(3)))


def _einsum(spec: str, x: jax.Array, w: jax.Array, dtype: str) -> jax.Array:
    """A product in the compute dtype, float32 out; a plain einsum, so forward mode works."""
    return jnp.einsum(spec, x.astype(dtype), w.astype(dtype), preferred_element_type=jnp.float32)


def linear_logits(features_NxR: jax.Array, w_VxR: jax.Array, dtype: str) -> jax.Array:
    return _einsum("...r,vr->...v", features_NxR, w_VxR, dtype)


def _raises(message: str):  # a method a head without that structure answers with a UserError
    def method(self, *args):
        raise UserError(message)

    return method


class _LinearLastStep(nnx.Module):
    def log_probs(self, h_NxD: jax.Array, embed_VxD: jax.Array) -> jax.Array:
        return jax.nn.log_softmax(linear_logits(*self.linear(h_NxD, embed_VxD), self.dtype), -1)


class SoftmaxHead(_LinearLastStep):
    """logits = h W^T; W is the input embedding when tied, else a V x D parameter."""

    def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
        self.dtype = config.dtype
        self.tied = config.tie_embeddings
        if not self.tied:
            self.w = normal_param(rngs, (config.vocab_size, config.d_model), config)

    def matrix(self, embed_VxD: jax.Array) -> jax.Array:
        return embed_VxD if self.tied else self.w[...]

    def linear(self, h_NxD: jax.Array, embed_VxD: jax.Array):
        return h_NxD, self.matrix(embed_VxD)


class _Factored(_LinearLastStep):
    """A: V x r and B: r x D, initialised so that the logit scale does not depend on r (else a rank
    sweep sweeps it too): B ~ N(0, 1/D), A ~ N(0, init_std^2 D / (r c^2)), c a feature's RMS."""

    FEATURE_RMS = 1.0

    def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
        self.dtype = config.dtype
        V, D, r = config.vocab_size, config.d_model, config.head_arg
        std_a = config.init_std * math.sqrt(D / r) / self.FEATURE_RMS
        self.a = normal_param(rngs, (V, r), config, std=std_a)
        self.b = normal_param(rngs, (r, D), config, std=1 / math.sqrt(D))

    def _project(self, h_NxD: jax.Array) -> jax.Array:
        return _einsum("...d,rd->...r", h_NxD, self.b[...], self.dtype)


class LowRankHead(_Factored):
    """logits = h (A B)^T = (h B^T) A^T (the paper's section 3.1), of rank min(r, D)."""

    def matrix(self, embed_VxD: jax.Array) -> jax.Array:
        return self.a[...].astype(jnp.float32) @ self.b[...].astype(jnp.float32)

    def linear(self, h_NxD: jax.Array, embed_VxD: jax.Array):
        return self._project(h_NxD), self.a[...]


def gelu(x: jax.Array) -> jax.Array:
    """The exact (erf) GELU, whose PHI_RMS has a closed form."""
    return jax.nn.gelu(x, approximate=False)


class MLPHead(_Factored):
    """logits = gelu(h B^T) A^T, untied: rank up to min(r, V), no longer capped by the width."""

    FEATURE_RMS = PHI_RMS
    matrix = _raises("an mlp head is nonlinear: it has no single V x d_model matrix W")

    def linear(self, h_NxD: jax.Array, embed_VxD: jax.Array):
        return gelu(self._project(h_NxD)), self.a[...]


class MoSHead(nnx.Module):
    """Mixture of K softmaxes (Yang et al. 2018) sharing W (the embedding when tied): c_k = tanh(h
    P_k), pi = softmax(h U), log p = logsumexp_k(log pi_k + log_softmax(c_k W^T))."""

    matrix = linear = _raises("a Mixture-of-Softmaxes head is nonlinear: it has no single matrix W")

    def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
        self.dtype = config.dtype
        self.tied = config.tie_embeddings
        self.k = config.head_arg
        D = config.d_model
        self.proj = normal_param(rngs, (D, self.k * D), config)
        self.prior = normal_param(rngs, (D, self.k), config)
        if not self.tied:
            self.w = normal_param(rngs, (config.vocab_size, D), config)

    def log_mixture_weights(self, h_NxD: jax.Array) -> jax.Array:
        """log pi, [..., K], float32."""
        scores = _einsum("...d,dk->...k", h_NxD, self.prior[...], self.dtype)
        return jax.nn.log_softmax(scores, axis=-1)

    def component_log_probs(self, h_NxD: jax.Array, embed_VxD: jax.Array) -> jax.Array:
        """log_softmax(c_k W^T) for every component, [..., K, V], float32."""
        *lead, D = h_NxD.shape
        ctx = _einsum("...d,de->...e", h_NxD, self.proj[...], self.dtype)
        ctx_NxKxD = jnp.tanh(ctx).reshape(*lead, self.k, D)
        w = embed_VxD if self.tied else self.w[...]
        return jax.nn.log_softmax(linear_logits(ctx_NxKxD, w, self.dtype), axis=-1)

    def log_probs(self, h_NxD: jax.Array, embed_VxD: jax.Array) -> jax.Array:
        logp_NxKxV = self.component_log_probs(h_NxD, embed_VxD)
        log_pi_NxK = self.log_mixture_weights(h_NxD)
        return jax.nn.logsumexp(logp_NxKxV + log_pi_NxK[..., None], axis=-2)


def make_head(config: ModelConfig, *, rngs: nnx.Rngs) -> nnx.Module:
    kinds = {"softmax": SoftmaxHead, "lowrank": LowRankHead, "mos": MoSHead, "mlp": MLPHead}
    return kinds[config.head_kind](config, rngs=rngs)
