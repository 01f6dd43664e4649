"""How much of a logit gradient survives the LM head: kernel fraction, cosines, ranks.

With G_TxV a logit gradient and W_VxD the head, backpropagation keeps P G, its projection on
col(W) (the paper's equation 10); the rest, in ker(W^T), is destroyed. P G = (G Q) Q^T with Q an
orthonormal basis of col(W), so no V x V projector is formed. `BottleneckStats` sums over token
chunks, so a driver can stream a V = 131,072 model's tokens through a few hundred MB.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

# Relative cutoff under which a singular direction of W counts as numerically zero in
# `head_basis`. float32 rounding of a rank-deficient product such as a low-rank head A B
# leaves spurious singular values around 1e-6 to 1e-5 of the largest; genuinely weak but real
# directions of a trained head sit far above 1e-4 (condition numbers of LM heads are ~10-1e3).
HEAD_RTOL = 1e-4


@jax.jit
def head_basis(W_VxD: jax.Array) -> jax.Array:
    """Orthonormal basis Q_VxK (K = min(V, D)) of col(W), by a thin QR of W.

    A plain QR returns D columns even when rank(W) < D (a low-rank head A B with r < D), and
    those extra columns span arbitrary directions. So R = U S X^T is diagonalised by an SVD
    and the columns of Q U whose singular value is below HEAD_RTOL * s_max are zeroed.
    """
    Q_VxK, R_KxD = jnp.linalg.qr(W_VxD.astype(jnp.float32), mode="reduced")
    U_KxK, s_K, _ = jnp.linalg.svd(R_KxD, full_matrices=False)
    keep_K = s_K > HEAD_RTOL * s_K[0]
    return (Q_VxK @ U_KxK) * keep_K.astype(jnp.float32)


@jax.jit
def project(G_TxV: jax.Array, Q_VxK: jax.Array) -> jax.Array:
    """P G: the orthogonal projection of each row of G on span(Q) (Q orthonormal columns)."""
    return (G_TxV @ Q_VxK) @ Q_VxK.T


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class BottleneckStats:
    """Sums over tokens from which every bottleneck number follows; `a + b` merges chunks.
    g_t: a token's logit gradient, P_t its projection on the column space of the head's (or
    the head Jacobian's) matrix, u_t = W W^T g_t its induced logit move."""

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
        """Mean over tokens of cos(g_t, P g_t) (the per-token cosine of the paper's appendix D;
        the Frobenius version is sqrt(1 - kf^2), no more than the kernel fraction)."""
        return self.cos_sum / jnp.maximum(self.count, 1.0)

    @property
    def frobenius_cosine(self) -> jax.Array:
        """<G, PG> / (||G||_F ||PG||_F) = ||PG||_F / ||G||_F."""
        return jnp.sqrt(self.proj_sq / self.grad_sq)

    def summary(self) -> dict[str, float]:
        """The derived numbers as Python floats; gradient_tokens: tokens with g_t != 0."""
        return {
            "kernel_fraction": float(self.kernel_fraction),
            "projected_cosine": float(self.projected_cosine),
            "frobenius_cosine": float(self.frobenius_cosine),
            # cos(G, G W W^T): the logit gradient against the move a step on H induces
            "induced_cosine": float(self.induced_dot / jnp.sqrt(self.grad_sq * self.induced_sq)),
            "gradient_tokens": int(self.count),
        }


def _row_terms(g_sq_T, p_sq_T, kernel_sq_T, induced_dot_T, induced_sq_T) -> BottleneckStats:
    nonzero_T = g_sq_T > 0
    cos_T = jnp.where(nonzero_T, jnp.sqrt(p_sq_T / jnp.where(nonzero_T, g_sq_T, 1.0)), 0.0)
    count_T = nonzero_T.astype(jnp.float32)
    return BottleneckStats(g_sq_T, kernel_sq_T, p_sq_T, cos_T, count_T, induced_dot_T, induced_sq_T)


def row_terms(G_TxV, P_TxV, U_TxV) -> BottleneckStats:
    """Per-token BottleneckStats (every field a [T] vector) of explicit rows: gradients G,
    their projections P, induced moves U; sum them with `total`. Rows that are entirely zero
    (masked padding) add nothing, not even a count."""
    residual_TxV = G_TxV - P_TxV
    return _row_terms(
        jnp.sum(G_TxV * G_TxV, axis=-1),
        jnp.sum(P_TxV * P_TxV, axis=-1),
        jnp.sum(residual_TxV * residual_TxV, axis=-1),
        jnp.sum(G_TxV * U_TxV, axis=-1),
        jnp.sum(U_TxV * U_TxV, axis=-1),
    )


def linear_row_terms(G_TxV, GQ_TxK, GW_TxD, gram_DxD) -> BottleneckStats:
    """`row_terms` for a linear head from G Q and G W only (4 T V D FLOPs instead of 8 for P
    and U): ||P g||^2 = ||g Q||^2, <g, W W^T g> = ||g W||^2, ||W W^T g||^2 = (g W) W^T W (g W)^T.
    The destroyed part ||g||^2 - ||g Q||^2 is exact to float32 rounding of ||g||^2 (~1e-7), so
    a kernel fraction below ~1e-3 reads as rounding noise; `row_terms` computes it directly."""
    g_sq_T = jnp.sum(G_TxV * G_TxV, axis=-1)
    p_sq_T = jnp.minimum(jnp.sum(GQ_TxK * GQ_TxK, axis=-1), g_sq_T)
    return _row_terms(
        g_sq_T,
        p_sq_T,
        g_sq_T - p_sq_T,
        jnp.sum(GW_TxD * GW_TxD, axis=-1),
        jnp.sum((GW_TxD @ gram_DxD) * GW_TxD, axis=-1),
    )


def total(per_token: BottleneckStats) -> BottleneckStats:
    """Sum per-token stats (`row_terms`) over their token axis (NumPy or JAX arrays)."""
    return jax.tree.map(lambda x: x.sum(axis=0), per_token)


@jax.jit
def bottleneck_stats(
    G_TxV: jax.Array, W_VxD: jax.Array, Q_VxK: jax.Array | None = None
) -> BottleneckStats:
    """BottleneckStats of rows of G for a linear head W; pass Q (its `head_basis`) when calling
    on many chunks, so that the QR is done once. Cost: ~8 T V D FLOPs."""
    G_TxV, W_VxD = G_TxV.astype(jnp.float32), W_VxD.astype(jnp.float32)
    Q_VxK = head_basis(W_VxD) if Q_VxK is None else Q_VxK
    return total(row_terms(G_TxV, project(G_TxV, Q_VxK), (G_TxV @ W_VxD) @ W_VxD.T))


def kernel_fraction(G_TxV: jax.Array, W_VxD: jax.Array) -> jax.Array:
    """Equation 10: ||P_ker(W^T) G||_F / ||G||_F (thin QR of W; never a V x V matrix)."""
    return bottleneck_stats(G_TxV, W_VxD).kernel_fraction


def projected_cosine(G_TxV: jax.Array, W_VxD: jax.Array) -> jax.Array:
    """Mean over rows of cos(g_t, P g_t), P the projection on col(W) (see BottleneckStats)."""
    return bottleneck_stats(G_TxV, W_VxD).projected_cosine


@jax.jit
def jacobian_stats(G_TxV: jax.Array, J_TxVxD: jax.Array) -> BottleneckStats:
    """BottleneckStats of a nonlinear head f: h -> logits with J_t = df/dh at token t: each
    g_t is projected on col(J_t) (what J_t^T keeps), and its induced move is J_t J_t^T g_t.
    One token at a time (lax.map), so only one V x D basis exists at once. For a linear head
    J_t = W for every t, and this equals `bottleneck_stats`."""

    def one(args):
        g_1xV, J_VxD = args[0].astype(jnp.float32)[None], args[1].astype(jnp.float32)
        P_1xV = project(g_1xV, head_basis(J_VxD))
        return total(row_terms(g_1xV, P_1xV, (g_1xV @ J_VxD) @ J_VxD.T))

    return total(jax.lax.map(one, (G_TxV, J_TxVxD)))


def kernel_fraction_jacobian(G_TxV: jax.Array, J_TxVxD: jax.Array) -> jax.Array:
    """Equation 10 for a nonlinear head: sqrt(sum_t ||(I - P_t) g_t||^2 / sum_t ||g_t||^2)."""
    return jacobian_stats(G_TxV, J_TxVxD).kernel_fraction


def projected_cosine_jacobian(G_TxV: jax.Array, J_TxVxD: jax.Array) -> jax.Array:
    """Mean over tokens of cos(g_t, P_t g_t), P_t the projection on col(J_t)."""
    return jacobian_stats(G_TxV, J_TxVxD).projected_cosine


# --- numerical rank (Figure 2) ------------------------------------------------------------


def empirical_rank(G_TxV: jax.Array, tol: float | None = None, *, method: str = "svd") -> int:
    """Numerical rank of G: the count of singular values (method="svd") or of |R_ii| of a QR
    of G^T (method="qr", the paper's Figure 2) above tol times the largest. The default tol is
    numpy.matrix_rank's max(T, V) * eps(float32), because the factorisation runs in float32
    and anything below that is rounding noise. (The paper counts |R_ii| > 1e-6 absolutely.)"""
    return rank_curve(G_TxV, [G_TxV.shape[0]], tol, method=method)[0]


def gradient_r_factor(G_TxV: jax.Array) -> np.ndarray:
    """R of a float32 QR of G^T (V x T, one column per token), as float64 on the host. The
    first n columns of G^T are Q R[:, :n], so R[:, :n] has exactly the singular values of the
    first n rows of G: one QR serves every prefix of a rank curve."""
    return np.asarray(_r_of_transpose(jnp.asarray(G_TxV, jnp.float32)), np.float64)


# One program, so the transpose feeds the QR's working copy instead of a third T x V array.
_r_of_transpose = jax.jit(lambda G_TxV: jnp.linalg.qr(G_TxV.T, mode="r"))


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
        rel = max(n, vocab_size) * float(np.finfo(np.float32).eps) if tol is None else tol
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
    """Numerical rank of the first n rows of G for each n in token_counts (Figure 2); tol and
    method as in `empirical_rank`."""
    return ranks_from_r(gradient_r_factor(G_TxV), G_TxV.shape[1], token_counts, tol, method=method)
