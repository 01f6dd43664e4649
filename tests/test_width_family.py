"""The width family `<base>-w<D>`: the rule, init norms, bad names, and every place it is used."""

import math

import jax.numpy as jnp
import pytest
from flax import nnx

from spamlang.cli import main
from spamlang.errors import UserError
from spamlang.model import PRESETS, ModelConfig, Transformer
from spamlang.model.config import WIDTH_BASES, model_field, preset_fields
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

V = 256


# --- the rule ----------------------------------------------------------------------------


@pytest.mark.parametrize("base", WIDTH_BASES)
def test_a_base_at_its_own_width_is_the_base(base):
    assert preset_fields(f"{base}-w{PRESETS[base]['d_model']}") == PRESETS[base]


def test_tiny_w64_and_small_w128_follow_the_rule():
    assert preset_fields("tiny-w64") == dict(
        d_model=64, n_layers=2, n_heads=8, n_kv_heads=4, d_ff=256, max_seq_len=2048, init_std=0.125
    )
    assert preset_fields("small-w128") == dict(
        d_model=128,
        n_layers=2,
        n_heads=8,
        n_kv_heads=4,
        d_ff=512,
        max_seq_len=2048,
        init_std=1 / math.sqrt(128),
    )
    c = ModelConfig.preset("medium-w256", vocab_size=V)
    assert (c.d_model, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim, c.d_ff) == (
        256,
        4,
        8,
        4,
        32,
        1024,
    )


def test_lookup_returns_a_copy():
    preset_fields("tiny")["d_model"] = 999
    assert PRESETS["tiny"]["d_model"] == 16


# --- what the rule is for: the embedding row norm does not move with D --------------------


def mean_embedding_row_norm(config: ModelConfig) -> float:
    model = Transformer(config, rngs=nnx.Rngs(0))
    return float(jnp.linalg.norm(model.embed[...], axis=1).mean())


@pytest.mark.parametrize("name", ["tiny", "tiny-w32", "tiny-w64"])
def test_family_embedding_row_norm_is_one_at_every_width(name):
    norm = mean_embedding_row_norm(ModelConfig.preset(name, vocab_size=V))
    assert norm == pytest.approx(1.0, rel=0.05)


def test_a_plain_d_model_override_moves_the_embedding_norm():
    # The confound the family removes: init_std 0.25 kept at D=64 gives rows of norm ~2.
    norm = mean_embedding_row_norm(ModelConfig.preset("tiny", vocab_size=V, d_model=64))
    assert norm == pytest.approx(2.0, rel=0.05)


# --- bad names ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, message",
    [
        ("tiny-w12", "not a positive multiple of tiny's head_dim 8"),
        ("tiny-w24", "2 query heads per KV head"),  # 3 heads cannot share KV heads in pairs
        ("tiny-w0", "positive integer"),
        ("tiny-wx", "positive integer"),
        ("tiny-w016", "positive integer"),  # one name per width, so one run id per model
        ("nosuch-w32", "unknown model preset"),
        ("huge", "unknown model preset"),
        # The paper's model is a fixed shape: no family (d_ff ratio 8/3, 3 query heads per KV).
        ("smollm2-106m-w64", "no width family"),
    ],
)
def test_bad_names_raise_one_line_user_errors(name, message):
    with pytest.raises(UserError, match=message) as info:
        preset_fields(name)
    text = str(info.value)
    assert "\n" not in text and name in text
    if "head" in message or "integer" in message:
        assert "tiny-w<D> takes D = 16, 32, 48, ..." in text  # names the valid widths
    if "unknown" in message:
        assert "tiny, small, medium, smollm2-106m, and <base>-w<D>" in text


def test_cli_rejects_a_bad_family_name_with_status_2(tmp_path, capsys):
    status = main(
        ["train", "--preset", "tiny-w12", "--vocab-size", "64", "--out", str(tmp_path / "run")]
    )
    err = capsys.readouterr().err
    assert status == 2
    assert len(err.strip().splitlines()) == 1 and "tiny-w12" in err and "Traceback" not in err
    assert not (tmp_path / "run" / "metrics.jsonl").exists()


def test_cli_accepts_a_family_name_and_its_help_explains_it(capsys):
    assert (
        main(
            ["train", "--preset", "tiny-w64", "--vocab-size", "64", "--out", "unused", "--dry-run"]
        )
        == 0
    )
    assert '"preset": "tiny-w64"' in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "<base>-w<D> for base tiny, small, medium" in text


# --- train config, sweep ids, results.csv ------------------------------------------------


def test_train_config_and_sweep_use_the_family():
    base = TrainConfig(
        preset="tiny-w32", vocab_size=64, seq_len=16, batch_size=8, tokens=8 * 16 * 4
    )
    model = base.model_config()
    assert (model.d_model, model.n_heads, model.d_ff, model.init_std) == (
        32,
        4,
        128,
        1 / math.sqrt(32),
    )
    sweep = Sweep("width", base.replace(preset="tiny"), {"preset": ["tiny", "tiny-w32"]})
    ids = [run_id for run_id, _ in sweep.points()]
    assert ids == ["tiny", "tiny-w32"]
    assert [config.model_config().d_model for _, config in sweep.points()] == [16, 32]
    with pytest.raises(UserError, match="tiny-w12"):
        Sweep("bad", base, {"preset": ["tiny", "tiny-w12"]})


def test_results_show_the_real_d_model():
    assert model_field({"preset": "tiny-w32"}, "d_model") == 32
    assert model_field({"preset": "tiny-w32"}, "n_kv_heads") == 2
    assert model_field({"preset": "tiny-w32", "model_overrides": {"d_model": 48}}, "d_model") == 48
    assert model_field({"preset": "gone"}, "d_model") == 64  # ModelConfig's default
