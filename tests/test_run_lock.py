"""One owner per run directory: a held directory is refused (library, CLI), skipped (sweep),
and free again once its holder dies. The holder is a child process. Nothing here trains: a
stand-in loop checks the lock instead (training is tested in test_train_run and test_sweep)."""

from __future__ import annotations

import contextlib
import csv
import errno
import fcntl
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from spamlang import rundir
from spamlang.cli import main
from spamlang.errors import UserError
from spamlang.rundir.lock import RunDirBusy, Taken, hold_run_dirs, locked
from spamlang.sweep import Sweep, run_sweep
from spamlang.train import TrainConfig, run_group, run_training

REPO = Path(__file__).resolve().parents[1]
TINY = TrainConfig(
    preset="tiny",
    vocab_size=16,
    seq_len=16,
    batch_size=8,
    tokens=20 * 8 * 16,
    log_every=5,
    eval_sequences=16,
    checkpoint_every=10,
    model={"n_layers": 1},  # one layer: nothing here depends on depth, and it compiles faster
)
HOLD = """
import sys, time
from spamlang.rundir.lock import hold_run_dirs
with hold_run_dirs(sys.argv[1:]):
    print("held", flush=True)
    time.sleep(300)
"""
HOLDER = r"pid {pid} on host \S+ since \d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d"


@contextlib.contextmanager
def held_by_child(*run_dirs: Path):
    """A child process holding the locks of `run_dirs` until the block ends (or it is killed)."""
    for d in run_dirs:
        d.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, *map(str, run_dirs)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline() == "held\n", "the child could not take the locks"
        yield proc
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


@pytest.fixture(autouse=True)
def no_peak_measurement(monkeypatch):
    monkeypatch.setenv("SPAMLANG_PEAK_FLOPS", "1e11")


def test_a_held_run_dir_is_refused_naming_its_holder_and_freed_when_it_dies(tmp_path):
    out, free = tmp_path / "run", tmp_path / "free"
    with held_by_child(out) as proc:
        message = (
            rf"^{re.escape(str(out))} is in use by {HOLDER.format(pid=proc.pid)} "
            r"\(another spamlang train or sweep\); wait for it or use another --out$"
        )
        with pytest.raises(RunDirBusy, match=message) as caught:
            run_training(TINY, out, quiet=True)
        assert isinstance(caught.value, UserError) and caught.value.holder.pid == proc.pid
        # A group holds all its members or none: the free member's lock is let go again.
        with pytest.raises(RunDirBusy, match=message):
            run_group([TINY, TINY.replace(lr=1e-2)], [free, out], quiet=True)
        with hold_run_dirs([free]):
            pass
        assert os.listdir(out) == [".lock"] and not (free / "config.json").exists()
        proc.kill()
        proc.wait()
    # SIGKILL leaves the lock file but not the lock: the next owner takes it over.
    assert (out / ".lock").is_file()
    with hold_run_dirs([out]):
        assert json.loads((out / ".lock").read_text())["pid"] == os.getpid()
    assert not (out / ".lock").exists()  # a clean release deletes it


def test_two_locks_in_one_process_exclude_each_other_and_name_the_holder(tmp_path):
    path = tmp_path / "x.lock"
    with locked(path, wait=False):
        with pytest.raises(Taken, match=f"locked by pid {os.getpid()} on host"):
            with locked(path, wait=False):
                pass
    with locked(path, wait=False):  # free again
        pass
    with pytest.raises(FileNotFoundError):  # a missing directory is not created
        with locked(tmp_path / "missing" / "x.lock"):
            pass


def test_a_filesystem_without_locks_is_said_once_and_the_work_goes_on(
    tmp_path, capsys, monkeypatch
):
    def refuse(fd, operation):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(fcntl, "flock", refuse)
    path, ran = tmp_path / "x.lock", []
    for _ in range(2):
        with locked(path):
            ran.append(True)
    assert ran == [True, True] and capsys.readouterr().err == (
        f"warning: cannot lock {path} (No locks available); this filesystem has no file "
        "locks, so another process using it at the same time goes undetected\n"
    )


def test_cli_train_on_a_held_dir_exits_2_with_one_line(tmp_path, capsys):
    out = tmp_path / "run"
    with held_by_child(out) as proc:
        status = main(
            [
                "train",
                "--preset",
                "tiny",
                "--vocab-size",
                "16",
                "--seq-len",
                "16",
                "--batch-size",
                "8",
                "--tokens",
                "2560",
                "--out",
                str(out),
            ]
        )
    captured = capsys.readouterr()
    assert status == 2 and captured.out == ""
    assert re.fullmatch(
        rf"spamlang train: error: {re.escape(str(out))} is in use by "
        rf"{HOLDER.format(pid=proc.pid)} \(another spamlang train or sweep\); "
        r"wait for it or use another --out\n",
        captured.err,
    ), captured.err
    assert os.listdir(out) == [".lock"]


def lock_checking_loop(configs, run_dirs, **kwargs):
    """Stands in for the training loop (whose training the other tests cover): checks that
    each run's directory is locked while it trains, and writes its result."""
    results = []
    for run_dir in run_dirs:
        with pytest.raises(Taken, match=f"locked by pid {os.getpid()} on host"):
            with locked(run_dir / ".lock", wait=False):
                pass
        results.append({"final_eval_loss": 1.0, "diverged": False})
        rundir.write_result(run_dir, results[-1])
    return results


def test_a_sweep_skips_the_runs_another_process_holds(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("spamlang.train.run.train_members", lock_checking_loop)
    sweep = Sweep("held", TINY, {"lr": [3e-3, 1e-2]})
    out = tmp_path / "sweep"
    with held_by_child(out / "lr3e-3") as proc:
        holder = HOLDER.format(pid=proc.pid)
        # Vmapped, the group needs both members: all of it is skipped, nothing trains.
        assert run_sweep(sweep, out, vmap=True) == []
        captured = capsys.readouterr()
        assert re.fullmatch(
            rf"skip lr3e-3 \+1 vmapped: lr3e-3 in use by {holder}\n", captured.err
        ), captured.err
        assert "0 finished run(s)" in captured.out
        assert "; 2 skipped, in use by another process; table:" in captured.out
        # One by one: the free run trains, the held one is skipped.
        rows = run_sweep(sweep, out, vmap=False)
        captured = capsys.readouterr()
        assert [r["run_id"] for r in rows] == ["lr1e-2"]
        assert re.fullmatch(rf"skip lr3e-3: in use by {holder}\n", captured.err), captured.err
        assert "1 finished run(s)" in captured.out and "; 1 skipped," in captured.out
        assert os.listdir(out / "lr3e-3") == [".lock"]
        with open(out / "results.csv", newline="") as f:
            assert [r["run_id"] for r in csv.DictReader(f)] == ["lr1e-2"]
    with hold_run_dirs([out / "lr3e-3", out / "lr1e-2"]):  # no lock outlives its holder
        pass
