"""Controls on the head's rows alone, to separate the parts of Adam's step on an absent symbol.

Each acts on the head's V-row matrix (the embedding when tied) and leaves every other parameter
on its optimizer: AMSGrad (v never decreases), its own eps, a per-row clip, its own b2, v
updated only in steps that show the row more than push-down (`scale_by_gated_adam`), its own
LR scale and weight decay (`TrainConfig.head_*`). `record_head_step` measures the head's step."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax


def scale_by_adam_with_head(
    is_head: Callable,
    b1,
    b2,
    eps,
    *,
    head_b2: float | None = None,
    v_gated: bool = False,
    amsgrad: bool = False,
    head_eps: float = 0.0,
    row_clip: float = 0.0,
) -> optax.GradientTransformationExtraArgs:
    """Adam's direction, with the head's own b2, AMSGrad, gated v, eps and row clip as asked."""
    hb2 = b2 if head_b2 is None else head_b2
    if amsgrad:
        head = [optax.scale_by_amsgrad(b1=b1, b2=hb2, eps=head_eps or eps)]
    elif v_gated:
        head = [scale_by_gated_adam(b1, hb2, head_eps or eps)]
    else:
        head = [optax.scale_by_adam(b1=b1, b2=hb2, eps=head_eps or eps)]
    if row_clip:
        head.append(clip_row_rms(row_clip))

    def labels(params):
        return jax.tree.map(lambda h: "head" if h else "rest", is_head(params))

    return optax.partition(
        {"head": optax.chain(*head), "rest": optax.scale_by_adam(b1=b1, b2=b2, eps=eps)}, labels
    )


class GatedAdamState(NamedTuple):
    count: jax.Array  # int32[]: steps, as Adam's (the bias correction is global)
    mu: optax.Updates
    nu: optax.Updates
    shown: optax.Updates  # bool[V] per row table: the row has had a step that gates it open


def scale_by_gated_adam(b1, b2, eps) -> optax.GradientTransformationExtraArgs:
    """Adam on row tables, but a row's v holds in steps with gate_V[row] False (once shown)."""

    def init_fn(params):
        zeros = optax.tree.zeros_like(params)
        shown = jax.tree.map(lambda p: jnp.zeros(p.shape[:1], jnp.bool_), params)
        return GatedAdamState(jnp.zeros([], jnp.int32), zeros, zeros, shown)

    def update_fn(updates, state, params=None, *, gate_V=None, **extra_args):
        del params, extra_args
        mu = optax.tree.update_moment(updates, state.mu, b1, 1)
        moved = optax.tree.update_moment_per_elem_norm(updates, state.nu, b2, 2)

        def gate(new, old, shown_V):
            hold_V = shown_V & ~gate_V
            return jnp.where(hold_V[:, None], old, new)

        if gate_V is None:  # a caller that does not say which rows the step shows: all
            nu, shown = moved, jax.tree.map(jnp.ones_like, state.shown)
        else:
            nu = jax.tree.map(gate, moved, state.nu, state.shown)
            shown = jax.tree.map(lambda s: s | gate_V, state.shown)
        count = optax.safe_increment(state.count)
        mu_hat = optax.tree.bias_correction(mu, b1, count)
        nu_hat = optax.tree.bias_correction(nu, b2, count)
        # As optax.scale_by_adam writes it (eps_root 0), so that ungated it is the same bits.
        out = jax.tree.map(lambda m, v: m / (jnp.sqrt(v + 0.0) + eps), mu_hat, nu_hat)
        return out, GatedAdamState(count, mu, nu, shown)

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


class HeadStepState(NamedTuple):
    head_step_rms: jax.Array  # float32[]: RMS of the head's direction, every row
    head_step_rms_absent: jax.Array  # float32[]: over the rows gate_V leaves closed (NaN: none)


def record_head_step(is_head: Callable) -> optax.GradientTransformationExtraArgs:
    """Keep the RMS of the head's direction, all rows and the absent ones (gate_V False)."""

    def init_fn(params):
        del params
        return HeadStepState(jnp.zeros([], jnp.float32), jnp.zeros([], jnp.float32))

    def update_fn(updates, state, params=None, *, gate_V=None, **extra_args):
        del state, params, extra_args
        heads = [
            u for u, h in zip(jax.tree.leaves(updates), jax.tree.leaves(is_head(updates))) if h
        ]
        if not heads:
            return updates, HeadStepState(jnp.float32(jnp.nan), jnp.float32(jnp.nan))
        sq_VxD = jnp.square(heads[0].astype(jnp.float32))
        # Without gate_V (a caller outside the train step), no row counts as absent.
        absent_Vx1 = jnp.zeros((sq_VxD.shape[0], 1), bool) if gate_V is None else ~gate_V[:, None]
        n_absent = absent_Vx1.sum() * sq_VxD.shape[1]
        rms = jnp.sqrt(sq_VxD.mean())
        rms_absent = jnp.sqrt(jnp.where(absent_Vx1, sq_VxD, 0).sum() / n_absent)
        return updates, HeadStepState(rms, jnp.where(n_absent > 0, rms_absent, jnp.nan))

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


def scale_rows(is_rows: Callable, scale) -> optax.GradientTransformation:  # where is_rows
    def update_fn(updates, state, params=None):
        del params
        return jax.tree.map(lambda u, r: u * scale if r else u, updates, is_rows(updates)), state

    return optax.GradientTransformation(lambda params: optax.EmptyState(), update_fn)


def clip_row_rms(max_rms: float) -> optax.GradientTransformation:
    """Rescale each row (the last axis) of every update whose RMS exceeds `max_rms` to `max_rms`."""

    def clip(u_VxD):
        rms_Vx1 = jnp.sqrt(jnp.mean(jnp.square(u_VxD), axis=-1, keepdims=True))
        # A row at or under the limit is multiplied by exactly 1 (a zero row: max_rms / 0 = inf).
        return u_VxD * jnp.minimum(1.0, max_rms / rms_Vx1)

    def update_fn(updates, state, params=None):
        del params
        return jax.tree.map(clip, updates), state

    return optax.GradientTransformation(lambda params: optax.EmptyState(), update_fn)
