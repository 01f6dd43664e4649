"""`spamlang languages | preview | export`: outputs, and every error path exits 2 in one line."""

import os
import subprocess
import sys

import numpy as np
import pytest

from spamlang import data, languages
from spamlang.cli import main


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_languages_table(capsys):
    status, out, err = run(capsys, "languages")
    assert status == 0 and err == ""
    lines = out.splitlines()
    for name in languages.names():
        row = next(line for line in lines if line.startswith(name + " "))
        assert languages.language_class(name).loss_formula in row
    assert any("b=2 seed=0" in line for line in lines)


def test_preview_prints_the_dataset(capsys):
    status, out, err = run(
        capsys,
        "preview",
        "cycle",
        "--vocab-size",
        "10",
        "--param",
        "k=3",
        "-n",
        "3",
        "--seq-len",
        "12",
        "--seed",
        "4",
    )
    assert status == 0
    header, *rows = out.splitlines()
    assert header.startswith("# cycle(vocab_size=10, k=3)") and "optimal loss 0.4187" in header
    got = np.array([[int(t) for t in row.split()] for row in rows])
    lang = languages.make("cycle", vocab_size=10, k=3)
    np.testing.assert_array_equal(got, data.SequenceDataset(lang, 4, 12)[0:3])


def test_export_then_load(capsys, tmp_path):
    path = tmp_path / "noisy.bin"
    argv = [
        "export",
        "noisy-spam",
        "--vocab-size",
        "100",
        "--seq-len",
        "16",
        "--num-seqs",
        "9",
        "--param",
        "eps=0.2",
        "--seed",
        "3",
        "-o",
        str(path),
    ]
    status, out, err = run(capsys, *argv)
    assert status == 0 and "wrote 9 x 16 uint16 tokens" in out
    tokens = data.load_tokens(path)
    lang = languages.make("noisy-spam", vocab_size=100, eps=0.2)
    np.testing.assert_array_equal(tokens, data.SequenceDataset(lang, 3, 16)[0:9])
    status, out, err = run(capsys, *argv)
    assert status == 2 and "already exists" in err and len(err.splitlines()) == 1
    status, out, err = run(capsys, *argv, "--force")
    assert status == 0


@pytest.mark.parametrize(
    "argv, message",
    [
        (["preview", "nope", "--vocab-size", "8"], "unknown language 'nope'; known: spam"),
        (["preview", "spam", "--vocab-size", "1"], "vocab_size must be in [2,"),
        (
            ["preview", "noisy-spam", "--vocab-size", "8", "--param", "eps=1"],
            "eps must be in [0, 1)",
        ),
        (
            ["preview", "noisy-spam", "--vocab-size", "8", "--param", "eps=-0.5"],
            "eps must be in [0, 1)",
        ),
        (
            ["preview", "branching", "--vocab-size", "8", "--param", "b=9"],
            "b must be in [1, vocab_size=8]",
        ),
        (["preview", "cycle", "--vocab-size", "8", "--param", "k"], "malformed --param 'k'"),
        (["preview", "cycle", "--vocab-size", "8", "--param", "k=x"], "k must be an integer"),
        (["preview", "cycle", "--vocab-size", "8", "--param", "q=1"], "unknown parameter 'q'"),
        (["preview", "cycle", "--vocab-size", "8", "--param", "vocab_size=9"], "--vocab-size"),
        (["preview", "spam", "--vocab-size", "8", "-n", "0"], "must be >= 1"),
        # Counts past the dataset's limits name the limit (they were IndexError tracebacks, exit 1).
        (
            ["preview", "spam", "--vocab-size", "64", "-n", "100000000000"],
            "-n must be >= 1 and <= 4294967296 (2^32",
        ),
        (
            ["preview", "spam", "--vocab-size", "64", "--seq-len", "100000000000"],
            "--seq-len must be >= 1 and <= 1048576",
        ),
        (
            ["preview", "spam", "--vocab-size", "64", "--seed", "100000000000"],
            "seed must be in [0, 4294967296)",
        ),
        (
            [
                "export",
                "spam",
                "--vocab-size",
                "8",
                "--seq-len",
                "4",
                "--num-seqs",
                "4294967297",
                "-o",
                "{tmp}/t",
            ],
            "num_seqs must be in [1, 4294967296] (2^32",
        ),
        (
            [
                "export",
                "spam",
                "--vocab-size",
                "8",
                "--seq-len",
                "4",
                "--num-seqs",
                "2",
                "--seed",
                "-1",
                "-o",
                "{tmp}/t",
            ],
            "seed must be in [0, 4294967296)",
        ),
        (
            [
                "export",
                "spam",
                "--vocab-size",
                "8",
                "--seq-len",
                "4",
                "--num-seqs",
                "0",
                "-o",
                "{tmp}/t",
            ],
            "num_seqs must be",
        ),
        (
            [
                "export",
                "spam",
                "--vocab-size",
                "8",
                "--seq-len",
                "4",
                "--num-seqs",
                "2",
                "-o",
                "{tmp}/missing/t.bin",
            ],
            "does not exist",
        ),
        (
            [
                "export",
                "spam",
                "--vocab-size",
                "8",
                "--seq-len",
                "4",
                "--num-seqs",
                "2",
                "-o",
                "{tmp}",
            ],
            "is a directory",
        ),
    ],
)
def test_error_paths_exit_2_with_one_line(capsys, tmp_path, argv, message):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1 and message in err and err.startswith("spamlang ")
    assert os.listdir(tmp_path) == []


def test_argparse_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        main(["preview", "spam", "--vocab-size", "many"])
    assert e.value.code == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1


def test_subprocess_has_no_traceback():
    argv = [sys.executable, "-m", "spamlang", "preview", "nope", "--vocab-size", "8"]
    env = {k: v for k, v in os.environ.items() if k != "SPAMLANG_DEBUG"}
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "unknown language 'nope'" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1


def test_a_reader_that_leaves_early_ends_the_command_quietly():
    """`spamlang preview ... | head`: no error line, the shell's SIGPIPE status (141)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "spamlang",
            "preview",
            "spam",
            "--vocab-size",
            "64",
            "--seq-len",
            "64",
            "-n",
            "20000",
        ],  # ~3.6 MB: past any pipe
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout.readline()
    proc.stdout.close()  # as `head` does after its lines
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and err == "", err
