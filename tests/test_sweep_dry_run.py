"""spamlang.sweep.dry_run: time from similar groups' finished runs, from the CPU-measured
throughput table or at an assumed MFU on accelerators; bracketing's partial runs."""

from __future__ import annotations

import json
import os

import pytest
from _fake_sweep import write_finished_sweep

from spamlang import perf, throughput
from spamlang.cli.sweep_cmd import main as sweep_main
from spamlang.perf import PEAK_VARS, flops_per_token
from spamlang.sweep import Sweep, dry_run
from spamlang.train import TrainConfig

BASE = TrainConfig(preset="tiny", vocab_size=64, seq_len=2, batch_size=4, tokens=4 * 2 * 10)


def test_dry_run_times_new_groups_from_similar_ones_and_lists_bracketing_runs(tmp_path, capsys):
    out = tmp_path / "s"
    done = Sweep("dry", BASE, {"lr": [1e-3, 1e-2], "tie_embeddings": [True]})
    write_finished_sweep(done, out)
    partial = out / "lr3e-2-tied"  # an LR bracketing added, interrupted at step 5
    (partial / "checkpoints" / "5").mkdir(parents=True)
    (partial / "config.json").write_text(json.dumps(BASE.replace(lr=3e-2).to_json()))
    grown = Sweep("dry", BASE, {"lr": [1e-3, 1e-2], "tie_embeddings": [True, False]})
    assert sweep_main(grown, ["--out", str(out), "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "lr3e-2-tied  partial (step 5/10)" in text
    time_line = next(line for line in text.splitlines() if line.startswith("time:"))
    assert "2 run(s)" in time_line and "nearest shape" in time_line


# A table of one row, for the estimates below: BASE's own shape at 1,000 tokens/s per member
# in a vmapped program of 2 (so 2,000 tokens/s of BASE's FLOPs in all).
ROW = dict(
    preset="tiny", d_model=16, n_layers=2, vocab_size=64, batch_size=4, seq_len=2,
    tie_embeddings=True, dtype="float32", members=2, tokens_per_s=1000.0,
    cpu="Table CPU 1", cores=2, source="written by the test",
)  # fmt: skip
NEW = Sweep("new", BASE, {"lr": [1e-3, 1e-2], "tie_embeddings": [True]})  # 1 group of 2


def _time_line(sweep: Sweep, out, capsys) -> str:
    assert sweep_main(sweep, ["--out", str(out), "--dry-run"]) == 0
    text = capsys.readouterr().out
    return next(line for line in text.splitlines() if line.startswith("time:"))


def _table(tmp_path, monkeypatch, **changes) -> throughput.Rate:
    """ROW (with `changes`) as the only row of the table the dry run reads."""
    per_token = flops_per_token(BASE.model_config(), BASE.seq_len)
    row = throughput.Rate(**{**ROW, "flops_per_token": per_token, **changes})
    throughput.write([row], tmp_path / "throughput.csv")
    monkeypatch.setattr(throughput, "TABLE", tmp_path / "throughput.csv")
    return row


@pytest.fixture
def on_cpu(monkeypatch, tmp_path):
    """A CPU with no peak given and no committed runs: the table's estimate (the suite sets
    the peak variables)."""
    for var in PEAK_VARS.values():
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(dry_run, "_platform", lambda: ("cpu", 1))
    monkeypatch.setattr(throughput, "RESULTS", tmp_path / "no-results")


# A program's fixed time (compile, evaluations) and a step's floor where nothing measured them.
COMPILE = dict(zip(("cpu", "accelerator"), dry_run.ASSUMPTIONS["compile"][1]))
FLOOR = dict(zip(("cpu", "accelerator"), dry_run.ASSUMPTIONS["floor"][1]))
SLOW = 0.01  # tokens/s of a slow table row: the steps, not the assumed compile, set the time


def test_a_group_with_no_finished_run_is_timed_from_the_cpu_measured_table(
    tmp_path, capsys, monkeypatch, on_cpu
):
    row = _table(tmp_path, monkeypatch, tokens_per_s=SLOW)
    monkeypatch.setattr(perf, "cpu_model", lambda: row.cpu)
    monkeypatch.setattr(os, "cpu_count", lambda: row.cores)
    line = _time_line(NEW, tmp_path / "s", capsys)
    # The vmapped pair does 2 runs' FLOPs at the row's FLOP/s: 2 x 80 tokens at 2 x SLOW
    # tokens/s, after the assumed compile.
    seconds = COMPILE["cpu"] + 2 * BASE.tokens / (row.members * row.tokens_per_s)
    assert f"about {dry_run.duration(seconds)} for 2 run(s)" in line
    assert "CPU-measured" in line and "measured on Table CPU 1, 2 cores" in line
    assert "WARNING" not in line and "MFU" not in line


def test_a_cpu_other_than_the_tables_is_warned_of_in_the_time_line(
    tmp_path, capsys, monkeypatch, on_cpu
):
    _table(tmp_path, monkeypatch)
    monkeypatch.setattr(perf, "cpu_model", lambda: "Other CPU 9")
    line = _time_line(NEW, tmp_path / "s", capsys)
    assert "CPU-measured" in line and "measured on Table CPU 1" in line
    assert "WARNING: this machine is Other CPU 9" in line


def test_a_row_of_another_shape_lends_its_flops_per_second(tmp_path, capsys, monkeypatch, on_cpu):
    # A row at twice BASE's FLOPs per token and the same tokens/s: twice BASE's FLOP/s.
    per_token = flops_per_token(BASE.model_config(), BASE.seq_len)
    _table(tmp_path, monkeypatch, vocab_size=128, flops_per_token=2 * per_token, tokens_per_s=SLOW)
    line = _time_line(NEW, tmp_path / "s", capsys)
    # Half the row's step time above the floor, a step.
    step = FLOOR["cpu"] + (BASE.tokens_per_step / SLOW - FLOOR["cpu"]) / 2
    seconds = COMPILE["cpu"] + BASE.steps * step
    assert f"about {dry_run.duration(seconds)} for 2 run(s)" in line and "V 128" in line


def test_an_accelerator_estimate_is_labelled_assumed_with_its_mfu(
    tmp_path, capsys, monkeypatch, on_cpu
):
    _table(tmp_path, monkeypatch)
    monkeypatch.setattr(dry_run, "_platform", lambda: ("gpu", 2))
    assert "no estimate for 2 run(s)" in _time_line(NEW, tmp_path / "s", capsys)
    monkeypatch.setenv("SPAMLANG_PEAK_FLOPS", "1e9")
    line = _time_line(NEW, tmp_path / "s", capsys)
    per_token = flops_per_token(BASE.model_config(), BASE.seq_len)
    step = 2 * BASE.tokens_per_step * per_token / (dry_run.ASSUMED_MFU * 1e9 * 2)
    seconds = COMPILE["accelerator"] + BASE.steps * (FLOOR["accelerator"] + step)
    assert f"about {dry_run.duration(seconds)} for 2 run(s)" in line
    assert "assumed" in line and f"MFU of {dry_run.ASSUMED_MFU:.0%}" in line
    assert "x 2 device(s)" in line and "CPU-measured" not in line


def test_the_shipped_table_holds_the_paper_model_measured_here():
    rows = throughput.table()
    assert {r.cpu for r in rows} and all(r.tokens_per_s > 0 for r in rows)
    paper = {(r.n_layers, r.batch_size, r.dtype) for r in rows if r.preset == "smollm2-106m"}
    assert {(30, 64, "float32"), (30, 64, "bfloat16"), (8, 64, "float32")} <= paper
