"""The logit gradient, update efficiency (Figure 8) and coefficient profiles (Figure 7): a
whole-array form for tests and small models, and a chunk form that the driver sums over token
chunks (`*_sums` + `finish_*`), so nothing T x V outlives a chunk."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from spamlang.diagnostics.linalg import head_basis, project
from spamlang.loss import log_softmax, nll_logit_gradient, token_nll


@jax.jit
def logit_gradient(logits_TxV: jax.Array, targets_T: jax.Array) -> jax.Array:
    """d(mean cross-entropy)/d(logits) = (softmax(logits) - onehot(targets)) / T."""
    return nll_logit_gradient(log_softmax(logits_TxV), targets_T, 1.0 / logits_TxV.shape[0])


@jax.jit
def cross_entropy_sum(logits_TxV: jax.Array, targets_T: jax.Array) -> jax.Array:  # float32
    return jnp.sum(token_nll(logits_TxV, targets_T))


def efficiency_sums(logits_TxV, targets_T, grad_TxV, induced_TxV, scale_grad_S, scale_ind_S):
    """(ce_grad_S, ce_induced_S): a chunk's cross-entropy sums after steps of each scale."""
    logits_TxV = logits_TxV.astype(jnp.float32)

    def one(scales):
        s_grad, s_ind = scales
        return (
            cross_entropy_sum(logits_TxV - s_grad * grad_TxV, targets_T),
            cross_entropy_sum(logits_TxV - s_ind * induced_TxV, targets_T),
        )

    return jax.lax.map(one, (scale_grad_S, scale_ind_S))


def update_efficiency(
    logits_TxV: jax.Array, targets_T: jax.Array, W_VxD: jax.Array, step_norms
) -> dict[str, np.ndarray]:
    """Figure 8 for a linear head: the exact mean-loss change for logit steps of norm e along
    -grad_L and along -(G W) W^T: "step_norms", "delta_logit", "delta_induced" (< 0: down),
    "loss"."""
    norms_S = jnp.asarray(step_norms, jnp.float32)
    base, d_grad, d_ind = _efficiency(logits_TxV, targets_T, W_VxD, norms_S)
    return {
        "step_norms": np.asarray(step_norms, np.float64),
        "loss": float(base),
        "delta_logit": np.asarray(d_grad),
        "delta_induced": np.asarray(d_ind),
    }


@jax.jit
def _efficiency(logits_TxV, targets_T, W_VxD, norms_S):
    T = logits_TxV.shape[0]
    G_TxV = logit_gradient(logits_TxV, targets_T)
    W_VxD = W_VxD.astype(jnp.float32)
    induced_TxV = (G_TxV @ W_VxD) @ W_VxD.T  # (grad_H) W^T: the logit move of a step on H
    base = cross_entropy_sum(logits_TxV, targets_T) / T
    ce_g, ce_u = efficiency_sums(
        logits_TxV,
        targets_T,
        G_TxV,
        induced_TxV,
        norms_S / jnp.linalg.norm(G_TxV),
        norms_S / jnp.linalg.norm(induced_TxV),
    )
    return base, ce_g / T - base, ce_u / T - base


@jax.jit
def profile_sums(G_TxV: jax.Array, P_TxV: jax.Array) -> dict[str, jax.Array]:
    """Per-rank sums of a chunk's rows, sorted by |full coefficient|."""
    order_TxV = jnp.argsort(-jnp.abs(G_TxV), axis=-1)
    full = jnp.take_along_axis(G_TxV, order_TxV, axis=-1)
    proj = jnp.take_along_axis(P_TxV, order_TxV, axis=-1)
    return {
        "full_sum": full.sum(0),
        "full_sq": (full * full).sum(0),
        "full_abs": jnp.abs(full).sum(0),
        "proj_sum": proj.sum(0),
        "proj_sq": (proj * proj).sum(0),
        "proj_abs": jnp.abs(proj).sum(0),
        "rows": jnp.asarray(G_TxV.shape[0], jnp.float32),
    }


def finish_profile(sums: dict, ranks=None) -> dict[str, list]:
    """Means and deviations per rank from summed `profile_sums`, at `ranks` (default all)."""
    n = float(sums["rows"])
    V = int(np.asarray(sums["full_sum"]).shape[0])
    idx = np.arange(V) if ranks is None else np.asarray(ranks, np.int64)
    out = {"ranks": idx.tolist()}
    for part in ("full", "proj"):
        mean = np.asarray(sums[f"{part}_sum"], np.float64) / n
        var = np.maximum(np.asarray(sums[f"{part}_sq"], np.float64) / n - mean**2, 0.0)
        out[f"{part}_mean"] = mean[idx].tolist()
        out[f"{part}_std"] = np.sqrt(var)[idx].tolist()
        out[f"{part}_abs_mean"] = (np.asarray(sums[f"{part}_abs"], np.float64)[idx] / n).tolist()
    return out


def default_ranks(V: int, head: int = 64, tail_points: int = 64) -> np.ndarray:
    """Every rank below `head`, then `tail_points` log-spaced ranks up to V - 1."""
    lead = np.arange(min(head, V))
    tail = np.geomspace(max(head, 1), max(V - 1, 1), tail_points).astype(np.int64)
    return np.unique(np.concatenate([lead, tail[tail < V]]))


def coefficient_profile(
    G_TxV: jax.Array, W_VxD: jax.Array, *, top: int | None = None
) -> dict[str, list]:
    """Figure 7: mean and std of the logit-gradient coefficients, full and projected on col(W), each
    row sorted by |full|, in units of probability; top: ranks 0..top-1 only."""
    T, V = G_TxV.shape
    G_TxV = G_TxV.astype(jnp.float32) * T
    P_TxV = project(G_TxV, head_basis(W_VxD))
    ranks = None if top is None else np.arange(min(top, V))
    return finish_profile(profile_sums(G_TxV, P_TxV), ranks)
