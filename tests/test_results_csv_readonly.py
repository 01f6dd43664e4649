"""Read-only storage (#23 item 8): a finished sweep's table and figures are regenerated where
they can be, and what cannot be written is said, one line each, with status 0; `diagnose`
checks that it can write before it measures.

Directories are made read-only with chmod. Root ignores permission bits, so when the tests run
as root each command runs in a subprocess that has dropped the capabilities that let it
(CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, from its bounding set before exec): the
kernel, not a patched function, refuses the writes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from _fake_sweep import write_finished_sweep  # tests/_fake_sweep.py

from spamlang.sweep import Sweep, write_results
from spamlang.train.config import TrainConfig

TINY = TrainConfig(preset="tiny", vocab_size=16, seq_len=16, batch_size=8, tokens=2560)
# Run as root, the child first drops, from its bounding set, the capabilities that let root
# ignore permission bits (1 CAP_DAC_OVERRIDE, 2 CAP_DAC_READ_SEARCH, 3 CAP_FOWNER; 24 is
# PR_CAPBSET_DROP), then execs spamlang, which therefore starts without them.
_UNPRIVILEGED = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
for cap in (1, 2, 3):
    if libc.prctl(24, cap, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")
os.execv(sys.executable, [sys.executable, "-m", "spamlang", *sys.argv[1:]])
"""


def read_only(*paths: Path) -> None:
    """Everything under `paths` readable and not writable (by its owner either)."""
    for top in paths:
        for p in [top, *top.rglob("*")]:
            p.chmod(0o555 if p.is_dir() else 0o444)


def spamlang(*argv: str, home: Path) -> subprocess.CompletedProcess:
    """`python -m spamlang ARGV` in a subprocess that permission bits bind, root or not."""
    env = {k: v for k, v in os.environ.items() if k != "SPAMLANG_DEBUG"}
    env.update(MPLCONFIGDIR=str(home))
    start = ["-c", _UNPRIVILEGED] if os.geteuid() == 0 else ["-m", "spamlang"]
    return subprocess.run(
        [sys.executable, *start, *argv], capture_output=True, text=True, timeout=300, env=env
    )


def finished_sweep(out: Path) -> Path:
    """A finished sweep of 2 runs with its results.csv; returns its JSON sweep file."""
    sweep = Sweep("ro", TINY, {"lr": [1e-3, 1e-2]})
    write_finished_sweep(
        sweep,
        out,
        lambda run_id: "".join(
            json.dumps({"kind": "train", "step": s, "tokens": 128 * s, "loss": 3.0 - s}) + "\n"
            for s in (1, 2)
        ),
    )
    write_results(out)
    path = out.parent / "ro.json"
    path.write_text(json.dumps({"name": "ro", "base": TINY.to_json(), "axes": sweep.axes}))
    return path


def test_a_finished_sweep_on_read_only_storage_says_what_it_skipped(tmp_path):
    out = tmp_path / "out"
    sweep_file = finished_sweep(out)
    table = (out / "results.csv").read_text()
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    read_only(out, sweep_file)

    proc = spamlang("sweep", str(sweep_file), "--out", str(out), "--plots", home=home)
    assert proc.returncode == 0, proc.stderr
    assert "ro: 2 finished run(s) in" in proc.stdout
    err = [line for line in proc.stderr.splitlines() if not line.startswith("note: the runs")]
    assert err == [
        f"note: left {out / 'results.csv'} as it was: {out} cannot be written (Permission denied)",
        f"note: skipped heatmap.png: {out} cannot be written (Permission denied); "
        "--figures DIR draws them elsewhere",
        f"note: skipped curves.png: {out} cannot be written (Permission denied); "
        "--figures DIR draws them elsewhere",
    ], proc.stderr
    assert (out / "results.csv").read_text() == table and not (out / "heatmap.png").exists()

    # Figures drawn elsewhere are written, and `plot -o` elsewhere works too.
    proc = spamlang(
        "sweep",
        str(sweep_file),
        "--out",
        str(out),
        "--plots",
        "--figures",
        str(elsewhere / "figs"),
        home=home,
    )
    assert proc.returncode == 0, proc.stderr
    assert (elsewhere / "figs" / "heatmap.png").stat().st_size > 1000
    assert (elsewhere / "figs" / "curves.png").stat().st_size > 1000
    proc = spamlang("plot", "heatmap", str(out), "-o", str(elsewhere / "h.png"), home=home)
    assert proc.returncode == 0 and (elsewhere / "h.png").stat().st_size > 1000, proc.stderr


def test_diagnose_refuses_an_output_it_cannot_write_before_measuring(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    # No checkpoint: had it loaded or measured anything first, the error would be about that.
    (run / "config.json").write_text(json.dumps(TINY.to_json()))
    home = tmp_path / "home"
    home.mkdir()
    read_only(run)
    proc = spamlang("diagnose", str(run), home=home)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        f"spamlang diagnose: error: cannot write {run / 'diagnostics.json'}: "
        f"{run} takes no new files (Permission denied); choose another "
        "-o DIR\n"
    )
    proc = spamlang("diagnose", str(run), "-o", str(run / "new" / "deeper"), home=home)
    assert proc.returncode == 2 and f"{run} takes no new files" in proc.stderr
    assert not (run / "new").exists()
