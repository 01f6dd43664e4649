"""`spamlang diagnose`, training-time diag rows and `plot_bottleneck`, end to end."""

import json
import shutil
import subprocess
import sys

import pytest

from spamlang.cli import main
from spamlang.errors import UserError


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A two-step tiny run that logs diag rows at every step (the trainer calls diag_metrics)."""
    from spamlang.train import TrainConfig, run_training

    path = tmp_path_factory.mktemp("sweep") / "v32"
    config = TrainConfig(
        vocab_size=32,
        preset="tiny",
        seq_len=16,
        batch_size=4,
        tokens=128,
        eval_sequences=8,
        diag_every=1,
    )
    run_training(config, path, quiet=True)
    return path


def test_trainer_logs_diag_rows(run_dir):
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    diag = [r for r in rows if r["kind"] == "diag"]
    assert diag and {r["step"] for r in diag} >= {1, 2}
    assert set(diag[-1]) == {
        "kind",
        "step",
        "tokens",
        "kernel_fraction",
        "projected_cosine",
        "grad_norm/embedding",
        "grad_norm/block_0",
        "grad_norm/block_1",
        "grad_norm/head",
        "updates_to_learn",
        "updates_to_learn_bound",
        "symbols_learned",
    }
    assert 0 < diag[-1]["kernel_fraction"] < 1 and 0 < diag[-1]["projected_cosine"] <= 1


def test_diagnose_writes_json_and_figures(run_dir, tmp_path, capsys):
    out = tmp_path / "diag"
    assert (
        main(
            [
                "diagnose",
                str(run_dir),
                "--tokens",
                "50",
                "--rank-tokens",
                "40",
                "--chunk-size",
                "16",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    diag = json.loads((out / "diagnostics.json").read_text())
    assert diag["tokens"] == 50 and diag["vocab_size"] == 32 and diag["head_rank"] == 16
    assert 0 < diag["kernel_fraction"] < 1
    assert diag["rank_curve"]["tokens"][-1] == 40
    for name in ("rank_curve", "coefficient_profile", "efficiency"):
        assert (out / f"{name}.png").stat().st_size > 1000
    printed = capsys.readouterr().out
    lines = printed.splitlines()  # the measurement, the loss, then each file written
    assert lines[0].startswith(f"{diag['head']} V=32 D=16 tokens=50: kernel fraction 0.")
    assert lines[1].startswith("loss ") and len(lines) == 6
    names = ("diagnostics.json", "rank_curve.png", "coefficient_profile.png", "efficiency.png")
    assert sorted(lines[2:]) == sorted(f"wrote {out / name}" for name in names)
    # Its loss is on other sequences than the run's final_eval_loss, and it says so.
    run_loss = json.loads((run_dir / "result.json").read_text())["final_eval_loss"]
    assert diag["run_final_eval_loss"] == run_loss
    assert diag["loss_sequences"] == (
        "50 predicted positions of 4 fresh sequences of spam "
        "(L=16, diagnose seed 0), not the run's eval set"
    )
    assert (
        f"loss {diag['loss']:.4f} on {diag['loss_sequences']} (the run's final_eval_loss, "
        f"on that set: {run_loss:.4f})"
    ) in printed


def test_plot_bottleneck_reads_diag_rows_and_diagnostics(run_dir, tmp_path):
    from spamlang.plots.diagnostics import bottleneck_points, plot_bottleneck

    sweep = run_dir.parent
    for V, head, kf in ((64, "softmax", 0.8), (256, "lowrank:4", 0.99)):
        fake = sweep / f"fake-v{V}"
        fake.mkdir(exist_ok=True)
        config = json.loads((run_dir / "config.json").read_text())
        config.update(vocab_size=V, head=head)
        (fake / "config.json").write_text(json.dumps(config))
        (fake / "diagnostics.json").write_text(json.dumps({"kernel_fraction": kf}))
    points = {p["run_id"]: p for p in bottleneck_points(sweep)}
    assert points["fake-v64"]["d_over_v"] == 16 / 64
    assert points["fake-v256"]["d_over_v"] == 4 / 256  # lowrank: the head's rank is r
    assert len(points["v32"]["curve"][0]) >= 2  # training-time rows give the second panel
    assert plot_bottleneck(sweep, tmp_path / "b.png").stat().st_size > 1000


def test_plot_bottleneck_without_usable_runs(tmp_path, run_dir):
    from spamlang.plots.diagnostics import plot_bottleneck

    with pytest.raises(UserError, match="no run"):
        plot_bottleneck(tmp_path, tmp_path / "b.png")
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(run_dir / "config.json", bare / "config.json")
    with pytest.raises(UserError, match="diag_every"):
        plot_bottleneck(tmp_path, tmp_path / "b.png")
    assert main(["plot", "bottleneck", str(tmp_path), "-o", str(tmp_path / "b.png")]) == 2


def test_diagnose_errors(tmp_path, run_dir, capsys):
    assert main(["diagnose", str(tmp_path / "missing")]) == 2
    assert main(["diagnose", str(run_dir), "--tokens", "0"]) == 2
    no_ckpt = tmp_path / "no_ckpt"
    no_ckpt.mkdir()
    shutil.copy(run_dir / "config.json", no_ckpt / "config.json")
    assert main(["diagnose", str(no_ckpt)]) == 2
    err = capsys.readouterr().err
    assert "no such run directory" in err and "--tokens must be >= 1" in err and "checkpoint" in err


@pytest.mark.parametrize(
    "flag, value, message",
    [
        ("--tokens", "100000000000", "--tokens must be >= 1 and <= 16777216 (2^24)"),
        ("--chunk-size", "100000000000", "--chunk-size must be >= 1 and <= 16777216 (2^24)"),
        ("--rank-tokens", "100000000000", "--rank-tokens must be >= 1 and <= 16777216 (2^24)"),
        ("--seed", "100000000000", "--seed must be in [0, 4294967296)"),
        ("--seed", "-1", "--seed must be in [0, 4294967296)"),
    ],
)
def test_diagnose_counts_past_their_limit_exit_2_naming_it(
    tmp_path, run_dir, capsys, flag, value, message
):
    """--tokens 1e11 aborted the process (status 134) when memory ran out."""
    assert main(["diagnose", str(run_dir), "-o", str(tmp_path / "d"), flag, value]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and message in err
    assert not (tmp_path / "d").exists()


def test_diagnose_lm_refuses_a_file_as_its_out_folder_before_loading(tmp_path, capsys):
    out = tmp_path / "out"
    out.write_text("mine")
    argv = ["diagnose-lm", str(tmp_path / "model"), "--tokens", "x.bin", "--out", str(out)]
    assert main(argv) == 2
    assert capsys.readouterr().err == f"spamlang diagnose-lm: error: --out {out} is not a folder\n"
    assert out.read_text() == "mine"


def test_diagnose_subprocess_exit_status(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "spamlang", "diagnose", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "no such run directory" in proc.stderr
