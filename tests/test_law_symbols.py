"""The symbol-level law (`spamlang.law.symbols`): its fit gives back a known law from binned
symbol histories made the way a run makes them; its cell predictions stay in [0, log V], are
the same on every call, and follow the data order's gaps."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from spamlang.coverage.history import summary
from spamlang.law import load, symbols

TRUE = {"p0": 1.2, "p_tied": 0.3, "p_L": -0.2, "p_M": -0.1, "c0": 1.9, "c_tied": 0.1, "c_L": -0.1}
THETA = {**dict.fromkeys(symbols.NAMES, 0.0), **TRUE}


def _run_bins(V, B, M, tied, layers, seed, noise):
    """One synthetic run's last-evaluation bins: V symbols' histories drawn under iid order,
    each symbol's loss from the law (times a log-normal factor), binned by the package's own
    `coverage.history.summary` as a sweep's symbols.csv.gz holds them."""
    steps = 16 * V // B
    ages = symbols.draw_ages(V, B, steps, "iid", drawn=V, seed=seed)
    P, tau = symbols.pull_and_tau(THETA, symbols.cell_features(32, layers, tied, M), M)
    loss = symbols.symbol_loss(P * np.nansum(np.exp(-ages / tau), axis=1), V)
    loss = loss * np.exp(np.random.default_rng(seed).normal(0, noise, V))
    times = np.sort(steps - 1 - ages, axis=1)  # NaN last
    count = np.isfinite(times).sum(axis=1)
    first = np.where(count > 0, times[:, 0] + 1, -1)
    last = np.where(count > 0, np.nanmax(np.nan_to_num(times, nan=-1), axis=1) + 1, -1)
    gaps = np.nan_to_num(np.diff(times, axis=1), nan=0)
    row = {
        "step": steps,
        "loss": loss,
        "appearances": count,
        "first_step": first,
        "last_step": last,
        "max_gap": gaps.max(axis=1, initial=0),
    }
    bins = pd.DataFrame(summary([row]))
    return bins.assign(
        run_id=f"V{V}-B{B}-M{M}-{tied}-{layers}",
        vocab_size=V,
        batch_size=B,
        steps=steps,
        d_model=32,
        n_layers=layers,
        tie_embeddings=tied,
        weight_decay=0.1,
        M=float(M),
        R=V / B,
        n=16.0,
        language="spam",
        optimizer="adamw",
        head="softmax",
        sampling="iid",
    )


def test_the_fit_gives_back_a_known_symbol_law(tmp_path):
    runs = [
        _run_bins(1024, B, M, tied, layers, seed=i, noise=0.05)
        for i, (B, M, tied, layers) in enumerate(
            itertools.product((8, 32), (20, 100), (False, True), (2, 8))
        )
    ]
    fitted = symbols.fit(pd.concat(runs, ignore_index=True))
    for name, value in TRUE.items():
        # A bin stands for its symbols at its middle: the fit is close, not exact.
        assert fitted.constants[name] == pytest.approx(value, abs=0.15), name
    assert fitted.errors["p_D"] is None and fitted.constants["c_D"] == 0.0  # one width
    assert fitted.cells == 16 and fitted.ranges["n_layers"] == [2, 8]
    # A law like any: it predicts a row, flags what its fit did not see, and reads back.
    row = {"vocab_size": 1024, "batch_size": 32, "d_model": 32, "steps": 512, "b2": 0.95}
    assert fitted.predict_row(row).extrapolation == ()
    _, tau = symbols.pull_and_tau(fitted.constants, symbols.cell_features(32, 2, 0, 20), 20)
    assert fitted.predict_row(row).memory_ratio == pytest.approx(tau / 32)  # tau / R
    assert any("D 128" in r for r in fitted.predict_row({**row, "d_model": 128}).extrapolation)
    assert load(fitted.save(tmp_path / "symbols.json")) == fitted
    assert "P = " in str(fitted) and "tau" in str(fitted)


def test_trial_steps_past_the_float_range_print_no_warning():
    # From a pull of e^709.7 nats, at the edge of float64, the fit's steps overflow to inf:
    # least_squares backs off such a step, so the user must not see a numpy warning for it.
    bins = _run_bins(256, 8, 20, False, 2, seed=0, noise=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fitted = symbols.fit(bins, starts=((709.7, 0.0),))
    assert all(math.isfinite(v) for v in fitted.constants.values())


@pytest.mark.parametrize("sampling", ["iid", "permuted", "cyclic"])
def test_cell_predictions_stay_in_zero_to_log_v_and_repeat(sampling):
    for V, B, steps, M in itertools.product((64, 4096, 131072), (1, 64), (1, 100, 2500), (10, 1e3)):
        cell = dict(V=V, B=B, steps=steps, M=min(M, steps), D=16, layers=2, tied=True)
        loss = symbols.predict_cell(THETA, sampling=sampling, drawn=256, **cell)
        assert 0 <= loss <= math.log(V) + 1e-9
        assert loss == symbols.predict_cell(THETA, sampling=sampling, drawn=256, **cell)


def test_cyclic_order_returns_every_symbol_every_r_steps_and_iid_does_not():
    ages = symbols.draw_ages(4096, 32, 2048, "cyclic", drawn=500)
    assert np.all(np.diff(np.sort(ages, axis=1), axis=1) == 128)
    shuffled = np.diff(np.sort(symbols.draw_ages(4096, 32, 2048, "permuted", drawn=500)), axis=1)
    assert shuffled.mean() == pytest.approx(128, rel=0.02) and shuffled.std() > 30
    assert shuffled.max() < 256  # one appearance an epoch: never two epochs apart


def test_a_symbol_seen_more_and_more_recently_has_a_lower_loss():
    P, tau = 2.0, 100.0
    z = symbols.margin_regular(P, tau, [1, 4, 16, 16, 0], [0, 0, 0, 500, 0], [0, 50, 50, 50, 0])
    loss = symbols.symbol_loss(z, 4096)
    assert (
        loss[0] > loss[1] > loss[2]
        and loss[3] > loss[2]
        and loss[4] == pytest.approx(math.log(4096))
    )


def _sweep(root, name, Bs, Ms):
    """A sweep directory as a sweep leaves it: results.csv (one LR, 2 seeds a cell, the
    measured loss the mean of the symbols') and symbols.csv.gz (each run's last bins)."""
    rows, bins = [], []
    for i, (B, M, tied, seed) in enumerate(itertools.product(Bs, Ms, (False, True), (0, 1))):
        run = _run_bins(1024, B, M, tied, 2, seed=100 * seed + i, noise=0.05)
        run_id = f"{name}-{i}"
        loss = float((run["loss_mean"] * run["symbols"]).sum() / run["symbols"].sum())
        bins.append(run[["step", "appearances", "max_gap", "age", "symbols", "loss_mean"]])
        bins[-1] = bins[-1].assign(run_id=run_id, learned=0.0, mean_gap=run["mean_gap"])
        rows.append(
            {
                "run_id": run_id,
                "language": "spam",
                "preset": "tiny-w32",
                "d_model": 32,
                "n_layers": 2,
                "vocab_size": 1024,
                "lr": 0.01,
                "tie_embeddings": tied,
                "head": "softmax",
                "seed": seed,
                "batch_size": B,
                "sampling": "iid",
                "optimizer": "adamw",
                "b2": 1 - 1 / M,
                "weight_decay": 0.1,
                "steps": 16 * 1024 // B,
                "final_eval_loss": loss,
            }
        )
    (root / name).mkdir()
    pd.DataFrame(rows).to_csv(root / name / "results.csv", index=False)
    pd.concat(bins).to_csv(root / name / "symbols.csv.gz", index=False)
    return str(root / name)


def test_law_fit_and_validate_read_the_symbol_histories_a_sweep_commits(tmp_path, capsys):
    from spamlang.cli import main

    short, long = _sweep(tmp_path, "short", (32,), (20, 100)), _sweep(tmp_path, "long", (8,), (20,))
    out = tmp_path / "symbols.json"
    assert main(["law", "fit", "--symbols", short, long, "-o", str(out)]) == 0
    fitted = load(out)
    assert isinstance(fitted, symbols.SymbolLaw) and fitted.sources == ["short", "long"]
    assert fitted.constants["p0"] == pytest.approx(TRUE["p0"], abs=0.3)
    capsys.readouterr()
    # Each sweep predicted by the law of the other's histories, as the cell law is.
    assert main(["law", "validate", "--symbols", short, long]) == 0
    text = capsys.readouterr().out
    assert "classified" in text and "short " in text and "long " in text
    # A sweep of another optimizer among them adds no histories, with a note, and no error.
    (tmp_path / "sgd").mkdir()
    frame = pd.read_csv(tmp_path / "short" / "results.csv").assign(optimizer="sgd")
    frame.to_csv(tmp_path / "sgd" / "results.csv", index=False)
    (tmp_path / "sgd" / "symbols.csv.gz").write_bytes(
        (tmp_path / "short/symbols.csv.gz").read_bytes()
    )
    assert main(["law", "validate", "--symbols", short, long, str(tmp_path / "sgd")]) == 0
    err = capsys.readouterr().err
    assert f"note: no symbol histories from {tmp_path / 'sgd'}: no run the law covers" in err
    assert main(["law", "compare", short, "--law", str(out)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("4 of 4 cells measured")
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "results.csv").write_text(
        (tmp_path / "short" / "results.csv").read_text()
    )
    assert main(["law", "fit", "--symbols", str(tmp_path / "plain")]) == 2
