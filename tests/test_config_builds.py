"""How often one `spamlang train` builds a TrainConfig, and how deep the step's trace sits.

A TrainConfig validates itself on every build (the language and the model config are built
to check them), so a run builds it once, the CLI's, plus the one `rundir.prepare` reads back
from an existing config.json to compare. The compiled program is keyed by
a frozen value of the fields that change it (`spamlang.train.step.program_key`), never by a
rebuilt config. The step's trace is measured in spamlang's own frames from `spamlang.cli.main`
to `member_step` (both counted; JAX's tracing frames between them are not spamlang's)."""

from __future__ import annotations

import traceback
from pathlib import Path

import pytest

import spamlang
from spamlang.cli import main
from spamlang.train import step as step_module
from spamlang.train.config import TrainConfig

CLI = spamlang.cli.__file__
PACKAGE = str(Path(spamlang.__file__).parent)
# A shape no other test trains, so that its Program is built (and its step traced) here.
ARGS = [
    "train",
    *("--vocab-size", "24", "--seq-len", "8", "--batch-size", "4", "--tokens", str(4 * 8 * 4)),
    *("--schedule", "constant", "--warmup-frac", "0", "--eval-sequences", "8"),
    *("--log-every", "2", "--quiet"),
    *("--model", "n_layers=1"),  # one layer: compiles faster; depth is not what is counted
]


def measure(monkeypatch, out) -> tuple[int, list[tuple[int, int]]]:
    """(TrainConfig builds, (spamlang frames, their files) from `spamlang.cli.main` to
    member_step, per trace)."""
    builds, depths = [], []
    post_init = TrainConfig.__post_init__

    def counted(self):
        builds.append(1)
        post_init(self)

    make = step_module.make_member_step

    def measured(*args, **kwargs):
        member_step = make(*args, **kwargs)

        def traced(state):
            stack = traceback.extract_stack()[:-1]  # this wrapper stands for member_step
            start = max(i for i, f in enumerate(stack) if f.name == "main" and CLI in f.filename)
            ours = [f.filename for f in stack[start:] if f.filename.startswith(PACKAGE)]
            ours.append(step_module.__file__)  # member_step's own frame
            depths.append((len(ours), len(set(ours))))
            return member_step(state)

        return traced

    monkeypatch.setattr(TrainConfig, "__post_init__", counted)
    monkeypatch.setattr(step_module, "make_member_step", measured)
    assert main([*ARGS, "--out", str(out)]) == 0
    return len(builds), depths


def test_one_train_run_builds_its_config_once(monkeypatch, tmp_path):
    """Before #32 a run built it 3 times (the CLI's, then `config.replace` and `from_json` to
    key and build the shared Program), and 13 spamlang frames in 7 files led from
    `spamlang.cli.main` to the step (cli, error_policy, train_cmd, train/run, train/loop,
    train/step, members)."""
    builds, depths = measure(monkeypatch, tmp_path / "run")
    assert builds == 1  # the CLI's
    assert len(depths) == 1, depths  # traced once
    frames, files = depths[0]
    assert frames <= 8 and files <= 5, depths
    # rerun on the finished directory: the CLI's, and config.json read back to compare
    builds, depths = measure(monkeypatch, tmp_path / "run")
    assert builds == 2 and depths == []


def test_model_fields_have_one_name_and_old_configs_still_read(tmp_path):
    """`model` is the field in Python, JSON and the CLI (--model), and a config.json or
    sweep.json written when it was `model_overrides` reads as the same config, so an old run
    resumes in its directory; giving both names is one error."""
    import json

    from spamlang import rundir
    from spamlang.cli import main
    from spamlang.errors import UserError
    from spamlang.train.config import TrainConfig

    config = TrainConfig(model={"n_layers": 3}, vocab_size=64, seq_len=2)
    assert config.model_config().n_layers == 3
    old = {**config.to_json()}
    old["model_overrides"] = old.pop("model")
    assert TrainConfig.from_json(old) == config
    with pytest.raises(UserError, match="both model and model_overrides"):
        TrainConfig.from_json({**old, "model": {"n_layers": 3}})
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps(old))
    assert rundir.prepare(run, config) == run  # the same run, under its old field name
    assert main(["train", "--model", "n_layers=3", "--dry-run", "--out", str(tmp_path / "x")]) == 0
