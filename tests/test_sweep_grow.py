"""Sweeps grow the way research does: a new axis on a directory with finished runs (`seed`
added), a base field changed for one invocation (`--set`), and the line that says why a
finished run cannot be continued with more tokens. Nothing here trains: the trainer is
replaced by one that writes a finished run's files."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from spamlang import rundir
from spamlang.cli.sweep_cmd import main as sweep_main
from spamlang.errors import UserError
from spamlang.sweep import Sweep
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
AXES = {"vocab_size": [16], "lr": [3e-3, 1e-2]}


@pytest.fixture
def trained(monkeypatch):
    """The run directories the (fake) trainer was asked to train, in order."""
    from spamlang.train import run as train_run

    calls: list[str] = []

    def fake(config, out_dir, **kw):
        out_dir = Path(out_dir)
        calls.append(out_dir.name)
        rundir.prepare(out_dir, config)
        result = {
            "final_eval_loss": 0.5,
            "optimal_loss": 0.0,
            "diverged": False,
            "steps": config.steps,
            "tokens": config.tokens,
            "tokens_per_s": 100.0,
        }
        rundir.write_result(out_dir, result)
        return result

    monkeypatch.setattr(train_run, "run_training", fake)
    monkeypatch.setattr(
        train_run,
        "run_group",
        lambda configs, dirs, **kw: [fake(c, d) for c, d in zip(configs, dirs)],
    )
    return calls


def _table(out: Path) -> dict[str, dict]:
    with open(out / "results.csv", newline="") as f:
        return {row["run_id"]: row for row in csv.DictReader(f)}


def _err_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


# ----- a new axis on a directory with finished runs -------------------------------------------


def test_a_seed_axis_extends_a_finished_sweep_without_retraining(tmp_path, trained, capsys):
    out = str(tmp_path / "out")
    assert sweep_main(Sweep("g", TINY, dict(AXES)), ["--out", out, "--quiet"]) == 0
    assert trained == ["V16-lr3e-3", "V16-lr1e-2"]
    seeded = Sweep("g", TINY, {**AXES, "seed": [0, 1]})  # TINY's seed is 0
    # The dry run sees the old runs as the seed-0 points, finished.
    assert sweep_main(seeded, ["--out", out, "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()[1:5]
    listed = {line.split()[0]: line.split()[1] for line in lines}
    assert listed == {
        "V16-lr3e-3": "done",
        "V16-lr1e-2": "done",
        "V16-lr3e-3-seed1": "new",
        "V16-lr1e-2-seed1": "new",
    }
    assert sweep_main(seeded, ["--out", out, "--quiet"]) == 0
    assert trained[2:] == ["V16-lr3e-3-seed1", "V16-lr1e-2-seed1"]  # only the new points
    table = _table(Path(out))
    assert {k: v["seed"] for k, v in table.items()} == {
        "V16-lr3e-3": "0",
        "V16-lr1e-2": "0",
        "V16-lr3e-3-seed1": "1",
        "V16-lr1e-2-seed1": "1",
    }
    stored = json.loads((Path(out) / "sweep.json").read_text())
    assert stored["axes"] == {**AXES, "seed": [0, 1]} and stored["grown"] == {"seed": 0}
    # Again, and with a third seed: nothing already finished trains twice.
    assert sweep_main(Sweep("g", TINY, {**AXES, "seed": [0, 1, 2]}), ["--out", out, "--quiet"]) == 0
    assert trained[4:] == ["V16-lr3e-3-seed2", "V16-lr1e-2-seed2"]
    assert len(_table(Path(out))) == 6


def test_an_axis_may_be_added_between_the_old_ones(tmp_path):
    check_sweep_file(Sweep("g", TINY, dict(AXES)), tmp_path)
    grown = check_sweep_file(
        Sweep("g", TINY, {"vocab_size": [16], "tie_embeddings": [False, True], "lr": [3e-3, 1e-2]}),
        tmp_path,
    )
    assert [r for r, _ in grown.points()] == [
        "V16-lr3e-3",
        "V16-lr1e-2",
        "V16-tied-lr3e-3",
        "V16-tied-lr1e-2",
    ]


def test_a_new_axis_without_the_old_runs_value_is_refused_saying_what_to_do(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    check_sweep_file(Sweep("g", TINY, dict(AXES)), out)
    assert sweep_main(Sweep("g", TINY, {**AXES, "seed": [1, 2]}), ["--out", str(out)]) == 2
    line = _err_line(capsys)
    assert (
        f"{out} holds a sweep with axes ['vocab_size', 'lr'], not ['vocab_size', 'lr', "
        "'seed']: its runs have seed=0 (the base's), which the new axis 'seed' does not "
        "list; add it to extend this directory"
    ) in line and "another --out" in line
    # A removed axis is still refused, saying so.
    with pytest.raises(UserError, match="not removed or renamed; use another --out"):
        check_sweep_file(Sweep("g", TINY, {"lr": [3e-3, 1e-2]}), out)


# ----- --set FIELD=VALUE --------------------------------------------------------------------------


def test_set_goes_to_its_own_directory_and_is_recorded(tmp_path, trained, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sweep = Sweep("g", TINY, dict(AXES))
    assert sweep_main(sweep, ["--quiet"]) == 0  # runs/g
    assert sweep_main(sweep, ["--quiet", "--set", "tokens=5K", "--set", "model.d_model=32"]) == 0
    variant = tmp_path / "runs" / "g-tok5K-D32"
    assert sorted(trained[2:]) == ["V16-lr1e-2", "V16-lr3e-3"]
    stored = json.loads((variant / "sweep.json").read_text())
    assert stored["set"] == {"tokens": 5000, "model.d_model": 32}
    assert stored["base"]["tokens"] == 5000 and stored["base"]["model"] == {"d_model": 32}
    config = json.loads((variant / "V16-lr3e-3" / "config.json").read_text())
    assert config["tokens"] == 5000 and config["model"] == {"d_model": 32}
    assert (
        json.loads((tmp_path / "runs" / "g" / "sweep.json").read_text())["base"]["tokens"]
        == TINY.tokens
    )  # the original is untouched
    capsys.readouterr()
    # The variant's directory without the --set, and the original's with it: refused, saying so.
    assert sweep_main(sweep, ["--out", str(variant)]) == 2
    line = _err_line(capsys)
    assert "different base config (fields: model, tokens)" in line
    assert "it was run with --set model.d_model=32 --set tokens=5000: pass the same" in line
    assert sweep_main(sweep, ["--out", "runs/g", "--set", "tokens=5K"]) == 2
    line = _err_line(capsys)
    assert "(fields: tokens); --set changed the base" in line and "runs/g-tok5K" in line


@pytest.mark.parametrize(
    "flag, message",
    [
        ("tokens", "--set must look like FIELD=VALUE (e.g. tokens=200K), got 'tokens'"),
        ("nope=1", "--set nope=1: unknown field 'nope'; known: "),
        ("model.width=8", "--set model.width=8: unknown field 'model.width'"),
        ("tokens=lots", "--set tokens=lots: a token count must be an integer"),
        ("batch_size=0", "--set batch_size=0: batch_size must be >= 1, got 0"),
        ("lr=1e-3", "--set lr=1e-3: lr is an axis of sweep 'g'"),
        (
            "tie_embeddings=maybe",
            "--set tie_embeddings=maybe: tie_embeddings must be true or false",
        ),
    ],
)
def test_bad_set_is_one_line_and_status_2(tmp_path, capsys, flag, message):
    out = tmp_path / "out"
    argv = ["--out", str(out), "--set", flag, "--dry-run"]
    assert sweep_main(Sweep("g", TINY, dict(AXES)), argv) == 2
    assert message in _err_line(capsys)
    assert not out.exists()


# ----- continuing a run with more tokens ---------------------------------------------------


def test_more_tokens_on_a_finished_run_says_why_not_and_what_instead(tmp_path):
    rundir.prepare(tmp_path / "run", TINY)
    with pytest.raises(UserError) as e:
        rundir.prepare(tmp_path / "run", TINY.replace(tokens=2 * TINY.tokens))
    assert f"tokens: {TINY.tokens} -> {2 * TINY.tokens}" in str(e.value)
    assert "warmup and decay are fractions of its total steps" in str(e.value)
    assert "another --out" in str(e.value) and "--set tokens=N" in str(e.value)
    # A sweep whose base changed only in tokens says the same.
    check_sweep_file(Sweep("g", TINY, dict(AXES)), tmp_path)
    with pytest.raises(UserError, match="fractions of its total steps.*--set tokens=N"):
        check_sweep_file(Sweep("g", TINY.replace(tokens=2 * TINY.tokens), dict(AXES)), tmp_path)


def test_axes_in_another_order_are_refused_and_sweep_json_keeps_the_order(tmp_path):
    """Run ids list the axes in order: a reordered sweep would rename, and retrain, every run.
    sweep.json keeps its keys sorted, so it records the order, and loads back in it."""
    from spamlang.sweep import load_sweep_file

    sweep = Sweep("o", TINY, {"vocab_size": [16, 32], "lr": [1e-3, 3e-3]})
    check_sweep_file(sweep, tmp_path)
    with pytest.raises(
        UserError,
        match=r"in another order would rename every run .*keep the "
        r"order \['vocab_size', 'lr'\]",
    ):
        check_sweep_file(Sweep("o", TINY, {"lr": [1e-3, 3e-3], "vocab_size": [16, 32]}), tmp_path)
    loaded = load_sweep_file(tmp_path / "sweep.json")[0]
    assert list(loaded.axes) == ["vocab_size", "lr"]
    assert [run_id for run_id, _ in loaded.points()] == [run_id for run_id, _ in sweep.points()]
