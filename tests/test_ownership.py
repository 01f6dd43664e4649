"""Issue 61, items 1-3: every writing verb refuses a folder that is not its own and never
deletes a file the package did not create; interrupting `export` exits 130 / 143, never 139;
the temporaries of a killed process are removed by later runs of `train` and `sweep`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from _fake_sweep import write_finished_sweep  # tests/_fake_sweep.py

from spamlang import rundir
from spamlang.cli import main
from spamlang.errors import UserError
from spamlang.rundir import atomic
from spamlang.rundir.lock import locked
from spamlang.sweep import Sweep, run_sweep
from spamlang.sweep.sweep_file import SWEEP_FOLDER
from spamlang.train.config import TrainConfig

# One layer: nothing here depends on depth, and it compiles faster.
TINY = TrainConfig(
    preset="tiny", vocab_size=16, seq_len=2, batch_size=4, tokens=32, model={"n_layers": 1}
)
TRAIN = ["train", "--vocab-size", "16", "--seq-len", "2", "--batch-size", "4", "--tokens", "16"]


def snapshot(folder: Path) -> dict:
    """Every file under `folder` (relative path -> bytes), folders as None."""
    return {
        str(p.relative_to(folder)): None if p.is_dir() else p.read_bytes()
        for p in sorted(folder.rglob("*"))
    }


def sweep_file(tmp_path: Path) -> Path:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"name": "s", "base": TINY.to_json(), "axes": {"lr": [1e-2]}}))
    return path


def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"  # enough for diagnose's checks, which come before any loading
    run.mkdir()
    (run / "config.json").write_text(json.dumps(TINY.to_json()))
    return run


@pytest.mark.parametrize(
    "verb, files",
    [
        ("sweep", {"results.csv": b"lr,loss\n1e-3,2.0\n", "heatmap.png": b"their figure"}),
        ("sweep --dry-run", {"results.csv": b"lr,loss\n"}),
        ("figures", {"heatmap.png": b"their figure"}),
        ("diagnose", {"diagnostics.json": b'{"mine": 1}\n', "rank_curve.png": b"theirs"}),
        ("train", {".lock": b"my own notes\n"}),
        ("train", {"wandb/notes.txt": b"mine", "tensorboard/x": b"mine", "a.tmp-1": b"mine"}),
    ],
)
def test_a_folder_of_the_users_own_is_refused_by_every_writer(tmp_path, capsys, verb, files):
    """`sweep --out`, `--figures`, `diagnose -o` overwrote a user's files with exit 0, and
    `train --out` took a folder of files with the package's names, truncating then deleting a
    user's `.lock`: each is now one line, exit 2, and nothing written anywhere."""
    mine = tmp_path / "mine"
    for name, data in files.items():
        (mine / name).parent.mkdir(parents=True, exist_ok=True)
        (mine / name).write_bytes(data)
    before = snapshot(mine)
    new = tmp_path / "new"
    argv = {
        "sweep": ["sweep", str(sweep_file(tmp_path)), "--out", str(mine)],
        "sweep --dry-run": ["sweep", str(sweep_file(tmp_path)), "--out", str(mine), "--dry-run"],
        "figures": ["sweep", str(sweep_file(tmp_path)), "--out", str(new), "--plots"]
        + ["--figures", str(mine)],
        "diagnose": ["diagnose", str(run_dir(tmp_path)), "-o", str(mine)],
        "train": [*TRAIN, "--out", str(mine)],
    }[verb]
    listing = sorted(os.listdir(tmp_path))
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{mine} is not empty and not a" in err[0], err
    assert snapshot(mine) == before and sorted(os.listdir(tmp_path)) == listing


def test_a_folder_holding_a_marker_spamlang_did_not_write_is_refused(tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "sweep.json").write_text('{"mine": true}\n')
    assert main(["sweep", str(sweep_file(tmp_path)), "--out", str(mine)]) == 2
    err = capsys.readouterr().err
    assert "not a sweep directory (its sweep.json is not one spamlang wrote)" in err
    assert os.listdir(mine) == ["sweep.json"]


def test_what_a_verb_takes_for_its_own(tmp_path):
    """New, empty, the leftovers of a killed writer of its own (an empty lock, a holder note,
    its files' temporaries, a write probe), or its mark: taken. A lock or a temporary of
    another name is not a leftover of this verb."""
    note = json.dumps({"pid": 1, "host": "h", "since": "2026-01-01 00:00:00"})
    leftovers = {
        ".lock": note,
        ".results.lock": "",
        ".sweep.json.tmp-h-123": "{",
        ".results.csv.tmp-h-7": "a,b",
        ".write-test-abcd1234": "",
    }
    folder = tmp_path / "sweep"
    folder.mkdir()
    assert rundir.claim_folder(tmp_path / "absent", SWEEP_FOLDER, "--out") == tmp_path / "absent"
    assert rundir.claim_folder(folder, SWEEP_FOLDER, "--out") == folder
    for name, text in leftovers.items():
        (folder / name).write_text(text)
    (folder / ".lock").unlink()  # a run directory's lock, not a sweep directory's
    assert rundir.claim_folder(folder, SWEEP_FOLDER, "--out") == folder
    (folder / ".run.lock.tmp-h-1").write_text("")  # the temporary of a file it never writes
    with pytest.raises(UserError, match=r"it holds \.run\.lock\.tmp-h-1\)"):
        rundir.claim_folder(folder, SWEEP_FOLDER, "--out")
    (folder / "sweep.json").write_text(json.dumps({"axes": {"lr": [0.01]}, "base": {}}))
    assert rundir.claim_folder(folder, SWEEP_FOLDER, "--out") == folder  # its mark

    run = tmp_path / "run"
    run.mkdir()
    (run / ".lock").write_text(note)  # a trainer killed before its config.json
    (run / ".config.json.tmp-h-9").write_text("{")
    assert rundir.claim_folder(run, rundir.RUN_FOLDER, "--out") == run


def test_a_lock_file_that_is_not_ours_is_neither_taken_nor_deleted(tmp_path):
    path = tmp_path / ".results.lock"
    path.write_text("the user's own file\n")
    with pytest.raises(UserError, match="is not a spamlang lock"):
        with locked(path):
            pass
    assert path.read_text() == "the user's own file\n"
    path.write_text(json.dumps({"pid": 1, "host": "h", "since": "x"}))  # a killed holder's note
    with locked(path, wait=False):
        assert json.loads(path.read_text())["pid"] == os.getpid()
    assert not path.exists()


def test_figures_go_to_a_folder_of_their_own_which_a_later_draw_takes_again(tmp_path, capsys):
    """`--figures DIR` takes a new or empty folder and marks it figures.json; a later draw
    into it is its own, any other non-empty folder is refused (above)."""
    from spamlang.cli.sweep_cmd import FIGURES_MARK, _figures_folder, _mark_figures

    out, figs = tmp_path / "out", tmp_path / "figs"
    assert _figures_folder(out, None) == out and _figures_folder(out, str(out)) == out
    assert _figures_folder(out, str(figs)) == figs
    _mark_figures(out, figs)
    (figs / "heatmap.png").write_bytes(b"drawn by an earlier --figures")
    assert json.loads((figs / FIGURES_MARK).read_text())["sweep"] == str(out)
    assert _figures_folder(out, str(figs)) == figs


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def temporaries(folder: Path, target: str) -> tuple[Path, list[Path]]:
    """A dead process's temporary of `target` in `folder` (stale), and two that must stay: a
    live process's (pid 1) and another host's (its pid means nothing here)."""
    host, dead = atomic._host(), dead_pid()
    stale = folder / f".{target}.tmp-{host}-{dead}"
    kept = [folder / f".{target}.tmp-{host}-1", folder / f".{target}.tmp-elsewhere-{dead}"]
    for path in (stale, *kept):
        path.write_text("cut short")
    return stale, kept


def test_train_removes_what_a_killed_writer_left_in_its_run_directory(tmp_path):
    """`prepare` (the start of every `train` and of every run of a sweep) removes a killed
    process's `.result.json.tmp-*`; a live process's and another host's stay."""
    run = tmp_path / "run"
    rundir.prepare(run, TINY)
    stale, kept = temporaries(run, "result.json")
    rundir.prepare(run, TINY)  # the rerun
    assert not stale.exists() and all(p.exists() for p in kept)


def test_sweep_removes_what_a_killed_writer_left_in_its_directory(tmp_path):
    """A finished sweep run again: a killed process's `.results.csv.tmp-*` is removed, a live
    one's and another host's stay, and results.csv is rewritten."""
    sweep = Sweep("done", TINY, {"lr": [1e-2]})
    out = tmp_path / "done"
    write_finished_sweep(sweep, out)
    stale, kept = temporaries(out, "results.csv")
    rows = run_sweep(sweep, out, quiet=True)
    assert len(rows) == 1 and (out / "results.csv").is_file()
    assert not stale.exists() and all(p.exists() for p in kept)


# Sends the signal 50 ms into the compile of the export's generator (`jit_rows`): jaxlib's wait
# for a compile returns on Ctrl-C while XLA goes on compiling, and the exit then segfaulted.
# The compile is JAX's own (no cache, default optimisation): long enough to still run then.
CHILD = """
import os, signal, sys, threading
import jax._src.compiler as compiler

signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
signal.signal(signal.SIGTERM, signal.SIG_DFL)
original, sent = compiler.backend_compile_and_load, []

def compile_and_signal(backend, module, *args, **kwargs):
    if "rows" in str(module.operation.attributes["sym_name"]) and not sent:
        sent.append(threading.Timer(0.05, os.kill, (os.getpid(), int(sys.argv[1]))))
        sent[0].start()
    return original(backend, module, *args, **kwargs)

compiler.backend_compile_and_load = compile_and_signal
from spamlang.cli import main
status = main(sys.argv[2:])
assert sent, "the generator was not compiled: nothing was interrupted"
sys.exit(status)
"""


def test_interrupting_export_in_a_compile_exits_130_and_143_with_nothing_left(tmp_path):
    drop = {"SPAMLANG_DEBUG", "XLA_FLAGS", "JAX_COMPILATION_CACHE_DIR"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["JAX_ENABLE_COMPILATION_CACHE"] = "false"
    children = {}
    for sig in (signal.SIGINT, signal.SIGTERM):  # concurrently: each pays JAX's import
        out = tmp_path / sig.name
        out.mkdir()
        argv = ["export", "spam", "--vocab-size", "64", "--seq-len", "8", "--num-seqs", "100"]
        argv = [sys.executable, "-c", CHILD, str(int(sig)), *argv, "-o", str(out / "x.bin")]
        children[sig] = (out, subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env))
    for sig, (out, child) in children.items():
        _, err = child.communicate(timeout=120)
        assert child.returncode == {signal.SIGINT: 130, signal.SIGTERM: 143}[sig], err
        assert err.strip().splitlines() == [
            f"spamlang export: {'interrupted' if sig == signal.SIGINT else 'terminated'}; "
            "no partial file left behind"
        ]
        assert os.listdir(out) == []
