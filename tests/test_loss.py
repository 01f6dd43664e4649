"""The next-token loss: chunked forms equal the plain one, masks, accuracy, memory, vmap."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from spamlang.errors import UserError
from spamlang.loss import loss_from_hidden, next_token_loss
from spamlang.model import ModelConfig, Transformer

V = 97
HEADS = [("softmax", False), ("softmax", True), ("lowrank:5", False), ("mos:3", True)]
# (chunk_size, fused). N = 3 x 11 = 33 predicted positions: no chunk size divides it.
# fused=False is the generic checkpointed scan (the only path for mos).
VARIANTS = {"softmax": [(5, True), (7, False)], "lowrank:5": [(5, True)], "mos:3": [(7, True)]}


jit_loss = nnx.jit(next_token_loss, static_argnames=("chunk_size", "fused"))
jit_loss_from_hidden = nnx.jit(loss_from_hidden, static_argnames=("chunk_size", "fused"))


def split_model(head="softmax", tie=False, seed=0, **kw):
    # One layer: these tests are about the head and the loss, not the backbone.
    config = ModelConfig.preset(
        "tiny", vocab_size=V, head=head, tie_embeddings=tie, n_layers=1, **kw
    )
    return nnx.split(Transformer(config, rngs=nnx.Rngs(seed)))


def tokens(B=3, L=12, seed=1):
    return jax.random.randint(jax.random.key(seed), (B, L), 0, V)


def assert_trees_close(a, b, rtol, atol_scale):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol_scale * float(jnp.abs(y).max()))


@pytest.mark.parametrize("head, tie", HEADS)
def test_chunked_loss_and_grads_equal_the_plain_ones(head, tie):
    graphdef, state = split_model(head, tie)
    t = tokens()

    @jax.jit
    def all_variants(state):
        def loss(state, chunk, fused):
            return next_token_loss(nnx.merge(graphdef, state), t, chunk_size=chunk, fused=fused)

        grad = jax.value_and_grad(loss, has_aux=True)
        return [grad(state, None, True)] + [grad(state, c, f) for c, f in VARIANTS[head]]

    (plain, plain_acc), plain_grads = (results := all_variants(state))[0]
    assert float(plain) > 0 and bool(jnp.isfinite(plain))
    for (loss, acc), grads in results[1:]:
        np.testing.assert_allclose(loss, plain, rtol=1e-6)
        assert float(acc["accuracy"]) == float(plain_acc["accuracy"])
        # Elementwise 1e-5 relative, entries far below a leaf's scale compared at 1e-5 of it.
        assert_trees_close(grads, plain_grads, rtol=1e-5, atol_scale=1e-5)


def test_loss_is_the_mean_negative_log_likelihood_and_accuracy_the_argmax_rate():
    graphdef, state = split_model("lowrank:5")
    model, t = nnx.merge(graphdef, state), tokens()
    logp = nnx.jit(lambda m, t: m(t))(model, t)[:, :-1]
    nll = -jnp.take_along_axis(logp, t[:, 1:, None], -1)[..., 0]
    hits = jnp.argmax(logp, -1) == t[:, 1:]
    for chunk in (None, 4):
        loss, aux = jit_loss(model, t, chunk_size=chunk)
        np.testing.assert_allclose(loss, nll.mean(), rtol=1e-6)
        np.testing.assert_allclose(aux["accuracy"], hits.mean(), rtol=1e-6)


def test_accuracy_counts_hits():
    # A zero final-norm scale makes every hidden state 0, so all logits tie and argmax is
    # token 0: the accuracy is the fraction of targets equal to 0.
    model = nnx.merge(*split_model())
    model.final_norm.scale[...] = jnp.zeros(16)
    t = jnp.array([[5, 0, 0, 3, 0, 7, 1, 0, 2]])
    for chunk in (None, 3):
        _, aux = jit_loss(model, t, chunk_size=chunk)
        assert float(aux["accuracy"]) == pytest.approx(4 / 8)


@pytest.mark.parametrize("head", ["softmax", "mos:2"])
def test_masked_positions_do_not_count(head):
    graphdef, state = split_model(head)
    model = nnx.merge(graphdef, state)
    h_NxD = jax.random.normal(jax.random.key(0), (33, 16))
    targets_N = tokens()[:, 1:].reshape(-1)
    keep_N = jnp.arange(33) % 3 != 0
    subset, _ = jit_loss_from_hidden(model, h_NxD[keep_N], targets_N[keep_N])
    for chunk in (None, 4, 64):  # 64 > N: one padded chunk
        masked, _ = jit_loss_from_hidden(model, h_NxD, targets_N, keep_N, chunk_size=chunk)
        np.testing.assert_allclose(masked, subset, rtol=1e-6)


def test_bfloat16_chunked_loss_is_close_to_float32_plain():
    graphdef, state = split_model(dtype="bfloat16")
    t = tokens()
    model = nnx.merge(graphdef, state)
    reference, _ = jit_loss(nnx.merge(*split_model()), t)
    for chunk in (None, 8):
        loss, _ = jit_loss(model, t, chunk_size=chunk)
        assert loss.dtype == jnp.float32
        np.testing.assert_allclose(loss, reference, rtol=2e-2)


@pytest.mark.parametrize("head", ["softmax", "mos:2"])
def test_chunked_loss_never_materialises_n_by_v(head):
    # XLA's own buffer accounting: the plain gradient holds N x V floats (mos: N x K x V),
    # the chunked one a few chunk x V (x K) buffers plus V x D parameter-sized ones.
    N, V_big = 512, 8192
    config = ModelConfig.preset("tiny", vocab_size=V_big, head=head, n_layers=1)
    graphdef, state = nnx.split(nnx.eval_shape(lambda: Transformer(config, rngs=nnx.Rngs(0))))
    h = jax.ShapeDtypeStruct((N, 16), jnp.float32)
    t = jax.ShapeDtypeStruct((N,), jnp.int32)

    def temp_bytes(chunk):
        def loss(s, h, t):
            return loss_from_hidden(nnx.merge(graphdef, s), h, t, chunk_size=chunk)[0]

        grad = jax.jit(jax.grad(loss, argnums=(0, 1)))
        return grad.lower(state, h, t).compile().memory_analysis().temp_size_in_bytes

    n_by_v = N * V_big * 4
    plain, chunked = temp_bytes(None), temp_bytes(16)
    assert plain >= n_by_v
    assert chunked < n_by_v / 2 and chunked < plain / 8


def test_fused_loss_under_vmap_over_stacked_models():
    # The training code vmaps the step over a stack of models (one per learning rate).
    graphdef, s0 = split_model(seed=0)
    _, s1 = split_model(seed=1)
    stacked = jax.tree.map(lambda a, b: jnp.stack([a, b]), s0, s1)
    t = tokens()

    def grad(state):
        return jax.grad(lambda s: next_token_loss(nnx.merge(graphdef, s), t, chunk_size=8)[0])(
            state
        )

    both = jax.jit(jax.vmap(grad))(stacked)
    for i, single in enumerate((s0, s1)):
        assert_trees_close(
            jax.tree.map(lambda x, i=i: x[i], both),
            jax.jit(grad)(single),
            rtol=1e-5,
            atol_scale=1e-6,
        )


def test_bad_arguments_raise_user_error():
    model = nnx.merge(*split_model())
    for chunk in (0, -3, 2.5, True):
        with pytest.raises(UserError, match="chunk_size"):
            next_token_loss(model, tokens(), chunk_size=chunk)
    with pytest.raises(UserError, match="L >= 2"):
        next_token_loss(model, tokens(L=1))
