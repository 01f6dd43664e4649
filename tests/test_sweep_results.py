"""`spamlang.sweep.results_csv` as a sweep uses it: every row is the run id's own point, and every
run is listed once, whatever links point to it."""

from __future__ import annotations

import csv
import json

from _fake_sweep import write_finished_sweep  # tests/_fake_sweep.py

from spamlang.cli.sweep_cmd import main as sweep_main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

TINY = TrainConfig(vocab_size=64, seq_len=2, batch_size=4, tokens=64, eval_sequences=8)
SWEEP = Sweep("chk", TINY, {"lr": [1e-3, 3e-3], "seed": [0, 1]})


def _table(out):
    with open(out / "results.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_a_finished_run_whose_config_disagrees_with_its_id_is_damaged_not_listed(tmp_path, capsys):
    out = tmp_path / "out"
    write_finished_sweep(SWEEP, out)
    path = out / "lr3e-3-seed0" / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "lr": 0.002}))
    assert sweep_main(SWEEP, ["--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "chk: 3 finished run(s)" in captured.out
    assert "and 1 more finished run(s) it could not read" in captured.out
    said = [line for line in captured.err.splitlines() if "lr3e-3-seed0" in line]
    assert (
        len(said) == 1
        and "finished but left out of results.csv" in said[0]
        and "lr=0.002" in said[0]
        and "lr=0.003" in said[0]
    ), said
    rows = _table(out)
    assert sorted(r["run_id"] for r in rows) == ["lr1e-3-seed0", "lr1e-3-seed1", "lr3e-3-seed1"]
    assert all(float(r["lr"]) != 0.002 for r in rows)


def test_a_linked_run_is_listed_once(tmp_path, capsys):
    out = tmp_path / "out"
    write_finished_sweep(SWEEP, out)
    (out / "alias").symlink_to(out / "lr1e-3-seed0", target_is_directory=True)
    (out / "lr9-seed9").symlink_to("lr3e-3-seed1", target_is_directory=True)  # relative
    assert sweep_main(SWEEP, ["--out", str(out)]) == 0
    rows = _table(out)
    assert sorted(r["run_id"] for r in rows) == [run_id for run_id, _ in sorted(SWEEP.points())]
    assert "could not read" not in capsys.readouterr().out
