"""Controls on the head's rows alone: AMSGrad, a larger eps, a per-row clip of the step.

The hypothesis these separate: Adam's second moment v on a head row decays while its symbol is
absent (b2 sets how fast), so both the pull a rare symbol gets when it appears and the push-down
of its logit while it is away are set by b2. Each control changes one part, on the head only,
and leaves every other parameter on plain Adam (`TrainConfig.head_amsgrad`, `head_eps`,
`head_row_clip`):
- AMSGrad (`optax.scale_by_amsgrad`): the head's v is the running max of Adam's bias-corrected
  v, so it never forgets a pull-up and an absent row's push-down stays small;
- a larger eps: m / (sqrt(v) + eps) caps a row's step at |m| / eps once v has decayed;
- a row clip: each row's direction rescaled to RMS <= X, so no row moves more than X times the
  learning rate (in RMS) in one step, however small its v.

"The head" is the output projection's V-row matrix (`row_tables`' "head"), or with tied
embeddings the embedding, which is then the head.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax


def scale_by_adam_with_head(
    is_head: Callable,
    b1,
    b2,
    eps,
    *,
    amsgrad: bool = False,
    head_eps: float = 0.0,
    row_clip: float = 0.0,
) -> optax.GradientTransformationExtraArgs:
    """Adam's direction, with the leaves where `is_head(params)` is True under the controls:
    AMSGrad if `amsgrad`, eps `head_eps` (0: `eps`), each row rescaled to RMS <= `row_clip`
    (0: not clipped). Every other leaf gets `optax.scale_by_adam(b1, b2, eps)` as it is."""
    scale = optax.scale_by_amsgrad if amsgrad else optax.scale_by_adam
    head = [scale(b1=b1, b2=b2, eps=head_eps or eps)]
    if row_clip:
        head.append(clip_row_rms(row_clip))

    def labels(params):
        return jax.tree.map(lambda h: "head" if h else "rest", is_head(params))

    return optax.partition(
        {"head": optax.chain(*head), "rest": optax.scale_by_adam(b1=b1, b2=b2, eps=eps)}, labels
    )


def clip_row_rms(max_rms: float) -> optax.GradientTransformation:
    """Rescale each row (the last axis) of every update whose RMS exceeds `max_rms` to RMS
    `max_rms`; rows under it pass unchanged."""

    def clip(u_VxD):
        rms_Vx1 = jnp.sqrt(jnp.mean(jnp.square(u_VxD), axis=-1, keepdims=True))
        # A row at or under the limit is multiplied by exactly 1 (a zero row: max_rms / 0 = inf).
        return u_VxD * jnp.minimum(1.0, max_rms / rms_Vx1)

    def update_fn(updates, state, params=None):
        del params
        return jax.tree.map(clip, updates), state

    return optax.GradientTransformation(lambda params: optax.EmptyState(), update_fn)
