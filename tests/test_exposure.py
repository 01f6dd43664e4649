"""Exposure accounting and the seen / unseen evaluation (spamlang.coverage.exposure)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from spamlang import languages, rundir
from spamlang.coverage.exposure import seen_rows, sequence_counts, summary
from spamlang.errors import Interrupted
from spamlang.evaluate.sets import make_eval_fn, sample_rows
from spamlang.loss import next_token_loss, token_stats
from spamlang.model import ModelConfig, Transformer
from spamlang.rundir.checkpoint import RunCheckpoints
from spamlang.train.config import TrainConfig
from spamlang.train.run import run_training
from spamlang.train.step import default_mesh, program


def test_a_sequence_counts_each_input_id_once():
    tokens_BxL = jnp.array(
        [
            [3, 3, 3, 1],  # inputs {3}: the last token is only a target
            [0, 2, 0, 3],  # inputs {0, 2}
            [2, 2, 1, 1],
        ]
    )  # inputs {1, 2}
    assert sequence_counts(tokens_BxL, 5).tolist() == [1, 1, 2, 1, 0]
    assert seen_rows(tokens_BxL, jnp.array([1, 1, 2, 0, 0])).tolist() == [False, False, True]
    stats = summary(np.array([0, 2, 4, 6]), training_sequences=12)
    assert stats == {
        "updates_per_symbol": 3.0,
        "sequences_per_symbol": 3.0,
        "exposure_min": 0,
        "exposure_median": 3.0,
        "exposure_max": 6,
        "unseen_fraction": 0.25,
    }


def host_recount(config: TrainConfig, steps: int) -> np.ndarray:
    """The counts rebuilt on the host from the run's keys: batch s is row r of
    fold_in(fold_in(data_key, s), r), data_key the second half of split(PRNGKey(seed))."""
    lang = config.make_language()
    data_key = jax.random.split(jax.random.PRNGKey(config.seed))[1]
    counts = np.zeros(config.vocab_size, np.int64)
    for s in range(steps):
        tokens = np.asarray(
            sample_rows(
                lang,
                jax.random.fold_in(data_key, s),
                jnp.arange(config.batch_size, dtype=jnp.uint32),
                config.seq_len,
            )
        )
        for row in tokens:
            counts[np.unique(row[:-1])] += 1
    return counts


def test_counts_equal_a_host_recount_across_a_resume(tmp_path):
    # `cycle` rows hold many ids each, so "once per sequence" differs from "once per token".
    config = TrainConfig(
        language="cycle",
        vocab_size=48,
        seq_len=8,
        batch_size=4,
        tokens=4 * 8 * 15,
        lr=1e-3,
        log_every=5,
        eval_sequences=8,
        model={"n_layers": 1},
    )
    out = tmp_path / "run"
    with pytest.raises(Interrupted):
        run_training(config, out, quiet=True, stop_after_step=7)
    result = run_training(config, out, quiet=True)
    prog = program(config)
    ckpt = RunCheckpoints(out / rundir.CHECKPOINTS, 1, read_only=True)
    step, state, _ = ckpt.restore_latest(prog.abstract_state())
    ckpt.close()
    counts = np.asarray(state["exposure"])
    expected = host_recount(config, 15)
    assert step == 15 and counts.tolist() == expected.tolist()
    assert expected.sum() > 15 * 4  # rows really do hold several ids
    assert result["exposure_max"] == expected.max()
    assert result["exposure_min"] == expected.min()
    assert result["unseen_fraction"] == pytest.approx(np.mean(expected == 0))
    assert result["updates_per_symbol"] == result["sequences_per_symbol"] == 15 * 4 / 48


def _model(vocab_size: int) -> nnx.Module:
    config = ModelConfig(
        vocab_size=vocab_size,
        d_model=16,
        n_layers=1,
        n_heads=2,
        n_kv_heads=1,
        d_ff=32,
        max_seq_len=16,
    )
    return Transformer(config, rngs=nnx.Rngs(0))


@pytest.mark.parametrize("chunk", [None, 5])
def test_token_stats_match_the_loss(chunk):
    model = _model(32)
    tokens = languages.make("cycle", vocab_size=32).sample(jax.random.PRNGKey(1), 4, 8)
    # Jitted, not eager: an eager forward compiles each of its ops on its own (about 200 here).
    nll, hit = nnx.jit(lambda m, t: token_stats(m, t, chunk_size=chunk))(model, tokens)
    loss, aux = nnx.jit(next_token_loss)(model, tokens)
    assert nll.shape == hit.shape == (4, 7)
    assert float(nll.mean()) == pytest.approx(float(loss), rel=1e-5)
    assert float(hit.mean()) == pytest.approx(float(aux["accuracy"]), abs=1e-6)


def test_seen_unseen_split_on_a_handmade_case():
    """Symbols 0..7 of 16 marked seen: the seen side is exactly the eval rows with a symbol
    below 8, and its loss is the plain loss over those rows alone."""
    lang = languages.make("spam", vocab_size=16)
    n, L = 20, 6
    eval_fn = jax.jit(make_eval_fn(lang, L, n, 8, None, default_mesh()))  # 2 batches + 4 rows
    model = _model(16)
    exposure = jnp.zeros(16, jnp.int32).at[:8].set(3)
    out = jax.device_get(eval_fn(model, exposure))
    key = jax.random.PRNGKey(lang.fingerprint())
    tokens = sample_rows(lang, key, jnp.arange(n, dtype=jnp.uint32), L)
    seen = np.asarray(tokens[:, 0] < 8)
    assert 0 < seen.sum() < n
    assert out["eval_seen_sequences"] == seen.sum()
    assert out["eval_unseen_sequences"] == n - seen.sum()
    for side, rows in (("seen", seen), ("unseen", ~seen)):
        loss, _ = nnx.jit(next_token_loss)(model, tokens[rows])  # one program, not eager ops
        assert float(out[f"eval_loss_{side}"]) == pytest.approx(float(loss), rel=1e-5)
    # the whole set is the size-weighted mix of its two sides
    mix = (seen.sum() * out["eval_loss_seen"] + (~seen).sum() * out["eval_loss_unseen"]) / n
    assert float(out["eval_loss"]) == pytest.approx(float(mix), rel=1e-5)
    mix = (
        seen.sum() * out["repetition_accuracy_seen"]
        + (~seen).sum() * out["repetition_accuracy_unseen"]
    ) / n
    assert float(out["repetition_accuracy"]) == pytest.approx(float(mix), abs=1e-6)
    # an empty side is NaN, not 0
    nothing = jax.device_get(eval_fn(model, jnp.zeros(16, jnp.int32)))
    assert math.isnan(nothing["eval_loss_seen"]) and math.isnan(nothing["repetition_accuracy_seen"])
    assert nothing["eval_loss_unseen"] == pytest.approx(float(out["eval_loss"]), rel=1e-5)


def test_the_exposure_benchmark_prices_the_counting_without_a_switch_in_the_step(capsys):
    """benchmarks/bench_exposure.py times the counting alone against the step every run takes:
    the step has no switch to leave the counting out, and the benchmark runs at a toy size."""
    import importlib.util
    import inspect
    from pathlib import Path

    from spamlang.train.step import Program, make_member_step

    assert "count_exposure" not in inspect.signature(Program).parameters
    assert "count_exposure" not in inspect.signature(make_member_step).parameters
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_exposure.py"
    spec = importlib.util.spec_from_file_location("bench_exposure", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--quick", "--presets", "tiny", "--vocab", "256", "--steps", "1"]) == 0
    row = [line.split("|") for line in capsys.readouterr().out.splitlines() if "tiny |" in line]
    assert len(row) == 1 and row[0][-1].strip().endswith("%")
