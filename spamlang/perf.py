"""Model FLOPs per token and the machine's measured matmul peak, for MFU reporting, and
`step_timer`, the step-timing loop the benchmarks share.

MFU = flops_per_token(config, L) * tokens_per_second / matmul_peak_flops().
"""

from __future__ import annotations

import time

from spamlang.model.config import ModelConfig


def matmul_params(config: ModelConfig) -> int:
    """Parameters that take part in a matmul per token (the N of "6 N").

    Backbone: the attention (wq, wk, wv, wo) and SwiGLU matrices; RMSNorm scales are left
    out (elementwise). Head: every matrix the head multiplies by, counted as often as it is
    applied: softmax V D (tied or not: the embedding gather itself is not a matmul and is not
    counted); lowrank V r + r D; mos:K the projection D K D, the prior D K, and K V D for the
    K softmaxes that share W.
    """
    D, F, hd = config.d_model, config.d_ff, config.head_dim
    per_layer = D * hd * (2 * config.n_heads + 2 * config.n_kv_heads) + 3 * D * F
    kind, arg, V = config.head_kind, config.head_arg, config.vocab_size
    if kind == "softmax":
        head = V * D
    elif kind == "lowrank":
        head = V * arg + arg * D
    else:
        head = D * arg * D + D * arg + arg * V * D
    return config.n_layers * per_layer + head


def flops_per_token(config: ModelConfig, seq_len: int) -> float:
    """Training FLOPs (forward + backward) per token: 6 N + 12 n_layers seq_len d_model.

    6 N: 2 per multiply-add forward, twice that backward, over `matmul_params`. Attention:
    QK^T and AV each cost 2 seq_len d_model forward per token and layer, times 3 for the
    backward; the causal mask is *not* halved (the PaLM / nanoGPT convention), so this is
    the dense-attention count.
    """
    return 6.0 * matmul_params(config) + 12.0 * config.n_layers * seq_len * config.d_model


def matmul_peak_flops(n: int = 2048, reps: int = 5) -> float:
    """Measured float32 FLOP/s of a jitted n x n matmul on the default device: best of `reps`."""
    import jax
    import jax.numpy as jnp

    ka, kb = jax.random.split(jax.random.key(0))
    a = jax.random.normal(ka, (n, n), jnp.float32)
    b = jax.random.normal(kb, (n, n), jnp.float32)
    matmul = jax.jit(lambda a, b: a @ b)
    matmul(a, b).block_until_ready()  # compile and warm up
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        matmul(a, b).block_until_ready()
        best = min(best, time.perf_counter() - start)
    return 2.0 * n**3 / best


def step_timer(trainers):
    """A `run(n) -> seconds` closure that steps `trainers` (one Trainer or GroupTrainer, or a
    list run one after another) n times from where the last call left them, for benchmarks."""
    import jax

    trainers = list(trainers) if isinstance(trainers, (list, tuple)) else [trainers]
    states = [t.init_state() for t in trainers]

    def run(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            for i, trainer in enumerate(trainers):
                states[i], metrics = trainer.step(states[i])
        jax.block_until_ready((states, metrics))
        return time.perf_counter() - start

    return run
