"""The decoder: embedding, blocks, final RMSNorm and an LM head, plus KV-cached decoding."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from spamlang.errors import UserError
from spamlang.model.config import ModelConfig
from spamlang.model.heads import make_head
from spamlang.model.layers import Block, RMSNorm, normal_param


class Transformer(nnx.Module):
    """A Llama-style decoder-only LM (pre-norm RMSNorm, RoPE, GQA, SwiGLU, no biases).

    Parameters: `embed` (E, V x D), `blocks[i]` (`attn_norm`, `attn.wq/wk/wv/wo`, `mlp_norm`,
    `mlp.w_gate/w_up/w_down`), `final_norm`, and `head` (softmax: `w` unless tied; lowrank:
    `a`, `b`; mos: `proj`, `prior`, and `w` unless tied). A tied model has no head matrix:
    the head reads `embed`.

    The residual stream is float32; matmuls run in `config.dtype`.

    residual=False turns every sublayer into a replacement of the stream:
        x = attn(attn_norm(x));  x = mlp(mlp_norm(x))
    instead of x = x + attn(attn_norm(x)); x = x + mlp(mlp_norm(x)). The embedding enters
    only the first attention sublayer and the final norm and head see the last MLP's output.
    Gradients then reach layer 1 only through the product of every sublayer's Jacobian, the
    setting that residual connections avoid (seeds/003). Because every sublayer input is
    RMS-normalised, how that product misbehaves depends on the init scale (measured on
    `tiny` with 8 layers): with init_std 0.02 the sublayer outputs fall below the norm's eps
    and layer 1's gradient vanishes (~0 against 0.24 with residuals); from about 0.04 up the
    norms' 1/rms amplification wins and layer 1's gradient is 3-90x larger than with
    residuals, i.e. it explodes instead.
    """

    def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
        self.config = config
        self.embed = normal_param(rngs, (config.vocab_size, config.d_model), config)
        self.blocks = nnx.List([Block(config, rngs=rngs) for _ in range(config.n_layers)])
        self.final_norm = RMSNorm(config)
        self.head = make_head(config, rngs=rngs)

    def _check_len(self, length: int) -> None:
        if length > self.config.max_seq_len:
            raise UserError(f"sequence length {length} exceeds max_seq_len {self.config.max_seq_len}")

    def _embed(self, tokens_BxL: jax.Array) -> jax.Array:
        return jnp.take(self.embed[...], tokens_BxL, axis=0).astype(jnp.float32)

    def hidden(self, tokens_BxL: jax.Array) -> jax.Array:
        """Final-normed hidden states h_BxLxD, float32 (the input of the LM head)."""
        self._check_len(tokens_BxL.shape[-1])
        return self.hidden_from_embeddings(self._embed(tokens_BxL))

    def hidden_from_embeddings(self, x_BxLxD: jax.Array) -> jax.Array:
        """The blocks and final norm applied to an embedded sequence (differentiable in x)."""
        x_BxLxD = x_BxLxD.astype(jnp.float32)
        for block in self.blocks:
            x_BxLxD = block(x_BxLxD)
        return self.final_norm(x_BxLxD)

    def log_probs(self, h_NxD: jax.Array) -> jax.Array:
        """Normalised float32 log-probabilities [..., V] from hidden states [..., D], any head."""
        return self.head.log_probs(h_NxD, self.embed[...])

    def linear_head(self, h_NxD: jax.Array):
        """(features_NxR, W_VxR) with logits = features W^T; UserError for a mos head.

        softmax: (h, W or E); lowrank: (h B^T, A), the narrow factorisation.
        """
        return self.head.linear(h_NxD, self.embed[...])

    def head_matrix(self) -> jax.Array:
        """The effective V x D output matrix: E (tied), W (untied) or A B (lowrank).

        Raises UserError for a mos head, which has no single matrix.
        """
        return self.head.matrix(self.embed[...])

    def __call__(self, tokens_BxL: jax.Array) -> jax.Array:
        """log-probabilities logp_BxLxV (float32) of the next token at every position."""
        return self.log_probs(self.hidden(tokens_BxL))

    # --- KV-cached decoding -------------------------------------------------------------

    def init_cache(self, batch_size: int, max_len: int) -> list[dict]:
        """An empty KV cache: per layer {"k", "v"} of [B, max_len, n_kv_heads, head_dim].

        The cache is a plain pytree passed in and out of `decode_step`; the module holds no
        mutable decoding state.
        """
        self._check_len(max_len)
        c = self.config
        shape = (batch_size, max_len, c.n_kv_heads, c.head_dim)
        return [{"k": jnp.zeros(shape, c.dtype), "v": jnp.zeros(shape, c.dtype)}
                for _ in range(c.n_layers)]

    def hidden_cached(self, tokens_BxT: jax.Array, cache: list[dict], pos: jax.Array):
        """Hidden states of T tokens at positions pos..pos+T-1 given the cache; (h_BxTxD, cache).

        With pos = 0 and T = prompt length this is the prefill; T = 1 is one decode step.
        """
        pos = jnp.asarray(pos, jnp.int32)
        x = self._embed(tokens_BxT)
        new_cache = []
        for block, kv in zip(self.blocks, cache):
            x, kv = block.cached(x, kv, pos)
            new_cache.append(kv)
        return self.final_norm(x), new_cache

    def decode_step(self, tokens_B: jax.Array, cache: list[dict], pos: jax.Array):
        """Feed one token per sequence at position `pos` (scalar int); (logp_BxV, cache).

        logp_BxV is the next-token distribution for position pos + 1.
        """
        h_Bx1xD, cache = self.hidden_cached(tokens_B[:, None], cache, pos)
        return self.log_probs(h_Bx1xD[:, 0]), cache
