"""`spamlang.train.config`: which optimizer reads which field, from one table."""

from __future__ import annotations

from pathlib import Path

import pytest

from spamlang.cli import main
from spamlang.cli.sweep_cmd import main as sweep_main
from spamlang.errors import UserError
from spamlang.sweep import Sweep
from spamlang.train.config import OPTIMIZER_FIELDS, OPTIMIZERS, READERS, TrainConfig

TINY = TrainConfig(vocab_size=64, seq_len=2, batch_size=4, tokens=64, eval_sequences=8)
OTHER = {
    "b1": 0.8,
    "b2": 0.999,
    "eps": 1e-6,
    "momentum": 0.5,
    "lazy_rows": "embed",
    "head_amsgrad": True,
    "head_eps": 1e-3,
    "head_row_clip": 0.45,
    "head_b2": 0.999,
    "head_v_gated": True,
}


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_each_optimizer_takes_its_fields_and_refuses_the_others(optimizer):
    TINY.replace(optimizer=optimizer)  # the defaults are always valid
    for name, readers in READERS.items():
        if optimizer in readers:
            assert (
                getattr(TINY.replace(optimizer=optimizer, **{name: OTHER[name]}), name)
                == OTHER[name]
            )
        else:
            with pytest.raises(UserError, match=rf"optimizer {optimizer} ignores {name} "):
                TINY.replace(optimizer=optimizer, **{name: OTHER[name]})


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_the_heads_lr_scale_and_decay_are_read_by_every_optimizer(optimizer):
    config = TINY.replace(optimizer=optimizer, head_lr_scale=0.3, head_weight_decay=0.0)
    assert (config.head_lr_scale, config.head_weight_decay) == (0.3, 0.0)


def test_gated_v_and_amsgrad_on_the_head_are_refused_together():
    with pytest.raises(UserError, match="choose one of them"):
        TINY.replace(head_v_gated=True, head_amsgrad=True)


def test_a_sweep_axis_or_set_of_an_ignored_field_is_refused(tmp_path, capsys):
    with pytest.raises(UserError, match="optimizer sgd ignores b2"):
        Sweep("s", TINY.replace(optimizer="sgd"), {"b2": [0.95, 0.999]})
    with pytest.raises(UserError, match="optimizer adamw ignores momentum"):
        Sweep("s", TINY, {"optimizer,momentum": [["adamw", 0.9], ["adamw", 0.5]]})
    out = tmp_path / "out"
    argv = ["--out", str(out), "--set", "momentum=0.5", "--dry-run"]
    assert sweep_main(Sweep("s", TINY, {"lr": [1e-3]}), argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "optimizer adamw ignores momentum" in err[0], err
    assert not out.exists()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--optimizer", "sgd", "--adam-b2", "0.999"], "optimizer sgd ignores b2"),
        (["--optimizer", "adafactor", "--adam-eps", "1e-6"], "optimizer adafactor ignores eps"),
        (["--momentum", "0.5"], "optimizer adamw ignores momentum"),
        (["--lazy-rows", "head"], "optimizer adamw ignores lazy_rows"),
        (
            ["--optimizer", "lazy_adamw", "--head-amsgrad"],
            "optimizer lazy_adamw ignores head_amsgrad",
        ),
        (["--optimizer", "sgd", "--head-eps", "1e-3"], "optimizer sgd ignores head_eps"),
        (["--optimizer", "adafactor", "--head-row-clip", "0.45"], "ignores head_row_clip"),
        (["--head-eps", "-1e-3"], "head_eps must be >= 0, got -0.001"),
        (["--head-row-clip", "-0.45"], "head_row_clip must be >= 0, got -0.45"),
    ],
)
def test_a_train_flag_of_an_ignored_field_is_one_line_exit_2(tmp_path, capsys, flags, message):
    out = tmp_path / "run"
    assert main(["train", *flags, "--out", str(out), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not out.exists()


def optimizer_fields_table() -> list[str]:
    """The sweeps guide's table of `OPTIMIZER_FIELDS`: one Markdown row per field, an x per reader."""
    lines = ["| field | " + " | ".join(OPTIMIZERS) + " |", "|---|" + "---|" * len(OPTIMIZERS)]
    for name, readers in OPTIMIZER_FIELDS.items():
        lines.append(
            f"| `{name}` | " + " | ".join("x" if o in readers else "" for o in OPTIMIZERS) + " |"
        )
    return lines


def test_readme_and_help_show_the_table():
    guide = (Path(__file__).parent.parent / "docs/guide/sweeps.md").read_text()
    assert "\n".join(optimizer_fields_table()) in guide
    from spamlang.cli import build_parser

    sub = next(a for a in build_parser()._actions if hasattr(a, "choices") and a.choices)
    helps = {a.dest: a.help for a in sub.choices["train"]._actions}
    for name, readers in OPTIMIZER_FIELDS.items():
        assert f"read only by {', '.join(readers)}" in helps[name]


def test_a_config_written_before_the_head_controls_loads_with_them_off():
    head_controls = set(READERS) - set(OPTIMIZER_FIELDS)
    old = {k: v for k, v in TINY.to_json().items() if k not in head_controls}
    assert TrainConfig.from_json(old) == TINY
    assert (TINY.head_amsgrad, TINY.head_eps, TINY.head_row_clip) == (False, 0.0, 0.0)
