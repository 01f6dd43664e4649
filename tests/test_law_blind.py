"""sweeps/law_blind.py: each of its seven blind tests is the sweep it ran as (one script each
before), so that results/law_blind*/ and results/forecasts/law_blind* stay valid, and the laws
that forecast them (migrated to the current format) still forecast what they did."""

from __future__ import annotations

import csv
import functools
import hashlib
import json
import runpy
import sys
from pathlib import Path

import pytest

from spamlang.sweep import load_sweep_file
from spamlang.train.config import TrainConfig

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "sweeps" / "law_blind.py"
# sha256 (first 16 digits) of each test's name, axes, bracket_lr and base fields off their
# defaults, as sweeps/law_blind.py and law_blind_2.py ... law_blind_7.py defined them
BEFORE = {
    1: "938169769187674f",
    2: "4bde51089cbda8f2",
    3: "68c5b55415751303",
    4: "fc33584ec3f1d47c",
    5: "08b73a02cb0f9938",
    6: "b1a00596dbecda38",
    7: "cc6825e1de92cc58",
}


@functools.cache
def _tests() -> dict:
    return runpy.run_path(str(SCRIPT))["TESTS"]


@pytest.mark.parametrize("test", sorted(BEFORE))
def test_each_blind_test_is_the_sweep_it_ran_as(test):
    from spamlang.cli.law_cmd import _cells
    from spamlang.law import load
    from spamlang.law.forecast import forecast_rows, read

    sweep = _tests()[test]
    name = "law_blind" if test == 1 else f"law_blind_{test}"
    default = TrainConfig().to_json()
    base = {k: v for k, v in sweep.base.to_json().items() if default.get(k) != v}
    text = json.dumps(
        {"name": sweep.name, "axes": sweep.axes, "bracket_lr": sweep.bracket_lr, "base": base},
        sort_keys=True,
    )
    assert sweep.name == name and hashlib.sha256(text.encode()).hexdigest()[:16] == BEFORE[test]
    with open(ROOT / "results" / name / "results.csv", newline="") as f:
        ran = {row["run_id"] for row in csv.DictReader(f)}
    assert {run_id for run_id, _ in sweep.points()} <= ran  # bracketing added the rest
    forecasts = sorted((ROOT / "results" / "forecasts").glob(f"{name}.*csv"))
    assert forecasts and all({r["cell"] for r in read(f)} == set(_cells(sweep)) for f in forecasts)
    for path in (f for f in forecasts if ".cell_law_" in f.name):  # the laws, migrated, agree
        law = load(path.parent / (path.name.split(".")[1] + ".json"))
        again = forecast_rows(law, _cells(sweep), {})
        kept = ("cell", "predicted_loss", "predicted_class")
        assert [[r[k] for k in kept] for r in again] == [[r[k] for k in kept] for r in read(path)]


def test_the_script_runs_the_test_it_is_given_and_the_first_as_a_sweep_file(
    capsys, tmp_path, monkeypatch
):
    argv = ["--test", "3", "--dry-run", "--out", str(tmp_path / "out")]
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), *argv])
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(SCRIPT), run_name="__main__")
    assert done.value.code == 0
    assert "96 runs in " in capsys.readouterr().out  # law_blind_3's grid
    assert load_sweep_file(SCRIPT)[0].name == "law_blind"  # `spamlang sweep`, `law predict`
