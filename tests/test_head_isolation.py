"""Heads and embeddings that isolate one capacity: rank-independent init of lowrank:r, the
wide nonlinear head mlp:r, and the narrow input embedding (embed_dim)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from test_multidevice import run_child

from spamlang import diagnostics as dg
from spamlang.diagnostics.training import grad_norms
from spamlang.errors import UserError
from spamlang.loss import loss_from_hidden
from spamlang.model import ModelConfig, Transformer, count_params
from spamlang.model.config import HEAD_FORMS
from spamlang.model.heads import PHI_RMS, gelu, linear_logits, make_head
from spamlang.perf import matmul_params

V = 97


def config(head="softmax", **kw):
    return ModelConfig.preset("tiny", vocab_size=V, head=head, n_layers=1, **kw)


def n_params(module):
    if isinstance(module, nnx.Variable):
        return module.size
    return sum(x.size for x in jax.tree.leaves(nnx.state(module, nnx.Param)))


def tokens(B=3, L=12, seed=1):
    return jax.random.randint(jax.random.key(seed), (B, L), 0, V)


def unit_rms(key, N, D):
    h_NxD = jax.random.normal(key, (N, D))
    return h_NxD / jnp.sqrt(jnp.mean(h_NxD**2, axis=-1, keepdims=True))


# --- config --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(head="mlp:4", tie_embeddings=True), "untied by construction"),
        (dict(head="mlp:0"), "hidden width r must be an integer >= 1"),
        (dict(head="mlp:x"), "hidden width r must be an integer >= 1"),
        (dict(head="mlp"), "'mlp:R'"),
        (dict(embed_dim=8, tie_embeddings=True), "tied head cannot use"),
        (dict(embed_dim=0), "embed_dim must be >= 1, got 0"),
        (dict(embed_dim="eight"), "embed_dim must be an integer or null, got 'eight'"),
        (dict(embed_dim=True), "embed_dim must be an integer or null, got True"),
    ],
)
def test_invalid_configs_raise_user_error(kw, match):
    with pytest.raises(UserError, match=match):
        config(**kw)


def test_head_forms_and_parse():
    assert "mlp:R" in HEAD_FORMS
    c = config("mlp:48")
    assert (c.head_kind, c.head_arg) == ("mlp", 48)
    # embed_dim = d_model is the plain model, and may be tied.
    assert not config(embed_dim=16, tie_embeddings=True).embed_projected


def test_old_config_json_without_embed_dim_loads_the_plain_model():
    old = config().to_json()
    del old["embed_dim"]
    c = ModelConfig.from_json(old)
    assert c.embed_dim is None and c == config()
    model = nnx.eval_shape(lambda: Transformer(c, rngs=nnx.Rngs(0)))
    assert not hasattr(model, "embed_proj") and model.embed.shape == (V, 16)
    assert ModelConfig.from_json(config(embed_dim=8).to_json()) == config(embed_dim=8)


@pytest.mark.parametrize(
    "head, embed_dim", [("mlp:5", None), ("mlp:40", 8), ("lowrank:5", 24), ("softmax", 16)]
)
def test_count_params_matches_initialised_state(head, embed_dim):
    c = config(head, embed_dim=embed_dim)
    model = nnx.eval_shape(lambda: Transformer(c, rngs=nnx.Rngs(0)))
    counts = count_params(c)
    e = embed_dim or 16
    assert counts["total"] == n_params(model)
    r = c.head_arg
    assert counts["head"] == n_params(model.head) == (V * r + r * 16 if r else V * 16)
    proj = n_params(model.embed_proj) if c.embed_projected else 0
    assert counts["embedding"] == n_params(model.embed) + proj == V * e + (e * 16 if proj else 0)
    assert counts["non_embedding"] == n_params(model.blocks) + n_params(model.final_norm)


def test_matmul_params_count_the_mlp_head_and_the_embedding_projection():
    base = matmul_params(config())
    assert matmul_params(config("mlp:40")) == base - V * 16 + V * 40 + 40 * 16
    assert matmul_params(config(embed_dim=8)) == base + 8 * 16


# --- init scale ------------------------------------------------------------------------------


def test_phi_rms_is_the_rms_of_gelu_on_a_standard_normal():
    x = np.linspace(-12, 12, 480_001)
    pdf = np.exp(-(x**2) / 2) / math.sqrt(2 * math.pi)
    mean_sq = np.trapezoid(np.asarray(gelu(jnp.asarray(x)), np.float64) ** 2 * pdf, x)
    assert PHI_RMS == pytest.approx(math.sqrt(mean_sq), rel=1e-5)


def logit_std(head, D, seeds=8, N=256):
    """RMS of the initial logits on unit-RMS inputs, pooled over `seeds` inits of `head`."""
    c = ModelConfig(vocab_size=512, d_model=D, n_heads=2, n_kv_heads=1, init_std=0.25, head=head)
    mean_sq = []
    for seed in range(seeds):
        module = make_head(c, rngs=nnx.Rngs(seed))
        h_NxD = unit_rms(jax.random.key(100 + seed), N, D)
        logits = linear_logits(*module.linear(h_NxD, None), "float32")
        mean_sq.append(float(jnp.mean(logits**2)))
    return math.sqrt(np.mean(mean_sq))


def test_initial_logit_std_does_not_depend_on_rank_or_head():
    D = 32
    softmax = logit_std("softmax", D)
    assert softmax == pytest.approx(0.25 * math.sqrt(D), rel=0.05)
    stds = {head: logit_std(head, D) for head in ("lowrank:4", "lowrank:128", "mlp:4", "mlp:128")}
    print({"softmax": softmax, **stds})
    for head, std in stds.items():
        assert std == pytest.approx(softmax, rel=0.1), head
    # The rule before (A and B both N(0, init_std^2)) gives std init_std^2 sqrt(r D): the
    # same check fails on it, at both ends of the sweep.
    h_NxD = unit_rms(jax.random.key(0), 256, D)
    for r in (4, 128):
        ka, kb = jax.random.split(jax.random.key(r))
        a_VxR, b_RxD = (0.25 * jax.random.normal(k, s) for k, s in ((ka, (512, r)), (kb, (r, D))))
        old = float(jnp.sqrt(jnp.mean((h_NxD @ b_RxD.T @ a_VxR.T) ** 2)))
        assert abs(old / softmax - 1) > 0.4  # measured 0.41x and 2.8x softmax's


def test_narrow_embedding_feeds_the_stream_at_the_plain_scale():
    c = ModelConfig.preset("small", vocab_size=512, embed_dim=32, n_layers=1)
    model = Transformer(c, rngs=nnx.Rngs(0))
    assert model.embed.shape == (512, 32) and model.embed_proj.shape == (32, 64)
    x_LxD = model._embed(jnp.arange(512)[None])[0]
    plain_norm = c.init_std * math.sqrt(c.d_model)  # a plain embedding row's expected norm
    assert float(jnp.sqrt(jnp.mean(jnp.sum(x_LxD**2, -1)))) == pytest.approx(plain_norm, rel=0.1)


# --- the mlp head: loss, rank, diagnostics ---------------------------------------------------


@pytest.mark.parametrize("head", ["mlp:8", "mlp:40"])  # r < D = 16 and r > D
def test_fused_chunked_loss_equals_the_plain_one(head):
    # From hidden states: the backbone is the same for every head and only costs compiling.
    graphdef, state = nnx.split(Transformer(config(head), rngs=nnx.Rngs(0)))
    h_NxD = unit_rms(jax.random.key(0), 33, 16)  # no chunk size divides N = 33
    y_N = tokens()[:, 1:].reshape(-1)

    @jax.jit
    def both(state, h_NxD):
        def loss(state, h_NxD, chunk):
            return loss_from_hidden(nnx.merge(graphdef, state), h_NxD, y_N, chunk_size=chunk)

        grad = jax.value_and_grad(loss, argnums=(0, 1), has_aux=True)
        return grad(state, h_NxD, None), grad(state, h_NxD, 5)

    ((plain, plain_acc), plain_grads), ((fused, fused_acc), fused_grads) = both(state, h_NxD)
    np.testing.assert_allclose(fused, plain, rtol=1e-6)
    assert float(fused_acc["accuracy"]) == float(plain_acc["accuracy"])
    for x, y in zip(jax.tree.leaves(fused_grads), jax.tree.leaves(plain_grads)):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5 * float(jnp.abs(y).max()))


def test_mlp_head_rank_exceeds_d_model_where_lowrank_stays_capped():
    h_NxD = unit_rms(jax.random.key(0), 128, 16)
    ranks = {}
    for head in ("mlp:48", "lowrank:48"):
        module = make_head(config(head), rngs=nnx.Rngs(0))
        logits_NxV = linear_logits(*module.linear(h_NxD, None), "float32")
        ranks[head] = int(jnp.linalg.matrix_rank(logits_NxV))
    assert ranks["lowrank:48"] <= 16 < ranks["mlp:48"]
    assert ranks["mlp:48"] == 48  # as wide as r: D no longer caps it
    # what result.json reports as head_rank
    assert [config(h).head_rank for h in ("mlp:48", "lowrank:48", "lowrank:4", "softmax")] == [
        48,
        16,
        4,
        16,
    ]


def test_mlp_head_has_no_single_matrix():
    model = Transformer(config("mlp:8"), rngs=nnx.Rngs(0))
    with pytest.raises(UserError, match="nonlinear"):
        model.head_matrix()


def test_diag_metrics_of_mlp_head_is_against_its_output_matrix():
    """Kernel fraction on the features gelu(h B^T) against col(A), by hand in float64; the
    narrow embedding's projection counts with the embedding."""
    model = Transformer(config("mlp:24", embed_dim=8), rngs=nnx.Rngs(0))
    t = tokens()
    got = nnx.jit(lambda m, t: dg.diag_metrics(m, t, chunk_size=16))(model, t)
    h_NxD = np.asarray(nnx.jit(lambda m, t: m.hidden(t))(model, t)[:, :-1], np.float64)
    pre_NxR = h_NxD.reshape(-1, 16) @ np.asarray(model.head.b[...], np.float64).T
    f_NxR = pre_NxR * 0.5 * (1 + np.vectorize(math.erf)(pre_NxR / math.sqrt(2)))
    a_VxR = np.asarray(model.head.a[...], np.float64)
    logits_NxV = f_NxR @ a_VxR.T
    p_NxV = np.exp(logits_NxV - logits_NxV.max(-1, keepdims=True))
    G_NxV = p_NxV / p_NxV.sum(-1, keepdims=True) - np.eye(V)[np.asarray(t[:, 1:]).reshape(-1)]
    q_VxR = np.linalg.qr(a_VxR)[0]
    kernel_NxV = G_NxV - (G_NxV @ q_VxR) @ q_VxR.T
    kf = np.linalg.norm(kernel_NxV) / np.linalg.norm(G_NxV)
    assert 0 < kf < 1
    assert float(got["kernel_fraction"]) == pytest.approx(kf, rel=1e-4)
    # `spamlang diagnose`'s driver measures the same thing.
    out = dg.diagnose_model(
        model,
        t,
        chunk_size=16,
        rank_tokens=8,
        profile_tokens=8,
        efficiency_tokens=8,
        step_fractions=[1e-2],
    )
    assert out["kernel_fraction"] == pytest.approx(kf, rel=1e-4)
    assert (out["d_model"], out["feature_dim"], out["head_rank"]) == (16, 24, 24)

    assert set(got) == {
        "kernel_fraction",
        "projected_cosine",
        "grad_norm/embedding",
        "grad_norm/block_0",
        "grad_norm/head",
    }
    # The grouping is a function of the paths alone: the parameters stand in for gradients.
    norms = grad_norms(nnx.state(model, nnx.Param))
    embedding = math.hypot(
        float(jnp.linalg.norm(model.embed[...])), float(jnp.linalg.norm(model.embed_proj[...]))
    )
    assert float(norms["grad_norm/embedding"]) == pytest.approx(embedding, rel=1e-6)


def test_lazy_row_tables_are_the_v_row_matrices_only():
    from spamlang.optim import row_tables

    model = nnx.eval_shape(lambda: Transformer(config("mlp:24", embed_dim=8), rngs=nnx.Rngs(0)))
    rows = row_tables(V)(nnx.state(model, nnx.Param))
    marked = sorted(
        jax.tree_util.keystr(path, simple=True, separator="/").removesuffix("/value")
        for path, leaf in jax.tree_util.tree_leaves_with_path(rows)
        if leaf
    )
    assert marked == ["embed", "head/a"]


def test_pretrained_checkpoints_refuse_a_narrow_embedding_and_the_mlp_head():
    from spamlang.model.hf_checkpoint import check_fits

    checkpoint = config()
    check_fits(checkpoint, config(embed_dim=16), "ckpt")  # = d_model: the plain model
    with pytest.raises(UserError, match="embed_dim 8 cannot start from ckpt"):
        check_fits(checkpoint, config(embed_dim=8), "ckpt")
    with pytest.raises(UserError, match="one matrix"):
        check_fits(checkpoint, config("mlp:8"), "ckpt")


# --- decoding and data parallelism -------------------------------------------------------


def test_cached_decoding_equals_full_forward_with_narrow_embedding_and_mlp_head():
    model = Transformer(config("mlp:24", embed_dim=8), rngs=nnx.Rngs(0))
    t = tokens(B=2, L=8)
    full = nnx.jit(lambda m, t: m(t))(model, t)
    assert full.shape == (2, 8, V)
    cache = model.init_cache(2, 8)
    h, cache = nnx.jit(lambda m, t, c: m.hidden_cached(t, c, 0))(model, t[:, :3], cache)
    steps = [model.log_probs(h)]
    step = nnx.jit(lambda m, tok, c, pos: m.decode_step(tok, c, pos))
    for pos in range(3, 8):
        logp, cache = step(model, t[:, pos], cache, jnp.int32(pos))
        steps.append(logp[:, None])
    np.testing.assert_allclose(jnp.concatenate(steps, 1), full, atol=2e-5)


# Loss and gradients of the chunked loss under a 1- and a 4-device data mesh, for the mlp
# head fed by a narrow embedding (embed_proj's gradient is all-reduced too); lowrank has the
# same parameters A and B and the same fused loss on (h B^T, A), without the gelu.
CHILD = """
import json
import jax
import numpy as np
from flax import nnx
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
from spamlang.loss import next_token_loss
from spamlang.model import ModelConfig, Transformer

assert jax.device_count() == 4, jax.devices()
HEADS = [("mlp:24", 8)]  # the wide head fed by a narrow embedding: both new parts at once
models = [nnx.split(Transformer(ModelConfig.preset("tiny", vocab_size=64, n_layers=1, head=head,
                                                   embed_dim=e), rngs=nnx.Rngs(0)))
          for head, e in HEADS]
t = jax.random.randint(jax.random.key(1), (8, 12), 0, 64)
out = {}
for n in (1, 4):
    mesh = jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])

    def loss(state, graphdef, t):
        return next_token_loss(nnx.merge(graphdef, state), t, chunk_size=8, mesh=mesh)[0]

    # Every model in one program: one compile per device count.
    step = jax.jit(lambda states, t: [jax.value_and_grad(loss)(s, g, t)
                                      for s, (g, _) in zip(states, models)])
    results = step([s for _, s in models], jax.device_put(t, NamedSharding(mesh, P("data"))))
    for (head, _), (value, grads) in zip(HEADS, results):
        out[f"{head}/{n}"] = {"loss": float(value), "grads": [
            np.asarray(g).ravel().tolist() for g in jax.tree.leaves(grads)]}
print("RESULT " + json.dumps(out))
"""


def test_four_devices_equal_one_device():
    out = run_child(CHILD, timeout=120)
    for head in ("mlp:24",):
        one, four = out[f"{head}/1"], out[f"{head}/4"]
        assert four["loss"] == pytest.approx(one["loss"], rel=1e-5)
        assert len(four["grads"]) == len(one["grads"]) >= 10
        for a, b in zip(four["grads"], one["grads"]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6 * max(map(abs, b)))
