"""The loss math that the trainer and the diagnostics share (spamlang.loss): the per-token NLL,
its logit gradient softmax - onehot, and chunk-and-pad."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from spamlang.loss import (
    chunk_mask,
    chunk_rows,
    log_softmax,
    nll_logit_gradient,
    num_chunks,
    target_nll,
    token_nll,
    unchunk_rows,
)

N, V = 13, 37


def logits_and_targets(seed):
    k_logits, k_targets = jax.random.split(jax.random.key(seed))
    return (
        3 * jax.random.normal(k_logits, (N, V), jnp.float32),
        jax.random.randint(k_targets, (N,), 0, V),
    )


def reference_nll(logits_NxV, targets_N) -> np.ndarray:
    """-log softmax(logits)[target], float64 NumPy."""
    z = np.asarray(logits_NxV, np.float64)
    logp = z - z.max(-1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(-1, keepdims=True))
    return -logp[np.arange(len(z)), np.asarray(targets_N)]


def test_token_nll_is_the_negative_log_softmax_of_the_target():
    logits, y = logits_and_targets(0)
    nll = token_nll(logits, y)
    assert nll.shape == (N,) and nll.dtype == jnp.float32
    np.testing.assert_allclose(nll, reference_nll(logits, y), rtol=2e-6, atol=1e-6)
    # A head's log-probs are read as they are: token_nll is target_nll after one log-softmax.
    np.testing.assert_array_equal(target_nll(log_softmax(logits), y), nll)
    # bfloat16 logits: the loss is still taken in float32, of the bfloat16 values.
    half = logits.astype(jnp.bfloat16)
    assert token_nll(half, y).dtype == jnp.float32
    np.testing.assert_allclose(
        token_nll(half, y), reference_nll(half.astype(jnp.float32), y), rtol=2e-6, atol=1e-6
    )


def mask_N():
    return (jnp.arange(N) % 3 != 0).astype(jnp.float32)


@pytest.mark.parametrize("weight", ["none", "mean", "mask"])
def test_logit_gradient_is_the_autodiff_gradient_of_the_weighted_nll(weight):
    logits, y = logits_and_targets(1)
    w = {"none": None, "mean": 1.0 / N, "mask": mask_N()}[weight]

    def loss(z_NxV):
        nll = token_nll(z_NxV, y)
        return jnp.sum(nll if w is None else nll * w)

    G = nll_logit_gradient(log_softmax(logits), y, w)
    assert G.shape == (N, V) and G.dtype == jnp.float32
    np.testing.assert_allclose(G, jax.grad(loss)(logits), atol=1e-7)
    if weight == "mask":  # padded rows contribute exactly nothing
        assert not np.any(np.asarray(G)[np.asarray(mask_N()) == 0])


def test_logit_gradient_is_softmax_minus_onehot():
    logits, y = logits_and_targets(2)
    z = np.asarray(logits, np.float64)
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    G = np.asarray(nll_logit_gradient(log_softmax(logits), y))
    np.testing.assert_allclose(G, p - np.eye(V)[np.asarray(y)], atol=1e-6)
    np.testing.assert_allclose(G.sum(-1), 0.0, atol=1e-6)  # hence rank(G) <= V - 1


@pytest.mark.parametrize("n, chunk", [(12, 4), (13, 4), (3, 5), (1, 1)])
@pytest.mark.parametrize("xp", [np, jnp], ids=["numpy", "jax"])
def test_chunk_rows_round_trips(n, chunk, xp):
    x_NxD = xp.arange(1, 2 * n + 1, dtype=xp.float32).reshape(n, 2)  # no row is all fill
    x_KxCxD = chunk_rows(x_NxD, chunk, fill=-7)
    K = math.ceil(n / chunk)
    assert num_chunks(n, chunk) == K and x_KxCxD.shape == (K, chunk, 2)
    assert isinstance(x_KxCxD, np.ndarray) == (xp is np)  # host arrays stay on the host
    np.testing.assert_array_equal(np.concatenate(list(np.asarray(x_KxCxD)))[:n], x_NxD)
    np.testing.assert_array_equal(unchunk_rows(x_KxCxD, n), x_NxD)
    np.testing.assert_array_equal(np.asarray(x_KxCxD).reshape(-1, 2)[n:], -7.0)
    mask_KxC = chunk_mask(n, chunk)
    assert mask_KxC.shape == (K, chunk) and mask_KxC.dtype == np.float32
    np.testing.assert_array_equal(mask_KxC.reshape(-1), np.arange(K * chunk) < n)


def test_chunk_rows_of_targets_pads_with_zero_and_keeps_the_dtype_under_jit():
    y_N = jnp.arange(1, 11, dtype=jnp.int32)
    y_KxC = jax.jit(lambda y: chunk_rows(y, 4))(y_N)
    assert y_KxC.dtype == jnp.int32 and y_KxC.shape == (3, 4)
    np.testing.assert_array_equal(y_KxC.reshape(-1), list(range(1, 11)) + [0, 0])
    np.testing.assert_array_equal(jax.jit(lambda y: unchunk_rows(y, 10))(y_KxC), y_N)
