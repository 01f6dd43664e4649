"""spamlang.model.kernels: the "cpu" kernels equal the plain "xla" ones, and "xla" stays plain."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from spamlang.errors import UserError
from spamlang.model import ModelConfig, Transformer, count_params, generate, kernels

V = 64
RNG = np.random.default_rng(0)  # numpy, not jax.random: eager jax.random compiles per shape


def normal(*shape):
    return jnp.asarray(RNG.standard_normal(shape, dtype=np.float32))


def close(a, b, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


@pytest.mark.parametrize(
    "name, platform, expected",
    [
        ("auto", "cpu", "cpu"),
        ("auto", "gpu", "xla"),
        ("auto", "tpu", "xla"),
        ("xla", "cpu", "xla"),
        ("cpu", "gpu", "cpu"),
    ],
)
def test_resolve(name, platform, expected):
    assert kernels.resolve(name, platform) == expected


def test_resolve_rejects_unknown_names_listing_the_choices():
    with pytest.raises(UserError, match="auto, xla, cpu"):
        kernels.resolve("cudnn", "gpu")


@pytest.mark.parametrize("name", ["bogus", "auto"])  # "auto" is resolved before the config
def test_model_config_rejects_unknown_kernels(name):
    with pytest.raises(UserError, match="kernels"):
        ModelConfig(vocab_size=V, kernels=name)


def test_kernels_do_not_change_the_parameter_count():
    base = ModelConfig.preset("tiny", vocab_size=V)
    assert count_params(base) == count_params(base.replace(kernels="cpu"))


# Every computation below runs under one jit: op-by-op dispatch compiles each primitive
# separately and made this file several times slower.


@functools.partial(jax.jit, static_argnums=2)
def dense_value_and_grads(x, w, name):
    return jax.value_and_grad(lambda x, w: jnp.sum(jnp.sin(kernels.dense(x, w, name))), (0, 1))(
        x, w
    )


def test_cpu_dense_equals_plain_dense_in_value_and_gradients():
    x = normal(3, 8, 16)
    # a wide and a narrow output: weight_grad transposes a different operand in each
    for w in (normal(16, 24), normal(16, 4)):
        (value, grads), (ref_value, ref_grads) = (
            dense_value_and_grads(x, w, name) for name in ("cpu", "xla")
        )
        close(value, ref_value)
        for a, b in zip(grads, ref_grads):
            close(a, b)
    g = normal(24, 5)
    close(kernels.weight_grad(x.reshape(24, 16), g), x.reshape(24, 16).T @ g)


def test_cpu_attention_equals_dot_product_attention_with_gqa():
    q = normal(2, 16, 4, 8)  # 4 query heads ...
    k, v = normal(2, 16, 2, 8), normal(2, 16, 2, 8)  # ... share 2 KV heads
    ct = jnp.cos(q)

    @jax.jit
    def outputs_and_grads(q, k, v):
        def ours(q, k, v):
            return jnp.sum(kernels.attention(q, k, v, "cpu") * ct)

        def ref(q, k, v):
            return jnp.sum(jax.nn.dot_product_attention(q, k, v, is_causal=True) * ct)

        outs = [
            jax.nn.dot_product_attention(q, k, v, is_causal=True),
            kernels.attention(q, k, v, "cpu"),
            kernels.attention(q, k, v, "xla"),
        ]
        return outs, jax.grad(ours, (0, 1, 2))(q, k, v), jax.grad(ref, (0, 1, 2))(q, k, v)

    (ref, cpu, xla), grads, ref_grads = outputs_and_grads(q, k, v)
    close(cpu, ref)
    np.testing.assert_array_equal(xla, ref)
    for a, b in zip(grads, ref_grads):
        close(a, b, rtol=1e-4)


def test_first_argmax_cpu_equals_xla_including_ties():
    x = np.random.default_rng(2).integers(0, 3, (40, V)).astype(np.float32)  # many ties
    x[0], x[1], x[2, [5, 9]] = 1.0, -np.inf, 7.0  # all equal; all -inf; a tie at the top
    for axis in (-1, 0):
        ours = kernels.first_argmax(jnp.asarray(x), "cpu", axis=axis)
        assert ours.dtype == jnp.int32
        np.testing.assert_array_equal(ours, kernels.first_argmax(jnp.asarray(x), "xla", axis=axis))
        np.testing.assert_array_equal(ours, np.argmax(x, axis=axis))
    first = kernels.first_argmax(jnp.asarray(x), "cpu")
    assert first[0] == 0 and first[1] == 0 and first[2] == 5


def test_first_argmax_differs_only_on_nan_as_documented():
    x = jnp.array([[0.0, jnp.nan, 2.0], [3.0, 1.0, 3.0]])
    np.testing.assert_array_equal(kernels.first_argmax(x, "xla"), [1, 0])
    np.testing.assert_array_equal(kernels.first_argmax(x, "cpu"), [3, 0])


@functools.cache
def tiny(kernels_name):
    """(graphdef, state) of a one-block GQA model; the same parameters for every kernels_name."""
    config = ModelConfig.preset(
        "tiny", vocab_size=V, n_layers=1, n_heads=4, n_kv_heads=2, kernels=kernels_name
    )
    return nnx.split(Transformer(config, rngs=nnx.Rngs(0)))


def loss_fn(graphdef, tokens_BxL):
    def loss(state):
        logp_BxLxV = nnx.merge(graphdef, state)(tokens_BxL)
        nll = -jnp.mean(jnp.take_along_axis(logp_BxLxV[:, :-1], tokens_BxL[:, 1:, None], -1))
        return nll, logp_BxLxV

    return loss


TOKENS = jnp.asarray(RNG.integers(0, V, (2, 16)), jnp.int32)


@functools.partial(jax.jit, static_argnums=0)
def logp_and_grads(graphdef, state):
    grads, logp = jax.grad(loss_fn(graphdef, TOKENS), has_aux=True)(state)
    return logp, grads


def test_transformer_cpu_and_xla_kernels_give_equal_logits_and_gradients():
    (g_cpu, s_cpu), (g_xla, s_xla) = tiny("cpu"), tiny("xla")
    jax.tree.map(np.testing.assert_array_equal, s_cpu, s_xla)  # kernels do not touch the init
    logp_cpu, grads_cpu = logp_and_grads(g_cpu, s_cpu)
    logp_xla, grads_xla = logp_and_grads(g_xla, s_xla)
    close(logp_cpu, logp_xla)
    assert jax.tree.structure(grads_cpu) == jax.tree.structure(grads_xla)
    jax.tree.map(lambda a, b: close(a, b, atol=1e-6), grads_cpu, grads_xla)


@pytest.mark.parametrize("name, has_barrier", [("xla", False), ("cpu", True)])
def test_only_cpu_kernels_put_optimization_barriers_in_the_gradient(name, has_barrier):
    graphdef, state = tiny(name)
    hlo = jax.jit(jax.grad(loss_fn(graphdef, TOKENS), has_aux=True)).lower(state).as_text()
    assert ("optimization_barrier" in hlo) == has_barrier


def test_greedy_decoding_agrees_across_kernels():
    prompt = TOKENS[:, :4]
    out = [generate(nnx.merge(*tiny(name)), prompt, 10) for name in ("cpu", "xla")]
    np.testing.assert_array_equal(out[0], out[1])
