"""How much of a logit gradient survives the LM head: kernel fraction, cosines, ranks.

Notation (the paper's section 2.3 and equation 10): G_TxV is a logit gradient (one row per
predicted token), W_VxD the linear head (logits = h W^T), so the hidden-state gradient is
G W and the part of G that backpropagation keeps is its projection P G on col(W);
the rest, in ker(W^T), is destroyed. With Q_VxK an orthonormal basis of col(W),
P G = (G Q) Q^T: a V x V projector is never formed, every product is T x V x K.

Everything reduces over tokens through `BottleneckStats`, a pytree of sums that adds over
token chunks, so a driver can stream 8,192 tokens of a V = 131,072 model through a few
hundred MB of memory.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

# Relative cutoff under which a singular direction of W counts as numerically zero in
# `head_basis`. float32 rounding of a rank-deficient product such as a low-rank head A B
# leaves spurious singular values around 1e-6 to 1e-5 of the largest; genuinely weak but real
# directions of a trained head sit far above 1e-4 (condition numbers of LM heads are ~10-1e3).
HEAD_RTOL = 1e-4


@functools.partial(jax.jit, static_argnames="rtol")
def head_basis(W_VxD: jax.Array, *, rtol: float = HEAD_RTOL) -> jax.Array:
    """Orthonormal basis Q_VxK (K = min(V, D)) of col(W), by a thin QR of W.

    A plain QR returns D columns even when rank(W) < D (a low-rank head A B with r < D),
    and those extra columns span arbitrary directions. So R is diagonalised by a D x D SVD,
    R = U S X^T, and the columns of Q U whose singular value is below rtol * s_max are
    zeroed: the result spans exactly the numerical column space, and (G Q)(Q^T) is the
    orthogonal projection on it. Cost: ~4 V D^2 FLOPs (QR) + 2 V D^2 (the rotation) + O(D^3).
    """
    Q_VxK, R_KxD = jnp.linalg.qr(W_VxD.astype(jnp.float32), mode="reduced")
    U_KxK, s_K, _ = jnp.linalg.svd(R_KxD, full_matrices=False)
    keep_K = s_K > rtol * s_K[0]
    return (Q_VxK @ U_KxK) * keep_K.astype(jnp.float32)


@jax.jit
def project(G_TxV: jax.Array, Q_VxK: jax.Array) -> jax.Array:
    """P G: the orthogonal projection of each row of G on span(Q) (Q orthonormal columns)."""
    return (G_TxV @ Q_VxK) @ Q_VxK.T


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class BottleneckStats:
    """Sums over tokens from which every bottleneck number follows; `a + b` merges chunks.

    For each token t with logit gradient g_t, projection P_t g_t on the column space of the
    head's (or the head Jacobian's) matrix, and induced logit direction u_t = W W^T g_t:
    """

    grad_sq: jax.Array  # sum_t ||g_t||^2  (= ||G||_F^2)
    kernel_sq: jax.Array  # sum_t ||g_t - P_t g_t||^2, computed directly (no cancellation)
    proj_sq: jax.Array  # sum_t ||P_t g_t||^2
    cos_sum: jax.Array  # sum over tokens with g_t != 0 of cos(g_t, P_t g_t) = ||P_t g_t||/||g_t||
    count: jax.Array  # number of tokens with g_t != 0
    induced_dot: jax.Array  # sum_t <g_t, u_t>  (= ||G W||_F^2 for a linear head)
    induced_sq: jax.Array  # sum_t ||u_t||^2  (= ||G W W^T||_F^2)

    def __add__(self, other: BottleneckStats) -> BottleneckStats:
        return jax.tree.map(jnp.add, self, other)

    @classmethod
    def zeros(cls) -> BottleneckStats:
        z = jnp.zeros((), jnp.float32)
        return cls(z, z, z, z, z, z, z)

    @property
    def kernel_fraction(self) -> jax.Array:
        """Equation 10: ||P_ker G||_F / ||G||_F, the share of the gradient norm destroyed."""
        return jnp.sqrt(self.kernel_sq / self.grad_sq)

    @property
    def projected_cosine(self) -> jax.Array:
        """Mean over tokens of cos(g_t, P g_t) (the per-token cosine of the paper's appendix D).

        The Frobenius version, <G, PG> / (||G|| ||PG||) = ||PG|| / ||G||, carries no more
        information than the kernel fraction (it is sqrt(1 - kf^2)); see `frobenius_cosine`.
        """
        return self.cos_sum / jnp.maximum(self.count, 1.0)

    @property
    def frobenius_cosine(self) -> jax.Array:
        """<G, PG> / (||G||_F ||PG||_F) = ||PG||_F / ||G||_F."""
        return jnp.sqrt(self.proj_sq / self.grad_sq)

    @property
    def induced_cosine(self) -> jax.Array:
        """cos(G, G W W^T): the logit gradient against the logit move that a step on H induces."""
        return self.induced_dot / jnp.sqrt(self.grad_sq * self.induced_sq)

    def summary(self) -> dict[str, float]:
        """The derived numbers as Python floats (host side); gradient_tokens counts the
        tokens with a non-zero gradient row (those the per-token cosine averages over)."""
        return {
            "kernel_fraction": float(self.kernel_fraction),
            "projected_cosine": float(self.projected_cosine),
            "frobenius_cosine": float(self.frobenius_cosine),
            "induced_cosine": float(self.induced_cosine),
            "gradient_tokens": int(self.count),
        }


def row_terms(G_TxV, P_TxV, U_TxV) -> BottleneckStats:
    """Per-token BottleneckStats (every field a [T] vector) of explicit rows: gradients G,
    their projections P, induced moves U. Sum them (over any subset of tokens) with
    `total`. Rows that are entirely zero (masked padding) add nothing, not even a count."""
    g_sq_T = jnp.sum(G_TxV * G_TxV, axis=-1)
    p_sq_T = jnp.sum(P_TxV * P_TxV, axis=-1)
    residual_TxV = G_TxV - P_TxV
    nonzero_T = g_sq_T > 0
    cos_T = jnp.where(nonzero_T, jnp.sqrt(p_sq_T / jnp.where(nonzero_T, g_sq_T, 1.0)), 0.0)
    return BottleneckStats(
        grad_sq=g_sq_T,
        kernel_sq=jnp.sum(residual_TxV * residual_TxV, axis=-1),
        proj_sq=p_sq_T,
        cos_sum=cos_T,
        count=nonzero_T.astype(jnp.float32),
        induced_dot=jnp.sum(G_TxV * U_TxV, axis=-1),
        induced_sq=jnp.sum(U_TxV * U_TxV, axis=-1),
    )


def linear_row_terms(G_TxV, GQ_TxK, GW_TxD, gram_DxD) -> BottleneckStats:
    """`row_terms` for a linear head without any T x V product besides G itself.

    ||P g||^2 = ||g Q||^2, <g, W W^T g> = ||g W||^2 and ||W W^T g||^2 = (g W) (W^T W) (g W)^T,
    so only G Q and G W (4 T V D FLOPs) are needed instead of P and U (8 T V D). The
    destroyed part is ||g||^2 - ||g Q||^2: exact to float32 rounding of ||g||^2 (~1e-7), so
    a kernel fraction below ~1e-3 (a head with nearly V columns) reads as rounding noise;
    `row_terms` computes the residual explicitly when that matters.
    """
    g_sq_T = jnp.sum(G_TxV * G_TxV, axis=-1)
    p_sq_T = jnp.minimum(jnp.sum(GQ_TxK * GQ_TxK, axis=-1), g_sq_T)
    nonzero_T = g_sq_T > 0
    cos_T = jnp.where(nonzero_T, jnp.sqrt(p_sq_T / jnp.where(nonzero_T, g_sq_T, 1.0)), 0.0)
    return BottleneckStats(
        grad_sq=g_sq_T,
        kernel_sq=g_sq_T - p_sq_T,
        proj_sq=p_sq_T,
        cos_sum=cos_T,
        count=nonzero_T.astype(jnp.float32),
        induced_dot=jnp.sum(GW_TxD * GW_TxD, axis=-1),
        induced_sq=jnp.sum((GW_TxD @ gram_DxD) * GW_TxD, axis=-1),
    )


def total(per_token: BottleneckStats) -> BottleneckStats:
    """Sum per-token stats (`row_terms`) over their token axis (NumPy or JAX arrays)."""
    return jax.tree.map(lambda x: x.sum(axis=0), per_token)


def row_stats(G_TxV, P_TxV, U_TxV) -> BottleneckStats:
    """BottleneckStats summed over the given rows (see `row_terms`)."""
    return total(row_terms(G_TxV, P_TxV, U_TxV))


@jax.jit
def bottleneck_stats(
    G_TxV: jax.Array, W_VxD: jax.Array, Q_VxK: jax.Array | None = None
) -> BottleneckStats:
    """BottleneckStats of one chunk of rows of G for a linear head W (Q: its `head_basis`).

    Pass Q when calling on many chunks so the QR is done once. Cost: ~8 T V D FLOPs.
    """
    G_TxV = G_TxV.astype(jnp.float32)
    W_VxD = W_VxD.astype(jnp.float32)
    Q_VxK = head_basis(W_VxD) if Q_VxK is None else Q_VxK
    U_TxV = (G_TxV @ W_VxD) @ W_VxD.T
    return row_stats(G_TxV, project(G_TxV, Q_VxK), U_TxV)


def kernel_fraction(G_TxV: jax.Array, W_VxD: jax.Array) -> jax.Array:
    """Equation 10: ||P_ker(W^T) G||_F / ||G||_F (thin QR of W; never a V x V matrix)."""
    return bottleneck_stats(G_TxV, W_VxD).kernel_fraction


def projected_cosine(G_TxV: jax.Array, W_VxD: jax.Array) -> jax.Array:
    """Mean over rows of cos(g_t, P g_t), P the projection on col(W) (see BottleneckStats)."""
    return bottleneck_stats(G_TxV, W_VxD).projected_cosine


def jacobian_token_stats(g_V: jax.Array, J_VxD: jax.Array) -> BottleneckStats:
    """BottleneckStats of one token for a nonlinear head with local Jacobian J (V x D).

    The projection is on col(J_t) and the induced direction is J_t J_t^T g_t, the first-order
    logit move of a step on h_t along -grad_h = -J_t^T g_t.
    """
    g_1xV = g_V.astype(jnp.float32)[None]
    J_VxD = J_VxD.astype(jnp.float32)
    Q_VxK = head_basis(J_VxD)
    U_1xV = (g_1xV @ J_VxD) @ J_VxD.T
    return row_stats(g_1xV, project(g_1xV, Q_VxK), U_1xV)


@jax.jit
def jacobian_stats(G_TxV: jax.Array, J_TxVxD: jax.Array) -> BottleneckStats:
    """Sum of `jacobian_token_stats` over tokens, one token at a time (lax.map), so only one
    V x D basis exists at once besides the given Jacobians."""
    per_token = jax.lax.map(lambda a: jacobian_token_stats(*a), (G_TxV, J_TxVxD))
    return jax.tree.map(lambda x: jnp.sum(x, axis=0), per_token)


def kernel_fraction_jacobian(G_TxV: jax.Array, J_TxVxD: jax.Array) -> jax.Array:
    """Equation 10 for a nonlinear head f: h -> logits, with J_t = df/dh at token t.

    Definition: each g_t is split into its projection on col(J_t) (what J_t^T keeps) and the
    rest (what it destroys, ker(J_t^T)); the destroyed squared norms are summed over tokens:
        kf = sqrt(sum_t ||(I - P_t) g_t||^2 / sum_t ||g_t||^2).
    For a linear head J_t = W for every t and this equals `kernel_fraction`.
    """
    return jacobian_stats(G_TxV, J_TxVxD).kernel_fraction


def projected_cosine_jacobian(G_TxV: jax.Array, J_TxVxD: jax.Array) -> jax.Array:
    """Mean over tokens of cos(g_t, P_t g_t), P_t the projection on col(J_t)."""
    return jacobian_stats(G_TxV, J_TxVxD).projected_cosine


# --- numerical rank (Figure 2) ------------------------------------------------------------


def _default_tol(shape, dtype=np.float32) -> float:
    """numpy.linalg.matrix_rank's relative cutoff: max(M, N) * eps of the computing dtype."""
    return max(shape) * float(np.finfo(dtype).eps)


def empirical_rank(G_TxV: jax.Array, tol: float | None = None, *, method: str = "svd") -> int:
    """Numerical rank of G.

    method="svd": count singular values > tol * s_max. method="qr" (the paper's Figure 2):
    a QR of G^T (V x T, so each token adds one column) and a count of |R_ii| > tol * max|R_ii|.
    tol is relative to the largest value; the default is numpy.matrix_rank's
    max(T, V) * eps(float32), because the factorisation runs in float32 and anything below
    that is rounding noise. (The paper counts |R_ii| > 1e-6 in absolute terms.)
    """
    return rank_curve(G_TxV, [G_TxV.shape[0]], tol, method=method)[0]


def gradient_r_factor(G_TxV: jax.Array) -> np.ndarray:
    """R of a float32 QR of G^T (V x T, one column per token), as float64 on the host.

    The first n columns of G^T are Q R[:, :n], so R[:, :n] has exactly the singular values of
    the first n rows of G, and diag(R)[:n] is their unpivoted-QR diagonal: one QR serves every
    prefix of a rank curve. Memory: ~2 T V floats during the QR.
    """
    return np.asarray(_r_of_transpose(jnp.asarray(G_TxV, jnp.float32)), np.float64)


@jax.jit
def _r_of_transpose(G_TxV):
    # One program, so the transpose feeds the QR's working copy instead of a third T x V array.
    return jnp.linalg.qr(G_TxV.T, mode="r")


def ranks_from_r(
    R_KxT: np.ndarray,
    vocab_size: int,
    token_counts,
    tol: float | None = None,
    *,
    method: str = "svd",
) -> list[int]:
    """`rank_curve` from a precomputed `gradient_r_factor`."""
    if method not in ("svd", "qr"):
        raise ValueError(f"method must be 'svd' or 'qr', got {method!r}")
    T = R_KxT.shape[1]
    counts = [int(n) for n in token_counts]
    if any(n < 1 or n > T for n in counts):
        raise ValueError(f"token counts must lie in [1, {T}], got {counts}")
    ranks = []
    for n in counts:
        rel = _default_tol((n, vocab_size)) if tol is None else tol
        if method == "svd":
            vals = np.linalg.svd(R_KxT[:, :n], compute_uv=False)
        else:
            vals = np.abs(np.diag(R_KxT)[:n])
        top = vals.max() if vals.size else 0.0
        ranks.append(int(np.sum(vals > rel * top)) if top > 0 else 0)
    return ranks


def rank_curve(
    G_TxV: jax.Array, token_counts, tol: float | None = None, *, method: str = "svd"
) -> list[int]:
    """Numerical rank of the first n rows of G for each n in token_counts (Figure 2).

    One QR serves every prefix (see `gradient_r_factor`); tol and method as in
    `empirical_rank`. Singular values of each prefix are computed in float64.
    """
    return ranks_from_r(gradient_r_factor(G_TxV), G_TxV.shape[1], token_counts, tol, method=method)


def singular_values(G_TxV: jax.Array) -> np.ndarray:
    """Singular values of G in decreasing order (float64 on the host, via a float32 QR)."""
    return np.linalg.svd(gradient_r_factor(G_TxV), compute_uv=False)
