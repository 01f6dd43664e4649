"""Crash-safe export: refusals before any file, pair publication, signals, stale temporaries."""

import errno
import json
import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest

from spamlang import data, languages, token_files
from spamlang.cli import main
from spamlang.errors import UserError
from spamlang.rundir import atomic

L = 8
LANG = languages.make("spam", vocab_size=8)


def export_cli(capsys, path, *extra, seq_len=L, num_seqs=4, seed=0):
    status = main(
        [
            "export",
            "spam",
            "--vocab-size",
            "8",
            "--seq-len",
            str(seq_len),
            "--num-seqs",
            str(num_seqs),
            "--seed",
            str(seed),
            "-o",
            str(path),
            *extra,
        ]
    )
    out, err = capsys.readouterr()
    return status, out, err


def assert_pair(path, seed, n):
    np.testing.assert_array_equal(data.load_tokens(path), data.SequenceDataset(LANG, seed, L)[0:n])
    assert sorted(os.listdir(path.parent)) == [path.name, path.name + ".json"]  # no temporary


@pytest.mark.parametrize(
    "seq_len, num_seqs, message",
    [
        (100_000_000_000, 1, "seq_len must be <= 1048576 for an export"),
        (3_000_000_000, 4, "seq_len must be <= 1048576 for an export"),
        (1_000_000, 2**32, "would need 8.6 PB (4294967296 x 1000000 uint16) but"),
    ],
)
def test_impossible_sizes_exit_2_before_any_file(capsys, tmp_path, seq_len, num_seqs, message):
    status, out, err = export_cli(capsys, tmp_path / "y.bin", seq_len=seq_len, num_seqs=num_seqs)
    assert status == 2 and out == "" and len(err.splitlines()) == 1
    assert message in err, err
    assert os.listdir(tmp_path) == []


def test_disk_check_counts_the_new_file_whole(tmp_path, monkeypatch):
    data.export_tokens(LANG, 0, L, 4, tmp_path / "y.bin")
    monkeypatch.setattr(
        token_files.shutil,
        "disk_usage",
        lambda p: SimpleNamespace(total=10**6, used=9 * 10**5, free=10**5),
    )
    with pytest.raises(UserError, match=r"would need 320.0 kB .* has 100.0 kB free"):
        data.export_tokens(LANG, 1, L, 20_000, tmp_path / "y.bin", force=True)
    assert_pair(tmp_path / "y.bin", 0, 4)


def fail_after_one_chunk(exc):
    def generate(self, rows):
        yield np.zeros((1, self.seq_len), np.int32)
        raise exc

    return generate


def test_full_disk_mid_write_keeps_the_old_pair(capsys, tmp_path, monkeypatch):
    path = tmp_path / "y.bin"
    assert export_cli(capsys, path)[0] == 0
    monkeypatch.setattr(
        data.SequenceDataset,
        "_generate",
        fail_after_one_chunk(OSError(errno.ENOSPC, "No space left on device")),
    )
    status, out, err = export_cli(capsys, path, "--force", seed=1, num_seqs=6)
    assert status == 2 and len(err.splitlines()) == 1
    assert f"[Errno 28] No space left on device: '{path}'" in err
    monkeypatch.undo()
    assert_pair(path, 0, 4)


@pytest.mark.parametrize("renames_done", [1, 2])
def test_half_published_pair_is_incomplete_and_replaced_without_force(
    capsys, tmp_path, monkeypatch, renames_done
):
    """Cut between the publishing renames (after the "publishing" sidecar, or after the data
    too), the pair still carries a sidecar of ours that says so: load_tokens refuses it and the
    next export replaces it without --force."""
    path = tmp_path / "y.bin"
    data.export_tokens(LANG, 0, L, 4, path)
    real_replace, calls = os.replace, []

    def crash_after(src, dst):
        if len(calls) == renames_done:
            raise OSError(errno.EIO, "Input/output error")
        calls.append(dst)
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", crash_after)
    with pytest.raises(OSError):
        data.export_tokens(LANG, 1, L, 6, path, force=True)
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == ["y.bin", "y.bin.json"]  # no temporary
    assert json.loads((tmp_path / "y.bin.json").read_text())["publishing"] is True
    with pytest.raises(
        token_files.IncompleteExport,
        match=r"was being replaced .*: an incomplete export; export it again .*"
        r"\(no force needed\)",
    ):
        data.load_tokens(path)
    status, out, err = export_cli(capsys, path, seed=2, num_seqs=5)  # no --force
    assert status == 0 and "note: replacing an incomplete export" in err
    assert_pair(path, 2, 5)


def test_what_counts_as_incomplete(capsys, tmp_path):
    path, side = tmp_path / "y.bin", tmp_path / "y.bin.json"
    data.export_tokens(LANG, 0, L, 4, path)
    with open(path, "ab") as f:  # truncated or appended: the size no longer matches
        f.write(b"\0\0")
    with pytest.raises(token_files.IncompleteExport, match="has 66 bytes but its sidecar says 64"):
        data.load_tokens(path)
    assert export_cli(capsys, path, num_seqs=3)[0] == 0
    path.unlink()  # a sidecar without its data
    with pytest.raises(token_files.IncompleteExport, match="has no token file"):
        data.load_tokens(path)
    assert export_cli(capsys, path, num_seqs=2)[0] == 0
    assert_pair(path, 0, 2)
    side.write_text(json.dumps({"format": "someone-else"}))  # not ours: an existing file
    status, out, err = export_cli(capsys, path)
    assert status == 2 and "already exists; pass --force" in err


def test_stale_temporaries_of_dead_processes_are_removed(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    path, host = tmp_path / "y.bin", atomic._host()
    assert atomic.temp_path(path) == tmp_path / f".y.bin.tmp-{host}-{os.getpid()}"
    stale = tmp_path / f".y.bin.tmp-{host}-{dead.pid}"
    stale_side = tmp_path / f".y.bin.json.tmp-{host}-{dead.pid}"
    alive = tmp_path / f".y.bin.tmp-{host}-1"  # pid 1 is always alive
    other_host = tmp_path / f".y.bin.tmp-elsewhere-{dead.pid}"  # its pid means nothing here
    for p in (stale, stale_side, alive, other_host):
        p.write_bytes(b"x" * 100)
    data.export_tokens(LANG, 0, L, 4, path)
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["y.bin", "y.bin.json", alive.name, other_host.name]
    )


CHILD = """
import signal, sys, time
import numpy as np
from spamlang import data
from spamlang.cli import main

# As in a terminal, whatever the test runner's parent ignores (a background job ignores SIGINT).
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGTERM, signal.SIG_DFL)

def stalls(self, rows):  # one chunk is written, then the export hangs until a signal
    yield np.zeros((1, self.seq_len), np.int32)
    print("ready", flush=True)
    time.sleep(120)
    raise AssertionError("no signal came")

data.SequenceDataset._generate = stalls
sys.exit(main(sys.argv[1:]))
"""


def test_signals_exit_130_and_143_and_remove_the_temporary(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "SPAMLANG_DEBUG"}
    children = {}
    for sig in (signal.SIGINT, signal.SIGTERM):  # concurrently: each pays JAX's import
        out = tmp_path / sig.name
        out.mkdir()
        argv = [
            sys.executable,
            "-c",
            CHILD,
            "export",
            "spam",
            "--vocab-size",
            "8",
            "--seq-len",
            "8",
            "--num-seqs",
            "100",
            "-o",
            str(out / "y.bin"),
        ]
        children[sig] = (
            out,
            subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
            ),
        )
    for sig, (out, child) in children.items():
        assert child.stdout.readline() == "ready\n", child.communicate(timeout=60)
        assert len(os.listdir(out)) == 1  # the temporary exists while it writes
        child.send_signal(sig)
        _, err = child.communicate(timeout=60)
        assert child.returncode == {signal.SIGINT: 130, signal.SIGTERM: 143}[sig]
        assert "Traceback" not in err and len(err.splitlines()) == 1
        assert "no partial file left behind" in err
        assert os.listdir(out) == []


def test_sigterm_handler_is_scoped(tmp_path):
    before = signal.getsignal(signal.SIGTERM)
    if before is not signal.SIG_DFL:
        pytest.skip("the test runner handles SIGTERM itself")
    data.export_tokens(LANG, 0, L, 4, tmp_path / "y.bin")
    assert signal.getsignal(signal.SIGTERM) is before
    with atomic.signals_raise(), pytest.raises(atomic.Terminated) as e:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    assert e.value.code == 143
