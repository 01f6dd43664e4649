"""The three LM heads: softmax (tied or untied), low-rank W = A B, and Mixture of Softmaxes.

Every head maps final hidden states h_NxD (any leading dims) to normalised float32
log-probabilities. A tied head owns no output matrix: the Transformer passes its input
embedding E_VxD to every call, so the state holds the matrix exactly once.

Linear heads (softmax, lowrank) also expose `linear(h, E) -> (features_NxR, W_VxR)` with
logits = features W^T; the chunked loss uses it to run a fused cross-entropy on the
narrowest factorisation (R = D for softmax, R = r for lowrank).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from spamlang.errors import UserError
from spamlang.model.config import ModelConfig
from spamlang.model.layers import normal_param


def linear_logits(features_NxR: jax.Array, w_VxR: jax.Array, dtype: str) -> jax.Array:
    """features W^T in the compute dtype, accumulated and returned in float32.

    A plain einsum, so forward mode (jvp / jacfwd, used by spamlang.diagnostics) works; the
    training loss's fused chunked path computes the head gradient in its own fast layout.
    """
    return jnp.einsum("...r,vr->...v", features_NxR.astype(dtype), w_VxR.astype(dtype),
                      preferred_element_type=jnp.float32)


class SoftmaxHead(nnx.Module):
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

    def log_probs(self, h_NxD: jax.Array, embed_VxD: jax.Array) -> jax.Array:
        return jax.nn.log_softmax(linear_logits(*self.linear(h_NxD, embed_VxD), self.dtype), -1)


class LowRankHead(nnx.Module):
    """logits = h (A B)^T = (h B^T) A^T, with A: V x r and B: r x D (the paper's section 3.1).

    The product is never formed in the forward pass: h is first projected to r dimensions.
    """

    def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
        self.dtype = config.dtype
        r = config.head_arg
        self.a = normal_param(rngs, (config.vocab_size, r), config)
        self.b = normal_param(rngs, (r, config.d_model), config)

    def matrix(self, embed_VxD: jax.Array) -> jax.Array:
        return self.a[...].astype(jnp.float32) @ self.b[...].astype(jnp.float32)

    def linear(self, h_NxD: jax.Array, embed_VxD: jax.Array):
        b_RxD = self.b[...].astype(self.dtype)
        features_NxR = jnp.einsum("...d,rd->...r", h_NxD.astype(self.dtype), b_RxD,
                                  preferred_element_type=jnp.float32)
        return features_NxR, self.a[...]

    def log_probs(self, h_NxD: jax.Array, embed_VxD: jax.Array) -> jax.Array:
        return jax.nn.log_softmax(linear_logits(*self.linear(h_NxD, embed_VxD), self.dtype), -1)


class MoSHead(nnx.Module):
    """Mixture of K softmaxes (Yang et al. 2018) sharing one output matrix W.

    c_k = tanh(h P_k) with P: D x (K D); prior pi = softmax(h U) with U: D x K;
    log p = logsumexp_k(log pi_k + log_softmax(c_k W^T)), in log space so that no component
    probability underflows. W is the input embedding when tied, else its own V x D matrix.
    """

    def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
        self.dtype = config.dtype
        self.tied = config.tie_embeddings
        self.k = config.head_arg
        D = config.d_model
        self.proj = normal_param(rngs, (D, self.k * D), config)
        self.prior = normal_param(rngs, (D, self.k), config)
        if not self.tied:
            self.w = normal_param(rngs, (config.vocab_size, D), config)

    def matrix(self, embed_VxD: jax.Array) -> jax.Array:
        raise UserError("a Mixture-of-Softmaxes head is nonlinear: it has no single matrix W")

    def linear(self, h_NxD: jax.Array, embed_VxD: jax.Array):
        raise UserError("a Mixture-of-Softmaxes head is nonlinear: it has no single matrix W")

    def log_mixture_weights(self, h_NxD: jax.Array) -> jax.Array:
        """log pi, [..., K], float32."""
        scores = jnp.einsum("...d,dk->...k", h_NxD.astype(self.dtype),
                            self.prior[...].astype(self.dtype), preferred_element_type=jnp.float32)
        return jax.nn.log_softmax(scores, axis=-1)

    def mixture_weights(self, h_NxD: jax.Array) -> jax.Array:
        """pi, [..., K], float32; sums to 1 over K."""
        return jnp.exp(self.log_mixture_weights(h_NxD))

    def component_log_probs(self, h_NxD: jax.Array, embed_VxD: jax.Array) -> jax.Array:
        """log_softmax(c_k W^T) for every component, [..., K, V], float32."""
        *lead, D = h_NxD.shape
        ctx = jnp.einsum("...d,de->...e", h_NxD.astype(self.dtype),
                         self.proj[...].astype(self.dtype), preferred_element_type=jnp.float32)
        ctx_NxKxD = jnp.tanh(ctx).reshape(*lead, self.k, D)
        w = embed_VxD if self.tied else self.w[...]
        return jax.nn.log_softmax(linear_logits(ctx_NxKxD, w, self.dtype), axis=-1)

    def log_probs(self, h_NxD: jax.Array, embed_VxD: jax.Array) -> jax.Array:
        logp_NxKxV = self.component_log_probs(h_NxD, embed_VxD)
        log_pi_NxK = self.log_mixture_weights(h_NxD)
        return jax.nn.logsumexp(logp_NxKxV + log_pi_NxK[..., None], axis=-2)


def make_head(config: ModelConfig, *, rngs: nnx.Rngs) -> nnx.Module:
    cls = {"softmax": SoftmaxHead, "lowrank": LowRankHead, "mos": MoSHead}[config.head_kind]
    return cls(config, rngs=rngs)
