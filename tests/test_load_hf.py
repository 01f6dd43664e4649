"""Llama Hugging Face checkpoints: `spamlang.model.load_hf` against transformers, the config
mapping and its refusals, and `spamlang train --init-from`.

Checkpoints are tiny random `LlamaForCausalLM`s saved to tmp_path (nothing is downloaded);
the config-mapping tests write config.json by hand and need neither torch nor safetensors.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from spamlang.cli import main
from spamlang.errors import UserError
from spamlang.model import PRESETS, ModelConfig, load_hf
from spamlang.model.hf_checkpoint import ARCHITECTURE, hf_config
from spamlang.train.config import TrainConfig

V = 96  # the checkpoints' vocabulary
# The tiny preset's backbone (d_ff 64, theta 1e4, eps 1e-5), so that the training tests'
# step compiles to what test_cli_train's tiny runs already put in the compilation cache.
LLAMA = dict(
    vocab_size=V,
    hidden_size=16,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    rms_norm_eps=1e-5,
    max_position_embeddings=128,
    initializer_range=0.25,
    rope_parameters={"rope_type": "default", "rope_theta": 10_000.0},
)
# The shapes of test_cli_train's TINY runs (V = 32 <= 96, untied).
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
    "--eval-sequences",
    "16",
    "--quiet",
]
# SmolLM2-135M's config.json as published (transformers 4.x layout), weights aside.
SMOLLM2 = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 0,
    "eos_token_id": 0,
    "hidden_act": "silu",
    "hidden_size": 576,
    "initializer_range": 0.041666666666666664,
    "intermediate_size": 1536,
    "is_llama_config": True,
    "max_position_embeddings": 8192,
    "model_type": "llama",
    "num_attention_heads": 9,
    "num_hidden_layers": 30,
    "num_key_value_heads": 3,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_interleaved": False,
    "rope_scaling": None,
    "rope_theta": 100000,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.40.1",
    "use_cache": True,
    "vocab_size": 49152,
}


def write_config(path: Path, config: dict) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(config))
    return path


@pytest.fixture(scope="module")
def hf():
    """(torch, transformers); the tests that build checkpoints skip without them."""
    pytest.importorskip("safetensors")
    return pytest.importorskip("torch"), pytest.importorskip("transformers")


def llama(hf, tied: bool, **changes):
    """A random LlamaForCausalLM whose every weight matters: matrices N(0, 0.25^2) and norm
    scales 1 + N(0, 0.25^2), so a misplaced or untransposed tensor changes the logits."""
    torch, transformers = hf
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        **{**LLAMA, **changes}, tie_word_embeddings=tied, attn_implementation="eager"
    )
    model = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.25 + (1.0 if p.ndim == 1 else 0.0))
    return model


@pytest.fixture(scope="module")
def saved(hf, tmp_path_factory):
    """{tied: (directory, its LlamaForCausalLM)} for tied and untied checkpoints."""
    out = {}
    for tied in (True, False):
        model = llama(hf, tied)
        path = tmp_path_factory.mktemp(f"llama-{'tied' if tied else 'untied'}")
        model.save_pretrained(path)
        out[tied] = (path, model)
    return out


def reference_logits(hf, model, tokens_BxL) -> np.ndarray:
    torch = hf[0]
    with torch.no_grad():
        return model(torch.tensor(np.asarray(tokens_BxL))).logits.float().numpy()


def logits(model, tokens_BxL) -> np.ndarray:
    """Raw logits h W^T (no normalisation, so a vocabulary cut compares column for column)."""
    return np.asarray(model.hidden(jnp.asarray(tokens_BxL)) @ model.head_matrix().T)


def assert_same_params(model, other):
    """Every parameter equal, path by path (the head included when there is one)."""

    def flat(m):
        return {
            jax.tree_util.keystr(k): np.asarray(v)
            for k, v in jax.tree_util.tree_leaves_with_path(nnx.state(m, nnx.Param))
        }

    got, want = flat(model), flat(other)
    assert sorted(got) == sorted(want) and len(got) == 21  # tiny shape, untied: 2 x 9 + 3
    for name in got:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def random_tokens(B=3, L=24, high=V, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, high, (B, L), dtype=np.int32)


# ----- config.json -> ModelConfig ----------------------------------------------------------------


@pytest.mark.parametrize("layout", ["transformers4", "transformers5"])
def test_smollm2_135m_is_the_paper_preset(tmp_path, layout):
    config = dict(SMOLLM2)
    if layout == "transformers5":  # rope_theta moved into rope_parameters
        del config["rope_theta"], config["rope_scaling"]
        config["rope_parameters"] = {"rope_type": "default", "rope_theta": 100000.0}
    got = hf_config(write_config(tmp_path, config))
    want = ModelConfig.preset("smollm2-106m", vocab_size=49152, tie_embeddings=True)
    for name in (*ARCHITECTURE, "vocab_size", "tie_embeddings"):
        assert getattr(got, name) == getattr(want, name), name
    # Nothing differs, not even init_std: initializer_range is 1/24 = 1/sqrt(576) exactly.
    assert got == want


def test_every_preset_field_is_fixed_by_a_checkpoint():
    # init_from writes ARCHITECTURE into model; a preset field outside it would leak
    # from the (ignored) preset into a run that starts from a checkpoint.
    assert set().union(*PRESETS.values()) <= set(ARCHITECTURE)


def test_missing_keys_take_llamaconfigs_defaults(tmp_path):
    minimal = {
        "model_type": "llama",
        "vocab_size": 64,
        "hidden_size": 32,
        "intermediate_size": 48,
        "num_hidden_layers": 1,
        "num_attention_heads": 4,
    }
    got = hf_config(write_config(tmp_path, minimal))
    assert (
        got.n_kv_heads,
        got.rope_theta,
        got.norm_eps,
        got.max_seq_len,
        got.init_std,
        got.tie_embeddings,
    ) == (4, 10_000.0, 1e-6, 2048, 0.02, False)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"model_type": "gpt2"}, "model_type 'gpt2' is not supported"),
        ({"model_type": "qwen2"}, "Llama-architecture checkpoints only (model_type llama)"),
        ({"attention_bias": True}, "attention_bias"),
        ({"mlp_bias": True}, "mlp_bias"),
        ({"rope_scaling": {"type": "linear", "factor": 2.0}}, "rope_type 'linear'"),
        ({"rope_parameters": {"rope_type": "llama3", "rope_theta": 5e5}}, "rope_type 'llama3'"),
        ({"rope_interleaved": True}, "rope_interleaved"),
        ({"hidden_act": "gelu"}, "hidden_act 'gelu'"),
        ({"head_dim": 128}, "head_dim 128 differs from hidden_size / num_attention_heads"),
        ({"num_key_value_heads": 2}, "divisible by n_kv_heads"),
        ({"hidden_size": None}, "lacks hidden_size"),
    ],
)
def test_what_the_model_cannot_hold_is_a_user_error(tmp_path, change, message):
    with pytest.raises(UserError) as info:
        hf_config(write_config(tmp_path, {**SMOLLM2, **change}))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_directory_errors(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        load_hf(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="has no config.json"):
        load_hf(tmp_path / "empty")
    bin_only = write_config(tmp_path / "bin", {**SMOLLM2, "num_hidden_layers": 1})
    (bin_only / "pytorch_model.bin").write_bytes(b"")
    pytest.importorskip("safetensors")
    with pytest.raises(UserError, match="reads safetensors only: convert it once"):
        load_hf(bin_only)
    (bin_only / "pytorch_model.bin").unlink()
    with pytest.raises(UserError, match="has no model.safetensors"):
        load_hf(bin_only)


# ----- weights ------------------------------------------------------------------------------------


@pytest.mark.parametrize("tied", [True, False], ids=["tied", "untied"])
def test_logits_match_transformers(hf, saved, tied):
    path, reference = saved[tied]
    model = load_hf(path)
    assert model.config.tie_embeddings is tied and model.config.vocab_size == V
    assert hasattr(model.head, "w") is not tied
    t = random_tokens()
    want = reference_logits(hf, reference, t)
    assert np.abs(want).max() > 1.0  # weights large enough for a wrong mapping to show
    np.testing.assert_allclose(logits(model, t), want, atol=1e-4, rtol=0)
    np.testing.assert_allclose(
        np.asarray(model(jnp.asarray(t))), jax.nn.log_softmax(want, -1), atol=1e-4, rtol=0
    )


@pytest.mark.parametrize("tied", [True, False], ids=["tied", "untied"])
def test_vocabulary_cut_keeps_the_first_ids(hf, saved, tied):
    path, reference = saved[tied]
    model = load_hf(path, vocab_size=40)
    assert model.embed[...].shape == (40, 16) and model.config.vocab_size == 40
    t = random_tokens(high=40, seed=1)
    np.testing.assert_allclose(
        logits(model, t), reference_logits(hf, reference, t)[..., :40], atol=1e-4, rtol=0
    )
    with pytest.raises(UserError, match="vocab_size 97 exceeds the 96 token ids"):
        load_hf(path, vocab_size=V + 1)


def test_a_tied_checkpoint_loads_untied_with_a_copied_head(saved):
    path, _ = saved[True]
    tied, untied = load_hf(path), load_hf(path, tie_embeddings=False)
    np.testing.assert_array_equal(untied.head.w[...], tied.embed[...])
    t = random_tokens()
    np.testing.assert_array_equal(logits(untied, t), logits(tied, t))
    with pytest.raises(UserError, match="untied lm_head"):
        load_hf(saved[False][0], tie_embeddings=True)


def test_bfloat16_and_sharded_checkpoints(hf, saved, tmp_path):
    torch = hf[0]
    path, reference = saved[False]
    bf16 = llama(hf, False).to(torch.bfloat16)
    bf16.save_pretrained(tmp_path / "bf16", max_shard_size="20KB")  # several shards + index
    assert (tmp_path / "bf16" / "model.safetensors.index.json").is_file()
    assert len(list((tmp_path / "bf16").glob("*.safetensors"))) > 1
    model = load_hf(tmp_path / "bf16")  # param_dtype float32: the bf16 values, exactly
    np.testing.assert_array_equal(
        np.asarray(model.blocks[1].attn.wq[...]),
        bf16.model.layers[1].self_attn.q_proj.weight.detach().float().numpy().T,
    )
    # The reference: the bf16 weights in a float32 model (bf16.float() would also keep the
    # RoPE frequencies rounded to bf16, which the checkpoint does not hold).
    rounded = llama(hf, False)
    rounded.load_state_dict({k: v.float() for k, v in bf16.state_dict().items()})
    t = random_tokens()
    np.testing.assert_allclose(
        logits(model, t), reference_logits(hf, rounded, t), atol=1e-4, rtol=0
    )
    kept = load_hf(tmp_path / "bf16", param_dtype="bfloat16", dtype="bfloat16")
    assert kept.embed[...].dtype == jnp.bfloat16
    np.testing.assert_array_equal(
        np.asarray(kept.embed[...], np.float32), np.asarray(model.embed[...])
    )
    np.testing.assert_allclose(logits(kept, t), logits(model, t), atol=0.5, rtol=0.05)


def _rewrite(src: Path, dst: Path, edit) -> Path:
    """A copy of checkpoint `src` whose tensors went through `edit(dict) -> dict`."""
    from safetensors.numpy import load_file, save_file

    shutil.copytree(src, dst)
    tensors = edit(load_file(str(dst / "model.safetensors")))
    save_file(tensors, str(dst / "model.safetensors"), metadata={"format": "pt"})
    return dst


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda t: {k: v for k, v in t.items() if k != "model.layers.1.mlp.up_proj.weight"},
            "lacks tensor model.layers.1.mlp.up_proj.weight",
        ),
        (
            lambda t: {k: v for k, v in t.items() if k != "lm_head.weight"},
            "lacks tensor lm_head.weight",
        ),
        (
            lambda t: {
                **t,
                "model.layers.0.self_attn.k_proj.weight": t[
                    "model.layers.0.self_attn.k_proj.weight"
                ].T.copy(),
            },
            "model.layers.0.self_attn.k_proj.weight has shape [16, 8], config.json implies [8, 16]",
        ),
        (
            lambda t: {**t, "model.layers.0.self_attn.q_proj.bias": np.zeros(16, np.float32)},
            "no place for: model.layers.0.self_attn.q_proj.bias",
        ),
    ],
    ids=["missing", "missing-head", "misshapen", "bias"],
)
def test_missing_misshapen_and_unexpected_tensors(saved, tmp_path, edit, message):
    broken = _rewrite(saved[False][0], tmp_path / "broken", edit)
    with pytest.raises(UserError) as info:
        load_hf(broken)
    assert message in str(info.value)


def test_rotary_buffers_are_ignored(saved, tmp_path):
    path = _rewrite(
        saved[False][0],
        tmp_path / "inv_freq",
        lambda t: {**t, "model.layers.0.self_attn.rotary_emb.inv_freq": np.ones(4, np.float32)},
    )
    np.testing.assert_array_equal(load_hf(path).embed[...], load_hf(saved[False][0]).embed[...])


# ----- TrainConfig.init_from ----------------------------------------------------------------------


def test_init_from_writes_the_architecture_into_the_config(saved):
    path = str(saved[True][0])
    config = TrainConfig(init_from=path, vocab_size=32, seq_len=16)
    checkpoint = hf_config(path)
    assert config.model == {name: getattr(checkpoint, name) for name in ARCHITECTURE}
    model = config.model_config()
    assert (model.d_model, model.d_ff, model.vocab_size, model.tie_embeddings) == (
        16,
        64,
        32,
        False,
    )
    # config.json round trip: the same config, which restates the overrides it was given.
    assert TrainConfig.from_json(config.to_json()) == config
    assert config.replace(model={"d_model": 16}) == config
    assert TrainConfig(init_from="", vocab_size=32).init_from is None


def test_a_run_config_outlives_its_checkpoint_directory(saved, tmp_path):
    moved = tmp_path / "moved"
    shutil.copytree(saved[True][0], moved)
    config = TrainConfig(init_from=str(moved), vocab_size=32, seq_len=16)
    shutil.rmtree(moved)
    assert TrainConfig.from_json(config.to_json()) == config  # load_run, resume: no re-read
    with pytest.raises(UserError, match="does not exist"):
        TrainConfig(init_from=str(moved), vocab_size=32)  # a new run needs the checkpoint


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(vocab_size=V + 1), "vocab_size 97 exceeds the 96 token ids"),
        (dict(head="mos:2"), "head 'mos:2' cannot start from init_from"),
        (dict(head="lowrank:4"), "head 'lowrank:4' cannot start from init_from"),
        (dict(model={"d_model": 32}), "model d_model=32 contradicts"),
        (dict(seq_len=256), "exceeds init_from"),
        (dict(tie_embeddings=True, untied=True), "untied lm_head"),
    ],
)
def test_init_from_contradictions(saved, changes, message):
    changes = dict(changes)
    path = saved[not changes.pop("untied", False)][0]
    with pytest.raises(UserError) as info:
        TrainConfig(init_from=str(path), **{"vocab_size": 32, "seq_len": 16, **changes})
    assert message in str(info.value)


def test_a_sweep_base_may_start_from_a_checkpoint(saved):
    from spamlang.sweep import Sweep

    base = TrainConfig(init_from=str(saved[True][0]), vocab_size=32, seq_len=16)
    sweep = Sweep("hf", base, {"tie_embeddings": [True, False], "lr": [1e-3, 3e-3]})
    assert len(sweep.points()) == 4
    assert all(c.init_from == base.init_from and c.model == base.model for _, c in sweep.points())
    with pytest.raises(UserError, match="vocab_size 128 exceeds"):
        Sweep("hf", base, {"vocab_size": [32, 128]})
    # Checkpoint against random init, as an axis over a base without one.
    plain = TrainConfig(vocab_size=32, seq_len=16)
    points = dict(Sweep("hf", plain, {"init_from": [None, base.init_from]}).points())
    name = Path(base.init_from).name
    assert set(points) == {"scratch", f"init-{name}"}
    assert points[f"init-{name}"] == base and points["scratch"] == plain


def test_program_init_holds_the_checkpoint_laid_out_like_a_fresh_init(saved):
    from spamlang.train.step import program

    path = str(saved[True][0])
    prog = program(
        TrainConfig(
            init_from=path,
            vocab_size=32,
            seq_len=16,
            batch_size=8,
            tokens=8 * 16 * 10,
            schedule="constant",
            warmup_frac=0.0,
            eval_sequences=16,
        )
    )
    state = prog.init([0, 1], [1e-3, 1e-3])
    abstract = prog.abstract_state(2)
    assert jax.tree.structure(state) == jax.tree.structure(abstract)
    for got, want in zip(jax.tree.leaves(state), jax.tree.leaves(abstract)):
        assert (got.shape, got.dtype, got.sharding) == (want.shape, want.dtype, want.sharding)
    loaded = load_hf(path, vocab_size=32, tie_embeddings=False)
    for member in (0, 1):  # the same weights whatever the seed
        assert_same_params(prog.model(state, member), loaded)


# ----- spamlang train --init-from -----------------------------------------------------------------


def test_help_shows_the_flag(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--init-from DIR" in text and "Hugging Face Llama checkpoint" in text


def test_train_starts_from_the_checkpoints_weights(saved, tmp_path):
    from spamlang.train import load_run

    # An LR far below float32 resolution: the trained weights stay the step-0 weights.
    out = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "--init-from",
                str(saved[True][0]),
                *TINY,
                "--lr",
                "1e-30",
                "--tokens",
                str(2 * 8 * 16),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    config, model = load_run(out)
    assert config.init_from == str(saved[True][0]) and config.model["d_ff"] == 64
    assert_same_params(model, load_hf(saved[True][0], vocab_size=32, tie_embeddings=False))


def test_train_learns_and_resumes_without_the_checkpoint(saved, tmp_path):
    from spamlang.train import Interrupted, run_training

    source = tmp_path / "smol"
    shutil.copytree(saved[True][0], source)
    out = tmp_path / "run"
    config = TrainConfig(
        init_from=str(source),
        vocab_size=32,
        seq_len=16,
        batch_size=8,
        schedule="constant",
        warmup_frac=0.0,
        eval_sequences=16,
        lr=1e-2,
        tokens=30 * 8 * 16,
        log_every=5,
    )
    with pytest.raises(Interrupted):
        run_training(config, out, quiet=True, stop_after_step=10)
    shutil.rmtree(source)  # a resumed run restores its own checkpoint, never the source
    assert main(["train", "--config", str(out / "config.json"), "--out", str(out)]) == 0
    result = json.loads((out / "result.json").read_text())
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in rows if r["kind"] == "train"]
    assert result["steps"] == 30 and np.isfinite(result["final_eval_loss"])
    assert len(losses) == 6 and losses[-1] < losses[0] - 0.2


def _gpt2(hf, path: Path) -> Path:
    _, transformers = hf
    transformers.GPT2LMHeadModel(
        transformers.GPT2Config(
            vocab_size=V,
            n_embd=16,
            n_layer=1,
            n_head=2,
            n_positions=32,
            bos_token_id=0,
            eos_token_id=0,
        )
    ).save_pretrained(path)
    return path


@pytest.mark.parametrize(
    "case, message",
    [
        ("missing", "does not exist"),
        ("no-config", "has no config.json"),
        ("gpt2", "model_type 'gpt2' is not supported"),
        ("vocab", "vocab_size 128 exceeds the 96 token ids"),
        ("mos", "head 'mos:2' cannot start from init_from"),
    ],
)
def test_train_refuses_early_with_one_line(hf, saved, tmp_path, capsys, case, message):
    source = {
        "missing": tmp_path / "nowhere",
        "no-config": tmp_path,
        "gpt2": tmp_path / "gpt2",
    }.get(case, saved[True][0])
    if case == "gpt2":
        _gpt2(hf, source)
        capsys.readouterr()  # transformers' progress bar
    extra = {"vocab": ["--vocab-size", "128"], "mos": ["--head", "mos:2"]}.get(case, [])
    out = tmp_path / "run"
    status = main(["train", "--init-from", str(source), *TINY, *extra, "--out", str(out)])
    err = capsys.readouterr().err
    assert status == 2
    assert len(err.strip().splitlines()) == 1 and message in err and "Traceback" not in err
    assert not out.exists()  # refused before the run directory was made


def test_a_config_file_without_the_weights_is_refused_before_writing(saved, tmp_path, capsys):
    # Its model already hold the architecture, so only the run checks the weights.
    moved = tmp_path / "moved"
    shutil.copytree(saved[True][0], moved)
    config = TrainConfig(init_from=str(moved), vocab_size=32, seq_len=16)
    (moved / "model.safetensors").unlink()
    (tmp_path / "c.json").write_text(json.dumps(config.to_json()))
    out = tmp_path / "run"
    assert main(["train", "--config", str(tmp_path / "c.json"), "--out", str(out)]) == 2
    assert "has no model.safetensors" in capsys.readouterr().err
    assert not out.exists()
