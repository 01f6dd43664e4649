"""Exact evaluation of position-invariant languages, permuted data order, per-symbol history.

The exact loss is the probability-weighted mean of every symbol's loss on `s s`: checked
against a brute-force forward pass, against the sampled evaluation (within its standard error),
and for zipf-spam's weights. Permuted order deals each symbol once per epoch: return times are
exact, B = V puts every symbol in every step, resume is bitwise, 4 devices deal what 1 does.
Each symbol's history (appearances, first and last step, gaps), in symbols.npz and at every
evaluation in symbol_evals.jsonl, equals a recount of the batches on the host.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from test_multidevice import run_child

from spamlang import languages, rundir
from spamlang.evaluate import exact
from spamlang.evaluate.sets import make_eval_fn
from spamlang.model import ModelConfig, Transformer
from spamlang.rundir import reading
from spamlang.train import TrainConfig, load_run, run_training
from spamlang.train.step import batch_rows, default_mesh

V, B = 64, 16
CFG = TrainConfig(
    preset="tiny",
    vocab_size=V,
    seq_len=2,
    batch_size=B,
    tokens=B * 2 * 40,
    lr=1e-2,
    log_every=10,
    eval_every=10,
    checkpoint_every=20,
    model={"n_layers": 1},  # one layer: nothing here depends on depth, and it compiles faster
)


def _brute_force(model, ids):
    """Each symbol's loss on `s s` and whether its argmax is s, from the model's logits."""
    # Jitted: an eager forward pass compiles each of its ops on its own.
    logits = nnx.jit(lambda m, x: m(x)[:, 0])(model, jnp.stack([ids, ids], axis=1))
    logits = np.asarray(logits, np.float64)
    logp = (
        logits
        - np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1, keepdims=True))
        - logits.max(1, keepdims=True)
    )
    ids = np.asarray(ids)
    return -logp[ids, ids], logits.argmax(1) == ids


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "run"
    result = run_training(CFG, out, quiet=True)
    return out, result, load_run(out)[1]


@pytest.mark.parametrize("batch", [8, 64])  # 37 = 4 x 8 + a partial batch; one batch
def test_symbol_fn_equals_the_models_own_loss_on_s_s(batch):
    model = Transformer(ModelConfig.preset("tiny", vocab_size=37), rngs=nnx.Rngs(0))
    loss, hit = jax.jit(exact.make_symbol_fn(37, batch, None, default_mesh()))(model)
    want_loss, want_hit = _brute_force(model, jnp.arange(37))
    np.testing.assert_allclose(loss, want_loss, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(hit, want_hit)


def test_exact_eval_is_the_brute_force_mean_and_within_the_sampled_standard_error(trained):
    out, result, model = trained
    loss_V, hit_V = _brute_force(model, jnp.arange(V))
    assert result["eval_method"] == "exact"
    assert result["final_eval_loss"] == pytest.approx(loss_V.mean(), rel=1e-5)
    assert result["repetition_accuracy"] == pytest.approx(hit_V.mean())
    assert result["eval_seen_sequences"] + result["eval_unseen_sequences"] == V
    # The sampled evaluation of 2,048 sequences estimates the same number.
    lang = CFG.make_language()
    sampled = make_eval_fn(lang, 2, 2048, 256, None, default_mesh())(model, jnp.ones(V, jnp.int32))
    se = loss_V.std() / np.sqrt(2048)
    assert abs(float(sampled["eval_loss"]) - result["final_eval_loss"]) < 4 * se
    assert loss_V.std() > 0.05  # trained: the symbols differ, so the check has teeth
    saved = reading.read_symbols(out)
    np.testing.assert_allclose(saved["loss"], loss_V, rtol=1e-5, atol=1e-6)


def test_zipf_spam_is_weighted_by_its_own_law():
    lang = languages.make("zipf-spam", vocab_size=50, s=1.2)
    loss_V = np.linspace(0.0, 4.0, 50)
    got = exact.metrics(loss_V, loss_V < 1, lang.symbol_probabilities(), np.ones(50))
    p = lang.probabilities()
    assert got["eval_loss"] == pytest.approx(float(p @ loss_V))
    assert got["eval_loss"] < loss_V.mean() - 0.5  # the frequent (low-loss) symbols dominate
    assert got["repetition_accuracy"] == pytest.approx(float(p[loss_V < 1].sum()))


def test_holdout_weights_only_the_drawn_symbols():
    lang = languages.make("spam", vocab_size=40, holdout=0.25)
    held = lang.heldout_ids()
    loss_V = np.ones(40)
    loss_V[held] = 9.0
    got = exact.metrics(loss_V, loss_V < 5, lang.symbol_probabilities(), np.ones(40), held)
    assert got["eval_loss"] == pytest.approx(1.0) and got["eval_loss_heldout"] == pytest.approx(9)


# ----- permuted order ---------------------------------------------------------------------


def _symbols_by_step(config, steps, key=None):
    key = jax.random.PRNGKey(3) if key is None else key
    lang = config.make_language()
    rows = jnp.arange(config.batch_size, dtype=jnp.uint32)
    fn = jax.jit(lambda t: batch_rows(config.sampling, lang, key, t, rows, config.batch_size, 2))
    return np.stack([np.asarray(fn(jnp.int32(t)))[:, 0] for t in range(steps)])


def test_permuted_order_shows_each_symbol_once_an_epoch_and_iid_does_not():
    permuted = _symbols_by_step(CFG.replace(sampling="permuted"), 24)  # 6 epochs of 4 steps
    for s in range(V):
        steps = np.nonzero((permuted == s).any(1))[0]
        assert len(steps) == 6 and (np.diff(steps // 4) == 1).all()  # once per epoch
    assert len(set(map(tuple, permuted[:4]))) == 4  # epochs are shuffled, not repeated
    assert not np.array_equal(permuted[:4], permuted[4:8])
    iid = _symbols_by_step(CFG, 24)
    counts = np.bincount(iid.ravel(), minlength=V)
    assert counts.min() < 6 < counts.max()  # iid: random coverage


def test_full_batch_puts_every_symbol_in_every_step_and_larger_batches_repeat_epochs():
    full = _symbols_by_step(CFG.replace(sampling="permuted", batch_size=V), 3)
    assert all(sorted(row) == list(range(V)) for row in full)
    double = _symbols_by_step(CFG.replace(sampling="permuted", batch_size=2 * V), 2)
    assert all((np.bincount(row, minlength=V) == 2).all() for row in double)
    held = CFG.replace(sampling="permuted", language_params={"holdout": 0.25})
    dealt = _symbols_by_step(held, 3)  # 48 drawn symbols, 16 per step
    assert sorted(dealt.ravel()) == sorted(held.make_language().drawn_ids())


def _recount(by_step, s: int, steps: int) -> dict:
    """Symbol s's history over the first `steps` batches, counted on the host."""
    shown = np.nonzero((by_step[:steps] == s).any(1))[0]
    count = int((by_step[:steps] == s).sum())  # sequences, not steps
    return {
        "appearances": count,
        "first_step": shown[0] + 1 if len(shown) else -1,
        "last_step": shown[-1] + 1 if len(shown) else -1,
        "max_gap": int(np.diff(shown).max()) if len(shown) > 1 else 0,
        # two rows of one batch are a gap of 0, so the mean is over count - 1 gaps
        "mean_gap": (shown[-1] - shown[0]) / (count - 1) if count > 1 else None,
    }


def test_the_symbols_history_follows_the_batches(trained):
    out, result, _ = trained
    saved = reading.read_symbols(out)
    data_key = jax.random.split(jax.random.PRNGKey(CFG.seed))[1]
    by_step = _symbols_by_step(CFG, CFG.steps, key=data_key)
    gapped = 0
    for s in range(V):
        want = _recount(by_step, s, CFG.steps)
        for k in ("appearances", "first_step", "last_step", "max_gap"):
            assert saved[k][s] == want[k], (s, k)
        if want["mean_gap"] is None:
            assert np.isnan(saved["mean_gap"][s])
        else:
            assert saved["mean_gap"][s] == pytest.approx(want["mean_gap"], rel=1e-6)
            gapped += want["max_gap"] > 1
    assert gapped > V // 2  # the recount is not vacuous: most symbols came back after a gap
    assert saved["steps"] == CFG.steps
    assert saved["probability"].sum() == pytest.approx(1.0)


def test_every_evaluation_logs_each_symbols_loss_and_history_so_far(trained):
    """symbol_evals.jsonl: a row per evaluation (steps 10, 20, 30, 40), each symbol's history
    at that step as the host recounts it, the last row's losses those of symbols.npz; the
    result's binned summary counts every symbol once per evaluation."""
    out, result, _ = trained
    rows = rundir.MetricsLog(out, CFG.steps, write=False, name=rundir.SYMBOL_EVALS).records
    assert [r["step"] for r in rows] == [10, 20, 30, 40]
    data_key = jax.random.split(jax.random.PRNGKey(CFG.seed))[1]
    by_step = _symbols_by_step(CFG, CFG.steps, key=data_key)
    for row in rows:
        for s in range(0, V, 7):
            want = _recount(by_step, s, row["step"])
            assert [row[k][s] for k in ("appearances", "first_step", "last_step", "max_gap")] == [
                want[k] for k in ("appearances", "first_step", "last_step", "max_gap")
            ]
    saved = reading.read_symbols(out)
    np.testing.assert_array_equal(np.asarray(rows[-1]["loss"], np.float32), saved["loss"])
    assert rows[0]["loss"] != rows[-1]["loss"]  # losses at each evaluation, not the final's
    summary = result["symbol_history"]
    for step in (10, 20, 30, 40):
        at = [i for i, x in enumerate(summary["step"]) if x == step]
        assert sum(summary["symbols"][i] for i in at) == V
        mean = sum(summary["loss_mean"][i] * summary["symbols"][i] for i in at) / V
        losses = next(r["loss"] for r in rows if r["step"] == step)
        assert mean == pytest.approx(np.mean(losses), rel=1e-6)
    # the longest gap splits the last evaluation's bins only
    assert {g is None for g, x in zip(summary["max_gap"], summary["step"]) if x < 40} == {True}
    assert None not in [g for g, x in zip(summary["max_gap"], summary["step"]) if x == 40]


def test_permuted_run_resumes_bitwise(tmp_path):
    config = CFG.replace(sampling="permuted")
    whole = run_training(config, tmp_path / "whole", quiet=True)
    from spamlang.errors import Interrupted

    with pytest.raises(Interrupted):
        run_training(config, tmp_path / "cut", quiet=True, stop_after_step=21)
    resumed = run_training(config, tmp_path / "cut", quiet=True)
    assert {k: v for k, v in resumed.items() if "second" not in k and k != "tokens_per_s"} == {
        k: v for k, v in whole.items() if "second" not in k and k != "tokens_per_s"
    }
    a, b = reading.read_symbols(tmp_path / "whole"), reading.read_symbols(tmp_path / "cut")
    for k in rundir.SYMBOL_ARRAYS:
        np.testing.assert_array_equal(a[k], b[k])

    # The stop came at step 30, an evaluation step, and saved before evaluating: the resumed
    # run evaluates the restored step first, so every row is there, in order.
    def eval_rows(d):
        rows = rundir.MetricsLog(tmp_path / d, config.steps, write=False).records
        return [r for r in rows if r["kind"] == "eval"]

    assert eval_rows("cut") == eval_rows("whole") and len(eval_rows("whole")) == 4
    evals = [(tmp_path / d / rundir.SYMBOL_EVALS).read_bytes() for d in ("whole", "cut")]
    assert evals[0] == evals[1] and evals[0].count(b"\n") == 4
    assert (a["appearances"] == B * CFG.steps // V).all()  # 10 epochs: 10 each


def test_permuted_is_refused_where_it_means_nothing(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "spamlang",
            "train",
            "--language",
            "zipf-spam",
            "--sampling",
            "permuted",
            "--vocab-size",
            "64",
            "--out",
            str(tmp_path / "r"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "permuted" in proc.stderr and not (tmp_path / "r").exists()


PERMUTED_CHILD = textwrap.dedent("""
    import json
    import jax
    from jax.sharding import AxisType
    from spamlang.train.config import TrainConfig
    from spamlang.train.step import Program

    config = TrainConfig(vocab_size=64, seq_len=2, batch_size=16, tokens=16 * 2 * 12,
                         sampling="permuted", model={"n_layers": 1})
    out = {}
    for n in (1, 4):
        mesh = jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,),
                             devices=jax.devices()[:n])
        prog = Program(config, mesh)
        state = prog.init([0, 1], [1e-2, 3e-2])
        for _ in range(6):
            state, _ = prog.step(state)
        out[n] = {k: jax.device_get(state[k]).tolist() for k in ("exposure", "last_seen")}
    print("RESULT " + json.dumps(out))
""")


def test_four_devices_deal_what_one_deals():
    out = run_child(PERMUTED_CHILD, timeout=200)
    assert out["4"] == out["1"]
    exposure = np.asarray(out["1"]["exposure"])
    assert exposure.sum() == 2 * 6 * 16 and set(exposure.ravel()) == {1, 2}  # 1.5 epochs


# The exact evaluation on 4 devices: each device scores a quarter of the symbols, so the
# per-device FLOPs of the compiled evaluation fall to a quarter, and the only all-gathers are
# of the per-symbol results ([K, V] losses and hits, replicated for the host), never of
# another device's hidden states or logits. V fits one eval batch and one loss chunk, so XLA's cost analysis (which
# counts a loop body once) sees the whole evaluation.
EXACT_DP_CHILD = textwrap.dedent("""
    import json, re
    import jax
    from jax.sharding import AxisType
    from spamlang.train.config import TrainConfig
    from spamlang.train.step import Program

    config = TrainConfig(preset="small", vocab_size=1024, seq_len=2, batch_size=32,
                         tokens=32 * 2 * 10, kernels="xla", loss_chunk=4096,
                         eval_batch_size=1024)
    out = {}
    for n in (1, 4):
        mesh = jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,),
                             devices=jax.devices()[:n])
        prog = Program(config, mesh)
        params = prog.abstract_state(2)["params"]
        compiled = prog.evaluation._symbols.lower({"params": params}).compile()
        cost = compiled.cost_analysis()
        gathers = [re.match(r"\\s*%\\S+ = (\\S+) ", line).group(1)
                   for line in compiled.as_text().splitlines()
                   if re.search(r"all-gather(-start)?\\(", line)]
        out[n] = {"flops": (cost[0] if isinstance(cost, list) else cost)["flops"],
                  "gathers": sorted(g.split("{")[0] for g in gathers)}
    print("RESULT " + json.dumps(out))
""")


def test_exact_eval_is_split_over_devices_in_the_compiled_program():
    out = run_child(EXACT_DP_CHILD, timeout=200)
    assert 0.2 <= out["4"]["flops"] / out["1"]["flops"] <= 0.3, out
    assert out["1"]["gathers"] == [] and out["4"]["gathers"] == ["f32[2,1024]", "pred[2,1024]"]
