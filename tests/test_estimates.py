"""Estimates before work starts (issue 61, items 4, 7, 8): a run's memory and output checked
before anything is written, and the dry run's time model (a fixed time a program plus a step
time, measured where it can be, assumed and named where not), checked against the committed
paper-model runs."""

from __future__ import annotations

import csv
import json
import os

import pytest

from spamlang import throughput
from spamlang.cli import main
from spamlang.perf import PEAK_VARS, cpu_model, flops_per_token, peak_flops
from spamlang.sweep import Sweep, dry_run, fit
from spamlang.train import TrainConfig

PAPER = throughput.RESULTS / "paper_model_cpu" / "results.csv"
BASE = TrainConfig(preset="tiny", vocab_size=64, seq_len=2, batch_size=4, steps=10)


@pytest.fixture
def no_peak(monkeypatch, tmp_path):
    """No peak given and no committed runs (the suite sets the peak variables)."""
    for var in PEAK_VARS.values():
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(throughput, "RESULTS", tmp_path / "no-results")


def _time_line(sweep: Sweep, out, capsys, **kw) -> str:
    dry_run.dry_run(sweep, out, (0, 1), 0, **kw)
    return next(x for x in capsys.readouterr().out.splitlines() if x.startswith("time:"))


def _finish(out, run_id: str, config: TrainConfig, **result) -> None:
    (out / run_id).mkdir(parents=True)
    (out / run_id / "config.json").write_text(json.dumps(config.to_json()))
    (out / run_id / "result.json").write_text(json.dumps(result))


# ----- item 8: what is known first, compile time counted ------------------------------------
def test_each_committed_paper_model_run_estimated_from_the_others_is_within_1_5x(no_peak):
    """The acceptance check: leave one committed run out, time it from the other ten."""
    with open(PAPER, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 11
    for k, row in enumerate(rows):
        others = throughput.timings(rows[:k] + rows[k + 1 :], "results/paper_model_cpu")
        config = TrainConfig(
            preset=row["preset"],
            model={"n_layers": int(row["n_layers"])},
            vocab_size=int(row["vocab_size"]),
            batch_size=int(row["batch_size"]),
            seq_len=int(row["seq_len"]),
            tie_embeddings=row["tie_embeddings"] == "True",
            steps=int(row["steps"]),
        )
        flops = flops_per_token(config.model_config(), config.seq_len)
        timer = dry_run.Estimator(PAPER.parent / "none", "cpu", 1, committed=others, table=())
        way, seconds, _, _ = timer.seconds(dry_run.Program(config, 1, config.steps, flops))
        measured = float(row["wall_seconds"])
        assert way in ("committed", "table"), way
        assert 1 / 1.5 <= seconds / measured <= 1.5, (row["run_id"], seconds, measured)


def test_a_new_run_is_timed_with_the_fixed_time_of_a_finished_one_of_its_shape(
    tmp_path, capsys, no_peak
):
    # A finished run: 10 steps of 8 tokens in 14 s of training, 31 s in all (its compile).
    out = tmp_path / "s"
    sweep = Sweep("s", BASE, {"lr": [1e-3, 1e-2]})
    _finish(out, "lr1e-3", BASE.replace(lr=1e-3), steps=10, wall_seconds=31.0, tokens_per_s=80 / 14)
    line = _time_line(sweep, out, capsys, vmap=False)
    assert line.startswith("time: about 31 s for 1 run(s) at the step and fixed times of finished")
    assert "same shape" in line and "assumed" not in line


def test_the_dry_run_reads_the_committed_runs_of_the_same_shape_on_a_cpu(
    tmp_path, capsys, monkeypatch
):
    for var in PEAK_VARS.values():
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(dry_run, "_platform", lambda: ("cpu", 1))
    # As on the machine they were measured on (runs timed here would be preferred to them).
    monkeypatch.setattr("spamlang.perf.cpu_model", lambda: throughput.COMMITTED_MACHINE[0])
    monkeypatch.setattr(os, "cpu_count", lambda: throughput.COMMITTED_MACHINE[1])
    with open(PAPER, newline="") as f:
        row = next(csv.DictReader(f))
    config = TrainConfig(
        preset="smollm2-106m", model={"n_layers": 30}, vocab_size=32768, batch_size=64,
        seq_len=2, tie_embeddings=True, steps=2500, log_every=16, eval_every=256,
    )  # fmt: skip
    line = _time_line(Sweep("p", config, {"b2": [0.95, 0.999]}), tmp_path / "p", capsys)
    # Every committed folder with runs of that shape is read (paper_model_bracket's too).
    sources = line.split("committed runs of the same shape (")[1].split(";")[0].split()
    assert "results/paper_model_cpu" in sources, line
    hours = float(line.split("about ")[1].split(" h")[0])
    # Two runs of the row's shape, one by one (a step of 128 tokens is no CPU vmap).
    assert 1 / 1.5 <= hours * 3600 / (2 * float(row["wall_seconds"])) <= 1.5, line


def test_a_finished_run_timed_on_another_cpu_is_named_with_a_warning(tmp_path, capsys, no_peak):
    out = tmp_path / "s"
    sweep = Sweep("s", BASE, {"lr": [1e-3, 1e-2]})
    timed = dict(steps=10, wall_seconds=31.0, tokens_per_s=80 / 14)
    _finish(out, "lr1e-3", BASE.replace(lr=1e-3), cpu="Another CPU", cores=64, **timed)
    line = _time_line(sweep, out, capsys, vmap=False)
    assert "measured on Another CPU, 64 cores; WARNING: this machine is" in line, line
    # A row of an older version names no CPU: timed here, as before, without a note.
    (out / "lr1e-3" / "result.json").write_text(json.dumps(timed))
    assert "measured on" not in _time_line(sweep, out, capsys, vmap=False)


def test_on_an_accelerator_a_run_timed_on_this_hosts_cpu_is_warned_of(
    tmp_path, capsys, monkeypatch, no_peak
):
    out = tmp_path / "s"
    sweep = Sweep("s", BASE, {"lr": [1e-3, 1e-2]})
    here = dict(cpu=cpu_model(), cores=os.cpu_count())
    timed = dict(steps=10, wall_seconds=31.0, tokens_per_s=80 / 14, **here)
    _finish(out, "lr1e-3", BASE.replace(lr=1e-3), **timed)
    assert "WARNING" not in _time_line(sweep, out, capsys, vmap=False)
    # JAX on an accelerator: results name no CPU (`timing_machine`), nor does the dry run.
    monkeypatch.setattr("spamlang.perf.timing_machine", lambda: {"cpu": None, "cores": None})
    line = _time_line(sweep, out, capsys, vmap=False)
    assert "WARNING: this machine is an accelerator host, not" in line, line


def test_committed_rows_are_on_the_committed_machine_unless_they_name_their_own():
    row = {"preset": "tiny", "d_model": 32, "n_layers": 2, "vocab_size": 64, "batch_size": 4}
    row.update(seq_len=2, tie_embeddings="True", steps=10, wall_seconds=5.0, tokens_per_s=80)
    older, named = dict(row, run_id="a"), dict(row, run_id="b", cpu="Other", cores="8")
    found = throughput.timings([older, named], "results/x", throughput.COMMITTED_MACHINE)
    assert [t.machine for t in found] == [throughput.COMMITTED_MACHINE, ("Other", 8)]


def test_committed_runs_timed_on_this_machine_are_preferred_to_another_cpus(tmp_path, no_peak):
    config, model = BASE, BASE.model_config()
    row = {**config.to_json(), "n_layers": model.n_layers, "d_model": model.d_model}
    here = dict(row, wall_seconds=5.0, tokens_per_s=80, cpu=cpu_model(), cores=os.cpu_count())
    slower = dict(row, wall_seconds=50.0, tokens_per_s=8, cpu="Other", cores=2)
    program = dry_run.Program(config, 1, 10, flops_per_token(config.model_config(), 2))
    for rows, seconds in (([here, slower], 5.0), ([slower], 50.0)):
        committed = throughput.timings(rows, "results/x")
        timer = dry_run.Estimator(tmp_path / "none", "cpu", 1, committed=committed, table=())
        way, estimate, _, machines = timer.seconds(program)
        assert (way, estimate) == ("committed", pytest.approx(seconds))
        assert any("WARNING" in m for m in machines) == (seconds == 50.0), machines


def test_lr_bracketing_is_estimated_as_a_range(tmp_path, capsys, no_peak):
    out = tmp_path / "s"
    sweep = Sweep("s", BASE, {"lr": [1e-3, 1e-2], "seed": [0, 1]}, bracket_lr=2)
    _finish(out, "lr1e-3-seed0", BASE.replace(lr=1e-3), steps=10, wall_seconds=5.0, tokens_per_s=80)
    line = _time_line(sweep, out, capsys, vmap=False)
    assert "LR bracketing (up to 2 LRs per side" in line
    # One cell: up to 2 LRs x 2 seeds, each 5 s (4 s fixed + 10 steps of 0.1 s).
    assert "0 to about 20 s more, for 0 to 4 run(s) in 1 cell(s)" in line
    line = _time_line(sweep, out, capsys, vmap=False, bracket_lr=1)  # --bracket-lr 1
    assert "0 to about 10 s more, for 0 to 2 run(s)" in line


# ----- item 7: accelerators, a floor a step and compile time, named assumptions -------------
def test_an_accelerator_estimate_counts_a_floor_a_step_and_compiles_naming_them(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(dry_run, "_platform", lambda: ("gpu", 1))
    monkeypatch.setenv("SPAMLANG_PEAK_FLOPS", "989T")  # a datasheet's notation
    assert peak_flops("float32") == 989e12
    many = Sweep("a", BASE.replace(steps=80_000), {"lr": [1e-3, 1e-2]})
    line = _time_line(many, tmp_path / "a", capsys, vmap=True)
    # 80,000 steps of 10 ms and a compile of 60 s, where the FLOPs alone take well under 1 s.
    assert line.startswith("time: about 14 min for 2 run(s)"), line
    assert "SPAMLANG_STEP_FLOOR" in line and "SPAMLANG_COMPILE_SECONDS" in line
    assert "MFU of 30% (default; SPAMLANG_MFU sets it) of 9.89e+14 FLOP/s" in line
    monkeypatch.setenv("SPAMLANG_STEP_FLOOR", "0.002")
    monkeypatch.setenv("SPAMLANG_COMPILE_SECONDS", "1K")
    line = _time_line(many, tmp_path / "a", capsys, vmap=True)
    assert line.startswith("time: about 19 min for 2 run(s)"), line  # 160 s + 1,000 s
    assert "a floor of 0.002 s a step (SPAMLANG_STEP_FLOOR)" in line


def test_a_bfloat16_sweep_takes_spamlang_peak_flops_and_says_so(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(dry_run, "_platform", lambda: ("gpu", 1))
    monkeypatch.delenv("SPAMLANG_PEAK_FLOPS_BF16", raising=False)
    monkeypatch.setenv("SPAMLANG_PEAK_FLOPS", "989e12")
    bf16 = Sweep("b", BASE.replace(dtype="bfloat16"), {"lr": [1e-3]})
    line = _time_line(bf16, tmp_path / "b", capsys)
    assert "bfloat16 from SPAMLANG_PEAK_FLOPS (no SPAMLANG_PEAK_FLOPS_BF16 given)" in line
    assert "no estimate" not in line


# ----- item 4: memory and output, before any directory --------------------------------------
HUGE = ["train", "--preset", "smollm2-106m", "--batch-size", "4096", "--micro-batch", "4096"]


def test_a_step_too_big_for_memory_is_refused_in_one_line_leaving_nothing(
    tmp_path, capsys, monkeypatch
):
    from spamlang.train import run as train_run

    monkeypatch.setenv(fit.ENV, "64GiB")

    def trained(*a, **k):
        raise AssertionError("a run that cannot fit started training")

    monkeypatch.setattr(train_run, "run_group", trained)
    out = tmp_path / "run"
    assert main([*HUGE, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "GiB of memory a step" in err[0] and "--micro-batch" in err[0], err
    assert "64.0 GiB available (SPAMLANG_DEVICE_MEMORY)" in err[0]
    assert not out.exists()  # so the corrected command starts afresh


def test_memory_grows_with_the_micro_batch_and_the_loss_chunk():
    config = TrainConfig(preset="small", vocab_size=4096, seq_len=64, batch_size=64)
    half = fit.memory_needs(config.replace(micro_batch=32))
    whole = fit.memory_needs(config.replace(micro_batch=64))
    assert whole.activations == 2 * half.activations and whole.state == half.state
    assert fit.memory_needs(config.replace(loss_chunk=0)).logits > whole.logits


def test_a_large_output_is_warned_of_before_training(tmp_path, capsys, monkeypatch):
    from spamlang.train import run as train_run

    config = TrainConfig(vocab_size=131072, track_symbols=131072)
    warning = fit.check_run(config)
    per_step = fit.output_bytes(config)["track.jsonl"] / config.steps
    assert 7.0e6 < per_step < 7.8e6  # measured: 7.4 MB of JSON a step
    assert warning.startswith("warning: this run will write about 3.") and "track.jsonl" in warning
    assert fit.check_run(BASE) is None  # a small run says nothing
    said = []
    monkeypatch.setattr(train_run, "run_group", lambda *a, **k: said.append(1) or [{}])
    out = tmp_path / "track"
    args = ["train", "--vocab-size", "128K", "--track-symbols", "131072", "--out", str(out)]
    assert main(args) == 0 and said
    assert "warning: this run will write about" in capsys.readouterr().err
    # a sweep's dry run says so too, for all its runs
    sweep = Sweep("t", config, {"lr": [1e-3, 1e-2]})
    dry_run.dry_run(sweep, tmp_path / "sweep", (0, 1), 0)
    said = [x for x in capsys.readouterr().out.splitlines() if x.startswith("warning:")]
    assert said and said[-1].startswith("warning: these runs will write about 7.")
