"""Lazy Adam: rows of the per-symbol tables (embedding, head) move only in steps where their
symbol occurs, as TensorFlow's LazyAdam and sparse-embedding trainers do; other leaves get dense
Adam. Which ids occur comes in as `present_V` (bool[V]), an extra argument of `update`
(`optax.GradientTransformationExtraArgs`), computed from the step's batch."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax


class LazyAdamState(NamedTuple):
    # Appearances per row (int32[V]; steps elsewhere): a rare row's bias correction counts its own.
    count: optax.Updates
    mu: optax.Updates  # first moments, like the params
    nu: optax.Updates  # second moments, like the params


def _need(present_V):
    if present_V is None:
        raise ValueError(
            "lazy Adam needs present_V (bool[V], the ids in the step's batch) "
            "as an extra argument of update"
        )
    return present_V


def scale_by_lazy_adam(
    is_rows: Callable, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8
) -> optax.GradientTransformationExtraArgs:
    """Adam, lazy on the leaves where `is_rows(params)`: row s counts, updates its moments and moves
    only where present_V[s]. Dense Adam moves an absent row by its push-down, scaled up."""

    def init_fn(params):
        rows = is_rows(params)
        count = jax.tree.map(
            lambda p, r: jnp.zeros(p.shape[:1] if r else (), jnp.int32), params, rows
        )
        zeros = jax.tree.map(jnp.zeros_like, params)
        return LazyAdamState(count=count, mu=zeros, nu=zeros)

    def leaf(g, count, mu, nu, rows, present_V):
        new_mu, new_nu = b1 * mu + (1 - b1) * g, b2 * nu + (1 - b2) * jnp.square(g)
        if not rows:  # dense Adam: every step counts
            count = count + 1
            n = count.astype(g.dtype)
            out = (new_mu / (1 - b1**n)) / (jnp.sqrt(new_nu / (1 - b2**n)) + eps)
            return out, count, new_mu, new_nu
        here = present_V[:, None]
        count = count + present_V.astype(jnp.int32)
        mu, nu = jnp.where(here, new_mu, mu), jnp.where(here, new_nu, nu)
        n = count[:, None].astype(g.dtype)

        # A row that never occurred has n = 0 and zero moments: divide by 1, not by 0.
        def safe(b):
            return jnp.where(n > 0, 1 - b**n, 1)

        out = (mu / safe(b1)) / (jnp.sqrt(nu / safe(b2)) + eps)
        return jnp.where(here, out, 0), count, mu, nu

    def update_fn(updates, state, params=None, *, present_V=None, **extra_args):
        del extra_args
        present_V = _need(present_V)
        rows = is_rows(updates)
        treedef = jax.tree.structure(updates)
        trees = (updates, state.count, state.mu, state.nu, rows)
        outs = [leaf(*args, present_V) for args in zip(*map(treedef.flatten_up_to, trees))]
        new = [treedef.unflatten(part) for part in zip(*outs)]
        return new[0], LazyAdamState(count=new[1], mu=new[2], nu=new[3])

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


def keep_present_rows(is_rows: Callable) -> optax.GradientTransformationExtraArgs:
    """Zero every absent row's update (after the weight decay)."""

    def update_fn(updates, state, params=None, *, present_V=None, **extra_args):
        del params, extra_args
        present_V = _need(present_V)
        kept = jax.tree.map(
            lambda u, r: jnp.where(present_V[:, None], u, 0) if r else u, updates, is_rows(updates)
        )
        return kept, state

    return optax.GradientTransformationExtraArgs(lambda params: optax.EmptyState(), update_fn)
