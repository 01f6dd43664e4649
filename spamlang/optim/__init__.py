"""The optimizer: clip -> a direction -> the head's own scale -> decoupled weight decay -> -lr,
times a relative schedule; the per-member numbers (`member_values`) held as arrays in its state
by `optax.inject_hyperparams`, so that K members of a vmapped group differ in them."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from spamlang.fields import tagged
from spamlang.optim import head, lazy

# optax's name of a per-member number where it is not the config field's.
_OPTAX_NAMES = {"lr": "learning_rate"}


def member_values(config) -> dict:
    """{field: value} of the fields tagged member="optim": held as arrays in a member's state, so a
    sweep over b2 costs what one over the LR does (the head controls stay constants)."""
    members = tagged(config, "member")
    return {name: getattr(config, name) for name, kind in members.items() if kind == "optim"}


def _by_optax_name(values: dict) -> dict:
    return {_OPTAX_NAMES.get(field, field): value for field, value in values.items()}


def relative_schedule(
    schedule: str, steps: int, *, warmup_frac: float, decay_frac: float, final_ratio: float
) -> optax.Schedule:
    """LR multiplier in [0, 1] by step: a linear warmup, then "constant", "cosine" (to
    `final_ratio`) or "wsd" (stable, then a linear decay over the last `decay_frac` of the
    steps)."""
    warmup = int(round(warmup_frac * steps))
    rest = max(steps - warmup, 1)
    if schedule == "constant":
        after = optax.constant_schedule(1.0)
    elif schedule == "cosine":
        after = optax.cosine_decay_schedule(1.0, decay_steps=rest, alpha=final_ratio)
    elif schedule == "wsd":
        decay = min(int(round(decay_frac * steps)), rest)
        after = optax.join_schedules(
            [
                optax.constant_schedule(1.0),
                optax.linear_schedule(1.0, final_ratio, transition_steps=max(decay, 1)),
            ],
            boundaries=[rest - decay],
        )
    else:
        raise ValueError(f"unknown schedule {schedule!r}")
    if warmup == 0:
        return after
    return optax.join_schedules(
        [optax.linear_schedule(0.0, 1.0, transition_steps=warmup), after], boundaries=[warmup]
    )


def _path_name(path) -> str:
    return "/".join(str(getattr(k, "key", getattr(k, "name", k))) for k in path).lower()


def decay_mask(params):
    """True for the leaves that get weight decay: matrices, never norm scales."""
    return jax.tree_util.tree_map_with_path(
        lambda path, leaf: jnp.ndim(leaf) >= 2 and "norm" not in _path_name(path), params
    )


def row_tables(vocab_size: int, which: str = "all"):
    """params -> True for the matrices with one row per token id (`which`: embed, head or all)."""
    prefixes = ("embed", "head") if which == "all" else (which,)

    def is_rows(path, leaf):
        name = _path_name(path)
        return jnp.ndim(leaf) == 2 and leaf.shape[0] == vocab_size and name.startswith(prefixes)

    return lambda params: jax.tree_util.tree_map_with_path(is_rows, params)


def _optimizer(
    learning_rate,
    b1,
    b2,
    eps,
    momentum,
    *,
    name: str,
    weight_decay: float,
    vocab_size: int,
    lazy_rows: str = "all",
    head_rows: str = "head",
    head_amsgrad: bool = False,
    head_eps: float = 0.0,
    head_row_clip: float = 0.0,
    head_b2: float | None = None,
    head_v_gated: bool = False,
    head_lr_scale: float = 1.0,
    head_weight_decay: float | None = None,
) -> optax.GradientTransformationExtraArgs:
    """direction -> the head's LR scale -> weight decay -> (lazy: absent rows zeroed) -> -lr."""
    is_head, rows = row_tables(vocab_size, head_rows), row_tables(vocab_size)
    controls = (head_amsgrad, head_eps, head_row_clip, head_b2 is not None, head_v_gated)
    if name == "adamw" and any(controls):
        direction = head.scale_by_adam_with_head(
            is_head,
            b1,
            b2,
            eps,
            head_b2=head_b2,
            v_gated=head_v_gated,
            amsgrad=head_amsgrad,
            head_eps=head_eps,
            row_clip=head_row_clip,
        )
    elif name == "adamw":  # without controls, as before they existed: the same program
        direction = optax.scale_by_adam(b1=b1, b2=b2, eps=eps)
    elif name == "lazy_adamw":
        direction = lazy.scale_by_lazy_adam(
            row_tables(vocab_size, lazy_rows), b1=b1, b2=b2, eps=eps
        )
    elif name == "sgd":
        direction = optax.trace(decay=momentum)
    elif name == "adafactor":
        direction = optax.chain(
            optax.scale_by_factored_rms(min_dim_size_to_factor=1),
            optax.clip_by_block_rms(1.0),
            optax.scale_by_param_block_rms(),
        )
    else:
        raise ValueError(f"unknown optimizer {name!r}")

    def other_matrices(params):
        return jax.tree.map(lambda d, r: d and not r, decay_mask(params), rows(params))

    # Only what is set enters the program: at their defaults, the same program as before them.
    parts = [direction, head.record_head_step(is_head)]
    if head_lr_scale != 1.0:
        parts.append(head.scale_rows(is_head, head_lr_scale))
    if head_weight_decay is None:
        parts.append(optax.add_decayed_weights(weight_decay, mask=decay_mask))
    else:
        parts.append(optax.add_decayed_weights(weight_decay, mask=other_matrices))
        parts.append(optax.add_decayed_weights(head_weight_decay, mask=rows))
    if name == "lazy_adamw":
        parts.append(lazy.keep_present_rows(row_tables(vocab_size, lazy_rows)))
    return optax.chain(*parts, optax.scale(-learning_rate))


def from_config(config) -> tuple[optax.GradientTransformationExtraArgs, optax.Schedule]:
    """(clip -> the optimizer with an injected peak LR -> the schedule, that schedule); `update`
    takes `present_V` (lazy_adamw) and `gate_V` (the head's gated rows) as extra arguments."""
    schedule = relative_schedule(
        config.schedule,
        config.steps,
        warmup_frac=config.warmup_frac,
        decay_frac=config.decay_frac,
        final_ratio=config.final_lr_ratio,
    )
    # The optimizer's static arguments: TrainConfig fields of the same name, and two derived.
    names = "weight_decay vocab_size lazy_rows head_amsgrad head_eps head_row_clip head_b2 "
    names += "head_v_gated head_lr_scale head_weight_decay"
    static = {k: getattr(config, k) for k in names.split()}
    static |= dict(name=config.optimizer, head_rows="embed" if config.tie_embeddings else "head")
    inner = optax.inject_hyperparams(_optimizer, static_args=tuple(static))(
        **_by_optax_name(member_values(config)), **static
    )
    parts = [optax.clip_by_global_norm(config.grad_clip)] if config.grad_clip > 0 else []
    return optax.chain(*parts, inner, optax.scale_by_schedule(schedule)), schedule


def peak_lr(opt_state) -> jax.Array:  # of a `from_config` state
    return optax.tree_utils.tree_get(opt_state, "learning_rate")


def with_hyperparams(opt_state, values: dict):
    """`opt_state` with its hyperparameters replaced by a member's own (`member_values`' names)."""
    values = _by_optax_name(values)
    return optax.tree_utils.tree_set(
        opt_state, **{name: jnp.asarray(value, jnp.float32) for name, value in values.items()}
    )
