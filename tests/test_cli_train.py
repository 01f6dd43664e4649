"""`spamlang train`: flags from TrainConfig, --config files, error paths, SIGINT and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spamlang.cli import main
from spamlang.train.config import TrainConfig

# The shapes of test_train_run's runs (constant schedule, no warmup), so both files share
# compiled executables through the compilation cache.
TINY = [
    "--vocab-size",
    "32",
    "--seq-len",
    "16",
    "--batch-size",
    "8",
    "--schedule",
    "constant",
    "--warmup-frac",
    "0",
    "--lr",
    "3e-3",
    "--eval-sequences",
    "16",
    "--log-every",
    "5",
    "--model",
    "n_layers=1",
]
EXAMPLE = [
    "train",
    "--preset",
    "tiny",
    "--language",
    "spam",
    "--vocab-size",
    "4096",
    "--lr",
    "3e-3",
    "--tie-embeddings",
    "--tokens",
    "2M",
    "--seq-len",
    "64",
    "--batch-size",
    "32",
]


@pytest.fixture(scope="module")
def env():
    """Environment for `python -m spamlang` subprocesses: no peak measurement (the compilation
    cache shared with the rest of the session comes from conftest.py's variables)."""
    return {**os.environ, "SPAMLANG_PEAK_FLOPS": "1e11", "PYTHONUNBUFFERED": "1"}


def dry_run(args, capsys) -> dict:
    assert main([*args, "--out", "unused", "--dry-run"]) == 0
    return json.loads(capsys.readouterr().out)


def test_example_command_maps_to_the_config(capsys):
    got = dry_run(EXAMPLE, capsys)
    want = TrainConfig(
        preset="tiny",
        language="spam",
        vocab_size=4096,
        lr=3e-3,
        tie_embeddings=True,
        tokens=2_000_000,
        seq_len=64,
        batch_size=32,
    )
    assert got == want.to_json()


def test_dict_flags_and_negated_booleans(capsys):
    got = dry_run(
        [
            "train",
            "--language",
            "zipf-spam",
            "--param",
            "s=1.5",
            "--model",
            "d_model=32",
            "--no-residual",
            "--tokens",
            "1.5K",
            "--seq-len",
            "8",
            "--batch-size",
            "4",
        ],
        capsys,
    )
    assert got["language_params"] == {"s": 1.5}
    assert got["model"] == {"d_model": 32}
    assert got["residual"] is False and got["tokens"] == 1500


def test_config_file_then_explicit_flags_override(tmp_path, capsys):
    base = TrainConfig(
        vocab_size=64, lr=1e-2, seed=3, language="zipf-spam", language_params={"s": 1.2}
    )
    path = tmp_path / "c.json"
    path.write_text(json.dumps(base.to_json()))
    got = dry_run(["train", "--config", str(path), "--lr", "2e-3"], capsys)
    assert got == base.replace(lr=2e-3).to_json()


def test_help_lists_every_field_with_its_default(capsys):
    with pytest.raises(SystemExit) as info:
        main(["train", "--help"])
    assert info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for f in (
        "--vocab-size",
        "--tie-embeddings",
        "--no-tie-embeddings",
        "--warmup-frac",
        "--param K=V",
        "--model K=V",
        "--diag-every",
    ):
        assert f in text
    assert "(default: 1024)" in text and "(default: cosine)" in text


def _bad_config_files(tmp_path):
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "unknown.json").write_text('{"vocab_size": 64, "learning_rate": 0.1}')
    (tmp_path / "file").write_text("x")
    run = tmp_path / "other-run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps(TrainConfig(vocab_size=64).to_json()))


@pytest.mark.parametrize(
    "args, message",
    [
        (["--lr", "abc"], "invalid float value"),
        (["--tokens", "2X"], "token count"),
        (["--vocab-size", "1.5"], "invalid vocabulary size"),
        (["--vocab-size", "-5"], "spam: vocab_size must be in [2,"),  # not track_symbols
        (["--param", "noequals"], "NAME=VALUE"),
        (["--language", "klingon"], "unknown language"),
        (["--schedule", "sometimes"], "schedule must be one of"),
        (["--batch-size", "0"], "batch_size must be >= 1"),
        (["--config", "{tmp}/missing.json"], "cannot read --config"),
        (["--config", "{tmp}/bad.json"], "not valid JSON"),
        (["--config", "{tmp}/list.json"], "JSON object"),
        (["--config", "{tmp}/unknown.json"], "learning_rate"),
        (["--vocab-size", "64", "--out", "{tmp}/file/run"], "cannot create run directory"),
        (["--vocab-size", "64", "--lr", "0.5", "--out", "{tmp}/other-run"], "lr: 0.001 -> 0.5"),
    ],
)
def test_error_paths_exit_2_with_one_line(tmp_path, capsys, args, message):
    _bad_config_files(tmp_path)
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "run")]
    try:
        status = main(["train", *args])
    except SystemExit as e:  # argparse rejects bad flag values itself, also with status 2
        status = e.code
    err = capsys.readouterr().err
    assert status == 2
    assert len(err.strip().splitlines()) == 1 and message in err and "Traceback" not in err
    assert not (tmp_path / "run" / "metrics.jsonl").exists()


def test_error_in_a_subprocess_is_one_line(tmp_path, env):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "spamlang",
            "train",
            "--language",
            "klingon",
            "--out",
            str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "unknown language" in proc.stderr


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_sigint_saves_then_rerun_resumes_and_finishes(tmp_path, env):
    out = tmp_path / "run"
    # 400 steps (a second or more of training left when the signal comes after step 5; the
    # rerun trains the rest), no periodic checkpoints: the one found after SIGINT is the signal's.
    cmd = [
        sys.executable,
        "-m",
        "spamlang",
        "train",
        *TINY,
        "--tokens",
        str(8 * 16 * 400),
        "--checkpoint-every",
        "0",
        "--out",
        str(out),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.time() + 240
    while _lines(out / "metrics.jsonl") < 1 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=240)
    assert proc.returncode == 130, stderr[-2000:]
    assert "rerun the same command to resume" in stderr.strip().splitlines()[-1]
    assert "Traceback" not in stderr and stdout == ""
    saved = [int(p.name) for p in (out / "checkpoints").iterdir()]
    assert len(saved) == 1 and 0 < saved[0] < 400
    assert not (out / "result.json").exists()

    again = subprocess.run(
        cmd + ["--quiet", "--json"], capture_output=True, text=True, env=env, timeout=240
    )
    assert again.returncode == 0, again.stderr[-2000:]
    result = json.loads(again.stdout)
    assert result == json.loads((out / "result.json").read_text())
    assert result["steps"] == 400 and not result["diverged"]
    steps = [
        json.loads(line)["step"]
        for line in (out / "metrics.jsonl").read_text().splitlines()
        if json.loads(line)["kind"] == "train"
    ]
    assert steps == list(range(5, 401, 5))  # no gap, no duplicate across the resume


def test_negative_lr_reaches_the_config_check(tmp_path, capsys):
    for value in ("-1e-3", "-0.5", "-.5"):
        assert main(["train", "--lr", value, "--out", str(tmp_path / "run")]) == 2
        err = capsys.readouterr().err
        assert err == f"spamlang train: error: lr must be > 0, got {float(value)}\n"


def test_help_lists_presets_languages_and_heads(capsys):
    from spamlang import languages
    from spamlang.model import PRESETS

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "one of: " + ", ".join(PRESETS) in text
    assert "one of: " + ", ".join(languages.names()) in text
    assert "one of: softmax, lowrank:R, mos:K" in text


# 60 steps, checkpoints at 20, 40 and 60 (keep 2): test_train_run's CFG, so the compiled
# programs come from the session's cache.
SIXTY = [*TINY, "--tokens", str(8 * 16 * 60), "--checkpoint-every", "20", "--quiet"]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "run"
    assert main(["train", *SIXTY, "--out", str(out)]) == 0
    return out


def test_rerunning_a_finished_run_says_so(finished_run, capsys):
    capsys.readouterr()
    assert main(["train", *SIXTY, "--out", str(finished_run), "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == f"{finished_run} is already finished (result.json); nothing to train\n"
    assert json.loads(out) == json.loads((finished_run / "result.json").read_text())


def test_rerunning_a_finished_run_with_a_damaged_symbols_file_says_so(
    finished_run, tmp_path, capsys
):
    import shutil

    run = shutil.copytree(finished_run, tmp_path / "run")
    (run / "symbols.npz").write_bytes(b"PK\x03\x04 not a zip")
    capsys.readouterr()
    assert main(["train", *SIXTY, "--out", str(run)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].endswith("is already finished (result.json); nothing to train")
    assert len(err) == 2 and "cannot read" in err[1] and "symbols.npz" in err[1]


def _damaged_copy(run: Path, dst: Path) -> Path:
    """A copy of `run` interrupted before its result, every checkpoint's arrays cut in half."""
    import shutil

    shutil.copytree(run, dst)
    (dst / "result.json").unlink()
    for f in (dst / "checkpoints").rglob("ocdbt.process_0/d/*"):
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    return dst


def test_unreadable_checkpoints_are_one_line_the_trace_only_in_debug(finished_run, tmp_path, env):
    bad = _damaged_copy(finished_run, tmp_path / "bad")
    cmd = [sys.executable, "-m", "spamlang", "train", *SIXTY, "--out", str(bad)]
    quiet_env = {k: v for k, v in env.items() if k != "SPAMLANG_DEBUG"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=quiet_env, timeout=240)
    # Unquieted, orbax and asyncio print about 160 lines here (tracebacks, TensorStore specs).
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1, proc.stderr[-3000:]
    assert proc.stderr.startswith(
        "spamlang train: error: no checkpoint can be restored "
        f"(newest: {bad / 'checkpoints' / '60'}: ValueError: "
    )
    assert proc.stderr.endswith(
        "; delete the checkpoints/ folder to restart the run from scratch\n"
    )
    assert "bound method" not in proc.stderr and "Traceback" not in proc.stderr

    debug = subprocess.run(
        cmd, capture_output=True, text=True, timeout=240, env={**quiet_env, "SPAMLANG_DEBUG": "1"}
    )
    assert debug.returncode != 0 and "Traceback" in debug.stderr
    # orbax's own error, then the UserError it caused
    assert "OUT_OF_RANGE" in debug.stderr
    assert "UserError: no checkpoint can be restored" in debug.stderr


# ----- no flag means two things (a language parameter is never a bare flag) ------------------


def bad_flags(argv) -> int:
    """The exit status of a command line that argparse refuses (in process: SystemExit)."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    return exit_info.value.code


def test_bare_eps_is_refused_naming_both_meanings(capsys):
    assert (
        bad_flags(
            ["train", "--language", "noisy-spam", "--eps", "0.1", "--out", "unused", "--dry-run"]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("spamlang train: error: --eps is not a flag of spamlang train")
    assert "--param eps=VALUE" in err and "--adam-eps" in err


def test_adam_flags_set_the_optimizer_and_params_set_the_language(capsys):
    got = dry_run(
        [
            "train",
            "--language",
            "noisy-spam",
            "--adam-eps",
            "1e-6",
            "--adam-b2",
            "0.99",
            "--param",
            "eps=0.2",
        ],
        capsys,
    )
    assert got["eps"] == 1e-6 and got["b2"] == 0.99 and got["language_params"] == {"eps": 0.2}
    assert dry_run(["train", "--b2", "0.999"], capsys)["b2"] == 0.999  # unambiguous: kept


def test_a_language_parameter_as_a_bare_flag_names_param(capsys):
    assert bad_flags(["train", "--language", "spam", "--holdout", "0.1", "--out", "unused"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("spamlang train: error: --holdout is not a flag of spamlang train")
    assert "--param holdout=VALUE" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "flag, hint",
    [
        ("--tied", "did you mean --tie-embeddings?"),  # it suggested --seed
        ("--d-model", "--preset tiny-w32"),
        ("--n-layers", "--model n_layers=VALUE"),
    ],
)
def test_a_field_under_another_name_gets_its_own_spelling(capsys, flag, hint):
    assert bad_flags(["train", flag, "--out", "unused"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"spamlang train: error: {flag} is not a flag of spamlang train")
    assert hint in err and "--seed" not in err and len(err.strip().splitlines()) == 1


def test_an_unknown_flag_is_reported_by_its_command(capsys):
    assert bad_flags(["train", "--tokenz", "5", "--out", "unused"]) == 2
    assert capsys.readouterr().err == (
        "spamlang train: error: unrecognized arguments: --tokenz 5 (did you mean --tokens?)\n"
    )
    assert bad_flags(["plot", "heatmap", "d", "-o", "x.png", "--bogus"]) == 2
    assert capsys.readouterr().err.startswith("spamlang plot heatmap: error: unrecognized")
    # A prefix of a flag is no flag: it would silently become another one once a flag is added.
    assert bad_flags(["train", "--token", "5", "--out", "unused"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("spamlang train: error: unrecognized arguments: --token 5")
    assert len(err.strip().splitlines()) == 1


# ----- inputs refused before any directory exists ------------------------------------------------

SMALL = [
    "train",
    "--vocab-size",
    "64",
    "--seq-len",
    "2",
    "--batch-size",
    "4",
    "--tokens",
    "16",
    "--eval-sequences",
    "8",
]


@pytest.mark.parametrize("seed", [2**32, 2**63, 2**64])
def test_a_seed_beyond_prngkey_is_one_line_exit_2_and_no_directory(tmp_path, capsys, seed):
    out = tmp_path / "run"
    assert main([*SMALL, "--seed", str(seed), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "seed must be in [0, 4294967296)" in err[0], err
    assert not out.exists()
    assert main([*SMALL, "--seed", str(seed), "--out", str(out), "--dry-run"]) == 2
    assert TrainConfig(seed=2**32 - 1).seed == 2**32 - 1


def test_an_out_path_that_is_not_utf8_is_one_line_exit_2_and_no_directory(tmp_path, capsys):
    parent = tmp_path / "new"
    out = os.fsdecode(os.fsencode(str(parent)) + b"/r\xffun")  # a surrogate escape
    assert main([*SMALL, "--out", out]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not valid UTF-8" in err[0], err
    assert not parent.exists()


def test_train_prints_a_summary_and_json_on_request(tmp_path, capsys):
    # --tokens 1000 at 2 x 32 tokens per step: 15 whole steps, 960 tokens, said in one line.
    args = [
        "train",
        "--preset",
        "tiny",
        "--vocab-size",
        "64",
        "--seq-len",
        "2",
        "--batch-size",
        "32",
        "--tokens",
        "1000",
        "--eval-sequences",
        "8",
        "--out",
        str(tmp_path / "r"),
    ]
    assert main(args) == 0
    captured = capsys.readouterr()
    notes = [line for line in captured.err.splitlines() if line.startswith("note: --tokens")]
    assert len(notes) == 1 and "960 tokens" in notes[0]
    result = json.loads((tmp_path / "r" / "result.json").read_text())
    assert len(captured.out.splitlines()) <= 4  # a summary, not result.json's ~40 lines
    assert f"{result['final_eval_loss']:.4f}" in captured.out and "--json" in captured.out
    assert main([*args, "--json"]) == 0  # finished: prints the result again, as JSON
    assert json.loads(capsys.readouterr().out) == result
