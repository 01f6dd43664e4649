"""`spamlang diagnose-lm` on tiny random transformers checkpoints (GPT-2, GPT-NeoX, Llama, Qwen3).

Everything but the missing-extra test needs the `hf` extra and is skipped without it.
"""

import json
import sys

import numpy as np
import pytest

from spamlang.cli import main
from spamlang.errors import UserError

V, D = 96, 16
FAMILIES = ("gpt2", "gpt_neox", "llama", "llama-tied", "qwen3")


def _model(kind):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("safetensors")
    special = dict(bos_token_id=0, eos_token_id=0)
    if kind == "gpt2":
        return transformers.GPT2LMHeadModel(
            transformers.GPT2Config(
                vocab_size=V, n_embd=D, n_layer=2, n_head=2, n_positions=64, **special
            )
        )
    if kind == "gpt_neox":
        return transformers.GPTNeoXForCausalLM(
            transformers.GPTNeoXConfig(
                vocab_size=V,
                hidden_size=D,
                num_hidden_layers=2,
                num_attention_heads=2,
                intermediate_size=32,
                max_position_embeddings=64,
                **special,
            )
        )
    if kind == "qwen3":  # its own head_dim and q/k norms; untied like the larger Qwen3s
        return transformers.Qwen3ForCausalLM(
            transformers.Qwen3Config(
                vocab_size=V,
                hidden_size=D,
                num_hidden_layers=2,
                num_attention_heads=2,
                num_key_value_heads=1,
                intermediate_size=32,
                head_dim=8,
                max_position_embeddings=64,
                tie_word_embeddings=False,
                **special,
            )
        )
    return transformers.LlamaForCausalLM(
        transformers.LlamaConfig(
            vocab_size=V,
            hidden_size=D,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            intermediate_size=32,
            max_position_embeddings=64,
            tie_word_embeddings=kind == "llama-tied",
            **special,
        )
    )


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("hf")
    for kind in FAMILIES:
        _model(kind).save_pretrained(root / kind)
    return root


@pytest.fixture(scope="module")
def token_file(tmp_path_factory):
    from spamlang.data import export_tokens
    from spamlang.languages import make

    path = tmp_path_factory.mktemp("tokens") / "spam.bin"
    export_tokens(make("spam", vocab_size=V), 0, 24, 6, path)
    return path


def _eq10_in_torch(model_dir, rows_NxL, vocab):
    """Equation 10 and the mean per-token projected cosine from the full model's logits."""
    import torch
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir).float().eval()
    ids = torch.as_tensor(np.asarray(rows_NxL, np.int64))
    with torch.no_grad():
        logits = model(ids).logits[:, :-1, :vocab].double().reshape(-1, vocab)
        G = torch.softmax(logits, -1) - torch.nn.functional.one_hot(ids[:, 1:].reshape(-1), vocab)
        Q, _ = torch.linalg.qr(model.get_output_embeddings().weight[:vocab].double())
        P = (G @ Q) @ Q.T
    kf = torch.linalg.norm(G - P) / torch.linalg.norm(G)
    cos = (torch.linalg.norm(P, dim=1) / torch.linalg.norm(G, dim=1)).mean()
    return (
        float(kf),
        float(cos),
        float(torch.nn.functional.cross_entropy(logits, ids[:, 1:].reshape(-1))),
    )


@pytest.mark.parametrize("kind", FAMILIES)
def test_kernel_fraction_equals_equation_10_in_torch(
    kind, checkpoints, token_file, tmp_path, capsys
):
    from spamlang.token_files import load_tokens

    out = tmp_path / "out"
    assert (
        main(
            [
                "diagnose-lm",
                str(checkpoints / kind),
                "--tokens",
                str(token_file),
                "--out",
                str(out),
                "--rank-tokens",
                "64",
                "--chunk-size",
                "32",
                "--no-figures",
            ]
        )
        == 0
    )
    diag = json.loads((out / "diagnostics.json").read_text())
    kf, cos, loss = _eq10_in_torch(checkpoints / kind, load_tokens(token_file), V)
    assert diag["kernel_fraction"] == pytest.approx(kf, rel=1e-4)
    assert diag["projected_cosine"] == pytest.approx(cos, rel=1e-4)
    assert diag["loss"] == pytest.approx(loss, rel=1e-4)
    assert diag["source"] == "diagnose-lm" and diag["model_type"] == kind.removesuffix("-tied")
    assert (diag["d_model"], diag["vocab_size"], diag["tokens"]) == (D, V, 6 * 23)
    assert diag["tie_embeddings"] == (kind in ("gpt2", "llama-tied"))
    assert diag["head_check"] < 1e-5 and not diag["head_bias"]
    assert len(diag["rank_curve"]["rank"]) == len(diag["rank_curve"]["tokens"])
    assert "kernel fraction" in capsys.readouterr().out


def test_bounds_padding_rows_and_figures(checkpoints, token_file, tmp_path):
    from spamlang.token_files import load_tokens

    out = tmp_path / "out"
    # The first 80 head rows as the real tokens (a padded head), 4 rows of 10 tokens.
    rows = np.minimum(np.asarray(load_tokens(token_file))[:4, :10], 79)
    from spamlang.diagnose_lm import diagnose_lm

    diag = diagnose_lm(checkpoints / "gpt_neox", rows, vocab_size=80, rank_tokens=16)
    kf, cos, _ = _eq10_in_torch(checkpoints / "gpt_neox", rows, 80)
    assert diag["kernel_fraction"] == pytest.approx(kf, rel=1e-4)
    assert (diag["vocab_size"], diag["head_rows"], diag["tokens"]) == (80, V, 4 * 9)
    assert (
        main(
            [
                "diagnose-lm",
                str(checkpoints / "llama"),
                "--tokens",
                str(token_file),
                "--num-seqs",
                "3",
                "--seq-len",
                "8",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    diag = json.loads((out / "diagnostics.json").read_text())
    assert (diag["num_seqs"], diag["seq_len"], diag["tokens"]) == (3, 8, 21)
    assert sorted(p.name for p in out.iterdir()) == [
        "coefficient_profile.png",
        "diagnostics.json",
        "efficiency.png",
        "rank_curve.png",
    ]


def _word_tokenizer(model_dir, words):
    tokenizers = pytest.importorskip("tokenizers")
    import transformers

    vocab = {w: i for i, w in enumerate(["[UNK]", *words])}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]").save_pretrained(
        model_dir
    )
    return vocab


def test_text_is_tokenized_with_the_checkpoints_tokenizer(checkpoints, tmp_path):
    import shutil

    model_dir = tmp_path / "llama"
    shutil.copytree(checkpoints / "llama", model_dir)
    vocab = _word_tokenizer(model_dir, [f"w{i}" for i in range(V - 1)])
    words = [f"w{(7 * i) % (V - 1)}" for i in range(100)]
    (tmp_path / "a.txt").write_text(" ".join(words), encoding="utf-8")
    from spamlang.diagnose_lm.diagnose import rows_from_text
    from spamlang.diagnose_lm.states import open_checkpoint

    rows = rows_from_text(
        tmp_path / "a.txt", open_checkpoint(model_dir).tokenizer, num_seqs=5, seq_len=16
    )
    np.testing.assert_array_equal(rows.reshape(-1), [vocab[w] for w in words[:80]])
    out = tmp_path / "out"
    assert (
        main(
            [
                "diagnose-lm",
                str(model_dir),
                "--text",
                str(tmp_path / "a.txt"),
                "--seq-len",
                "16",
                "--out",
                str(out),
                "--no-figures",
            ]
        )
        == 0
    )
    diag = json.loads((out / "diagnostics.json").read_text())
    assert (diag["num_seqs"], diag["tokens"]) == (6, 6 * 15)  # 100 words: 6 full rows
    kf, _, _ = _eq10_in_torch(
        model_dir, np.asarray([vocab[w] for w in words[:96]]).reshape(6, 16), V
    )
    assert diag["kernel_fraction"] == pytest.approx(kf, rel=1e-4)


def test_a_head_that_rescales_its_logits_is_refused(checkpoints):
    from spamlang.diagnose_lm.states import head_states, load_weights, open_checkpoint

    ckpt = open_checkpoint(checkpoints / "llama")
    model = load_weights(ckpt, device="cpu")
    model.get_output_embeddings().register_forward_hook(lambda mod, inp, out: 2 * out)
    with pytest.raises(UserError, match="not H W\\^T"):
        head_states(model, ckpt, np.zeros((2, 8), np.int32))


def test_affine_head_keeps_its_bias():
    # diagnose_head with a bias equals equation 10 on softmax(h W^T + b), projected on col(W).
    from spamlang.diagnostics import diagnose_head

    rng = np.random.default_rng(0)
    h, W, b = rng.normal(size=(40, 8)), rng.normal(size=(32, 8)), 3 * rng.normal(size=32)
    y = rng.integers(0, 32, 40)
    z = h @ W.T + b
    p = np.exp(z - z.max(1, keepdims=True))
    G = p / p.sum(1, keepdims=True) - np.eye(32)[y]
    Q, _ = np.linalg.qr(W)
    kf = np.linalg.norm(G - G @ Q @ Q.T) / np.linalg.norm(G)
    diag = diagnose_head(h, y, W, b, rank_tokens=8, chunk_size=16)
    assert diag["kernel_fraction"] == pytest.approx(kf, rel=1e-4)
    assert diagnose_head(h, y, W, rank_tokens=8)["kernel_fraction"] != pytest.approx(kf, rel=1e-3)


def _vit(path):
    transformers = pytest.importorskip("transformers")
    transformers.ViTModel(
        transformers.ViTConfig(
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            image_size=8,
            patch_size=4,
        )
    ).save_pretrained(path)


@pytest.mark.parametrize(
    "case",
    [
        "missing",
        "no_config",
        "spamlang_run",
        "vision_model",
        "ids_too_large",
        "too_long",
        "both_inputs",
        "no_tokenizer",
        "bad_dtype",
        "no_gpu",
    ],
)
def test_bad_inputs_exit_2_with_one_line(case, checkpoints, token_file, tmp_path, capsys):
    model, extra = checkpoints / "llama", ["--tokens", str(token_file)]
    if case == "missing":
        model = tmp_path / "nope"
    elif case == "no_config":
        model = tmp_path / "empty"
        model.mkdir()
    elif case == "spamlang_run":
        model = tmp_path / "run"
        model.mkdir()
        (model / "config.json").write_text(json.dumps({"vocab_size": 32, "preset": "tiny"}))
    elif case == "vision_model":
        model = tmp_path / "vit"
        _vit(model)
    elif case == "ids_too_large":
        extra += ["--vocab-size", "50"]
    elif case == "too_long":
        from spamlang.data import export_tokens
        from spamlang.languages import make

        long_file = tmp_path / "long.bin"
        export_tokens(make("spam", vocab_size=V), 0, 80, 2, long_file)
        extra = ["--tokens", str(long_file)]
    elif case == "both_inputs":
        extra += ["--text", str(token_file)]
    elif case == "bad_dtype":
        extra += ["--dtype", "float64"]
    elif case == "no_gpu":
        if pytest.importorskip("torch").cuda.is_available():
            pytest.skip("this machine has a GPU")
        extra += ["--device", "cuda"]
    elif case == "no_tokenizer":
        (tmp_path / "a.txt").write_text("hello")
        extra = ["--text", str(tmp_path / "a.txt")]
    out = tmp_path / "out"
    capsys.readouterr()  # what building the case printed (save_pretrained's progress bar)
    try:
        status = main(["diagnose-lm", str(model), *extra, "--out", str(out)])
    except SystemExit as e:  # argparse's own errors (two inputs) exit from parse_args
        status = e.code
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "error" in err, err
    assert not out.exists()  # nothing half-written


def test_without_the_extra_exit_2_naming_it(monkeypatch, tmp_path, capsys):
    # Runs with or without the extra installed: the import is made to fail.
    monkeypatch.setitem(sys.modules, "transformers", None)
    assert (
        main(["diagnose-lm", str(tmp_path), "--tokens", "x.bin", "--out", str(tmp_path / "o")]) == 2
    )
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "transformers" in err and "spamlang[hf]" in err
