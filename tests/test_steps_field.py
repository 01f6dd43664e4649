"""A budget in steps (issue 61, item 13): `steps` and `tokens` are fields that default to None,
at most one given (neither: 1,048,576 tokens); both read back resolved, config.json keeps the
one given, and the runs and run ids of existing sweeps do not change."""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import json

import pytest

from spamlang.cli import main
from spamlang.errors import UserError
from spamlang.sweep import Sweep
from spamlang.throughput import RESULTS
from spamlang.train.config import DEFAULT_TOKENS, TrainConfig

SMALL = dict(vocab_size=64, seq_len=2, batch_size=4, eval_sequences=8)


def test_steps_resolve_tokens_and_config_json_keeps_what_was_given():
    config = TrainConfig(**SMALL, steps=1000)
    assert (config.steps, config.tokens) == (1000, 8000)
    data = config.to_json()
    assert (data["steps"], data["tokens"]) == (1000, None)
    assert TrainConfig.from_json(data) == config and TrainConfig.from_json(data).to_json() == data
    by_tokens = TrainConfig(**SMALL, tokens="8K")
    assert (by_tokens.steps, by_tokens.tokens) == (1000, 8000)
    assert by_tokens.to_json()["tokens"] == 8000 and "steps" not in by_tokens.to_json()


def test_neither_is_the_old_default_budget_written_as_before():
    config = TrainConfig(**SMALL)
    assert config.tokens == DEFAULT_TOKENS == 1_048_576 and config.steps == 1_048_576 // 8
    data = config.to_json()
    assert data["tokens"] == 1_048_576 and "steps" not in data  # the config.json of before


def test_both_are_refused_in_one_line():
    with pytest.raises(UserError, match="give tokens or steps, not both"):
        TrainConfig(**SMALL, tokens=8000, steps=1000)
    with pytest.raises(UserError, match="steps must be >= 1"):
        TrainConfig(**SMALL, steps=0)


def test_replace_keeps_the_budget_as_given_unless_it_gives_one():
    steps = TrainConfig(**SMALL, steps=100)
    assert steps.replace(batch_size=8).steps == 100  # steps stay steps
    assert steps.replace(batch_size=8).tokens == 1600
    tokens = TrainConfig(**SMALL, tokens=800)
    assert tokens.replace(batch_size=8).tokens == 800  # tokens stay tokens
    assert tokens.replace(steps=7).to_json()["steps"] == 7  # a budget given replaces the other
    assert (
        steps.replace(tokens=80).steps == 10 and "steps" not in steps.replace(tokens=80).to_json()
    )


def test_dataclasses_replace_works_the_other_field_out_anew():
    # as sweep scripts do (sweeps/return_or_batch_width.py): the field not given is not passed on
    tokens = TrainConfig(**SMALL, tokens=800)
    assert dataclasses.replace(tokens, batch_size=8).steps == 50  # 800 tokens of 16 a step
    assert dataclasses.replace(tokens, batch_size=8, tokens=1600).steps == 100
    steps = TrainConfig(**SMALL, steps=100)
    assert dataclasses.replace(steps, batch_size=8).tokens == 1600
    assert dataclasses.replace(steps, batch_size=8).to_json()["steps"] == 100


def test_steps_is_a_sweep_axis_with_its_own_run_ids():
    sweep = Sweep("s", TrainConfig(**SMALL, tokens=800), {"steps": [100, "1K"], "lr": [1e-3]})
    points = dict(sweep.points())
    assert list(points) == ["steps100-lr1e-3", "steps1000-lr1e-3"]
    assert [c.steps for c in points.values()] == [100, 1000]
    assert [c.tokens for c in points.values()] == [800, 8000]
    # linked with the batch: the same steps at two batch sizes
    linked = Sweep("l", TrainConfig(**SMALL), {"batch_size,steps": [[4, 50], [8, 50]]})
    assert [(c.steps, c.tokens) for _, c in linked.points()] == [(50, 400), (50, 800)]


def test_the_cli_takes_steps_and_a_budget_flag_replaces_the_files(tmp_path, capsys):
    args = ["train", "--vocab-size", "64", "--seq-len", "2", "--batch-size", "4", "--dry-run"]
    assert main([*args, "--steps", "2K", "--out", str(tmp_path / "r")]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert (printed["steps"], printed["tokens"]) == (2000, None)
    file = tmp_path / "c.json"
    file.write_text(json.dumps({"tokens": 800}))
    assert main([*args, "--config", str(file), "--steps", "5", "--out", str(tmp_path / "r")]) == 0
    assert json.loads(capsys.readouterr().out)["steps"] == 5
    assert main([*args, "--tokens", "80", "--steps", "5", "--out", str(tmp_path / "r")]) == 2
    assert "give tokens or steps, not both" in capsys.readouterr().err


def test_a_committed_sweeps_run_ids_and_configs_do_not_change():
    spec = importlib.util.spec_from_file_location(
        "paper_model_cpu", RESULTS.parent / "sweeps" / "paper_model_cpu.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with open(RESULTS / "paper_model_cpu" / "results.csv", newline="") as f:
        committed = {row["run_id"]: row for row in csv.DictReader(f)}
    points = dict(module.SWEEP.points())
    assert set(points) == set(committed)
    for run_id, config in points.items():
        assert "steps" not in config.to_json()  # config.json and sweep.json as written then
        assert config.steps == int(committed[run_id]["steps"])
    assert "steps" not in module.SWEEP.to_json()["base"]
