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

# A direction of W below this share is zero: rounding of A B leaves ~1e-6, real ones far more.
HEAD_RTOL = 1e-4


@jax.jit
def head_basis(W_VxD: jax.Array) -> jax.Array:
    """Orthonormal basis Q_VxK of col(W) by a thin QR, below HEAD_RTOL zeroed."""
    Q_VxK, R_KxD = jnp.linalg.qr(W_VxD.astype(jnp.float32), mode="reduced")
    U_KxK, s_K, _ = jnp.linalg.svd(R_KxD, full_matrices=False)
    keep_K = s_K > HEAD_RTOL * s_K[0]
    return (Q_VxK @ U_KxK) * keep_K.astype(jnp.float32)


@jax.jit
def project(G_TxV: jax.Array, Q_VxK: jax.Array) -> jax.Array:
    return (G_TxV @ Q_VxK) @ Q_VxK.T


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class BottleneckStats:
    """Sums over tokens from which every bottleneck number follows (`a + b` merges chunks); g_t a
    logit gradient, P_t its projection on col(W), u_t = W W^T g_t."""

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
        """Mean over tokens of cos(g_t, P g_t) (the paper's appendix D)."""
        return self.cos_sum / jnp.maximum(self.count, 1.0)

    @property
    def frobenius_cosine(self) -> jax.Array:
        """<G, PG> / (||G||_F ||PG||_F) = ||PG||_F / ||G||_F."""
        return jnp.sqrt(self.proj_sq / self.grad_sq)

    def summary(self) -> dict[str, float]:
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
    """Per-token BottleneckStats of G, P and U; all-zero (padding) rows add nothing."""
    residual_TxV = G_TxV - P_TxV
    return _row_terms(
        jnp.sum(G_TxV * G_TxV, axis=-1),
        jnp.sum(P_TxV * P_TxV, axis=-1),
        jnp.sum(residual_TxV * residual_TxV, axis=-1),
        jnp.sum(G_TxV * U_TxV, axis=-1),
        jnp.sum(U_TxV * U_TxV, axis=-1),
    )


def linear_row_terms(G_TxV, GQ_TxK, GW_TxD, gram_DxD) -> BottleneckStats:
    """`row_terms` of a linear head from G Q and G W (half the FLOPs); its destroyed part is exact
    only to float32 rounding of ||g||^2 (a kernel fraction below ~1e-3 is noise)."""
    g_sq_T = jnp.sum(G_TxV * G_TxV, axis=-1)
    p_sq_T = jnp.minimum(jnp.sum(GQ_TxK * GQ_TxK, axis=-1), g_sq_T)
    return _row_terms(
        g_sq_T,
        p_sq_T,
        g_sq_T - p_sq_T,
        jnp.sum(GW_TxD * GW_TxD, axis=-1),
        jnp.sum((GW_TxD @ gram_DxD) * GW_TxD, axis=-1),
    )


def total(per_token: BottleneckStats) -> BottleneckStats:  # sum over the token axis
    return jax.tree.map(lambda x: x.sum(axis=0), per_token)


@jax.jit
def bottleneck_stats(
    G_TxV: jax.Array, W_VxD: jax.Array, Q_VxK: jax.Array | None = None
) -> BottleneckStats:
    """BottleneckStats of rows of G for a linear head W; pass Q (`head_basis`) to do the QR once."""
    G_TxV, W_VxD = G_TxV.astype(jnp.float32), W_VxD.astype(jnp.float32)
    Q_VxK = head_basis(W_VxD) if Q_VxK is None else Q_VxK
    return total(row_terms(G_TxV, project(G_TxV, Q_VxK), (G_TxV @ W_VxD) @ W_VxD.T))


def kernel_fraction(G_TxV: jax.Array, W_VxD: jax.Array) -> jax.Array:
    """Equation 10: ||P_ker(W^T) G||_F / ||G||_F."""
    return bottleneck_stats(G_TxV, W_VxD).kernel_fraction


def projected_cosine(G_TxV: jax.Array, W_VxD: jax.Array) -> jax.Array:
    """Mean over rows of cos(g_t, P g_t), P the projection on col(W)."""
    return bottleneck_stats(G_TxV, W_VxD).projected_cosine


def empirical_rank(G_TxV: jax.Array, tol: float | None = None, *, method: str = "svd") -> int:
    """Numerical rank of G: singular values ("svd") or |R_ii| of a QR of G^T ("qr", Figure 2) above
    tol times the largest (default max(T, V) * eps32)."""
    return rank_curve(G_TxV, [G_TxV.shape[0]], tol, method=method)[0]


def gradient_r_factor(G_TxV: jax.Array) -> np.ndarray:
    """R of a QR of G^T (float64, host): R[:, :n] serves every prefix n of a rank curve."""
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
    """Numerical rank of the first n rows of G for each n of token_counts (`empirical_rank`)."""
    return ranks_from_r(gradient_r_factor(G_TxV), G_TxV.shape[1], token_counts, tol, method=method)
