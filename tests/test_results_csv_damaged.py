"""Hand-damaged sweeps (#23 item 7): what cannot be read is counted and said once, torn rows
of finished runs are cut away, and the pandas loaders warn about what they leave out."""

from __future__ import annotations

import csv
import json
import warnings

import pytest
from _fake_sweep import write_finished_sweep  # tests/_fake_sweep.py

import spamlang.sweep as sweep_mod
from spamlang.cli.sweep_cmd import main as sweep_main
from spamlang.rundir.schema import RESULT_COLUMNS
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

TINY = TrainConfig(preset="tiny", vocab_size=16, seq_len=16, batch_size=8, tokens=2560)
ROWS = [{"kind": "train", "step": s, "tokens": 128 * s, "loss": 3.0 - s} for s in (1, 2)]
GOOD = "".join(json.dumps(r) + "\n" for r in ROWS)
TORN = '{"kind": "train", "st'


def finished_sweep(root, torn: tuple = ()):
    """A sweep of 6 finished runs (3 LRs x 2 seeds), as a finished `spamlang sweep` leaves it;
    the runs in `torn` end their metrics.jsonl with a row cut mid-JSON."""
    sweep = Sweep("dmg", TINY, {"lr": [1e-3, 3e-3, 1e-2], "seed": [0, 1]})
    write_finished_sweep(sweep, root, lambda run_id: GOOD + (TORN if run_id in torn else ""))
    return sweep


def damage(root):
    (root / "lr1e-3-seed0" / "config.json").unlink()
    (root / "lr1e-3-seed1" / "config.json").write_text("garbage{")


def test_unreadable_finished_runs_are_counted_and_said_once(tmp_path, capsys):
    out = tmp_path / "out"
    sweep = finished_sweep(out)
    damage(out)
    argv = ["--out", str(out), "--plots", "--figures", str(tmp_path / "figs")]
    assert sweep_main(sweep, argv) == 0
    captured = capsys.readouterr()
    assert (
        "dmg: 4 finished run(s) in " in captured.out
        and "and 2 more finished run(s) it could not read" in captured.out
    )
    lines = captured.err.splitlines()
    missing = [x for x in lines if "lr1e-3-seed0" in x]
    garbled = [x for x in lines if "lr1e-3-seed1" in x]
    assert missing == [
        f"warning: {out / 'lr1e-3-seed0'}: finished but left out of results.csv: "
        "its config.json is missing"
    ]
    assert len(garbled) == 1 and "its config.json cannot be parsed" in garbled[0]
    with open(out / "results.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == 4


def test_a_torn_last_row_of_a_finished_run_is_cut_on_the_next_sweep(tmp_path, capsys):
    out = tmp_path / "out"
    sweep = finished_sweep(out, torn=("lr3e-3-seed1",))
    live = out / "extra-live"  # no result.json: its last line may be a row being written
    live.mkdir()
    (live / "metrics.jsonl").write_text(GOOD + TORN)
    assert sweep_main(sweep, ["--out", str(out), "--quiet"]) == 0
    path = out / "lr3e-3-seed1" / "metrics.jsonl"
    assert path.read_text() == GOOD
    assert capsys.readouterr().err.splitlines() == [
        f"repaired {path}: cut its torn last line ({len(TORN)} bytes cut mid-row)"
    ]
    assert (live / "metrics.jsonl").read_text() == GOOD + TORN
    assert sweep_main(sweep, ["--out", str(out), "--quiet"]) == 0
    assert capsys.readouterr().err == ""


pd = pytest.importorskip("pandas")
import spamlang.results as results  # noqa: E402  (after the skip: it needs pandas)


def _messages(record) -> list[str]:
    return sorted(str(w.message) for w in record if issubclass(w.category, results.RunWarning))


def test_loaders_warn_once_per_run_about_what_they_leave_out(tmp_path):
    out = tmp_path / "out"
    finished_sweep(out)
    damage(out)
    sweep_mod.write_results(out, sweep_mod.results_csv.Report())
    # Damage after the last gather (which would cut a torn row away):
    with open(out / "lr1e-2-seed0" / "metrics.jsonl", "a") as f:
        f.write(TORN)
    with open(out / "lr3e-3-seed0" / "metrics.jsonl", "a") as f:
        f.write("not json\n" + GOOD)  # a bad line between good rows

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        table = results.load(out)
    assert len(table) == 4
    msgs = _messages(record)
    assert len(msgs) == 2
    assert msgs[0].startswith(
        f"{out / 'lr1e-3-seed0'}: finished but not in results.csv: its config.json is missing"
    )
    assert msgs[1].startswith(
        f"{out / 'lr1e-3-seed1'}: finished but not in results.csv: its config.json cannot be parsed"
    )

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        metrics = results.load_metrics(out)
    msgs = _messages(record)
    assert [m.split(":")[0] for m in msgs] == [
        str(out / r) for r in ("lr1e-2-seed0", "lr1e-3-seed0", "lr1e-3-seed1", "lr3e-3-seed0")
    ]
    assert "dropped the torn last line of metrics.jsonl" in msgs[0]
    assert "its config.json is missing, so its settings are NaN" in msgs[1]
    assert "its config.json cannot be parsed" in msgs[2]
    assert "dropped 1 unreadable line(s) of metrics.jsonl (line 3)" in msgs[3]
    # What can be read is returned: every run's good rows, the damaged runs' settings NaN.
    counts = metrics.groupby("run_id").size().to_dict()
    assert counts == {
        "lr1e-2-seed0": 2,
        "lr1e-2-seed1": 2,
        "lr1e-3-seed0": 2,
        "lr1e-3-seed1": 2,
        "lr3e-3-seed0": 4,
        "lr3e-3-seed1": 2,
    }
    no_config = metrics[metrics["run_id"] == "lr1e-3-seed0"]
    assert no_config["lr"].isna().all() and (no_config["loss"] == [2.0, 1.0]).all()


def test_load_takes_a_single_run_directory(tmp_path):
    out = tmp_path / "out"
    finished_sweep(out)
    row = results.load(out / "lr3e-3-seed1")
    assert len(row) == 1 and row["run_id"][0] == "lr3e-3-seed1"
    assert row["lr"][0] == 3e-3 and row["seed"][0] == 1 and row["final_eval_loss"][0] == 1.0
    assert list(row.columns) == [*sweep_mod.SETTING_COLUMNS, *RESULT_COLUMNS]
    assert len(results.load_metrics(out / "lr3e-3-seed1")) == 2
