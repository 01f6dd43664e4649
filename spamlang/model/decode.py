"""Autoregressive generation with a KV cache: one prefill, then one decode step per token."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from flax import nnx

from spamlang.errors import UserError
from spamlang.model import kernels


def generate(
    model,
    prompt_BxP: jax.Array,
    length: int,
    *,
    key: jax.Array | None = None,
    temperature: float = 0.0,
) -> jax.Array:
    """Continue `prompt_BxP` to `length` tokens; int32[B, length], the prompt included.

    temperature == 0 is greedy (argmax); temperature > 0 samples from softmax(logp / T) and
    needs `key`. Costs one prefill plus length - P cached decode steps. Runs under its own
    `jax.jit` (compiled once per shape, length and temperature) and may itself be called
    inside a jitted function: `length` and `temperature` must then be static.
    """
    length = int(length)
    P = prompt_BxP.shape[1]
    if P < 1:
        raise UserError("generate needs a prompt of at least one token")
    if length < P:
        raise UserError(f"length ({length}) must be at least the prompt length ({P})")
    if temperature < 0:
        raise UserError(f"temperature must be >= 0, got {temperature}")
    if temperature > 0 and key is None:
        raise UserError("sampling with temperature > 0 needs a PRNG key")
    if key is None:
        key = jax.random.key(0)  # unused by greedy decoding
    graphdef, state = nnx.split(model)
    return _generate(
        graphdef, state, jnp.asarray(prompt_BxP, jnp.int32), key, length, float(temperature)
    )


@functools.partial(jax.jit, static_argnums=(0, 4, 5))
def _generate(graphdef, state, prompt_BxP, key, length, temperature):
    model = nnx.merge(graphdef, state)
    B, P = prompt_BxP.shape
    tokens_BxL = jnp.zeros((B, length), jnp.int32).at[:, :P].set(prompt_BxP)
    if length == P:
        return tokens_BxL
    cache = model.init_cache(B, length)
    h_BxPxD, cache = model.hidden_cached(prompt_BxP, cache, 0)
    logp_BxV = model.log_probs(h_BxPxD[:, -1])

    def choose(logp_BxV, step_key):
        if temperature == 0:
            return kernels.first_argmax(logp_BxV, model.config.kernels)
        return jax.random.categorical(step_key, logp_BxV / temperature, axis=-1).astype(jnp.int32)

    def body(i, carry):
        tokens_BxL, logp_BxV, cache = carry
        token_B = choose(logp_BxV, jax.random.fold_in(key, i))
        tokens_BxL = jax.lax.dynamic_update_slice(tokens_BxL, token_B[:, None], (0, i))
        # The step after the last token is computed and discarded: cheaper than a cond.
        logp_BxV, cache = model.decode_step(token_B, cache, i)
        return tokens_BxL, logp_BxV, cache

    tokens_BxL, _, _ = jax.lax.fori_loop(P, length, body, (tokens_BxL, logp_BxV, cache))
    return tokens_BxL
