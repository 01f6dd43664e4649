"""TrainConfig, the optimizer and schedules, and the jitted train step (tiny shapes, one device)."""

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from spamlang import optim
from spamlang.coverage.symbols import RESULT_KEYS as SYMBOL_KEYS
from spamlang.errors import UserError
from spamlang.model.kernels import micro_batches
from spamlang.rundir.schema import COVERAGE_COLUMNS as COVERAGE_KEYS
from spamlang.rundir.schema import HELDOUT_COLUMNS as HOLDOUT_KEYS
from spamlang.train.config import TrainConfig, parse_count
from spamlang.train.step import Program, batch_rows, program

# One layer: what these tests check does not depend on depth, and it compiles faster.
TINY = dict(vocab_size=64, seq_len=16, batch_size=16, eval_sequences=24, model={"n_layers": 1})


# ----- config ---------------------------------------------------------------------------------
def test_config_json_round_trip():
    config = TrainConfig(
        preset="tiny",
        model={"d_model": 32, "n_heads": 4},
        vocab_size=256,
        tie_embeddings=True,
        language="cycle",
        language_params={"k": 3},
        tokens="2M",
        lr=3e-3,
        schedule="wsd",
    )
    data = json.loads(json.dumps(config.to_json()))
    back = TrainConfig.from_json(data)
    assert back == config
    assert back.tokens == 2_000_000 and back.steps == 2_000_000 // (32 * 64)
    assert back.model_config().d_model == 32 and back.model_config().tie_embeddings
    assert back.make_language().params() == {"vocab_size": 256, "k": 3}
    assert TrainConfig.from_json({"lr": 1}).lr == 1.0  # JSON ints are fine for floats


@pytest.mark.parametrize(
    "text, value",
    [
        ("2M", 2_000_000),
        ("1.5K", 1500),
        ("3b", 3 * 10**9),
        ("1_048_576", 1_048_576),
        (4096, 4096),
        ("1e6", 10**6),
    ],
)
def test_parse_count(text, value):
    assert parse_count(text) == value


@pytest.mark.parametrize("text", ["2X", "", "-5", "1.5", True, "0.0001K"])
def test_parse_count_rejects(text):
    with pytest.raises(UserError):
        parse_count(text)


@pytest.mark.parametrize(
    "changes, needle",
    [
        (dict(schedule="linear"), "schedule"),
        (dict(language="nope"), "unknown language"),
        (dict(preset="huge"), "preset"),
        (dict(tokens=100), "at least one batch"),
        (dict(warmup_frac=1.0), "warmup_frac"),
        (dict(schedule="wsd", warmup_frac=0.5, decay_frac=0.6), r"warmup_frac \+ decay_frac"),
        (dict(final_lr_ratio=2.0), "final_lr_ratio"),
        (dict(lr=0.0), "lr"),
        (dict(b2=1.0), "b2"),
        (dict(batch_size=0), "batch_size"),
        (dict(model={"d_model": 30}), "n_heads"),  # validated by building ModelConfig
        (dict(model={"nope": 1}), "nope"),
        (dict(model={"vocab_size": 8}), "vocab_size"),
        (dict(language_params={"k": 0}, language="cycle"), "k"),  # validated by the language
        (dict(seq_len="sixty-four"), "seq_len must be an integer"),
        (dict(tie_embeddings=1), "tie_embeddings"),
        (dict(dtype="float16"), "dtype"),
        (dict(batch_size=16, micro_batch=5), "micro_batch"),
        (dict(micro_batch=-1), "micro_batch"),
        (dict(kernels="cuda"), "kernels"),
        (dict(sampling="cyclic", language="zipf-spam"), "sampling 'cyclic' deals every symbol"),
        (dict(sampling="cyclic", tokens=2**38), "sampling 'cyclic' counts rows in 32 bits"),
    ],
)
def test_config_rejects(changes, needle):
    with pytest.raises(UserError, match=needle):
        TrainConfig(**changes)


def test_from_json_rejects_unknown_field():
    with pytest.raises(UserError, match="learning_rate"):
        TrainConfig.from_json({"learning_rate": 1e-3})


# ----- data order -----------------------------------------------------------------------------
def _symbols(sampling: str, steps: int, vocab_size=64, batch_size=8) -> np.ndarray:
    """int[steps, B]: each step's symbols in the data order `sampling` (spam, one data key)."""
    config = TrainConfig(vocab_size=vocab_size, seq_len=2, batch_size=batch_size, tokens=16)
    lang, rows = config.make_language(), jnp.arange(batch_size, dtype=jnp.uint32)
    fn = jax.jit(
        lambda t: batch_rows(sampling, lang, jax.random.PRNGKey(5), t, rows, batch_size, 2)
    )
    return np.stack([np.asarray(fn(jnp.int32(t)))[:, 0] for t in range(steps)])


def test_cyclic_order_returns_every_symbol_after_exactly_v_over_b_steps():
    """V = 64, B = 8: R = 8. Cyclic deals permuted's first epoch again and again; permuted
    deals a fresh one each epoch, so its gaps are R only on average."""
    cyclic, permuted = _symbols("cyclic", 32), _symbols("permuted", 32)  # 4 epochs
    assert sorted(cyclic[:8].ravel()) == list(range(64))  # the first epoch: a permutation
    np.testing.assert_array_equal(cyclic[:8], permuted[:8])
    gaps = {"cyclic": set(), "permuted": set()}
    for name, order in (("cyclic", cyclic), ("permuted", permuted)):
        for s in range(64):
            steps = np.nonzero((order == s).any(1))[0]
            assert len(steps) == 4, (name, s)  # once per epoch in both
            gaps[name] |= set(np.diff(steps).tolist())
    assert gaps["cyclic"] == {8}
    assert len(gaps["permuted"]) > 1 and gaps["permuted"] != {8}


# ----- optimizer ------------------------------------------------------------------------------
def _values(schedule, steps):
    return np.array([float(schedule(s)) for s in range(steps)])


def test_schedule_shapes():
    kw = dict(warmup_frac=0.1, decay_frac=0.2, final_ratio=0.1)
    cos = _values(optim.relative_schedule("cosine", 100, **kw), 101)
    assert cos[0] == 0 and cos[5] == pytest.approx(0.5) and cos[10] == pytest.approx(1.0)
    assert np.all(np.diff(cos[:11]) > 0) and np.all(np.diff(cos[10:]) < 0)
    assert cos[100] == pytest.approx(0.1) and cos[55] == pytest.approx(0.55, abs=1e-6)
    wsd = _values(optim.relative_schedule("wsd", 100, **kw), 101)
    assert np.allclose(wsd[10:81], 1.0)  # stable until the last 20 steps
    assert np.allclose(np.diff(wsd[80:]), -0.9 / 20, atol=1e-6) and wsd[100] == pytest.approx(0.1)
    const = _values(optim.relative_schedule("constant", 100, **kw), 101)
    assert np.allclose(const[10:], 1.0) and const[5] == pytest.approx(0.5)
    assert (
        float(
            optim.relative_schedule(
                "constant", 100, warmup_frac=0.0, decay_frac=0.2, final_ratio=0.1
            )(0)
        )
        == 1.0
    )


def test_optimizer_is_adamw_times_the_schedule_with_a_settable_peak_lr():
    """Our chain with its peak LR replaced == clipped optax.adamw(peak * schedule), decay on
    matrices only, over a few steps."""
    params = {"w": jnp.arange(6.0).reshape(2, 3) / 7, "norm": {"scale": jnp.ones(3)}}
    mask = optim.decay_mask(params)
    assert mask == {"w": True, "norm": {"scale": False}}
    config = TrainConfig(**TINY, tokens=16 * 16 * 10, schedule="cosine", warmup_frac=0.2)
    tx, schedule = optim.from_config(config)
    peak = 3e-2
    ref = optax.chain(
        optax.clip_by_global_norm(1.0),
        optax.adamw(
            lambda t: peak * schedule(t), b1=0.9, b2=0.95, eps=1e-8, weight_decay=0.1, mask=mask
        ),
    )
    p_ours, p_ref = params, params
    s_ours, s_ref = optim.with_hyperparams(tx.init(params), {"lr": peak}), ref.init(params)
    assert float(optim.peak_lr(s_ours)) == pytest.approx(peak)
    for i in range(4):
        grads = jax.tree.map(lambda p, i=i: jnp.sin(p * (i + 1)) * 5, p_ours)
        u, s_ours = tx.update(grads, s_ours, p_ours)
        p_ours = optax.apply_updates(p_ours, u)
        u, s_ref = ref.update(grads, s_ref, p_ref)
        p_ref = optax.apply_updates(p_ref, u)
    for a, b in zip(jax.tree.leaves(p_ours), jax.tree.leaves(p_ref)):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert not np.allclose(p_ours["w"], params["w"])  # it moved


# ----- the step -------------------------------------------------------------------------------
# One Program for the whole file: compiling is most of a test's cost, and lr / seed are state.
@pytest.fixture(scope="module")
def prog():
    return Program(TrainConfig(**TINY, tokens=16 * 16 * 300, lr=1e-2))


def _init(prog, seed=0, lr=None):
    return prog.init([seed], [prog.config.lr if lr is None else lr])


def _run(prog, state, steps, keep=lambda state, metrics: metrics["loss"][0]):
    out = []
    for _ in range(steps):
        state, metrics = prog.step(state)
        out.append(jax.device_get(keep(state, metrics)))
    return state, out


def test_tiny_spam_run_learns(prog):
    """SpamLang at V=64: 300 steps of 16 x 16 tokens get far below log V."""
    state, losses = _run(prog, _init(prog), prog.config.steps)
    losses = np.array(losses)
    assert losses[0] > 0.8 * math.log(64)  # starts near uniform
    assert losses[-10:].mean() < 0.05 * math.log(64)  # well below log V
    assert int(state["step"][0]) == prog.config.steps and not bool(state["diverged"][0])
    [metrics] = prog.evaluate(state)
    assert set(metrics) == {
        "eval_loss",
        "loss_above_floor",
        "eval_accuracy",
        "repetition_accuracy",
        "eval_method",
        "symbol_loss",
        *COVERAGE_KEYS,
        *HOLDOUT_KEYS,
        *SYMBOL_KEYS,
    }
    assert metrics["heldout_symbols"] is None and metrics["symbols_learned"] > 0.9
    # 300 x 16 sequences over 64 symbols: every symbol is seen, so "seen" is the whole set.
    assert metrics["unseen_fraction"] == 0 and metrics["eval_unseen_sequences"] == 0
    assert metrics["eval_loss_seen"] == pytest.approx(metrics["eval_loss"], rel=1e-5)
    assert math.isnan(metrics["eval_loss_unseen"])
    assert metrics["eval_loss"] < 0.05 * math.log(64)
    assert metrics["loss_above_floor"] == pytest.approx(metrics["eval_loss"])  # spam's floor is 0
    assert metrics["eval_accuracy"] > 0.95 and metrics["repetition_accuracy"] > 0.95
    # The untrained model repeats nothing: the metric tells the two apart.
    [fresh] = prog.evaluate(_init(prog))
    assert fresh["repetition_accuracy"] < 0.5 and fresh["eval_loss"] > 0.8 * math.log(64)


def test_same_seed_is_bitwise_deterministic(prog):
    keep = lambda state, metrics: (metrics, state["params"])  # noqa: E731
    _, a = _run(prog, _init(prog), 6, keep)
    _, b = _run(prog, _init(prog), 6, keep)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes()
    _, c = _run(prog, _init(prog, seed=1), 1)
    assert c[0] != a[0][0]["loss"][0]


def test_divergence_freezes_state(prog):
    keep = lambda state, metrics: (state["params"], state["diverged"][0], state["diverged_step"][0])  # noqa
    state, snapshots = _run(prog, _init(prog, lr=1e4), 12, keep)
    assert bool(state["diverged"][0])
    at = int(state["diverged_step"][0])
    assert 0 < at < 10
    assert not snapshots[at - 1][1] and snapshots[at][1]
    # From the diverged step on, the parameters never change.
    frozen = jax.tree.leaves(snapshots[at][0])
    for params, _, step_seen in snapshots[at:]:
        assert int(step_seen) == at
        for x, y in zip(jax.tree.leaves(params), frozen):
            np.testing.assert_array_equal(x, y)
    assert int(state["step"][0]) == 12  # the step counter (data position) keeps going


def test_mesh_needs_data_axis(prog):
    mesh = jax.make_mesh((1,), ("batch",))
    with pytest.raises(UserError, match="'data' axis"):
        Program(prog.config, mesh)


def test_abstract_state_matches_init(prog):
    state = prog.init([0, 1, 2], [1e-3] * 3)
    abstract = prog.abstract_state(3)
    assert jax.tree.structure(abstract) == jax.tree.structure(state)
    for a, s in zip(jax.tree.leaves(abstract), jax.tree.leaves(state)):
        assert a.shape == s.shape and a.dtype == s.dtype and a.sharding == s.sharding
        assert s.shape[0] == 3  # every leaf carries the member axis
    single = prog.abstract_state()
    assert all(
        a.shape == s.shape[1:] for a, s in zip(jax.tree.leaves(single), jax.tree.leaves(state))
    )
    assert isinstance(prog.model(state, 2), nnx.Module)
    assert prog.flops_per_step > 0


def test_decay_mask_on_model_params(prog):
    params = prog.member(_init(prog), 0)["params"]
    flat = {
        "/".join(str(getattr(k, "key", k)) for k in path): m
        for path, m in jax.tree_util.tree_leaves_with_path(optim.decay_mask(params))
    }
    assert flat, "no parameters"
    for name, decayed in flat.items():
        assert decayed == ("norm" not in name), name
    assert any("embed" in n and d for n, d in flat.items())


def test_runs_differing_in_lr_and_seed_share_one_program(prog):
    config = prog.config
    other = config.replace(lr=0.5, seed=3, b2=0.99, log_every=7, eval_every=5)
    # one compiled step and evaluation, each Program holding its caller's own config
    assert program(other)._step is program(config)._step
    assert program(other).evaluation is program(config).evaluation
    assert program(other).config is other and program(config).config is config
    assert program(config.replace(batch_size=8))._step is not program(config)._step
    state = program(config).init([3, 4], [0.5, 0.25])
    assert np.asarray(optim.peak_lr(state["opt_state"])).tolist() == [0.5, 0.25]


def test_kernels_resolve_once_from_the_mesh(prog):
    """auto is cpu on a CPU mesh; xla keeps the plain path and no automatic micro-batches."""
    assert prog.kernels == "cpu" and prog.model_config.kernels == "cpu"
    plain = Program(
        prog.config.replace(
            kernels="xla", preset="small", seq_len=128, batch_size=32, tokens=32 * 128
        )
    )
    assert plain.model_config.kernels == "xla" and plain.n_micro == 1
    assert "optimization_barrier" not in plain.lower_step(1).as_text()
    tuned = Program(plain.config.replace(kernels="cpu"))
    assert tuned.n_micro == 8 and "optimization_barrier" in tuned.lower_step(1).as_text()


# ----- micro-batches --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "preset, seq_len, batch_size, micro_batch, kernels, expected",
    [
        ("small", 128, 32, 0, "cpu", 8),  # auto: [tokens, 4 heads x 128] within 2^18 floats: 4 rows
        ("small", 128, 6, 0, "cpu", 2),  # 4 rows wanted; the largest divisor of 6 up to 4 is 3
        ("tiny", 64, 32, 0, "cpu", 1),  # the whole 2,048-token batch fits
        ("tiny", 128, 32, 0, "cpu", 4),  # [tokens, 2 heads x 128]: 8 rows
        ("tiny", 1024, 4, 0, "cpu", 4),  # one row is already over: one row per micro-batch
        ("small", 128, 32, 0, "xla", 1),  # auto never splits on the plain path
        ("small", 128, 32, 32, "cpu", 1),  # explicit: the whole batch
        ("small", 128, 32, 2, "xla", 16),  # explicit holds on every backend
    ],
)
def test_micro_batches(preset, seq_len, batch_size, micro_batch, kernels, expected):
    config = TrainConfig(
        preset=preset,
        seq_len=seq_len,
        batch_size=batch_size,
        micro_batch=micro_batch,
        tokens=seq_len * batch_size,
    )
    mesh = jax.make_mesh((1,), ("data",))
    assert micro_batches(config, mesh, kernels) == expected


def test_micro_batched_step_equals_whole_batch(prog):
    """Scanning 4 micro-batches and averaging their gradients is the whole-batch step, up to
    float rounding (compared on the losses, which carry the updated parameters forward: Adam
    turns rounding in near-zero gradients into lr-sized parameter differences); the whole
    batch (micro_batch = batch_size) keeps the unscanned program."""
    keep = lambda state, metrics: (metrics, state["params"])  # noqa: E731
    whole = Program(prog.config.replace(micro_batch=16))
    micro = Program(prog.config.replace(micro_batch=4))
    assert micro.n_micro == 4
    _, a = _run(whole, _init(whole), 5, keep)
    _, b = _run(micro, _init(micro), 5, keep)
    np.testing.assert_allclose([m["loss"] for m, _ in b], [m["loss"] for m, _ in a], rtol=1e-5)
    np.testing.assert_allclose(
        [m["accuracy"] for m, _ in b], [m["accuracy"] for m, _ in a], atol=1e-6
    )
    np.testing.assert_allclose(
        [m["grad_norm"] for m, _ in b], [m["grad_norm"] for m, _ in a], rtol=1e-4
    )
    # The default config (16 x 16 tokens) is one micro-batch: the same program as micro_batch=16.
    _, c = _run(prog, _init(prog), 5, keep)
    for x, y in zip(jax.tree.leaves(c), jax.tree.leaves(a)):
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes()


def test_eval_batch_size_changes_no_metric(prog):
    """The eval sums per sequence and divides once: one batch of 24 and batches of 5 (four,
    scanned, and a remainder of 4) give the same numbers."""
    state, _ = _run(prog, _init(prog), 20)
    [ref] = prog.evaluate(state)
    assert prog.config.eval_batch == 24  # auto: max(B, 256), at most the eval set
    for size in (5,):
        other = Program(prog.config.replace(eval_batch_size=size))
        assert other.config.eval_batch == size
        [got] = other.evaluate(state)
        for k in ("eval_loss", "eval_accuracy", "repetition_accuracy", "eval_loss_seen"):
            assert got[k] == pytest.approx(ref[k], rel=1e-5), k
