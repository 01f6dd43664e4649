"""Law.predict and its range: a prediction outside what the fit saw says why; a law saved is
the law loaded; a missing or broken law file is one UserError."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import _synthetic_law as synthetic  # tests/_synthetic_law.py
import pytest

from spamlang.errors import UserError
from spamlang.law import Law, fit, load
from spamlang.law import law as law_module
from spamlang.law.formula import NAMES

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def law() -> Law:
    return fit(synthetic.frame(noise=0.01, grid={"d_model": (16, 32), "weight_decay": (0.1,)}))


@pytest.fixture(scope="module")
def law_of_3_widths() -> Law:
    """Three widths: enough for a_iD, the level's second term in the width, to be fitted."""
    grid = {"d_model": (16, 32, 64), "weight_decay": (0.1,)}
    return fit(synthetic.frame(noise=0.01, grid=grid))


def test_two_widths_fit_one_slope_in_the_level_and_say_so(law, law_of_3_widths):
    """Over two widths a_D and a_iD are one slope: the fit holds a_iD at 0, says why, and
    every constant it fits is pinned down; over three it fits both."""
    assert law.errors["a_iD"] is None and law.constants["a_iD"] == 0
    assert "a_iD    = +0  (not fitted: the cells had fewer than 3 widths" in str(law)
    assert law.unpinned() == () and law.errors["a_D"] < 1
    assert law_of_3_widths.errors["a_iD"] < 1 and law_of_3_widths.unpinned() == ()


def _row(**changes) -> dict:
    """A cell inside the synthetic grid."""
    return {
        "vocab_size": 1024,
        "batch_size": 32,
        "d_model": 16,
        "steps": 512,
        "tie_embeddings": True,
        "b2": 0.99,
        "weight_decay": 0.1,
        **changes,
    }


def test_a_cell_inside_the_range_is_predicted_as_the_true_law_says(law):
    inside = law.predict_row(_row())
    assert inside.extrapolation == ()
    truth = fit(synthetic.frame(noise=0.0, seeds=1)).predict_row(_row())
    assert inside.loss == pytest.approx(truth.loss, rel=0.05)
    assert (inside.R, inside.M, inside.n) == (1024 / 32, 100, 32 * 512 / 1024)


def test_memory_ratio_is_c_m_over_r_and_the_boundary_lies_at_1(law):
    k = law.constants
    c = math.exp(k["c0"] + k["c_tied"])  # tied, D = 16, decayed: c_D and c_wd multiply 0 / 1
    c *= math.exp(k["c_wd"] + k["c_DV"] * 16 / 1024)  # and c_DV multiplies D / V
    for B in (8, 32, 128):
        p = law.predict_row(_row(batch_size=B, steps=512 * 32 // B))
        assert p.memory_ratio == pytest.approx(c * p.M / p.R)
    # At a ratio of 1 the logistic puts half the seen symbols at chance: the loss lies midway
    # between the learned level and log V (the steps leave no symbol unseen at n = 1024).
    at = law.predict_row(_row(b2=1 - c / 32, steps=2**16))  # M = R / c at R = 1024 / 32
    assert at.memory_ratio == pytest.approx(1.0)
    assert at.loss == pytest.approx(0.5 * math.log(1024), rel=0.05)
    assert math.isnan(law.predict_row(_row(language="cycle")).memory_ratio)  # no number outside


@pytest.mark.parametrize(
    "changes, word",
    [
        ({"language": "cycle"}, "language"),
        ({"optimizer": "sgd"}, "optimizer"),
        ({"head": "lowrank:4"}, "head"),
        ({"sampling": "permuted"}, "sampling"),
        ({"weight_decay": 0.0}, "decayed"),
        ({"d_model": 128}, "D 128"),  # more than 2x the widest fitted (32)
        ({"vocab_size": 131072, "steps": 65536}, "V "),
        ({"b2": 0.99999, "steps": 100_000}, "M "),
        ({"steps": 8}, "n "),
        ({"n_layers": 30}, "n_layers 30"),  # fitted at 2 and 8 layers
        ({"preset": "smollm2-106m"}, "n_layers 30"),  # no n_layers column: the preset's depth
    ],
)
def test_a_cell_outside_the_range_is_flagged_with_its_reason(law, changes, word):
    p = law.predict_row(_row(**changes))
    assert any(word in reason for reason in p.extrapolation), p.extrapolation
    # Outside the law's scope (what it is a law of) it shows no number; else it extrapolates.
    scope = word in ("language", "optimizer", "head")
    assert math.isnan(p.loss) if scope else p.loss > 0


@pytest.mark.parametrize(
    "changes",
    [
        {"eps": 1e-3},
        {"b1": 0.0},
        {"grad_clip": 0.0},
        {"head_amsgrad": True},
        {"head_eps": 1e-3},
        {"head_row_clip": 0.45},
        {"head_v_gated": True},
        {"head_lr_scale": 0.1},
        {"head_b2": 0.999},  # the row's b2 is 0.99: fitted as a b2 0.99 cell it would mislead
        {"head_weight_decay": 0.0},  # the row's decay is 0.1
    ],
)
def test_a_setting_the_law_holds_fixed_hides_the_number(law, changes):
    p = law.predict_row(_row(**changes))
    assert math.isnan(p.loss) and any(next(iter(changes)) in r for r in p.extrapolation)
    assert law_module.text(p).startswith("- extrapolation: ")


def test_a_head_setting_equal_to_the_runs_own_keeps_the_number(law):
    same = law.predict_row(_row(head_b2=0.99, head_weight_decay=0.1, head_lr_scale=1.0))
    assert same.loss == law.predict_row(_row()).loss and not same.extrapolation


@pytest.mark.parametrize("which", ["synthetic", "shipped"])
def test_no_prediction_leaves_zero_to_log_v(law, which):
    """Uncapped, the shipped law predicted 672 nats at V 16,384 with 100 steps."""
    use = law if which == "synthetic" else load()
    for V, B, steps, b2, D, tied, wd, layers in itertools.product(
        (64, 256, 4096, 16384, 131072),
        (1, 8, 64, 512),
        (1, 5, 100, 10_000),
        (0.9, 0.999),
        (16, 576),
        (False, True),
        (0.0, 0.1),
        (2, 30),
    ):
        row = {"vocab_size": V, "batch_size": B, "d_model": D, "steps": steps, "b2": b2}
        p = use.predict_row({**row, "tie_embeddings": tied, "weight_decay": wd, "n_layers": layers})
        assert 0 <= p.loss <= math.log(V) + 1e-9, (row, p.loss)


def test_a_width_within_twice_the_fitted_ones_is_not_flagged(law):
    assert law.predict_row(_row(d_model=64)).extrapolation == ()
    assert law.predict_row(_row(d_model=8)).extrapolation == ()


def test_a_law_of_one_width_flags_every_other_width():
    one = fit(synthetic.frame(noise=0.01, grid={"d_model": (16,), "weight_decay": (0.1,)}))
    assert one.predict_row(_row(d_model=16)).extrapolation == ()
    assert any("D 24" in r for r in one.predict_row(_row(d_model=24)).extrapolation)


def test_depth_is_an_input_a_law_of_one_depth_flags_every_other_depth(law):
    """Fitted at 2 and 8 layers the depth terms are fitted and a depth between is inside the
    range; fitted at 2 alone they are held at 0, and 4 layers is an extrapolation."""
    assert law.errors["c_L"] is not None
    assert law.constants["c_L"] == pytest.approx(synthetic.CONSTANTS["c_L"], abs=0.05)
    inside = law.predict_row(_row(n_layers=4))
    assert inside.extrapolation == ()
    assert inside.loss != law.predict_row(_row(n_layers=2)).loss  # depth moves the loss
    grid = {"d_model": (16,), "weight_decay": (0.1,), "n_layers": (2,)}
    one = fit(synthetic.frame(noise=0.01, grid=grid))
    assert one.errors["c_L"] is None and one.constants["c_L"] == 0.0
    assert any("n_layers 4 outside" in r for r in one.predict_row(_row(n_layers=4)).extrapolation)


def test_the_committed_laws_read_and_an_older_format_is_refused_in_one_line(tmp_path, law, capsys):
    """Every committed law reads: the shipped one and results/forecasts/cell_law_*.json (formats
    2-4 there were migrated to 5 once, each predicting what it did). A file of an older format
    (1: the exponential boundary; 4: no a_iD), or of the retired symbol law, is refused, not
    misread: one line on stderr, exit status 2."""
    from spamlang.cli import main

    forecasts = ROOT / "results" / "forecasts"
    committed = sorted(forecasts.glob("cell_law_*.json"))
    assert len(committed) == 5 and all(load(path).cells > 0 for path in committed)
    assert load() == load(forecasts / "cell_law_6.json")  # the shipped law, as it forecast
    data = law.to_json()
    older = {
        **data,
        "format": 4,
        "constants": {k: v for k, v in data["constants"].items() if k != "a_iD"},
        "errors": {k: v for k, v in data["errors"].items() if k != "a_iD"},
    }
    for bad in ({**data, "format": 1}, older):
        (tmp_path / "old.json").write_text(json.dumps(bad))
        with pytest.raises(UserError, match="not a spamlang law file of format 5"):
            load(tmp_path / "old.json")
    for path in (tmp_path / "old.json", forecasts / "symbol_law_7.json"):  # format 5, symbols
        capsys.readouterr()
        assert (
            main(["law", "predict", str(ROOT / "sweeps" / "cpu_demo.py"), "--law", str(path)]) == 2
        )
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "not a spamlang law file of format 5" in err, err


def test_predict_reads_a_train_config_as_its_row(law):
    from spamlang.train.config import TrainConfig

    config = TrainConfig(
        preset="tiny",
        vocab_size=1024,
        batch_size=32,
        seq_len=2,
        tokens=512 * 32 * 2,
        tie_embeddings=True,
        b2=0.99,
        lr=3e-3,
        seed=4,
    )
    by_config = law.predict(config)
    assert by_config == law.predict_row(_row(d_model=config.model_config().d_model))
    assert law.predict(config.replace(lr=1e-2, seed=0)) == by_config  # lr, seed ignored
    deeper = config.replace(model={"n_layers": 16})
    assert any("n_layers 16" in r for r in law.predict(deeper).extrapolation)
    assert law.predict(config.replace(model={"n_layers": 8})).extrapolation == ()


def test_a_missing_setting_is_a_user_error(law):
    with pytest.raises(UserError, match="d_model"):
        law.predict_row({k: v for k, v in _row().items() if k != "d_model"})


def test_save_and_load_round_trip(law, tmp_path):
    path = law.save(tmp_path / "law.json")
    back = load(path)
    assert back == law and str(back) == str(law)
    assert back.predict_row(_row()) == law.predict_row(_row())


def test_str_names_every_constant_with_its_error(law):
    text = str(law)
    assert "L = q * log V + (1 - q) * (p * log V + (1 - p) * l(n))" in text
    for name in NAMES:
        line = next(x for x in text.splitlines() if x.strip().startswith(name + " "))
        assert "±" in line or "not fitted" in line


def test_load_without_a_path_says_no_law_is_shipped(monkeypatch, tmp_path):
    monkeypatch.setattr(law_module, "shipped_path", lambda: tmp_path / "absent.json")
    with pytest.raises(UserError, match="ships no fitted law yet.*spamlang law fit"):
        load()
    assert law_module.shipped() is None


def test_load_without_a_path_reads_the_shipped_law(monkeypatch, tmp_path, law):
    monkeypatch.setattr(law_module, "shipped_path", lambda: law.save(tmp_path / "fitted.json"))
    assert load() == law


@pytest.mark.parametrize(
    "text, match",
    [
        ("{not json", "bad JSON"),
        (json.dumps({"format": 99}), "format"),
        (json.dumps({"format": 5, "constants": {}}), "not a complete law"),
    ],
)
def test_a_broken_law_file_is_a_user_error(tmp_path, text, match):
    (tmp_path / "law.json").write_text(text)
    with pytest.raises(UserError, match=match):
        load(tmp_path / "law.json")
    with pytest.raises(UserError, match="no such law file"):
        load(tmp_path / "absent.json")


@pytest.mark.parametrize(
    "change, match",
    [
        ({"constants": {"k": float("nan")}}, "constant.*k not a finite number"),
        ({"constants": {"k": "abc"}}, "constant.*k not a finite number"),
        ({"constants": {"c0": True}}, "constant.*c0 not a finite number"),
        ({"errors": {"k": -1.0}}, "error.*of k"),
        ({"ranges": {}}, "ranges.D must be"),
        ({"ranges": {"V": [100, 10]}}, "ranges.V must be"),
        ({"covered": {"language": []}}, "covered.language"),
        ({"cells": 0}, "cells must be"),
    ],
)
def test_a_law_file_with_bad_values_is_refused_when_read(tmp_path, law, change, match):
    data = law.to_json()
    for key, value in change.items():  # merge one level down, replace the rest
        data[key] = {**data[key], **value} if isinstance(value, dict) and value else value
    (tmp_path / "law.json").write_text(json.dumps(data))
    with pytest.raises(UserError, match="not a valid law: " + match):
        load(tmp_path / "law.json")


def test_permuted_order_forgets_only_the_symbols_away_longer_than_c_m():
    """When every symbol comes once an epoch, the steps since its last appearance are about
    uniform on [0, R), so the share past c M steps is max(0, 1 - cM/R), where iid order has
    the logistic boundary 1 / (1 + (cM/R)^s), a half at cM = R (the formula's docstring)."""
    import math

    from spamlang.law import formula

    theta = dict(synthetic.CONSTANTS)
    n, V = 16.0, 4096.0
    c = math.exp(theta["c0"] + theta["c_DV"] * 16 / V)  # untied, D = 16, no decay

    def loss(M, R, permuted):
        x = formula.features(V, V / R, n * R, M, 16, False, False, permuted)
        return float(formula.loss(theta, x))

    floor = loss(1e6, 1.0, True)  # remembered, every symbol shown: the floor l(n)
    assert loss(R=c * 20, M=20, permuted=True) == pytest.approx(floor)  # cM = R: nobody away
    iid = loss(R=c * 20, M=20, permuted=False)
    assert iid == pytest.approx(floor + 0.5 * (1 - math.exp(-n)) * (math.log(V) - floor))
    # Never shown: under iid a share exp(-n) of the symbols, at chance whatever the memory.
    # (M is capped at the run's 16 steps: the boundary's share, 1 / (1 + (16 c)^s), is 1e-7.)
    expected = floor + math.exp(-n) * (math.log(V) - floor)
    assert loss(1e6, 1.0, False) == pytest.approx(expected, abs=1e-5)
    half = loss(R=2 * c * 20, M=20, permuted=True)
    assert half == pytest.approx(0.5 * math.log(V) + 0.5 * floor)


def test_the_summary_width_factor_is_the_levels_ratio_at_two_widths():
    """`Law.level_factor` (the summary line's "l(n) x .. at D = 256") is the ratio of the
    formula's own l(n) at D and at D = 16, all else equal, away from its cap at log V."""
    from spamlang.law import formula

    theta = dict(synthetic.CONSTANTS)
    law = Law(theta, dict.fromkeys(theta), 1, 0.0, {}, {})
    x = formula.features(4096, 32, 1e6, 20, [256, 16], True, True)  # n = 7,812: far below log V
    at_256, at_16 = formula.level(theta, x)
    assert at_256 < math.log(4096) and at_16 < math.log(4096)
    assert law.level_factor(256) == pytest.approx(at_256 / at_16, rel=1e-12)
    assert law.level_factor(16) == 1.0
    assert f"l(n) x {at_256 / at_16:.3g} at D = 256" in law.summary_line()


def test_the_loss_takes_another_level_where_an_analysis_asks():
    """`formula.loss(..., level_of=)` replaces l(n) and nothing else: the learned share of
    the seen symbols sits at the level it is given."""
    from spamlang.law import formula

    theta = dict(synthetic.CONSTANTS)
    x = formula.features(1024, 32, 512, 1e4, 16, True, True)  # remembered: nothing forgotten
    own = formula.loss(theta, x)
    assert formula.loss(theta, x, formula.level) == own
    raised = formula.loss(theta, x, lambda t, f: 2 * formula.level(t, f))
    unseen = math.exp(-x["n"])
    assert raised - own == pytest.approx((1 - unseen) * formula.level(theta, x), rel=1e-6)
