"""The optimizer: AdamW as an optax chain that yields unit-LR updates, and the LR schedules.

The peak learning rate is not baked into the optimizer: the chain returns the update for a
peak LR of 1, and the step multiplies it by `lr * schedule(step)`, where `lr` is a float32
array in the train state. A vmapped group of runs (spamlang.train.group) can then hold K
different peak LRs while sharing one optimizer definition, and a member computes exactly what
its sequential run computes.

The chain equals `optax.adamw` with the same schedule (decoupled weight decay scaled by the
LR, as in PyTorch's AdamW): p <- p - lr_t * (adam(g_clipped) + wd * p), wd on matrices only.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax


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
        stable = rest - decay
        after = optax.join_schedules(
            [optax.constant_schedule(1.0),
             optax.linear_schedule(1.0, final_ratio, transition_steps=max(decay, 1))],
            boundaries=[stable])
    else:
        raise ValueError(f"unknown schedule {schedule!r}")
    if warmup == 0:
        return after
    return optax.join_schedules(
        [optax.linear_schedule(0.0, 1.0, transition_steps=warmup), after], boundaries=[warmup])


def decay_mask(params):
    """True for leaves that get weight decay: matrices (ndim >= 2), never norm scales.

    Evaluated on the (possibly traced) per-run parameters, so inside a vmapped group the
    leading member axis does not turn a norm vector into a "matrix".
    """
    def is_matrix(path, leaf):
        names = "/".join(str(getattr(k, "key", getattr(k, "name", k))) for k in path).lower()
        return jnp.ndim(leaf) >= 2 and "norm" not in names

    return jax.tree_util.tree_map_with_path(is_matrix, params)


def unit_adamw(*, b1: float, b2: float, eps: float, weight_decay: float,
               grad_clip: float) -> optax.GradientTransformation:
    """Clipped AdamW producing the descent direction for a learning rate of 1.

    The caller applies `params + lr_t * updates` (updates are already negated).
    """
    parts = []
    if grad_clip > 0:
        parts.append(optax.clip_by_global_norm(grad_clip))
    parts.append(optax.scale_by_adam(b1=b1, b2=b2, eps=eps))
    if weight_decay > 0:
        parts.append(optax.add_decayed_weights(weight_decay, mask=decay_mask))
    parts.append(optax.scale(-1.0))
    return optax.chain(*parts)


def from_config(config) -> tuple[optax.GradientTransformation, optax.Schedule]:
    """(unit-LR AdamW chain, relative schedule) of a `TrainConfig`."""
    tx = unit_adamw(b1=config.b1, b2=config.b2, eps=config.eps,
                    weight_decay=config.weight_decay, grad_clip=config.grad_clip)
    schedule = relative_schedule(config.schedule, config.steps, warmup_frac=config.warmup_frac,
                                 decay_frac=config.decay_frac, final_ratio=config.final_lr_ratio)
    return tx, schedule
