"""The four LM heads: softmax (tied or untied), low-rank W = A B, Mixture of Softmaxes, and
the nonlinear wide head mlp (logits = gelu(h B^T) A^T).

Every head maps final hidden states h_NxD (any leading dims) to normalised float32
log-probabilities. A tied head owns no output matrix: the Transformer passes its input
embedding E_VxD to every call, so the state holds the matrix exactly once.

Heads whose last step is linear (softmax, lowrank, mlp) also expose
`linear(h, E) -> (features_NxR, W_VxR)` with logits = features W^T; the chunked loss uses it to
run a fused cross-entropy on the narrowest factorisation (R = D for softmax, R = r for lowrank
and mlp, whose nonlinearity is inside the features).

Init of the factored heads (lowrank:r, mlp:r): the initial logit scale must not depend on r,
else a rank sweep also sweeps the initial logit scale. The final RMSNorm hands the head
unit-RMS hidden states (scale 1 at init), so B ~ N(0, 1/D) gives pre-activations h B^T of unit
RMS like h, and A ~ N(0, init_std^2 D / (r c^2)), with c the RMS of a feature (1 for lowrank,
PHI_RMS for mlp), gives logits of std init_std sqrt(D): exactly the softmax head's
(W ~ N(0, init_std^2), rows of norm init_std sqrt(D)), for every r. (N(0, init_std^2) for both
factors, the rule before, made the logit std init_std^2 sqrt(r D), growing as sqrt(r).)

`diag_features(h, E)` and `diag_matrix(E)` give the linear map the gradient diagnostics
measure (spamlang.diagnostics): logits = diag_features W^T with W = diag_matrix. softmax and
lowrank: h and the V x D matrix (A B for lowrank), so the kernel fraction is that of the
gradient w.r.t. h; mlp: its features gelu(h B^T) and A, so it is that of the gradient w.r.t.
the head's r features, against col(A). mos has neither (nonlinear in h throughout).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from spamlang.errors import UserError
from spamlang.model.config import ModelConfig
from spamlang.model.layers import normal_param

# sqrt(E[gelu(x)^2]) for x ~ N(0, 1) with the exact (erf) GELU: E[x^2 Phi(x)^2] = 1/3 +
# 1/(2 pi sqrt 3) (tests/test_head_isolation.py checks it by quadrature). The mlp head's A is
# divided by it so that its logits start at the softmax head's scale.
PHI_RMS = math.sqrt(1 / 3 + 1 / (2 * math.pi * math.sqrt(3)))


def linear_logits(features_NxR: jax.Array, w_VxR: jax.Array, dtype: str) -> jax.Array:
    """features W^T in the compute dtype, accumulated and returned in float32.

    A plain einsum, so forward mode (jvp / jacfwd, used by spamlang.diagnostics) works; the
    training loss's fused chunked path computes the head gradient in its own fast layout.
    """
    return jnp.einsum(
        "...r,vr->...v",
        features_NxR.astype(dtype),
        w_VxR.astype(dtype),
        preferred_element_type=jnp.float32,
    )


class _LinearLastStep(nnx.Module):
    """What the heads whose last step is linear (logits = features W^T) share: log-probs from
    `linear`, and the diagnostics' view, h against the V x D matrix (an mlp head overrides it:
    its features against A). Lowrank too is measured against A B on h, not A on h B^T: for
    r > D, col(A B) is a D-dimensional part of col(A)."""

    def log_probs(self, h_NxD: jax.Array, embed_VxD: jax.Array) -> jax.Array:
        return jax.nn.log_softmax(linear_logits(*self.linear(h_NxD, embed_VxD), self.dtype), -1)

    def diag_features(self, h_NxD: jax.Array, embed_VxD: jax.Array) -> jax.Array:
        return h_NxD

    def diag_matrix(self, embed_VxD: jax.Array) -> jax.Array:
        return self.matrix(embed_VxD)


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


def _factors(config: ModelConfig, rngs: nnx.Rngs, feature_rms: float):
    """(A: V x r, B: r x D) of a factored head whose features have RMS `feature_rms` when
    h B^T has unit RMS; the init rule of the module docstring (logit std init_std sqrt(D))."""
    V, D, r = config.vocab_size, config.d_model, config.head_arg
    std_a = config.init_std * math.sqrt(D / r) / feature_rms
    a_VxR = normal_param(rngs, (V, r), config, std=std_a)
    b_RxD = normal_param(rngs, (r, D), config, std=1 / math.sqrt(D))
    return a_VxR, b_RxD


def _project(h_NxD: jax.Array, b_RxD: nnx.Param, dtype: str) -> jax.Array:
    """h B^T in the compute dtype, accumulated and returned in float32."""
    return jnp.einsum(
        "...d,rd->...r",
        h_NxD.astype(dtype),
        b_RxD[...].astype(dtype),
        preferred_element_type=jnp.float32,
    )


class LowRankHead(_LinearLastStep):
    """logits = h (A B)^T = (h B^T) A^T, with A: V x r and B: r x D (the paper's section 3.1).

    The product is never formed in the forward pass: h is first projected to r dimensions.
    Its rank is min(r, D): r > D is allowed but adds no rank. Init (module docstring):
    B ~ N(0, 1/D), so h B^T has unit RMS like the final-normed h; A ~ N(0, init_std^2 D / r),
    so a row of A has the expected norm of a softmax W row (init_std sqrt(D)) and the logit
    std is init_std sqrt(D), softmax's, for every r.
    """

    def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
        self.dtype = config.dtype
        self.a, self.b = _factors(config, rngs, feature_rms=1.0)

    def matrix(self, embed_VxD: jax.Array) -> jax.Array:
        return self.a[...].astype(jnp.float32) @ self.b[...].astype(jnp.float32)

    def linear(self, h_NxD: jax.Array, embed_VxD: jax.Array):
        return _project(h_NxD, self.b, self.dtype), self.a[...]


def gelu(x: jax.Array) -> jax.Array:
    """The mlp head's nonlinearity: the exact (erf) GELU, whose PHI_RMS has a closed form."""
    return jax.nn.gelu(x, approximate=False)


class MLPHead(_LinearLastStep):
    """logits = gelu(h B^T) A^T, with B: r x D and A: V x r; untied.

    A wide nonlinear head: r may exceed D, and the logit matrix over many inputs then has
    rank up to min(r, V), not D; the backbone width no longer caps it. Its last step is
    linear, so `linear` returns (gelu(h B^T) in float32, A) and the fused chunked loss runs
    on it unchanged. It has no single V x D matrix (`matrix` raises).

    Init (module docstring): B ~ N(0, 1/D), so the pre-activations h B^T have unit std;
    A ~ N(0, init_std^2 D / (r PHI_RMS^2)), so the logit std is init_std sqrt(D), the
    softmax head's, for every r. (GELU's features have a mean of 1/(2 sqrt(pi)), so about
    19% of that initial logit variance is a per-token offset shared by every input.)
    """

    def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
        self.dtype = config.dtype
        self.a, self.b = _factors(config, rngs, feature_rms=PHI_RMS)

    def matrix(self, embed_VxD: jax.Array) -> jax.Array:
        raise UserError("an mlp head is nonlinear: it has no single V x d_model matrix W")

    def linear(self, h_NxD: jax.Array, embed_VxD: jax.Array):
        return gelu(_project(h_NxD, self.b, self.dtype)), self.a[...]

    def diag_features(self, h_NxD: jax.Array, embed_VxD: jax.Array) -> jax.Array:
        return self.linear(h_NxD, embed_VxD)[0]

    def diag_matrix(self, embed_VxD: jax.Array) -> jax.Array:
        return self.a[...]


_MOS_NOT_LINEAR = (
    "a Mixture-of-Softmaxes head has no linear last step: the diagnostics "
    "measure it by its Jacobians (spamlang.diagnostics.head_chunks.JacobianHead)"
)


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

    def diag_features(self, h_NxD: jax.Array, embed_VxD: jax.Array) -> jax.Array:
        raise UserError(_MOS_NOT_LINEAR)

    def diag_matrix(self, embed_VxD: jax.Array) -> jax.Array:
        raise UserError(_MOS_NOT_LINEAR)

    def log_mixture_weights(self, h_NxD: jax.Array) -> jax.Array:
        """log pi, [..., K], float32."""
        scores = jnp.einsum(
            "...d,dk->...k",
            h_NxD.astype(self.dtype),
            self.prior[...].astype(self.dtype),
            preferred_element_type=jnp.float32,
        )
        return jax.nn.log_softmax(scores, axis=-1)

    def mixture_weights(self, h_NxD: jax.Array) -> jax.Array:
        """pi, [..., K], float32; sums to 1 over K."""
        return jnp.exp(self.log_mixture_weights(h_NxD))

    def component_log_probs(self, h_NxD: jax.Array, embed_VxD: jax.Array) -> jax.Array:
        """log_softmax(c_k W^T) for every component, [..., K, V], float32."""
        *lead, D = h_NxD.shape
        ctx = jnp.einsum(
            "...d,de->...e",
            h_NxD.astype(self.dtype),
            self.proj[...].astype(self.dtype),
            preferred_element_type=jnp.float32,
        )
        ctx_NxKxD = jnp.tanh(ctx).reshape(*lead, self.k, D)
        w = embed_VxD if self.tied else self.w[...]
        return jax.nn.log_softmax(linear_logits(ctx_NxKxD, w, self.dtype), axis=-1)

    def log_probs(self, h_NxD: jax.Array, embed_VxD: jax.Array) -> jax.Array:
        logp_NxKxV = self.component_log_probs(h_NxD, embed_VxD)
        log_pi_NxK = self.log_mixture_weights(h_NxD)
        return jax.nn.logsumexp(logp_NxKxV + log_pi_NxK[..., None], axis=-2)


def make_head(config: ModelConfig, *, rngs: nnx.Rngs) -> nnx.Module:
    cls = {"softmax": SoftmaxHead, "lowrank": LowRankHead, "mos": MoSHead, "mlp": MLPHead}[
        config.head_kind
    ]
    return cls(config, rngs=rngs)
