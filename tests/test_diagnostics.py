"""Gradient-bottleneck diagnostics against the paper's theory (sections 2.3, 3.3, 3.4)."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from spamlang import diagnostics as dg
from spamlang.diagnostics.head_chunks import JacobianHead


def normal(seed, shape):
    return jax.random.normal(jax.random.PRNGKey(seed), shape, jnp.float32)


def orthonormal(seed, V, D):
    return jnp.linalg.qr(normal(seed, (V, D)))[0]


def ce_mean(logits_TxV, y_T):
    return dg.cross_entropy_sum(logits_TxV, y_T) / logits_TxV.shape[0]


# --- kernel fraction -----------------------------------------------------------------------


def test_random_head_destroys_sqrt_one_minus_d_over_v():
    V, D = 4096, 64
    kf = float(dg.kernel_fraction(normal(1, (48, V)), normal(0, (V, D))))
    assert abs(kf - np.sqrt(1 - D / V)) < 0.01 * np.sqrt(1 - D / V)


# Most checks share one shape so that each jitted function compiles once.
T, V, D = 24, 128, 8


def test_square_orthogonal_head_destroys_nothing():
    G, W = normal(1, (T, V)), orthonormal(0, V, V)
    assert float(dg.kernel_fraction(G, W)) < 1e-3
    assert float(dg.projected_cosine(G, W)) == pytest.approx(1.0, abs=1e-5)


def test_orthonormal_head_identity():
    G, W = normal(1, (T, V)), orthonormal(0, V, D)
    kf = float(dg.kernel_fraction(G, W))
    expected = 1 - float(jnp.sum((G @ W) ** 2) / jnp.sum(G**2))
    assert kf**2 == pytest.approx(expected, rel=1e-4)


def test_projection_is_idempotent_and_orthogonal():
    G, W = normal(1, (T, V)), normal(0, (V, D))
    Q = dg.head_basis(W)
    PG = dg.project(G, Q)
    np.testing.assert_allclose(dg.project(PG, Q), PG, atol=1e-5)
    assert abs(float(jnp.sum(PG * (G - PG)))) < 1e-4 * float(jnp.sum(G * G))
    # The destroyed part is exactly what W^T sends to zero.
    np.testing.assert_allclose((G - PG) @ W, 0.0, atol=1e-4)


def test_invariant_under_invertible_right_factor():
    G, W = normal(1, (T, V)), normal(0, (V, D))
    M = normal(2, (D, D)) + 3 * jnp.eye(D)
    assert float(dg.kernel_fraction(G, W @ M)) == pytest.approx(
        float(dg.kernel_fraction(G, W)), rel=1e-4
    )
    assert float(dg.projected_cosine(G, W @ M)) == pytest.approx(
        float(dg.projected_cosine(G, W)), rel=1e-4
    )


def test_low_rank_head_uses_its_true_column_space():
    r = 3
    A, B, G = normal(0, (V, r)), normal(1, (r, D)), normal(2, (T, V))
    Q = dg.head_basis(A @ B)
    assert int(jnp.sum(jnp.any(Q != 0, axis=0))) == r
    assert float(dg.kernel_fraction(G, A @ B)) == pytest.approx(
        float(dg.kernel_fraction(G, A)), rel=1e-4
    )


def test_stats_add_over_token_chunks():
    G, W = normal(1, (T, V)), normal(0, (V, D))
    Q = dg.head_basis(W)
    whole = dg.bottleneck_stats(G, W, Q)
    parts = dg.bottleneck_stats(G[:13], W, Q) + dg.bottleneck_stats(G[13:], W, Q)
    for a, b in zip(jax.tree.leaves(whole), jax.tree.leaves(parts)):
        assert float(a) == pytest.approx(float(b), rel=1e-5)
    # Frobenius cosine is sqrt(1 - kf^2); the per-token cosine is a different average.
    assert float(whole.frobenius_cosine) ** 2 == pytest.approx(
        1 - float(whole.kernel_fraction) ** 2, rel=1e-4
    )
    assert float(whole.projected_cosine) != pytest.approx(float(whole.frobenius_cosine), rel=1e-3)


def test_jacobian_head_chain_rule_matches_autodiff():
    """With logits := log p, J_t^T (p - onehot) is the true grad_h (p^T J_t = 0)."""
    K = 3
    P, Wk = normal(0, (D, K * D)), normal(1, (V, D))

    def log_probs(h_NxD):  # a small mixture of softmaxes
        c = jnp.tanh(h_NxD @ P).reshape(h_NxD.shape[0], K, D)
        return jax.nn.logsumexp(jax.nn.log_softmax(c @ Wk.T, -1) - jnp.log(K), axis=1)

    @jax.jit
    def check(h, y):
        G = dg.logit_gradient(log_probs(h), y)
        head = JacobianHead(log_probs)
        grad_h = jax.vjp(log_probs, h)[1](G)[0]
        true_grad_h = jax.grad(lambda x: ce_mean(log_probs(x), y))(h)
        J0 = head.jacobian(h[0])
        return grad_h, true_grad_h, head.induced(h, G)[0], J0 @ (J0.T @ G[0])

    grad_h, true_grad_h, induced, explicit = check(normal(2, (T, D)), jnp.arange(T) * 5 % V)
    np.testing.assert_allclose(grad_h, true_grad_h, atol=1e-6)
    np.testing.assert_allclose(induced, explicit, atol=1e-6)


# --- logit gradient, rank ------------------------------------------------------------------


def test_logit_gradient_is_the_autodiff_gradient():
    logits, y = normal(0, (T, V)), jnp.arange(T) * 3 % V
    np.testing.assert_allclose(
        dg.logit_gradient(logits, y), jax.grad(ce_mean)(logits, y), atol=1e-7
    )


def test_empirical_rank_of_known_rank_matrix():
    M = normal(0, (50, 6)) @ normal(1, (6, 80))
    assert dg.empirical_rank(M) == 6
    assert dg.empirical_rank(M, method="qr") == 6
    assert dg.rank_curve(M, [1, 3, 6, 20, 50]) == [1, 3, 6, 6, 6]


def test_logit_gradient_rank_is_capped_by_v_minus_one():
    V = 24
    G = dg.logit_gradient(3 * normal(0, (60, V)), jnp.arange(60) % V)
    assert dg.rank_curve(G, [5, 23, 40, 60]) == [5, 23, 23, 23]


def test_full_batch_step_changes_logits_by_rank_at_most_2d():
    """Equation 6: a gradient step on H and W moves the logits by a rank <= 2D matrix."""
    T, V, D, eta = 48, 64, 4, 0.5
    H, W, y = normal(0, (T, D)), normal(1, (V, D)), jnp.arange(T) * 5 % V
    gH, gW = jax.grad(lambda h, w: ce_mean(h @ w.T, y), argnums=(0, 1))(H, W)
    delta = ((H - eta * gH) @ (W - eta * gW).T - H @ W.T) / eta
    assert dg.empirical_rank(delta, tol=1e-5) == 2 * D
    s = np.linalg.svd(np.asarray(delta, np.float64), compute_uv=False)
    assert s[2 * D - 1] > 1e-3 * s[0] and s[2 * D] < 1e-5 * s[0]  # float32 rounding only
    assert dg.empirical_rank(dg.logit_gradient(H @ W.T, y)) == T  # the target is full rank


# --- update efficiency and coefficient profile ---------------------------------------------


def test_logit_direction_is_never_less_efficient_to_first_order():
    logits, y = 2 * normal(0, (T, V)), jnp.arange(T) * 7 % V
    for W in (normal(1, (V, D)), normal(2, (V, 64))):
        eff = dg.update_efficiency(logits, y, W, [1e-2, 3e-2, 1e-1])
        assert np.all(eff["delta_logit"] < 0) and np.all(eff["delta_induced"] < 0)
        assert np.all(eff["delta_logit"] <= eff["delta_induced"] + 1e-6)
    # D << V: the induced direction is far less efficient (the paper's Figure 8).
    assert (
        eff["delta_logit"][0]
        < 2 * dg.update_efficiency(logits, y, normal(1, (V, D)), [1e-2])["delta_induced"][0]
    )
    same = dg.update_efficiency(logits, y, orthonormal(3, V, V), [1e-2, 1e-1])
    np.testing.assert_allclose(same["delta_logit"], same["delta_induced"], atol=1e-5)


def test_coefficient_profile():
    G = dg.logit_gradient(3 * normal(0, (T, V)), jnp.arange(T) % V)
    prof = dg.coefficient_profile(G, normal(1, (V, D)), top=10)
    assert len(prof["ranks"]) == 10 and len(prof["proj_std"]) == 10
    assert np.all(np.diff(prof["full_abs_mean"]) <= 1e-7)  # sorted by |full|, descending
    assert prof["full_abs_mean"][0] > 3 * prof["proj_abs_mean"][0]
    full = dg.coefficient_profile(G, orthonormal(2, V, V))
    np.testing.assert_allclose(full["proj_mean"], full["full_mean"], atol=1e-5)


# --- model-level driver and the training hook ----------------------------------------------


def _model(head, tie=False, V=48):
    from spamlang.model import ModelConfig, Transformer

    cfg = ModelConfig.preset("tiny", vocab_size=V, head=head, tie_embeddings=tie)
    return Transformer(cfg, rngs=nnx.Rngs(0))


def test_diagnose_model_matches_direct_computation():
    model = _model("softmax")
    tokens = jax.random.randint(jax.random.PRNGKey(0), (4, 13), 0, 48)
    out = dg.diagnose_model(
        model,
        tokens,
        chunk_size=20,
        rank_tokens=40,
        profile_tokens=30,
        efficiency_tokens=48,
        step_fractions=[1e-3, 1e-2],
    )
    json.dumps(out)
    h = nnx.jit(lambda m, t: m.hidden(t))(model, tokens)[:, :-1].reshape(-1, 16)
    W = model.head_matrix()
    G = dg.logit_gradient(h @ W.T, tokens[:, 1:].reshape(-1))
    assert out["tokens"] == 48 and out["head_rank"] == 16
    assert out["kernel_fraction"] == pytest.approx(float(dg.kernel_fraction(G, W)), rel=1e-4)
    assert out["projected_cosine"] == pytest.approx(float(dg.projected_cosine(G, W)), rel=1e-4)
    assert out["rank_curve"]["rank"][-1] == dg.empirical_rank(G[:40])
    eff = out["efficiency"]
    assert all(a <= b + 1e-6 for a, b in zip(eff["delta_logit"], eff["delta_induced"]))
    direct = dg.update_efficiency(h @ W.T, tokens[:, 1:].reshape(-1), W, eff["step_norms"])
    np.testing.assert_allclose(eff["delta_logit"], direct["delta_logit"], atol=2e-5)
    np.testing.assert_allclose(eff["delta_induced"], direct["delta_induced"], atol=2e-5)


def test_diagnose_model_mos_head():
    out = dg.diagnose_model(
        _model("mos:2"),
        jnp.ones((2, 9), jnp.int32),
        chunk_size=8,
        jacobian_tokens=6,
        rank_tokens=16,
        step_fractions=[1e-2],
    )
    assert out["bottleneck_tokens"] == 6 and 0 < out["kernel_fraction"] < 1
    assert out["efficiency"]["delta_logit"][0] <= out["efficiency"]["delta_induced"][0] + 1e-6


def test_diag_metrics_keys_and_norms():
    """Tied: the shared matrix is reported once, so the groups add up to the total norm."""
    from spamlang.loss import next_token_loss

    model = _model("softmax", tie=True)
    tokens = jax.random.randint(jax.random.PRNGKey(1), (3, 11), 0, 48)
    got = nnx.jit(lambda m, t: dg.diag_metrics(m, t, chunk_size=16))(model, tokens)
    assert set(got) == {
        "kernel_fraction",
        "projected_cosine",
        "grad_norm/embedding",
        "grad_norm/block_0",
        "grad_norm/block_1",
        "grad_norm/head",
    }
    grads = nnx.jit(nnx.grad(lambda m: next_token_loss(m, tokens)[0]))(model)
    total = np.sqrt(sum(float(jnp.sum(g**2)) for g in jax.tree.leaves(grads)))
    groups = np.sqrt(sum(float(v) ** 2 for k, v in got.items() if k.startswith("grad_norm/")))
    assert groups == pytest.approx(total, rel=1e-4)
    h = nnx.jit(lambda m, t: m.hidden(t))(model, tokens)[:, :-1].reshape(-1, 16)
    G = dg.logit_gradient(h @ model.embed[...].T, tokens[:, 1:].reshape(-1))
    assert float(got["kernel_fraction"]) == pytest.approx(
        float(dg.kernel_fraction(G, model.embed[...])), rel=1e-4
    )
    assert float(got["projected_cosine"]) == pytest.approx(
        float(dg.projected_cosine(G, model.embed[...])), rel=1e-4
    )
