"""Damaged tables (#61 items 5, 10, 11): a results.csv that is binary, cut mid-row or holds text
where a number belongs is refused with one line naming it, and a sweep rebuilds it from the run
directories; a result.json's text loss never reaches the table; a garbled symbols.csv.gz is
named; the end-of-sweep summary tells 3e-4 from 8e-4; a parent of a sweep folder and a stray
run is refused, naming both."""

from __future__ import annotations

import csv
import json
import shutil

import pytest
from _fake_sweep import write_finished_sweep  # tests/_fake_sweep.py

from spamlang.cli import main
from spamlang.cli.sweep_cmd import main as sweep_main
from spamlang.plots.layout import finished_runs
from spamlang.sweep import Sweep, write_results
from spamlang.sweep.results_csv import Report
from spamlang.train.config import TrainConfig

pd = pytest.importorskip("pandas")
import spamlang.results as results  # noqa: E402  (after the skip: it needs pandas)

TINY = TrainConfig(preset="tiny", vocab_size=16, seq_len=16, batch_size=8, tokens=2560)
SWEEP = Sweep("dmg", TINY, {"lr": [1e-3, 3e-3, 1e-2], "seed": [0, 1]})


@pytest.fixture
def sweep_dir(tmp_path):
    """A finished sweep of 6 runs with the results.csv a sweep writes."""
    out = tmp_path / "out"
    write_finished_sweep(SWEEP, out)
    write_results(out, Report())
    return out


def _one_line_status_2(argv, capsys, *named) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert all(str(n) in err for n in named), err
    return err


def _damages(table: bytes) -> dict[str, bytes]:
    """results.csv damaged in each way the issue met, and two more."""
    header, first, *rest = table.split(b"\n")
    cells = first.split(b",")
    cells[header.split(b",").index(b"final_eval_loss")] = b"low"  # a hand-edited result.json's
    return {
        "binary": bytes(range(256)) * 4,
        "cut mid-row": table[: len(header) + len(first) + 12],  # in the second row's cells
        "cut in the last cell": table[:-3],  # the last row's last value, shortened
        "a short row": b"\n".join([header, first.rsplit(b",", 3)[0], *rest]),
        "text loss": b"\n".join([header, b",".join(cells), *rest]),
        "NUL bytes": table[:40] + b"\0\0\0" + table[40:],
    }


@pytest.mark.parametrize(
    "case",
    ["binary", "cut mid-row", "cut in the last cell", "a short row", "text loss", "NUL bytes"],
)
def test_a_damaged_results_csv_is_refused_by_every_reader_naming_it(sweep_dir, case, capsys):
    path = sweep_dir / "results.csv"
    path.write_bytes(_damages(path.read_bytes())[case])
    figure = sweep_dir.parent / "heatmap.png"
    err = _one_line_status_2(["plot", "heatmap", str(sweep_dir), "-o", str(figure)], capsys, path)
    assert "damaged" in err and "spamlang sweep" in err and not figure.exists()
    _one_line_status_2(["law", "compare", str(sweep_dir)], capsys, path)
    for read in (results.load, results.load_metrics, finished_runs):
        with pytest.raises(ValueError, match="damaged"):
            read(sweep_dir)


def test_a_sweep_rebuilds_a_damaged_results_csv_from_its_runs(sweep_dir, capsys):
    path = sweep_dir / "results.csv"
    whole = path.read_bytes()
    path.write_bytes(_damages(whole)["cut mid-row"])
    assert sweep_main(SWEEP, ["--out", str(sweep_dir), "--quiet"]) == 0
    assert path.read_bytes() == whole
    assert len(results.load(sweep_dir)) == 6


def test_a_text_loss_in_result_json_is_left_out_of_the_table_with_a_warning(sweep_dir, capsys):
    run = sweep_dir / "lr3e-3-seed1"
    result = json.loads((run / "result.json").read_text())
    (run / "result.json").write_text(json.dumps({**result, "final_eval_loss": "low"}))
    write_results(sweep_dir)  # a gather outside a sweep says what it left out at once
    err = capsys.readouterr().err
    assert f"warning: {run}: finished but left out of results.csv" in err
    assert "final_eval_loss must be a number, got 'low'" in err
    with open(sweep_dir / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 5 and "low" not in {r["final_eval_loss"] for r in rows}
    with pytest.raises(ValueError, match="final_eval_loss must be a number, got 'low'"):
        results.load(run)  # the run directory alone


def test_the_sweep_summary_tells_small_losses_apart():
    """Learned cells end at 3e-4 and 8e-4 nats: three decimals wrote both 0.000."""
    from spamlang.sweep.best_lr import cell_lines

    rows = [
        {"run_id": f"v{v}-lr{lr}-s{s}", "vocab_size": v, "lr": lr, "seed": s, "diverged": False}
        | {"final_eval_loss": loss * (1 + 0.1 * s) if lr == 1e-2 else 10.0}
        for v, loss in ((64, 3e-4), (256, 8e-4), (1024, 7.0))
        for lr in (3e-3, 1e-2, 3e-2)
        for s in (0, 1)
    ]
    lines = cell_lines(rows)
    assert "final_eval_loss 0.000315 (0.000300 .. 0.000330, 2 seeds)" in lines[0]
    assert "final_eval_loss 0.000840 (0.000800 .. 0.000880, 2 seeds)" in lines[1]
    assert "final_eval_loss 7.35 (7.00 .. 7.70, 2 seeds)" in lines[2]


def test_a_parent_of_a_sweep_folder_and_a_stray_run_is_refused_naming_both(sweep_dir, capsys):
    parent = sweep_dir.parent
    shutil.copytree(sweep_dir / "lr1e-2-seed0", parent / "stray")
    figure = parent / "heatmap.png"
    err = _one_line_status_2(["plot", "heatmap", str(parent), "-o", str(figure)], capsys)
    assert "sweep folders (out)" in err and "runs outside them (stray)" in err
    assert not figure.exists()
    for read in (results.load, finished_runs):
        with pytest.raises(ValueError, match="sweep folders"):
            read(parent)
    (parent / "stray").rename(sweep_dir / "stray")  # moved into the sweep: read as one of it
    assert len(finished_runs(sweep_dir)) == 7  # the table's 6, and the folder it does not list
    err = _one_line_status_2(["plot", "heatmap", str(parent), "-o", str(figure)], capsys, "out")
    assert "not runs" in err  # sweep folders alone: give one of them
