"""The Transformer: configs, parameter counts, heads, causality, cached decoding, FLOPs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from spamlang.errors import UserError
from spamlang.model import PRESETS, ModelConfig, Transformer, count_params, generate
from spamlang.perf import flops_per_token, matmul_params, matmul_peak_flops

V = 97  # odd on purpose: nothing may assume a power of two
HEADS = [
    ("softmax", False),
    ("softmax", True),
    ("lowrank:5", False),
    ("mos:3", False),
    ("mos:3", True),
]


def make(head="softmax", tie=False, **kw):
    config = ModelConfig.preset("tiny", vocab_size=V, head=head, tie_embeddings=tie, **kw)
    return Transformer(config, rngs=nnx.Rngs(0))


# One compiled forward per model structure (nnx.jit caches on the graph definition).
forward = nnx.jit(lambda model, tokens_BxL: model(tokens_BxL))


def tokens(B=2, L=12, seed=1):
    return jax.random.randint(jax.random.key(seed), (B, L), 0, V)


def n_params(module):
    if isinstance(module, nnx.Variable):
        return module.size
    return sum(x.size for x in jax.tree.leaves(nnx.state(module, nnx.Param)))


# --- config ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(head="lowrank:4", tie_embeddings=True), "untied"),
        (dict(head="mos:0"), "integer >= 1"),
        (dict(head="lowrank:0"), "integer >= 1"),
        (dict(head="lowrank:-2"), "integer >= 1"),
        (dict(head="mos:x"), "integer >= 1"),
        (dict(head="mos"), "softmax"),
        (dict(head="softmax:2"), "softmax"),
        (dict(d_model=18, n_heads=4), "divisible by n_heads"),
        (dict(n_heads=4, n_kv_heads=3), "divisible by n_kv_heads"),
        (dict(d_model=12, n_heads=4), "even"),
        (dict(vocab_size=1), "vocab_size"),
        (dict(dtype="float16"), "dtype"),
        (dict(param_dtype="fp32"), "param_dtype"),
        (dict(n_layers=0), "n_layers"),
        (dict(init_std=0.0), "init_std"),
        (dict(residual="yes"), "residual"),
    ],
)
def test_invalid_configs_raise_user_error(kw, match):
    base = dict(vocab_size=V, d_model=16, n_heads=2, n_kv_heads=1)
    with pytest.raises(UserError, match=match):
        ModelConfig(**{**base, **kw})


def test_presets():
    assert set(PRESETS) >= {"tiny", "small", "medium", "smollm2-106m"}
    with pytest.raises(UserError, match="tiny"):
        ModelConfig.preset("huge", vocab_size=V)
    with pytest.raises(UserError, match="vocab_size"):
        ModelConfig.preset("tiny")
    with pytest.raises(UserError, match="unknown model field"):
        ModelConfig.preset("tiny", vocab_size=V, width=3)
    c = ModelConfig.preset("smollm2-106m", vocab_size=1024, n_layers=2)
    assert (c.d_model, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim) == (576, 2, 9, 3, 64)
    assert (c.d_ff, c.norm_eps, c.rope_theta) == (1536, 1e-5, 1e5)
    assert c.init_std == pytest.approx(576**-0.5)
    assert ModelConfig.from_json(c.to_json()) == c


# --- parameter counts --------------------------------------------------------------------


def test_smollm2_counts_are_exact_and_match_the_abstract_state():
    config = ModelConfig.preset("smollm2-106m", vocab_size=49_152, tie_embeddings=True)
    counts = count_params(config)
    assert counts["non_embedding"] == 106_203_456
    assert counts["total"] == 134_515_008
    abstract = nnx.eval_shape(lambda: Transformer(config, rngs=nnx.Rngs(0)))
    assert n_params(abstract) == 134_515_008
    assert n_params(abstract.blocks) + n_params(abstract.final_norm) == 106_203_456


@pytest.mark.parametrize("head, tie", HEADS)
@pytest.mark.parametrize("preset", ["tiny", "small"])
def test_count_params_matches_initialised_state(preset, head, tie):
    config = ModelConfig.preset(preset, vocab_size=V, head=head, tie_embeddings=tie, n_layers=1)
    model = nnx.eval_shape(lambda: Transformer(config, rngs=nnx.Rngs(0)))
    counts = count_params(config)
    assert counts["total"] == n_params(model)
    assert counts["embedding"] == n_params(model.embed) == V * config.d_model
    assert counts["head"] == n_params(model.head)
    assert counts["non_embedding"] == n_params(model.blocks) + n_params(model.final_norm)


def test_tied_model_has_no_separate_head_matrix():
    tied, untied = make(tie=True), make(tie=False)
    assert n_params(tied.head) == 0 and n_params(untied.head) == V * 16
    assert n_params(untied) - n_params(tied) == V * 16
    # The tied head reads the embedding itself: changing E changes the output.
    t = tokens()
    before = forward(tied, t)
    tied.embed[...] = tied.embed[...] * 2.0
    assert not np.allclose(forward(tied, t), before)
    np.testing.assert_array_equal(tied.head_matrix(), tied.embed[...])


def test_init_is_normal_with_init_std():
    config = ModelConfig.preset("small", vocab_size=1000, init_std=0.05)
    model = Transformer(config, rngs=nnx.Rngs(0))
    for w in (model.embed, model.blocks[0].attn.wq, model.blocks[1].mlp.w_down, model.head.w):
        assert float(jnp.std(w[...])) == pytest.approx(0.05, rel=0.1)
    np.testing.assert_array_equal(model.final_norm.scale[...], 1.0)


# --- forward -------------------------------------------------------------------------------


@pytest.mark.parametrize("head, tie", HEADS)
def test_shapes_finite_and_normalised_with_and_without_jit(head, tie):
    model = make(head, tie)
    t = tokens()
    eager = model(t)
    graphdef, state = nnx.split(model)
    jitted = jax.jit(lambda s, t: nnx.merge(graphdef, s)(t))(state, t)
    for logp in (eager, jitted):
        assert logp.shape == (2, 12, V) and logp.dtype == jnp.float32
        assert bool(jnp.isfinite(logp).all())
        np.testing.assert_allclose(jax.nn.logsumexp(logp, axis=-1), 0.0, atol=1e-5)
    np.testing.assert_allclose(eager, jitted, atol=1e-5)


def test_mos_mixture_weights_sum_to_one_and_log_probs_are_the_mixture():
    model = make("mos:3", False)
    h = jax.random.normal(jax.random.key(0), (2, 12, 16))
    pi = jnp.exp(model.head.log_mixture_weights(h))
    assert pi.shape == (2, 12, 3)
    np.testing.assert_allclose(pi.sum(-1), 1.0, atol=1e-6)
    mixture = jnp.einsum(
        "blk,blkv->blv", pi, jnp.exp(model.head.component_log_probs(h, model.embed[...]))
    )
    np.testing.assert_allclose(jnp.exp(model.log_probs(h)), mixture, rtol=1e-5, atol=1e-7)


def test_head_matrix_gives_the_logits_of_linear_heads():
    for head in ("softmax", "lowrank:5"):
        model = make(head)
        h = jax.random.normal(jax.random.key(0), (5, 16))
        logits = h @ model.head_matrix().T
        np.testing.assert_allclose(model.log_probs(h), jax.nn.log_softmax(logits), atol=1e-5)
    lowrank = make("lowrank:5")
    assert jnp.linalg.matrix_rank(lowrank.head_matrix()) == 5
    with pytest.raises(UserError, match="nonlinear"):
        make("mos:2").head_matrix()


@pytest.mark.parametrize("residual", [True, False])
def test_causality_by_gradients(residual):
    model = make("mos:2", residual=residual)
    x_1xLxD = model.embed[...][tokens(B=1, L=10)][:1].astype(jnp.float32)

    @nnx.jit
    def sensitivity_LxL(model, x):
        # d(output at t) / d(input at s), summed over features: zero exactly when s > t.
        def out_L(x):
            return model.log_probs(model.hidden_from_embeddings(x))[0, :, :7].sum(-1)

        return jnp.abs(jax.jacrev(out_L)(x)[:, 0]).sum(-1)

    g = sensitivity_LxL(model, x_1xLxD)
    future = jnp.triu(jnp.ones((10, 10), bool), k=1)
    assert float(jnp.where(future, g, 0.0).max()) == 0.0
    assert float(jnp.where(future, jnp.inf, g).min()) > 0.0


def test_bfloat16_compute_keeps_float32_log_probs():
    model = make("mos:2", dtype="bfloat16", param_dtype="bfloat16")
    assert model.blocks[0].attn.wq[...].dtype == jnp.bfloat16
    logp = forward(model, tokens())
    assert logp.dtype == jnp.float32 and bool(jnp.isfinite(logp).all())
    np.testing.assert_allclose(jax.nn.logsumexp(logp, axis=-1), 0.0, atol=1e-4)


def test_sequences_longer_than_max_seq_len_are_refused():
    with pytest.raises(UserError, match="max_seq_len"):
        make(max_seq_len=8).hidden(tokens(L=9))


def test_residual_false_gradients_reach_the_first_layer_weaker():
    # Llama's init (std 0.02): without the identity path each sublayer's output is so small
    # that the next RMSNorm cannot rescale it (its mean square falls below norm_eps), and
    # the gradient dies on its way down. (With a large init the pre-norms amplify instead:
    # see the Transformer docstring.)
    t = tokens(B=2, L=16, seed=3)

    def first_layer_grad_norm(residual):
        config = ModelConfig.preset(
            "tiny", vocab_size=V, n_layers=6, residual=residual, init_std=0.02
        )
        graphdef, state = nnx.split(Transformer(config, rngs=nnx.Rngs(7)))

        @jax.jit
        def grads(state):
            def loss(state):
                logp = nnx.merge(graphdef, state)(t)[:, :-1]
                return -jnp.take_along_axis(logp, t[:, 1:, None], -1).mean()

            return nnx.state(nnx.merge(graphdef, jax.grad(loss)(state)).blocks[0])

        return float(jnp.sqrt(sum(jnp.sum(g**2) for g in jax.tree.leaves(grads(state)))))

    with_residual, without = first_layer_grad_norm(True), first_layer_grad_norm(False)
    assert np.isfinite(without) and with_residual > 0.01
    assert without < 1e-3 * with_residual


# --- cached decoding -----------------------------------------------------------------------


@pytest.mark.parametrize("head, tie", [("softmax", False), ("mos:3", True), ("lowrank:5", False)])
def test_cached_decoding_equals_full_forward(head, tie):
    model = make(head, tie)
    t = tokens(L=10)
    full = forward(model, t)
    cache = model.init_cache(2, 10)
    assert cache[0]["k"].shape == (2, 10, 1, 8)
    prefill = nnx.jit(lambda m, t, c: m.hidden_cached(t, c, 0))
    h, cache = prefill(model, t[:, :4], cache)  # prefill 4, then one at a time
    steps = [model.log_probs(h)]
    step = nnx.jit(lambda m, tok, c, pos: m.decode_step(tok, c, pos))
    for pos in range(4, 10):
        logp, cache = step(model, t[:, pos], cache, jnp.int32(pos))
        steps.append(logp[:, None])
    np.testing.assert_allclose(jnp.concatenate(steps, 1), full, atol=2e-5)


def naive_greedy(model, prompt, length):
    """Full forward at every step; future slots hold zeros, which causality makes harmless."""
    seq = jnp.zeros((prompt.shape[0], length), jnp.int32).at[:, : prompt.shape[1]].set(prompt)
    for i in range(prompt.shape[1], length):
        seq = seq.at[:, i].set(jnp.argmax(forward(model, seq)[:, i - 1], -1).astype(jnp.int32))
    return seq


@pytest.mark.parametrize("head", ["softmax", "mos:3"])
def test_generate_greedy_equals_the_naive_rollout(head):
    model = make(head, tie=True)
    prompt = tokens(B=3, L=2).astype(jnp.int32)
    out = generate(model, prompt, 9)
    assert out.shape == (3, 9) and out.dtype == jnp.int32
    np.testing.assert_array_equal(out, naive_greedy(model, prompt, 9))
    np.testing.assert_array_equal(generate(model, prompt, 2), prompt)


def test_generate_sampling_is_a_function_of_the_key():
    model = make()
    prompt = tokens(B=4, L=1)
    a = generate(model, prompt, 12, key=jax.random.key(1), temperature=1.0)
    b = generate(model, prompt, 12, key=jax.random.key(1), temperature=1.0)
    c = generate(model, prompt, 12, key=jax.random.key(2), temperature=1.0)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert int(a.min()) >= 0 and int(a.max()) < V
    # Also usable inside the caller's own jit (length and temperature static).
    graphdef, state = nnx.split(model)
    inner = jax.jit(lambda s, p, k: generate(nnx.merge(graphdef, s), p, 12, key=k, temperature=1.0))
    np.testing.assert_array_equal(inner(state, prompt, jax.random.key(1)), a)
    with pytest.raises(UserError, match="key"):
        generate(model, prompt, 5, temperature=0.5)
    with pytest.raises(UserError, match="prompt length"):
        generate(model, prompt, 0)


# --- FLOPs ---------------------------------------------------------------------------------


def test_flops_per_token():
    c = ModelConfig.preset("smollm2-106m", vocab_size=1024)
    backbone = count_params(c)["non_embedding"] - 61 * 576  # minus the RMSNorm scales
    assert matmul_params(c) == backbone + 1024 * 576
    assert flops_per_token(c, 256) == 6 * matmul_params(c) + 12 * 30 * 256 * 576
    # A tied head runs the same matmul; MoS runs its output matmul once per component.
    assert matmul_params(c.replace(tie_embeddings=True)) == matmul_params(c)
    assert matmul_params(c.replace(head="mos:2")) == backbone + 2 * 1024 * 576 + 576 * 1152 + 1152


def test_matmul_peak_flops_is_positive():
    assert matmul_peak_flops(n=128, reps=2) > 1e6


# --- reference implementation --------------------------------------------------------------


def test_matches_transformers_llama():
    # Same weights in transformers' LlamaForCausalLM: checks the RoPE convention, GQA,
    # RMSNorm and SwiGLU against the reference implementation of the paper's model family.
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    model = make(rope_theta=500.0)
    hf = transformers.LlamaForCausalLM(
        transformers.LlamaConfig(
            vocab_size=V,
            hidden_size=16,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            rms_norm_eps=1e-5,
            rope_parameters={"rope_type": "default", "rope_theta": 500.0},
            tie_word_embeddings=False,
            attn_implementation="eager",
        )
    ).eval()

    def T(variable, transpose=False):  # ours are input x output, torch's output x input
        x = torch.tensor(np.asarray(variable[...]))
        return x.T.contiguous() if transpose else x

    weights = {
        "model.embed_tokens.weight": T(model.embed),
        "lm_head.weight": T(model.head.w),
        "model.norm.weight": T(model.final_norm.scale),
    }
    for i, b in enumerate(model.blocks):
        p = f"model.layers.{i}."
        weights |= {
            p + "input_layernorm.weight": T(b.attn_norm.scale),
            p + "post_attention_layernorm.weight": T(b.mlp_norm.scale),
        }
        for name, w in [
            ("self_attn.q_proj", b.attn.wq),
            ("self_attn.k_proj", b.attn.wk),
            ("self_attn.v_proj", b.attn.wv),
            ("self_attn.o_proj", b.attn.wo),
            ("mlp.gate_proj", b.mlp.w_gate),
            ("mlp.up_proj", b.mlp.w_up),
            ("mlp.down_proj", b.mlp.w_down),
        ]:
            weights[p + name + ".weight"] = T(w, transpose=True)
    hf.load_state_dict(weights, strict=True)
    t = tokens(L=20)
    with torch.no_grad():
        reference = torch.log_softmax(hf(torch.tensor(np.asarray(t))).logits, -1).numpy()
    np.testing.assert_allclose(forward(model, t), reference, atol=2e-5)
