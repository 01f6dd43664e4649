"""The optimizer axis: lazy Adam by hand, every optimizer in a vmapped group, exact resume,
the tracked rows' updates. (1 device = 4 for every optimizer: tests/test_multidevice.py.)"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from spamlang import optim
from spamlang.errors import UserError
from spamlang.optim.head import clip_row_rms
from spamlang.plots.track import summarise
from spamlang.train import Interrupted, TrainConfig, run_group
from spamlang.train import config as config_module
from spamlang.train.step import Program


@pytest.fixture(scope="module", autouse=True)
def no_peak_measurement():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPAMLANG_PEAK_FLOPS", "1e11")
        yield


def test_the_config_refuses_unknown_optimizers_and_out_of_range_settings():
    with pytest.raises(UserError, match="optimizer must be one of adamw, lazy_adamw, sgd"):
        TrainConfig(optimizer="adam")
    with pytest.raises(UserError, match="momentum must be in"):
        TrainConfig(momentum=1.0)
    with pytest.raises(UserError, match="track_symbols must be in"):
        TrainConfig(vocab_size=8, track_symbols=9)


def test_return_time_and_adam_memory():
    config = TrainConfig(vocab_size=4096, batch_size=32, b2=0.999)
    assert config.return_time == {
        "symbol_return_steps": 128.0,
        "adam_memory_steps": pytest.approx(1000.0),
        # a run of 512 steps: a running mean over all of them
        "adam_memory_steps_effective": config.steps,
    }
    assert config.steps < 1000
    assert config.replace(optimizer="lazy_adamw").return_time["adam_memory_steps"] == pytest.approx(
        1000.0
    )
    for other in ("sgd", "adafactor"):  # b2 left at its default: they refuse any other
        assert config.replace(optimizer=other, b2=0.95).return_time["adam_memory_steps"] is None


def test_tracked_ids_spread_over_the_vocabulary():
    assert TrainConfig(vocab_size=64, track_symbols=3).tracked_ids == [0, 32, 63]
    assert TrainConfig(vocab_size=64, track_symbols=1).tracked_ids == [0]
    assert TrainConfig(vocab_size=8, track_symbols=8).tracked_ids == list(range(8))


# ----- lazy Adam, computed by hand ----------------------------------------------------------
# b1 = 1/2, b2 = 3/4, eps = 0 keep every number exact. Row table "embed" (V = 3, D = 2) and a
# dense leaf "norm_scale". Step 1 has ids {0, 2}, step 2 has ids {1, 2}.
B1, B2 = 0.5, 0.75
G1 = {"embed": np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]), "norm_scale": np.array([1.0, -2.0])}
G2 = {"embed": np.array([[0.5, 0.5], [1.0, 1.0], [-1.0, -1.0]]), "norm_scale": np.array([1.0, 1.0])}
PRESENT = [np.array([True, False, True]), np.array([False, True, True])]
# Each row is Adam on its own appearances, bias-corrected with its own count:
# row 0 step 1 (n=1): m = .5, v = .25, m/(1-.5) / sqrt(v/(1-.75)) = 1; step 2 absent: 0.
# row 1 step 1 absent: 0; step 2 (its first, n=1): m = .5, v = .25 -> 1.
# row 2 step 1: m = 1.5, v = 2.25 -> 3 / 3 = 1; step 2 (n=2): m = .75 - .5 = .25,
#   v = 1.6875 + .25 = 1.9375; m_hat = .25 / .75 = 1/3, v_hat = 1.9375 / .4375 = 31/7.
# norm_scale (dense, n = 1, 2): step 1 -> sign = (1, -1); step 2: m = (.75, 0),
#   v = (.4375, 1), m_hat = (1, 0), v_hat = (1, 16/7) -> (1, 0).
EXPECTED = [
    {"embed": [[1, 1], [0, 0], [1, 1]], "norm_scale": [1, -1]},
    {"embed": [[0, 0], [1, 1], [(1 / 3) / math.sqrt(31 / 7)] * 2], "norm_scale": [1, 0]},
]


def _lazy(**kw):
    return optim._optimizer(
        name="lazy_adamw", b1=B1, b2=B2, eps=0.0, momentum=0.0, vocab_size=3, **kw
    )


def test_optim_builds_exactly_the_optimizers_the_config_names():
    """`spamlang.train.config.OPTIMIZERS` is the one list of names (no JAX needed to check a
    config); `spamlang.optim` builds each of them and refuses any other."""
    assert not hasattr(optim, "OPTIMIZERS") and not hasattr(optim, "ADAM_FAMILY")
    assert set(config_module.ADAM_FAMILY) <= set(config_module.OPTIMIZERS)
    kw = dict(learning_rate=1e-3, b1=B1, b2=B2, eps=1e-8, momentum=0.9, weight_decay=0.1)
    for name in config_module.OPTIMIZERS:
        optim._optimizer(name=name, vocab_size=3, **kw).init({"embed": jnp.ones((3, 2))})
    with pytest.raises(ValueError, match="unknown optimizer 'adam'"):
        optim._optimizer(name="adam", vocab_size=3, **kw)


def test_lazy_adam_matches_the_hand_computed_two_steps():
    params = {"embed": jnp.ones((3, 2)), "norm_scale": jnp.ones(2)}
    # learning_rate -1 and no decay: the updates are the direction itself
    tx = _lazy(learning_rate=-1.0, weight_decay=0.0)
    state = tx.init(params)
    for grads, present, expected in zip((G1, G2), PRESENT, EXPECTED):
        updates, state = tx.update(
            jax.tree.map(jnp.asarray, grads), state, params, present_V=jnp.asarray(present)
        )
        for name in expected:
            np.testing.assert_allclose(updates[name], expected[name], rtol=1e-6, atol=0)
    assert np.asarray(state[0].count["embed"]).tolist() == [1, 1, 2]
    assert int(state[0].count["norm_scale"]) == 2


def test_lazy_adamw_leaves_absent_rows_alone_and_decays_present_ones():
    params = {"embed": jnp.arange(6.0).reshape(3, 2) + 1, "norm_scale": jnp.ones(2)}
    tx = _lazy(learning_rate=0.1, weight_decay=0.5)
    updates, _ = tx.update(
        jax.tree.map(jnp.asarray, G1), tx.init(params), params, present_V=jnp.asarray(PRESENT[0])
    )
    new = optax.apply_updates(params, updates)
    # row 1 is absent: not moved, not decayed; rows 0 and 2: p - lr * (1 + wd * p)
    np.testing.assert_array_equal(new["embed"][1], params["embed"][1])
    np.testing.assert_allclose(
        new["embed"][np.array([0, 2])],
        params["embed"][np.array([0, 2])] - 0.1 * (1 + 0.5 * params["embed"][np.array([0, 2])]),
        rtol=1e-6,
    )
    np.testing.assert_allclose(
        new["norm_scale"], params["norm_scale"] - 0.1 * np.array([1, -1]), rtol=1e-6
    )  # norms are never decayed


def test_lazy_adamw_with_every_row_present_is_adamw():
    params = {"embed": jnp.arange(6.0).reshape(3, 2) - 2, "norm_scale": jnp.ones(2)}
    kw = dict(
        b1=0.9, b2=0.95, eps=1e-8, momentum=0.0, weight_decay=0.1, vocab_size=3, learning_rate=0.01
    )
    lazy, dense = optim._optimizer(name="lazy_adamw", **kw), optim._optimizer(name="adamw", **kw)
    s_lazy, s_dense = lazy.init(params), dense.init(params)
    everyone = jnp.ones(3, bool)
    for grads in (G1, G2, G1):
        grads = jax.tree.map(jnp.asarray, grads)
        u_lazy, s_lazy = lazy.update(grads, s_lazy, params, present_V=everyone)
        u_dense, s_dense = dense.update(grads, s_dense, params)
        for name in params:
            np.testing.assert_allclose(u_lazy[name], u_dense[name], rtol=1e-5, atol=1e-9)
        params = optax.apply_updates(params, u_dense)


def test_lazy_adam_needs_the_present_ids():
    tx = _lazy(learning_rate=0.1, weight_decay=0.0)
    params = {"embed": jnp.ones((3, 2)), "norm_scale": jnp.ones(2)}
    with pytest.raises(ValueError, match="present_V"):
        tx.update(params, tx.init(params), params)


def test_row_tables_are_the_embedding_and_the_heads_v_rows():
    for head, expected in [
        ("softmax", {"embed", "head/w"}),
        ("lowrank:4", {"embed", "head/a"}),
        ("mos:2", {"embed", "head/w"}),
    ]:
        program = Program(
            TrainConfig(
                vocab_size=32, seq_len=2, batch_size=4, tokens=64, head=head, eval_sequences=4
            )
        )
        params = program.abstract_state()["params"]
        rows = optim.row_tables(32)(params)
        found = {
            optim._path_name(p).removesuffix("/value")
            for p, r in jax.tree_util.tree_leaves_with_path(rows)
            if r
        }
        assert found == expected, head


# ----- every optimizer in the real loop -----------------------------------------------------
# 20 steps of a vmapped pair (two LRs), logs every 5, checkpoints only when interrupted and at
# the end (orbax saves are most of a short run's time); 3 tracked ids.
LRS = {
    "adamw": (3e-2, 1e-1),
    "lazy_adamw": (3e-2, 1e-1),
    "sgd": (0.1, 0.3),
    "adafactor": (3e-2, 1e-1),
}


def _configs(name):
    base = TrainConfig(
        vocab_size=16,
        seq_len=2,
        batch_size=8,
        tokens=8 * 2 * 20,
        optimizer=name,
        schedule="constant",
        warmup_frac=0.0,
        log_every=5,
        checkpoint_every=0,
        eval_sequences=16,
        track_symbols=3,
        model={"n_layers": 1},  # one layer: nothing tested depends on depth; compiles faster
    )
    return [base.replace(lr=lr, seed=i) for i, lr in enumerate(LRS[name])]


def _read(run_dir, name):
    return [json.loads(line) for line in (Path(run_dir) / name).read_text().splitlines()]


def _timeless(rows):
    return [
        {k: v for k, v in r.items() if k not in ("tokens_per_s", "mfu", "wall_seconds")}
        for r in rows
    ]


# adamw's group, resume and member equality are test_train_run's (the same loop and state);
# its tracked rows are test_tracked_component_is_the_update_along_the_row's.
@pytest.mark.parametrize("name", [n for n in config_module.OPTIMIZERS if n != "adamw"])
def test_every_optimizer_trains_in_a_group_and_resumes_bitwise(name, tmp_path):
    configs = _configs(name)
    ref = [tmp_path / f"ref{i}" for i in range(2)]
    results = run_group(configs, ref, quiet=True)
    # it trained: the better member ends far below chance (log 16 = 2.77)
    assert min(r["final_eval_loss"] for r in results) < 1.0, results
    # interrupted at step 13 (not a log step) and resumed: bitwise
    got = [tmp_path / f"got{i}" for i in range(2)]
    with pytest.raises(Interrupted):
        run_group(configs, got, quiet=True, stop_after_step=13)
    resumed = run_group(configs, got, quiet=True)
    for r, g, a, b in zip(ref, got, results, resumed):
        assert _timeless(_read(g, "metrics.jsonl")) == _timeless(_read(r, "metrics.jsonl"))
        assert _read(g, "track.jsonl") == _read(r, "track.jsonl")
        assert {k: v for k, v in b.items() if k not in ("tokens_per_s", "wall_seconds")} == {
            k: v for k, v in a.items() if k not in ("tokens_per_s", "wall_seconds")
        }
    track = _read(ref[0], "track.jsonl")
    assert [r["step"] for r in track] == list(range(1, 21))
    assert all(
        r["ids"] == [0, 8, 15] and set(r) == {"step", "ids", "seen", "embed", "head"} for r in track
    )
    assert sum(sum(r["seen"]) for r in track) > 0
    between = [
        r[t][j] for r in track for t in ("embed", "head") for j in range(3) if r["seen"][j] == 0
    ]
    assert between
    if name == "lazy_adamw":  # an absent row does not move at all
        assert all(v == 0.0 for v in between)
    else:  # the push-down (and decay) between appearances moves it
        assert any(v != 0.0 for v in between)


def test_tracked_component_is_the_update_along_the_row():
    """The step's track_* metrics equal <p' - p, p> / |p| computed from two states."""
    config = TrainConfig(
        vocab_size=16,
        seq_len=2,
        batch_size=8,
        tokens=8 * 2 * 10,
        lr=3e-2,
        eval_sequences=16,
        track_symbols=4,
        tie_embeddings=True,
        model={"n_layers": 1},
    )
    program = Program(config)
    state = program.init([0], [config.lr])
    absent = []
    for _ in range(3):
        before = jax.device_get(state["params"])
        state, metrics = program.step(state)
        after = jax.device_get(state["params"])
        ids = config.tracked_ids
        e0, e1 = before["embed"][...][0][ids], after["embed"][...][0][ids]
        want = np.sum((e1 - e0) * e0, axis=-1) / np.linalg.norm(e0, axis=-1)
        np.testing.assert_allclose(
            np.asarray(metrics["track_embed"][0]), want, rtol=1e-4, atol=1e-9
        )
        assert "track_head" not in metrics  # tied: the head row is the embedding row
        assert metrics["track_seen"].shape == (1, 4)
        absent += [v for v, n in zip(want, np.asarray(metrics["track_seen"][0])) if n == 0]
    # AdamW moves a row between its symbol's appearances (the push-down and the decay)
    assert absent and all(v != 0.0 for v in absent)


def test_summarise_splits_pull_and_between():
    rows = [
        {"step": 1, "ids": [0, 5], "seen": [1, 0], "embed": [0.5, -0.1]},
        {"step": 2, "ids": [0, 5], "seen": [0, 2], "embed": [-0.2, 0.3]},
    ]
    out = summarise(rows)["embed"]
    assert out[0] == {"appearances": 1, "pull": 0.5, "between": -0.2, "net": pytest.approx(0.3)}
    assert out[5] == {"appearances": 1, "pull": 0.3, "between": -0.1, "net": pytest.approx(0.2)}


def test_runs_differing_in_adam_hyperparameters_are_members_of_one_group():
    from spamlang.sweep.spec import cell_key, group_key

    # lazy_adamw: each member draws its own batch and so has its own present ids; a member
    # must still equal its own run (for adamw with LRs: test_group.py)
    base = TrainConfig(
        vocab_size=16,
        seq_len=2,
        batch_size=8,
        tokens=8 * 2 * 6,
        lr=3e-2,
        schedule="constant",
        warmup_frac=0.0,
        eval_sequences=16,
        optimizer="lazy_adamw",
        model={"n_layers": 1},
    )
    variants = [base.replace(b2=0.9), base.replace(b2=0.999, b1=0.8, eps=1e-6, seed=1)]
    assert group_key(variants[0]) == group_key(variants[1])  # one vmapped program
    assert cell_key(variants[0]) != cell_key(variants[1])  # two cells of the LR grid
    program = Program(variants[0])
    state = program.stack([program.init_member(c.seed, base.lr, None, c) for c in variants])
    for _ in range(6):
        state, metrics = program.step(state)
    for j, config in enumerate(variants):
        alone = Program(config)
        own = alone.init([config.seed], [config.lr])
        for _ in range(6):
            own, own_metrics = alone.step(own)
        np.testing.assert_allclose(metrics["loss"][j], own_metrics["loss"][0], rtol=1e-5)
    # each member reports its own Adam memory
    assert [r["adam_memory_steps"] for r in program.evaluate(state, variants)] == [10.0, 1000.0]


# ----- the head controls (spamlang.optim.head) ----------------------------------------------
# The optimizer alone, jitted, on the model's own parameter tree (no training step to compile):
# the loop tests' adamw config without global clip or decay, so that with its constant LR an
# update is the LR times the direction.
HEAD_BASE = _configs("adamw")[0].replace(grad_clip=0.0, weight_decay=0.0, lr=1e-2, track_symbols=0)
SCALES = (1.0, 0.1, 0.01, 0.01)  # one gradient, shrinking: a plain Adam v decays


def _head_run(config):
    """(updates by parameter name, optimizer states) over the steps of SCALES, step t's
    gradient SCALES[t] x g. g is N(0, 1) on every leaf, except that row v of a V-row table keeps
    only its first (v mod D) + 1 entries: Adam's first direction (+-1 where g != 0) then has
    row RMS sqrt((v mod D + 1) / D), so a row clip finds rows under and over its limit."""
    abstract = Program(config).abstract_state()["params"]
    leaves, treedef = jax.tree.flatten(abstract)
    params = treedef.unflatten(
        [jax.random.normal(jax.random.PRNGKey(i), s.shape) for i, s in enumerate(leaves)]
    )

    def draw(p, is_rows):
        g = jax.random.normal(jax.random.PRNGKey(100), p.shape)
        if not is_rows:
            return g
        v, d = np.arange(p.shape[0])[:, None], np.arange(p.shape[1])[None, :]
        return jnp.where(d <= v % p.shape[1], g, 0.0)

    g = jax.tree.map(draw, params, optim.row_tables(config.vocab_size)(params))
    tx, _ = optim.from_config(config)
    state = optim.with_hyperparams(tx.init(params), {"lr": config.lr})
    update = jax.jit(tx.update)
    updates, states = [], []
    for scale in SCALES:
        u, state = update(jax.tree.map(lambda x, scale=scale: scale * x, g), state, params)
        updates.append(
            {
                optim._path_name(p).removesuffix("/value"): np.asarray(x)
                for p, x in jax.tree_util.tree_leaves_with_path(u)
            }
        )
        states.append(state)
    return updates, states


@functools.cache
def _plain_run(tied: bool):
    return _head_run(HEAD_BASE.replace(tie_embeddings=tied))


def _head_of(tied: bool) -> str:
    return "embed" if tied else "head/w"  # tied: the embedding is the head


@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
@pytest.mark.parametrize(
    "controls",
    [{"head_amsgrad": True}, {"head_eps": 1e-3}, {"head_row_clip": 0.45}, {"head_eps": 1e-8}],
    ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()),
)
def test_a_head_control_changes_the_heads_update_and_no_other(tied, controls):
    """Every other leaf's update is bitwise plain adamw's at every step; the head's differs,
    except with head_eps = eps, where it is plain Adam's up to rounding (XLA divides the head's
    moments by their bias correction where plain adamw, sharing one divisor among all leaves,
    multiplies by its reciprocal)."""
    plain, _ = _plain_run(tied)
    got, _ = _head_run(HEAD_BASE.replace(tie_embeddings=tied, **controls))
    head = _head_of(tied)
    for step_plain, step_got in zip(plain, got):
        assert step_plain.keys() == step_got.keys() and head in step_got
        for name in step_plain:
            if name != head:
                assert step_got[name].tobytes() == step_plain[name].tobytes(), name
    close = [np.allclose(a[head], b[head], rtol=1e-6, atol=0) for a, b in zip(plain, got)]
    assert all(close) == (controls == {"head_eps": HEAD_BASE.eps})


def _moment(state, group: str, name: str):
    """The moment `name` (nu, nu_max) of the head controls' `group` ("head" or "rest")."""
    [(_, inner)] = optax.tree_utils.tree_get_all_with_path(state, "inner_states")
    return optax.tree_utils.tree_get(inner[group], name)


def test_head_amsgrad_keeps_the_heads_v_from_decreasing():
    """With a shrinking gradient the head's v (AMSGrad's running max) never decreases while
    the embedding's (untied: plain Adam) does wherever it has a gradient; so the head's step
    is never larger than plain Adam's, and smaller once the gradient has shrunk."""
    updates, states = _head_run(HEAD_BASE.replace(head_amsgrad=True))
    plain, _ = _plain_run(False)
    v_max = np.stack([np.asarray(_moment(s, "head", "nu_max")["head"]["w"][...]) for s in states])
    v_embed = np.stack([np.asarray(_moment(s, "rest", "nu")["embed"][...]) for s in states])
    assert (np.diff(v_max, axis=0) >= 0).all()
    shown = v_embed[0] > 0
    assert shown.sum() > v_embed[0].size // 2
    assert (np.diff(v_embed, axis=0)[:, shown] < 0).all()
    for a, p in zip(updates, plain):
        assert (np.abs(a["head/w"]) <= np.abs(p["head/w"]) * (1 + 1e-6)).all()
    assert (np.abs(updates[-1]["head/w"]) < 0.5 * np.abs(plain[-1]["head/w"])).any()


@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_head_row_clip_bounds_each_rows_update_by_x_times_the_lr(tied):
    """Every head row's update has RMS <= X x lr; a row under that in plain adamw keeps plain
    adamw's update, a row over it is plain adamw's rescaled to RMS X x lr."""
    x = 0.45
    got, _ = _head_run(HEAD_BASE.replace(tie_embeddings=tied, head_row_clip=x))
    plain, _ = _plain_run(tied)
    head, limit = _head_of(tied), x * HEAD_BASE.lr
    seen_under = seen_over = False
    for step_got, step_plain in zip(got, plain):
        u, p = step_got[head], step_plain[head]
        rms_u, rms_p = (np.sqrt(np.mean(np.square(a), axis=-1)) for a in (u, p))
        assert (rms_u <= limit * (1 + 1e-6)).all()
        under, over = rms_p < limit * (1 - 1e-5), rms_p > limit * (1 + 1e-5)
        np.testing.assert_allclose(u[under], p[under], rtol=1e-6)
        np.testing.assert_allclose(u[over], p[over] * (limit / rms_p[over, None]), rtol=1e-5)
        seen_under, seen_over = seen_under or under.any(), seen_over or over.any()
    assert seen_under and seen_over


def test_clip_row_rms_rescales_only_the_rows_over_the_limit():
    u_VxD = jnp.array([[3.0, 4.0], [0.1, -0.2], [0.0, 0.0], [-1.0, 1.0]])  # RMS 3.54 .16 0 1
    clipped, _ = clip_row_rms(1.0).update({"w": u_VxD}, optax.EmptyState())
    out = np.asarray(clipped["w"])
    assert out[1:].tobytes() == np.asarray(u_VxD[1:]).tobytes()  # at or under 1: untouched
    np.testing.assert_allclose(out[0], np.array([3.0, 4.0]) / np.sqrt(12.5), rtol=1e-6)
