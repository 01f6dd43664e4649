"""The optimizer: `optax.adamw` with the peak LR injected into its state, times a relative schedule.

`optax.inject_hyperparams` keeps the peak learning rate as an array in the optimizer state
instead of a Python constant, so the members of a vmapped group hold K different peak LRs
under one optimizer definition, and a member computes what its own run computes. The
schedule's shape (warmup, then cosine or WSD decay) is shared by every member and applied
after AdamW by `optax.scale_by_schedule`, as a multiplier in [0, 1]:
p <- p - peak_lr * schedule(t) * (adam(clip(g)) + wd * p), decay on matrices only.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

# Everything but the learning rate stays a Python constant of the program.
_STATIC = ("b1", "b2", "eps", "eps_root", "weight_decay", "mask")


def relative_schedule(schedule: str, steps: int, *, warmup_frac: float, decay_frac: float,
                      final_ratio: float) -> optax.Schedule:
    """LR multiplier in [0, 1] as a function of the step (peak 1 after the warmup).

    All schedules start with a linear warmup from 0 over `round(warmup_frac * steps)` steps, then:
    - "constant": 1 to the end;
    - "cosine": cosine decay from 1 to `final_ratio` at the last step;
    - "wsd" (warmup-stable-decay): 1, then a linear decay to `final_ratio` over the last
      `round(decay_frac * steps)` steps.
    """
    warmup = int(round(warmup_frac * steps))
    rest = max(steps - warmup, 1)
    if schedule == "constant":
        after = optax.constant_schedule(1.0)
    elif schedule == "cosine":
        after = optax.cosine_decay_schedule(1.0, decay_steps=rest, alpha=final_ratio)
    elif schedule == "wsd":
        decay = min(int(round(decay_frac * steps)), rest)
        after = optax.join_schedules(
            [optax.constant_schedule(1.0),
             optax.linear_schedule(1.0, final_ratio, transition_steps=max(decay, 1))],
            boundaries=[rest - decay])
    else:
        raise ValueError(f"unknown schedule {schedule!r}")
    if warmup == 0:
        return after
    return optax.join_schedules(
        [optax.linear_schedule(0.0, 1.0, transition_steps=warmup), after], boundaries=[warmup])


def decay_mask(params):
    """True for leaves that get weight decay: matrices (ndim >= 2), never norm scales.

    Evaluated on the per-member parameters inside the vmapped step, so the member axis
    never turns a norm vector into a "matrix".
    """
    def is_matrix(path, leaf):
        names = "/".join(str(getattr(k, "key", getattr(k, "name", k))) for k in path).lower()
        return jnp.ndim(leaf) >= 2 and "norm" not in names

    return jax.tree_util.tree_map_with_path(is_matrix, params)


def from_config(config) -> tuple[optax.GradientTransformation, optax.Schedule]:
    """(clipped AdamW with an injected peak LR and the relative schedule, that schedule)."""
    schedule = relative_schedule(config.schedule, config.steps, warmup_frac=config.warmup_frac,
                                 decay_frac=config.decay_frac, final_ratio=config.final_lr_ratio)
    adamw = optax.inject_hyperparams(optax.adamw, static_args=_STATIC)(
        learning_rate=config.lr, b1=config.b1, b2=config.b2, eps=config.eps,
        weight_decay=config.weight_decay, mask=decay_mask)
    parts = [optax.clip_by_global_norm(config.grad_clip)] if config.grad_clip > 0 else []
    return optax.chain(*parts, adamw, optax.scale_by_schedule(schedule)), schedule


def peak_lr(opt_state) -> jax.Array:
    """The peak learning rate held in an optimizer state of `from_config`."""
    return optax.tree_utils.tree_get(opt_state, "learning_rate")


def with_peak_lr(opt_state, lr):
    """`opt_state` with its peak learning rate replaced (a member's own LR)."""
    return optax.tree_utils.tree_set(opt_state, learning_rate=jnp.asarray(lr, jnp.float32))
