"""The decoder: embedding, blocks, final RMSNorm and an LM head; KV-cached generation (one
prefill, then one decode step per token)."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
from flax import nnx

from spamlang.errors import UserError
from spamlang.model import kernels
from spamlang.model.config import ModelConfig
from spamlang.model.heads import make_head
from spamlang.model.layers import Block, RMSNorm, normal_param


class Transformer(nnx.Module):
    """A Llama-style decoder-only LM; the residual stream is float32, matmuls run in `config.dtype`.
    A narrow embedding (embed_dim e) is lifted into the stream by `embed_proj` ~ N(0, 1/e);
    residual=False makes every sublayer replace the stream (vanishing-gradient tests)."""

    def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
        self.config = config
        e = config.embed_width
        self.embed = normal_param(rngs, (config.vocab_size, e), config)
        if config.embed_projected:
            self.embed_proj = normal_param(rngs, (e, config.d_model), config, std=1 / math.sqrt(e))
        self.blocks = nnx.List([Block(config, rngs=rngs) for _ in range(config.n_layers)])
        self.final_norm = RMSNorm(config)
        self.head = make_head(config, rngs=rngs)

    def _check_len(self, length: int) -> None:
        if length > self.config.max_seq_len:
            raise UserError(
                f"sequence length {length} exceeds max_seq_len {self.config.max_seq_len}"
            )

    def _embed(self, tokens_BxL: jax.Array) -> jax.Array:
        """The stream's input x_BxLxD, float32: E's rows, lifted by embed_proj if E is narrow."""
        rows_BxLxE = jnp.take(self.embed[...], tokens_BxL, axis=0)
        if not self.config.embed_projected:
            return rows_BxLxE.astype(jnp.float32)
        c = self.config
        proj_ExD = self.embed_proj[...].astype(c.dtype)
        return kernels.dense(rows_BxLxE.astype(c.dtype), proj_ExD, c.kernels).astype(jnp.float32)

    def hidden(self, tokens_BxL: jax.Array) -> jax.Array:
        """Final-normed hidden states h_BxLxD, float32 (the input of the LM head)."""
        self._check_len(tokens_BxL.shape[-1])
        return self.hidden_from_embeddings(self._embed(tokens_BxL))

    def hidden_from_embeddings(self, x_BxLxD: jax.Array) -> jax.Array:
        """The blocks and final norm applied to the stream's input (differentiable in x)."""
        x_BxLxD = x_BxLxD.astype(jnp.float32)
        for block in self.blocks:
            x_BxLxD = block(x_BxLxD)
        return self.final_norm(x_BxLxD)

    def log_probs(self, h_NxD: jax.Array) -> jax.Array:
        """Normalised float32 log-probabilities [..., V] from hidden states [..., D], any head."""
        return self.head.log_probs(h_NxD, self.embed[...])

    def linear_head(self, h_NxD: jax.Array):
        """(features_NxR, W_VxR) with logits = features W^T; UserError for mos."""
        return self.head.linear(h_NxD, self.embed[...])

    def head_matrix(self) -> jax.Array:
        """The V x D output matrix: E (tied), W or A B; UserError for mos and mlp."""
        return self.head.matrix(self.embed[...])

    def __call__(self, tokens_BxL: jax.Array) -> jax.Array:
        """log-probabilities logp_BxLxV (float32) of the next token at every position."""
        return self.log_probs(self.hidden(tokens_BxL))

    def init_cache(self, batch_size: int, max_len: int) -> list[dict]:
        """An empty KV cache: per layer {"k", "v"} [B, max_len, n_kv_heads, head_dim]."""
        self._check_len(max_len)
        c = self.config
        shape = (batch_size, max_len, c.n_kv_heads, c.head_dim)
        return [
            {"k": jnp.zeros(shape, c.dtype), "v": jnp.zeros(shape, c.dtype)}
            for _ in range(c.n_layers)
        ]

    def hidden_cached(self, tokens_BxT: jax.Array, cache: list[dict], pos: jax.Array):
        """(h_BxTxD, cache) of T tokens at positions pos..pos+T-1 given the cache."""
        pos = jnp.asarray(pos, jnp.int32)
        x = self._embed(tokens_BxT)
        new_cache = []
        for block, kv in zip(self.blocks, cache):
            x, kv = block.cached(x, kv, pos)
            new_cache.append(kv)
        return self.final_norm(x), new_cache

    def decode_step(self, tokens_B: jax.Array, cache: list[dict], pos: jax.Array):
        """One token per sequence at position `pos`; (logp_BxV of position pos + 1, cache)."""
        h_Bx1xD, cache = self.hidden_cached(tokens_B[:, None], cache, pos)
        return self.log_probs(h_Bx1xD[:, 0]), cache


def generate(
    model,
    prompt_BxP: jax.Array,
    length: int,
    *,
    key: jax.Array | None = None,
    temperature: float = 0.0,
) -> jax.Array:
    """Continue `prompt_BxP` to `length` tokens (the prompt included): greedy at temperature 0, else
    sampled with `key`; one prefill, then cached decode steps, jitted per shape."""
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
