"""What a sweep says in a log (stderr not a terminal: SLURM, nohup) and in a dry run: progress
lines between finished runs, the step a run resumes from, partial runs' steps, a time
estimate, and result lines without a floor of 0. Nothing trains: the trainer is replaced by
one that writes a run's files."""

from __future__ import annotations

import json
import time
from pathlib import Path

from spamlang import rundir
from spamlang.cli.sweep_cmd import main as sweep_main
from spamlang.sweep import Sweep
from spamlang.sweep.runner import summary_line
from spamlang.sweep.sweep_file import check_sweep_file
from spamlang.train.config import TrainConfig

TINY = TrainConfig(
    preset="tiny",
    vocab_size=16,
    seq_len=16,
    batch_size=8,
    tokens=20 * 8 * 16,
    log_every=5,
    eval_sequences=16,
    checkpoint_every=10,
)
SWEEP = Sweep("logs", TINY, {"lr": [3e-3, 1e-2]})
RESULT = {
    "final_eval_loss": 0.3041,
    "loss_above_floor": 0.3041,
    "optimal_loss": 0.0,
    "repetition_accuracy": 0.5,
    "diverged": False,
    "tokens_per_s": 256.0,
}


def _fake_trainer(monkeypatch, during=lambda out_dir: None):
    """Replace the trainer: write config.json, a train row at step 5, call `during`, finish."""
    from spamlang.train import run as train_run

    def fake(config, out_dir, **kw):
        out_dir = Path(out_dir)
        rundir.prepare(out_dir, config)
        with open(out_dir / "metrics.jsonl", "a") as f:
            f.write(json.dumps({"kind": "train", "step": 5, "loss": 2.3141}) + "\n")
        during(out_dir)
        rundir.write_result(out_dir, RESULT)
        return RESULT

    monkeypatch.setattr(train_run, "run_training", fake)


def test_a_log_gets_progress_lines_between_finished_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SPAMLANG_LOG_SECONDS", "0.05")
    out, err = [], []

    def wait_for_line(out_dir):  # until the sweep has said where this run is (or 60 s)
        deadline = time.monotonic() + 60
        while f"{out_dir.name}: step 5/20" not in "".join(err) and time.monotonic() < deadline:
            captured = capsys.readouterr()
            out.append(captured.out)
            err.append(captured.err)
            time.sleep(0.01)

    _fake_trainer(monkeypatch, wait_for_line)
    assert sweep_main(SWEEP, ["--out", str(tmp_path / "o"), "--no-vmap"]) == 0
    captured = capsys.readouterr()
    out, err = "".join(out) + captured.out, "".join(err) + captured.err
    assert "[1/2] lr3e-3: step 5/20, loss 2.314\n" in err
    assert "[2/2] lr1e-2: step 5/20, loss 2.314\n" in err
    # A floor of 0 is not repeated as "above floor".
    assert "[1/2] lr3e-3: loss 0.3041, repetition acc 0.500\n" in out
    # --quiet: no progress lines.
    _fake_trainer(monkeypatch, lambda out_dir: time.sleep(0.2))
    assert sweep_main(SWEEP, ["--out", str(tmp_path / "q"), "--no-vmap", "--quiet"]) == 0
    assert "step 5/20" not in capsys.readouterr().err


def test_a_bad_log_interval_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SPAMLANG_LOG_SECONDS", "often")
    _fake_trainer(monkeypatch)
    assert sweep_main(SWEEP, ["--out", str(tmp_path / "o"), "--no-vmap"]) == 2
    assert capsys.readouterr().err == (
        "sweep logs: error: SPAMLANG_LOG_SECONDS must be a number of seconds > 0, got 'often'\n"
    )


def _partial(out: Path, run_id: str, config: TrainConfig, step: int) -> None:
    """A run interrupted after its checkpoint at `step` (orbax names its folders by step)."""
    rundir.prepare(out / run_id, config)
    (out / run_id / "checkpoints" / str(step)).mkdir(parents=True)
    (out / run_id / "checkpoints" / f"{step + 10}.orbax-checkpoint-tmp-1").mkdir()  # unfinished


def test_a_resumed_run_says_its_step_and_the_dry_run_shows_it(tmp_path, capsys, monkeypatch):
    out = tmp_path / "o"
    out.mkdir()
    check_sweep_file(SWEEP, out)
    points = dict(SWEEP.points())
    _partial(out, "lr3e-3", points["lr3e-3"], 10)
    assert sweep_main(SWEEP, ["--out", str(out), "--dry-run"]) == 0
    listed = capsys.readouterr().out.splitlines()
    run_id, rest = listed[1].split(None, 1)
    # (the shipped law's forecast, flagged as an extrapolation, may follow)
    assert run_id == "lr3e-3"
    assert rest.startswith("partial (step 10/20)      0        20          2,560        10.0")
    assert listed[2].split()[:2] == ["lr1e-2", "new"]
    _fake_trainer(monkeypatch)
    assert sweep_main(SWEEP, ["--out", str(out), "--no-vmap"]) == 0
    assert "[1/2] lr3e-3: resuming from step 10\n" in capsys.readouterr().err


def test_dry_run_estimates_the_time_left_saying_from_what(tmp_path, capsys, monkeypatch):
    out = tmp_path / "o"
    out.mkdir()
    check_sweep_file(SWEEP, out)
    points = dict(SWEEP.points())
    # Nothing finished, a peak given: the FLOPs at an assumed MFU of it, labelled as assumed.
    monkeypatch.setenv("SPAMLANG_PEAK_FLOPS", "1e3")
    assert sweep_main(SWEEP, ["--out", str(out), "--dry-run"]) == 0
    time_line = capsys.readouterr().out.splitlines()[-1]
    assert (
        time_line.startswith("time: about ")
        and (
            "days for 2 run(s) with no finished run of their shape, assumed: their FLOPs at an MFU "
            "of 30% (default; SPAMLANG_MFU sets it) of 1e+03 FLOP/s float32 from SPAMLANG_PEAK_FLOPS "
            "x 1 device(s); assumed: "
        )
        in time_line
    )
    # One run finished at 256 tokens/s; the other is at step 10 of 20: 10 steps of 128 tokens,
    # 5 s, after the assumed compile (the finished run's result has no wall time).
    rundir.prepare(out / "lr1e-2", points["lr1e-2"])
    rundir.write_result(out / "lr1e-2", RESULT)
    _partial(out, "lr3e-3", points["lr3e-3"], 10)
    assert sweep_main(SWEEP, ["--out", str(out), "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"time: about 25 s for 1 run(s) at the step and fixed times of finished runs of the same "
        f"shape ({out}); assumed: 20 s a program to compile, evaluate and checkpoint (default; "
        "SPAMLANG_COMPILE_SECONDS sets it)"
    )


def test_summary_line_shows_the_floor_only_where_there_is_one():
    for floor, shown in [
        (0.0, "V16: loss 0.3041, repetition"),
        (None, "V16: loss 0.3041, repetition"),
        (0.5, "V16: loss 0.8041 (above floor 0.3041), repetition"),
    ]:
        result = {**RESULT, "optimal_loss": floor, "final_eval_loss": 0.3041 + (floor or 0.0)}
        assert summary_line("V16", result).startswith(shown), floor


def test_the_bar_shows_a_groups_steps_and_eta_while_it_trains(tmp_path, monkeypatch):
    """The sweep's bar counts runs, so a vmapped group sat at `0/8 [00:34<?]` for its whole
    length; beside it now: the group's step of its total, an ETA and the losses."""
    from spamlang.sweep import logs

    class Bar:
        disable, shown = False, []

        def set_postfix_str(self, text):
            self.shown.append(text)

    monkeypatch.setattr(logs, "_BAR_SECONDS", 0.02)
    dirs = [tmp_path / "a", tmp_path / "b"]
    for d in dirs:
        d.mkdir()

    def row(step):
        for d in dirs:
            with open(d / "metrics.jsonl", "a") as f:
                f.write(json.dumps({"kind": "train", "step": step, "loss": 2.0}) + "\n")

    bar = Bar()
    with logs.watch(bar, "a +1 vmapped", dirs, steps=100, first=1, total=8, quiet=False):
        row(10)
        deadline = time.monotonic() + 30
        while not any("step 10/100" in s for s in bar.shown) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        row(20)
        while not any("step 20/100" in s for s in bar.shown) and time.monotonic() < deadline:
            time.sleep(0.01)
    last = next(s for s in reversed(bar.shown) if "step 20/100" in s)
    assert last.startswith("a +1 vmapped: step 20/100, ETA 0:0") and "loss 2.000" in last


def test_the_eta_is_tqdms_clock_without_a_leading_zero():
    from spamlang.sweep.logs import _eta

    times = [_eta((0.0, 0), t, 1, 2) for t in (0.0, 5.0, 130.0, 600.0, 3725.0)]
    assert times == ["", ", ETA 0:05", ", ETA 2:10", ", ETA 10:00", ", ETA 1:02:05"]
