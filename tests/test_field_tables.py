"""One table per concept (issue 62, item 3): TrainConfig's field metadata is the one table of
the run's fields, and the tables derived from it are the ones they replaced, so that run ids,
flags and messages stay; one number parser, one did-you-mean, one NAME=VALUE parser, the same
through every entry point."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from spamlang import optim
from spamlang.cli import main
from spamlang.cli.train_cmd import RENAMED
from spamlang.sweep import Sweep, load_sweep_file
from spamlang.sweep.files import with_overrides
from spamlang.sweep.spec import id_part
from spamlang.train.config import (
    FIELD_ALIASES,
    MEMBER_FIELDS,
    OPTIMIZER_FIELDS,
    READERS,
    TrainConfig,
)

PACKAGE = Path(__file__).resolve().parents[1] / "spamlang"
ADAM = ("adamw", "lazy_adamw")


def test_b2_is_named_as_a_string_in_at_most_three_files():
    quoted = re.compile(r"""["']b2["']""")
    files = sorted(
        str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if quoted.search(p.read_text())
    )
    assert len(files) <= 3, files


def test_the_derived_tables_are_the_ones_they_replaced():
    assert set(MEMBER_FIELDS) == {"lr", "seed", "b1", "b2", "eps", "momentum"}
    assert OPTIMIZER_FIELDS == {
        "b1": ADAM,
        "b2": ADAM,
        "eps": ADAM,
        "momentum": ("sgd",),
        "lazy_rows": ("lazy_adamw",),
    }
    assert list(OPTIMIZER_FIELDS) == ["b1", "b2", "eps", "momentum", "lazy_rows"]  # the guide's
    head = ("head_amsgrad", "head_eps", "head_row_clip", "head_b2", "head_v_gated")
    assert READERS == {**OPTIMIZER_FIELDS, **dict.fromkeys(head, ("adamw",))}
    assert FIELD_ALIASES == {
        **dict.fromkeys(("tied", "untied", "tie"), "tie_embeddings"),
        **dict.fromkeys(("vocab", "V"), "vocab_size"),
        **dict.fromkeys(("batch", "B"), "batch_size"),
        "beta2": "b2",
        **dict.fromkeys(("width", "d_model", "D"), "preset"),
        **dict.fromkeys(("n_layers", "layers", "depth"), "model.n_layers"),
    }
    assert RENAMED == {"b1": "--adam-b1", "b2": "--adam-b2", "eps": "--adam-eps"}
    # The numbers a member's optimizer state holds, by optax's name (its checkpoints' keys).
    values = optim.member_values(TrainConfig())
    assert values == {"lr": 1e-3, "b1": 0.9, "b2": 0.95, "eps": 1e-8, "momentum": 0.9}
    assert set(optim._by_optax_name(values)) == {"learning_rate", "b1", "b2", "eps", "momentum"}


# Every kind of run-id piece, as the tables before the metadata wrote them: results/ folders
# name their runs by these.
PIECES = {
    "vocab_size": (4096, "V4096"),
    "seq_len": (64, "L64"),
    "batch_size": (32, "B32"),
    "tokens": (41_000_000, "tok41M"),
    "weight_decay": (0.1, "wd1e-1"),
    "warmup_frac": (0.05, "warmup5e-2"),
    "decay_frac": (0.2, "decay2e-1"),
    "final_lr_ratio": (0.1, "final1e-1"),
    "grad_clip": (1.0, "clip1e0"),
    "loss_chunk": (256, "chunk256"),
    "model.d_model": (32, "D32"),
    "model.n_layers": (4, "layers4"),
    "model.n_heads": (2, "heads2"),
    "model.n_kv_heads": (1, "kv1"),
    "model.d_ff": (64, "ff64"),
    "model.init_std": (0.02, "init2e-2"),
    "model.rope_theta": (10.0, "rope_theta1e1"),
    "param.k": (3, "k3"),
    "preset": ("tiny-w32", "tiny-w32"),
    "language": ("zipf-spam", "zipf-spam"),
    "schedule": ("wsd", "wsd"),
    "dtype": ("bfloat16", "bfloat16"),
    "optimizer": ("lazy_adamw", "lazy_adamw"),
    "b1": (0.9, "b1_0.9"),
    "b2": (0.9999, "b2_0.9999"),
    "head_b2": (0.999, "head_b2_0.999"),
    "momentum": (0.5, "momentum_0.5"),
    "tie_embeddings": (True, "tied"),
    "residual": (False, "noresidual"),
    "head": ("lowrank:8", "head-lowrank8"),
    "head_amsgrad": (False, "nohead_amsgrad"),
    "lr": (5e-4, "lr5e-4"),
    "seed": (1, "seed1"),
    "eps": (1e-6, "eps1e-6"),
    "init_from": ("ckpt/SmolLM2-135M", "init-SmolLM2-135M"),
    "corpus": (None, "language"),
}


@pytest.mark.parametrize("axis", PIECES)
def test_run_id_pieces_are_unchanged(axis):
    value, piece = PIECES[axis]
    assert id_part(axis, value) == piece


# ----- one parser, one did-you-mean, through every entry point -------------------------------
def dry_run(tmp_path, capsys, *flags) -> dict:
    status = main(["train", *flags, "--dry-run", "--out", str(tmp_path / "r")])
    out = capsys.readouterr()
    assert status == 0, out.err
    return json.loads(out.out)


def sweep_file(tmp_path, base: dict, axes: dict) -> Path:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"name": "s", "base": base, "axes": axes}))
    return path


def test_a_flag_a_sweep_axis_and_a_set_read_the_same_text(tmp_path, capsys):
    flags = dry_run(tmp_path, capsys, "--vocab-size", "4K", "--tokens", "2M", "--lr", "3e-3")
    settings = ("--language", "cycle", "--vocab-size", "16", "--param", "k=3")
    named = dry_run(tmp_path, capsys, *settings, "--model", "n_layers=4")
    path = sweep_file(tmp_path, {}, {"vocab_size": ["4K"], "tokens": ["2M"], "lr": ["3e-3"]})
    sweep, _, _ = load_sweep_file(path)
    ((_, config),) = sweep.points()
    assert (config.vocab_size, config.tokens, config.lr) == (4096, 2_000_000, 3e-3)
    assert (flags["vocab_size"], flags["tokens"], flags["lr"]) == (4096, 2_000_000, 3e-3)
    # --param / --model and --set read NAME=VALUE alike: JSON where it parses.
    base = TrainConfig(language="cycle", vocab_size=16)
    varied = with_overrides(Sweep("s", base, {"seed": [0]}), ["param.k=3", "model.n_layers=4"])
    assert varied.base.language_params == {"k": 3} == named["language_params"]
    assert varied.base.model == {"n_layers": 4} == named["model"]


def test_a_misspelt_field_suggests_its_name_in_the_cli_and_in_a_sweep_file(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:  # argparse's own refusal, with status 2
        main(["train", "--vocab-sise", "64", "--out", str(tmp_path / "r")])
    assert e.value.code == 2
    assert "(did you mean --vocab-size?)" in capsys.readouterr().err
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"vocab_sise": 64}))
    assert main(["train", "--config", str(config), "--out", str(tmp_path / "r")]) == 2
    assert "(did you mean 'vocab_size'?)" in capsys.readouterr().err
    for base, axes in (({}, {"vocab_sise": [64]}), ({"vocab_sise": 64}, {"lr": [1e-3]})):
        path = sweep_file(tmp_path, base, axes)
        assert main(["sweep", str(path), "--out", str(tmp_path / "o"), "--dry-run"]) == 2
        err = capsys.readouterr().err
        assert "(did you mean 'vocab_size'?)" in err and len(err.splitlines()) == 1, err
