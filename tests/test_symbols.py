"""Held-out symbols (spam's holdout) and the per-symbol sample complexity (updates_to_learn)."""

from __future__ import annotations

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from spamlang import languages
from spamlang.cli import main
from spamlang.coverage import symbols
from spamlang.errors import UserError
from spamlang.sweep.results_csv import RESULT_COLUMNS
from spamlang.train import TrainConfig, run_training

# ----- the holdout ------------------------------------------------------------------------


def test_holdout_training_never_draws_the_heldout_symbols_and_the_view_draws_only_them():
    lang = languages.make("spam", vocab_size=200, holdout=0.1)
    held = set(lang.heldout_ids().tolist())
    assert len(held) == 20 == lang.n_heldout
    drawn = np.asarray(lang.sample(jax.random.PRNGKey(0), 20_000, 2))
    assert (drawn[:, 0] == drawn[:, 1]).all()
    ids, counts = np.unique(drawn[:, 0], return_counts=True)
    assert set(ids.tolist()) == set(range(200)) - held  # every kept symbol, no held-out one
    # Uniform over the 180 kept: 111 expected each; a chi-square far below its 0.999 quantile.
    chi2 = ((counts - 20_000 / 180) ** 2 / (20_000 / 180)).sum()
    assert chi2 < 250
    view = np.asarray(lang.heldout_view().sample(jax.random.PRNGKey(1), 4_000, 3))
    assert set(np.unique(view).tolist()) == held
    assert lang.heldout_view().fingerprint() != lang.fingerprint()


def test_no_holdout_is_the_language_as_it_was():
    lang = languages.make("spam", vocab_size=64)
    assert lang.params() == {"vocab_size": 64}  # fingerprint, eval set and run ids unchanged
    key = jax.random.PRNGKey(3)
    expected = jax.random.randint(key, (5, 1), 0, 64, dtype=jnp.int32)
    np.testing.assert_array_equal(lang.sample(key, 5, 4), jnp.broadcast_to(expected, (5, 4)))
    assert lang.heldout_ids().size == 0
    with pytest.raises(UserError, match="no held-out"):
        lang.heldout_view()


def test_heldout_set_depends_on_v_and_holdout_only():
    a = languages.make("spam", vocab_size=1000, holdout=0.05).heldout_ids()
    b = languages.make("spam", vocab_size=1000, holdout=0.05).heldout_ids()
    np.testing.assert_array_equal(a, b)
    assert len(languages.make("spam", vocab_size=1000, holdout=0.1).heldout_ids()) == 100


@pytest.mark.parametrize(
    "name, params, match",
    [
        ("spam", dict(vocab_size=64, holdout=1.0), r"\[0, 1\)"),
        ("spam", dict(vocab_size=64, holdout=-0.1), r"\[0, 1\)"),
        ("spam", dict(vocab_size=64, holdout=0.001), "holds out 0"),
        ("spam", dict(vocab_size=4, holdout=0.9), "2 in"),
        ("zipf-spam", dict(vocab_size=64, holdout=0.1), "uniform spam only"),
    ],
)
def test_bad_holdouts_are_user_errors(name, params, match):
    with pytest.raises(UserError, match=match):
        languages.make(name, **params)


def test_cli_bad_holdout_exits_2(tmp_path, capsys):
    argv = ["train", "--vocab-size", "64", "--param", "holdout=1.5", "--out", str(tmp_path / "r")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "holdout must be in [0, 1)" in err and "Traceback" not in err
    assert not (tmp_path / "r").exists()


# ----- the learning curve -----------------------------------------------------------------


def _curve(learned_from: int, *, never_seen: int = 0, copies: bool = False, V: int = 512):
    exposure = np.random.default_rng(0).poisson(16, V)
    exposure[:never_seen] = 0
    learned = (exposure >= learned_from) | (copies & (exposure == 0))
    losses = np.where(learned, 0.01, 5.0)
    return symbols.learning_curve(losses, exposure)


def test_updates_to_learn_finds_the_threshold():
    out = _curve(16, never_seen=40)
    assert 14 <= out["updates_to_learn"] <= 17 and out["updates_to_learn_bound"] == ""
    curve = out["symbol_curve"]
    assert curve["exposure"][0] == 0 and curve["symbols"][0] == 40  # never pooled with seen
    assert sum(curve["symbols"]) == 512
    assert min(curve["symbols"][1:]) >= symbols.MIN_BIN
    assert out["updates_to_learn"] > _curve(10)["updates_to_learn"]


def test_updates_to_learn_says_when_the_data_cannot_pin_it():
    assert _curve(0)["updates_to_learn_bound"] == "upper"  # all learned: a bound only
    assert _curve(0)["updates_to_learn"] < 10  # the least-exposed bin's mean exposure
    none = _curve(10_000)
    assert none["updates_to_learn"] is None and none["updates_to_learn_bound"] == "not reached"
    copying = _curve(0, never_seen=40, copies=True)
    assert copying["updates_to_learn"] == 0.0 and copying["updates_to_learn_bound"] == ""


# ----- in a run ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    """A sweep directory holding one finished run with a holdout and diagnostics."""
    root = tmp_path_factory.mktemp("sweep")
    config = TrainConfig(
        vocab_size=64,
        seq_len=2,
        batch_size=16,
        tokens=16 * 2 * 40,
        lr=1e-2,
        language_params={"holdout": 0.125},
        diag_every=20,
        eval_sequences=16,
        log_every=10,
        model={"n_layers": 1},  # one layer: nothing here depends on depth; compiles faster
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPAMLANG_PEAK_FLOPS", "1e11")
        run_training(config, root / "run", quiet=True)
    return root


def test_run_reports_heldout_and_updates_to_learn(sweep_dir):
    tmp_path = sweep_dir
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["heldout_symbols"] == 8 and result["heldout_exposure_max"] == 0
    for key in ("eval_loss_heldout", "repetition_accuracy_heldout", "symbols_learned"):
        assert math.isfinite(result[key])
    assert result["updates_to_learn_bound"] in ("", "upper", "not reached")
    curve = result["symbol_curve"]
    assert curve["exposure"][0] == 0 and curve["symbols"][0] == 8  # the held-out bin
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    diag_steps = [r["step"] for r in rows if r["kind"] == "diag"]
    assert diag_steps == [0, 20, 40]  # the bottleneck at init, along training, at the end
    assert all(
        "updates_to_learn" in r and "symbol_curve" not in r
        for r in rows
        if r["kind"] in ("diag", "eval")
    )
    assert {"updates_to_learn", "eval_loss_heldout", "heldout_exposure_max"} <= set(RESULT_COLUMNS)


def test_plot_symbols_draws_a_sweep_and_refuses_one_without_curves(sweep_dir, tmp_path, capsys):
    # In this process (`main`): the subprocess path of the plot commands is test_plots.py's.
    out = tmp_path / "symbols.png"
    assert main(["plot", "symbols", str(sweep_dir), "-o", str(out)]) == 0, capsys.readouterr().err
    assert out.read_bytes()[:4] == b"\x89PNG"
    empty = tmp_path / "empty"
    (empty / "run").mkdir(parents=True)
    (empty / "run" / "config.json").write_text((sweep_dir / "run" / "config.json").read_text())
    result = json.loads((sweep_dir / "run" / "result.json").read_text())
    del result["symbol_curve"]
    (empty / "run" / "result.json").write_text(json.dumps(result))
    capsys.readouterr()
    assert main(["plot", "symbols", str(empty), "-o", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert "symbol_curve" in err
    assert "Traceback" not in err and not (tmp_path / "x.png").exists()
