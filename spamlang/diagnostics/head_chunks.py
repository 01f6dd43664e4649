"""One chunk of tokens through an LM head: logits, logit gradient, projection, induced move.

Linear heads are projected on col(W) (`linalg`). The nonlinear mos head is measured through
f(h) = log p: its Jacobian J_t (V x D) takes W's place, built one token at a time with jacfwd,
so at most one V x D Jacobian exists at a time. Gradient rows are unscaled (p - onehot): every
number reported is a ratio.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from spamlang.diagnostics.linalg import head_basis, linear_row_terms, project, row_terms
from spamlang.loss import log_softmax, nll_logit_gradient


class Chunk(NamedTuple):
    """A chunk's arrays, all [C, V] float32; masked-out rows of G, P and U are zero."""

    logits: jax.Array  # z (linear heads) or log p (nonlinear heads)
    G: jax.Array  # (softmax(logits) - onehot(y)) * mask
    P: jax.Array  # projection of each row of G on the head's (local) column space
    U: jax.Array  # induced logit direction: W W^T g (linear) or J J^T g (nonlinear)


def _gradient_rows(logits_CxV, y_C, m_C):  # (softmax - onehot) * mask: the trainer's gradient
    return nll_logit_gradient(log_softmax(logits_CxV), y_C, m_C)


class LinearHead(NamedTuple):
    """W and its basis, once per model; a bias moves the logits, not d logits / dh = W."""

    W: jax.Array  # V x D effective head matrix, float32
    Q: jax.Array  # V x K orthonormal basis of col(W), see `head_basis`
    gram: jax.Array  # W^T W, D x D
    bias: jax.Array | None = None  # V logit offsets, or None for the usual bias-free head

    @classmethod
    def of(cls, W_VxD: jax.Array, bias_V: jax.Array | None = None) -> LinearHead:
        W_VxD = jnp.asarray(W_VxD).astype(jnp.float32)
        bias_V = None if bias_V is None else jnp.asarray(bias_V, jnp.float32)
        return cls(W_VxD, head_basis(W_VxD), W_VxD.T @ W_VxD, bias_V)

    def logits(self, h_CxD) -> jax.Array:
        logits_CxV = h_CxD.astype(jnp.float32) @ self.W.T
        return logits_CxV if self.bias is None else logits_CxV + self.bias

    @property
    def rank(self) -> jax.Array:  # the basis columns `head_basis` kept
        return jnp.sum(jnp.any(self.Q != 0, axis=0))

    def chunk(self, h_CxD, y_C, m_C, *, induced: bool = True, projected: bool = True) -> Chunk:
        """Cost: 2 C V D (logits) + 4 C V K (projected) + 4 C V D (induced)."""
        logits_CxV = self.logits(h_CxD)
        G_CxV = _gradient_rows(logits_CxV, y_C, m_C)
        U_CxV = (G_CxV @ self.W) @ self.W.T if induced else jnp.zeros_like(G_CxV)
        P_CxV = project(G_CxV, self.Q) if projected else jnp.zeros_like(G_CxV)
        return Chunk(logits_CxV, G_CxV, P_CxV, U_CxV)

    def terms(self, h_CxD, y_C, m_C):
        """(per-token BottleneckStats, logits, G) by `linear_row_terms`: 6 C V D FLOPs."""
        logits_CxV = self.logits(h_CxD)
        G_CxV = _gradient_rows(logits_CxV, y_C, m_C)
        terms = linear_row_terms(G_CxV, G_CxV @ self.Q, G_CxV @ self.W, self.gram)
        return terms, logits_CxV, G_CxV


class JacobianHead(NamedTuple):
    """A nonlinear head given as f: h_NxD -> normalised log-probs [N, V] (model.log_probs)."""

    log_probs: Callable[[jax.Array], jax.Array]

    def induced(self, h_CxD, G_CxV) -> jax.Array:
        """J_t J_t^T g_t for every row, by one VJP and one JVP (no Jacobian is formed)."""
        h_CxD = h_CxD.astype(jnp.float32)
        _, pullback = jax.vjp(self.log_probs, h_CxD)
        (grad_h_CxD,) = pullback(G_CxV)
        return jax.jvp(self.log_probs, (h_CxD,), (grad_h_CxD,))[1]

    def jacobian(self, h_D) -> jax.Array:
        """J = d log p / dh at one hidden state, V x D (forward mode: D tangents)."""
        return jax.jacfwd(lambda x_D: self.log_probs(x_D[None])[0])(h_D.astype(jnp.float32))

    def chunk(self, h_CxD, y_C, m_C, *, induced: bool = True, projected: bool = True) -> Chunk:
        """projected=False skips the per-token Jacobians (P = 0), D head passes and a QR each."""
        logits_CxV = self.log_probs(h_CxD.astype(jnp.float32))
        G_CxV = _gradient_rows(logits_CxV, y_C, m_C)
        U_CxV = self.induced(h_CxD, G_CxV) if induced else jnp.zeros_like(G_CxV)
        if projected:

            def one(args):
                h_D, g_V = args
                Q_VxK = head_basis(self.jacobian(h_D))
                return (g_V @ Q_VxK) @ Q_VxK.T

            P_CxV = jax.lax.map(one, (h_CxD, G_CxV))
        else:
            P_CxV = jnp.zeros_like(G_CxV)
        return Chunk(logits_CxV, G_CxV, P_CxV, U_CxV)

    def terms(self, h_CxD, y_C, m_C, *, projected: bool = True):
        """(per-token BottleneckStats, logits, G) by `row_terms`."""
        c = self.chunk(h_CxD, y_C, m_C, projected=projected)
        return row_terms(c.G, c.P, c.U), c.logits, c.G


def head_of(model) -> LinearHead | JacobianHead:
    """A head as measured: its V x D matrix, an mlp head's A, a mos head's Jacobians."""
    kind = model.config.head_kind
    if kind == "mos":
        return JacobianHead(model.log_probs)
    return LinearHead.of(model.head.a[...] if kind == "mlp" else model.head_matrix())


def head_inputs(model, h_NxD: jax.Array) -> jax.Array:
    """What `head_of(model)` takes: an mlp head's features gelu(h B^T), else h itself."""
    kind = model.config.head_kind
    if kind == "mos":
        return h_NxD
    return (model.linear_head(h_NxD)[0] if kind == "mlp" else h_NxD).astype(jnp.float32)
