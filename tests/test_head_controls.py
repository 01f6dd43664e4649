"""The head's own b2, gated v, LR scale and weight decay, each against a hand-written AdamW on a
3-row table; the head step's RMS record; and SpamLang's zero gradient on q and k."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from spamlang import optim
from spamlang.optim import head as head_module

V, B1, B2, EPS, WD = 3, 0.9, 0.95, 1e-8, 0.1
PARAMS = {"embed": np.full((V, 2), 0.5, np.float32), "head": np.full((V, 2), -0.25, np.float32)}
GRADS = [
    {k: np.array([[0.3, -0.2], [0.1, 0.4], [-0.5, 0.2]], np.float32) * s for k, s in (("embed", 1.0), ("head", 2.0))},
    {k: np.array([[0.01, 0.02], [-0.03, 0.001], [0.2, -0.1]], np.float32) * s for k, s in (("embed", 1.0), ("head", 2.0))},
]  # fmt: skip
GATES = [np.array([True, True, True]), np.array([True, False, True])]


def run(**head):
    """The updates of two steps, learning rate -1 (so an update is the direction plus decay);
    `head`: the controls, constants of the program."""
    tx = optim._optimizer(
        -1.0, B1, B2, EPS, 0.9, name="adamw", weight_decay=WD, vocab_size=V, **head
    )
    state = tx.init(jax.tree.map(jnp.asarray, PARAMS))
    out = []
    for grads, gate in zip(GRADS, GATES):
        updates, state = tx.update(
            jax.tree.map(jnp.asarray, grads), state, PARAMS, gate_V=jnp.asarray(gate)
        )
        out.append(jax.tree.map(np.asarray, updates))
    return out, state


def adamw_reference(grads, b2=B2, gated=None, scale=1.0, wd=WD, p=None):
    """NumPy AdamW in float64: [update of step 1, step 2] of one table, and its last v."""
    m = v = 0.0
    shown = np.zeros(V, bool)
    out = []
    for t, (g, gate) in enumerate(zip(grads, GATES), start=1):
        g = g.astype(np.float64)
        m = B1 * m + (1 - B1) * g
        moved = b2 * v + (1 - b2) * g * g
        hold = (shown & ~gate)[:, None] if gated else np.zeros((V, 1), bool)
        v = np.where(hold, v, moved)
        shown |= gate
        d = (m / (1 - B1**t)) / (np.sqrt(v / (1 - b2**t)) + EPS)
        out.append(scale * d + wd * p)
    return out, v


def _check(got, table, **reference):
    want, _ = adamw_reference([g[table] for g in GRADS], p=PARAMS[table], **reference)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a[table], b, rtol=2e-6, atol=1e-7)


def test_the_heads_own_b2():
    got, _ = run(head_b2=0.5)
    _check(got, "head", b2=0.5)
    _check(got, "embed")  # untied: the embedding keeps the run's b2


def _head_nu(state):
    return np.asarray(optax_get(state, "inner_states")["head"].inner_state[0].nu["head"])


def test_gated_v_holds_an_absent_rows_v_bit_for_bit():
    got, state = run(head_v_gated=True)
    _check(got, "head", gated=True)
    _check(got, "embed")  # untied: the embedding's v is Adam's
    # After step 1 every row was shown; in step 2 row 1 is absent: its v is step 1's, exactly.
    one = optim._optimizer(
        -1.0, B1, B2, EPS, 0.9, name="adamw", weight_decay=WD, vocab_size=V, head_v_gated=True
    )
    s = one.update(
        jax.tree.map(jnp.asarray, GRADS[0]),
        one.init(jax.tree.map(jnp.asarray, PARAMS)),
        PARAMS,
        gate_V=jnp.asarray(GATES[0]),
    )[1]
    assert _head_nu(state)[1].tobytes() == _head_nu(s)[1].tobytes()
    assert (_head_nu(state)[[0, 2]] != _head_nu(s)[[0, 2]]).all()


def test_without_controls_the_head_is_plain_adamw_bit_for_bit():
    import optax

    got, _ = run()
    tx = optax.chain(optax.scale_by_adam(B1, B2, EPS), optax.add_decayed_weights(WD))
    state = tx.init(jax.tree.map(jnp.asarray, PARAMS))
    for grads, mine in zip(GRADS, got):
        plain, state = tx.update(jax.tree.map(jnp.asarray, grads), state, PARAMS)
        for k in PARAMS:
            assert np.asarray(plain[k]).tobytes() == mine[k].tobytes(), k


def test_the_heads_lr_scale_scales_its_direction_not_its_decay():
    got, _ = run(head_lr_scale=0.1)
    _check(got, "head", scale=0.1)
    _check(got, "embed")


def test_the_row_tables_own_weight_decay():
    got, _ = run(head_weight_decay=0.0)
    _check(got, "head", wd=0.0)
    _check(got, "embed", wd=0.0)  # the embedding's rows too


@pytest.mark.parametrize("name", ["sgd", "adafactor", "lazy_adamw"])
def test_lr_scale_and_decay_apply_to_every_optimizer(name):
    def updates(**head):
        tx = optim._optimizer(
            -1.0, B1, B2, EPS, 0.0, name=name, weight_decay=WD, vocab_size=V, **head
        )
        state = tx.init(jax.tree.map(jnp.asarray, PARAMS))
        extra = dict(present_V=jnp.ones(V, bool), gate_V=jnp.ones(V, bool))
        return jax.tree.map(np.asarray, tx.update(jax.tree.map(jnp.asarray, GRADS[0]), state, PARAMS, **extra)[0])  # fmt: skip

    plain, scaled = updates(), updates(head_lr_scale=0.5, head_weight_decay=0.0)
    direction = plain["head"] - WD * PARAMS["head"]
    np.testing.assert_allclose(scaled["head"], 0.5 * direction, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(scaled["embed"], plain["embed"] - WD * PARAMS["embed"], rtol=1e-6)


def test_the_head_steps_rms_is_recorded_over_all_and_absent_rows():
    got, state = run()
    record = optax_get(state, "head_step_rms"), optax_get(state, "head_step_rms_absent")
    direction = got[1]["head"] - WD * PARAMS["head"]
    assert float(record[0]) == pytest.approx(np.sqrt(np.mean(direction**2)), rel=1e-6)
    assert float(record[1]) == pytest.approx(np.sqrt(np.mean(direction[1] ** 2)), rel=1e-6)


def optax_get(state, name):
    import optax

    return optax.tree_utils.tree_get(state, name)


def test_the_train_step_logs_the_heads_step():
    from spamlang.train.config import TrainConfig
    from spamlang.train.step import Program

    config = TrainConfig(
        vocab_size=64, seq_len=2, batch_size=8, tokens=8 * 2 * 4, log_every=1, model={"n_layers": 1}
    )
    prog = Program(config)
    state = prog.init([0], [1e-2])
    for _ in range(2):
        state, metrics = prog.step(state)
    all_rows, absent = (float(metrics[k][0]) for k in head_module.HeadStepState._fields)
    assert all_rows > 0 and absent > 0  # 8 of 64 symbols a step: most rows are absent


def test_spamlang_gives_attention_queries_and_keys_no_gradient():
    """Every position of `s s ... s` holds the same value, so attention's weights cannot change
    its output: q and k get no gradient (up to rounding), v and the rest do."""
    from flax import nnx

    from spamlang.loss import next_token_loss
    from spamlang.model import Transformer
    from spamlang.train.config import TrainConfig

    config = TrainConfig(vocab_size=32, seq_len=8)
    model = Transformer(config.model_config(), rngs=nnx.Rngs(0))
    tokens = config.make_language().sample(jax.random.PRNGKey(1), 16, 8)
    graph, params = nnx.split(model, nnx.Param)

    def loss(params):
        return next_token_loss(nnx.merge(graph, params), tokens)[0]

    grads = jax.tree_util.tree_leaves_with_path(jax.grad(loss)(params))
    norms = {jax.tree_util.keystr(k): float(jnp.abs(v).max()) for k, v in grads}
    qk = [n for k, n in norms.items() if "'wq'" in k or "'wk'" in k]
    v = [n for k, n in norms.items() if "'wv'" in k]
    assert len(qk) == 2 * len(v) > 0
    assert max(qk) < 1e-6 * min(v), norms
