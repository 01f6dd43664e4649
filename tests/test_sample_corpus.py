"""`spamlang sample` on a corpus run: prompts from val.bin or --prompt, text decoded through the
corpus's tokenizer.json (ids without one), SpamLang's figures refused. One tiny run, trained
once on a byte-level BPE corpus made here."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest

pytest.importorskip("tokenizers")

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402

from spamlang.cli import main  # noqa: E402

WORDS = "the quick brown fox jumps over a lazy dog while seven small cats sleep".split()


@pytest.fixture(autouse=True)
def _one_thread(monkeypatch):
    # As in test_tokenize: a used tokenizers thread pool warns into every later fork's stderr.
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")


def make_text_corpus(folder, tokenizer_json: bool = True) -> Tokenizer:
    """A byte-level BPE trained on made-up sentences, and its ids as train.bin / val.bin."""
    rng = np.random.default_rng(0)
    sentences = [" ".join(rng.choice(WORDS, 8)) + ".\n" for _ in range(400)]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    tok.train_from_iterator(
        sentences,
        trainers.BpeTrainer(vocab_size=300, initial_alphabet=alphabet, show_progress=False),
    )
    folder.mkdir(parents=True)
    for name, part in (("train.bin", sentences[:360]), ("val.bin", sentences[360:])):
        np.asarray(tok.encode("".join(part)).ids, "<u2").tofile(folder / name)
    meta = {"vocab_size": tok.get_vocab_size(), "dtype": "uint16"}
    (folder / "meta.json").write_text(json.dumps(meta))
    if tokenizer_json:
        tok.save(str(folder / "tokenizer.json"))
    return tok


@pytest.fixture(scope="module")
def text_run(tmp_path_factory):
    """(run directory, its corpus folder, the tokenizer) of one tiny finished corpus run."""
    root = tmp_path_factory.mktemp("text")
    tok = make_text_corpus(root / "corpus")
    run = root / "run"
    argv = ["train", "--corpus", str(root / "corpus"), "--preset", "tiny", "--tokens", "8K"]
    argv += ["--model", "n_layers=1"]  # one layer: compiles faster; depth is not sampled here
    assert main([*argv, "--batch-size", "8", "--seq-len", "16", "--out", str(run)]) == 0
    return run, root / "corpus", tok


def blocks(stdout: str) -> dict[str, tuple[str, str]]:
    """{"[k] prompt" / "[k] continuation": (its header's rest, its indented text)}."""
    out, key = {}, None
    for line in stdout.splitlines()[1:]:
        if m := re.match(r"(\[\d+\] (?:prompt|continuation)) \((.*)\):$", line):
            key = m.group(1)
            out[key] = (m.group(2), "")
        else:
            head, text = out[key]
            out[key] = (head, text + ("\n" if text else "") + line.removeprefix("    "))
    return out


def test_prompts_from_val_bin_are_decoded_apart_from_their_continuations(text_run, capsys):
    run, corpus, tok = text_run
    assert main(["sample", str(run), "-n", "2", "--color", "never"]) == 0
    stdout = capsys.readouterr().out
    assert "corpus corpus" in stdout.splitlines()[0] and "tokenizer.json" in stdout
    parts = blocks(stdout)
    assert sorted(parts) == ["[0] continuation", "[0] prompt", "[1] continuation", "[1] prompt"]
    val = np.fromfile(corpus / "val.bin", "<u2")
    for k in (0, 1):
        head, text = parts[f"[{k}] prompt"]
        start = int(re.search(r"val.bin from token ([\d,]+)", head).group(1).replace(",", ""))
        assert head.startswith("8 tokens") and start % 16 == 0  # the first half of 16
        assert text == tok.decode(val[start : start + 8].tolist())
        assert parts[f"[{k}] continuation"][0] == "8 tokens"


def test_a_given_prompt_is_encoded_by_the_tokenizer(text_run, capsys):
    run, _, tok = text_run
    text = "the lazy dog jumps"
    argv = ["sample", str(run), "-n", "1", "--prompt", text, "--greedy", "--color", "never"]
    assert main(argv) == 0
    parts = blocks(capsys.readouterr().out)
    n = len(tok.encode(text).ids)
    assert parts["[0] prompt"] == (f"{n} tokens", text)
    assert parts["[0] continuation"][0] == f"{max(16, n + 8) - n} tokens"
    assert main([*argv, "--ids"]) == 0
    ids = " ".join(map(str, tok.encode(text).ids))
    assert blocks(capsys.readouterr().out)["[0] prompt"][1] == ids


def test_spamlang_figures_are_refused_in_one_line(text_run, tmp_path, capsys):
    run = text_run[0]
    assert main(["sample", str(run), "--png", str(tmp_path / "s.png")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is a corpus run: --html and --png" in err[0]


def test_without_tokenizer_json_ids_are_shown_and_prompts_are_ids(text_run, tmp_path, capsys):
    run, corpus, _ = text_run
    shutil.move(corpus / "tokenizer.json", tmp_path / "tokenizer.json")
    try:
        assert main(["sample", str(run), "-n", "1", "--prompt", "hello"]) == 2
        assert "give the prompt as ids" in capsys.readouterr().err
        assert main(["sample", str(run), "-n", "1", "--prompt", "5,6,7", "--color", "never"]) == 0
        stdout = capsys.readouterr().out
        assert "the corpus has no tokenizer.json" in stdout
        assert blocks(stdout)["[0] prompt"] == ("3 tokens", "5 6 7")
    finally:
        shutil.move(tmp_path / "tokenizer.json", corpus / "tokenizer.json")


def test_sample_run_of_a_corpus_run_gives_text_samples(text_run):
    from spamlang.errors import UserError
    from spamlang.sample import TextSamples, sample_run

    run = text_run[0]
    samples = sample_run(run, n=2, seed=1)
    assert isinstance(samples, TextSamples) and samples.tokens.shape == (2, 16)
    assert samples.prompt_len == 8 and len(samples.starts) == 2
    with pytest.raises(UserError, match="greedy decoding of one prompt gives 2 identical samples"):
        sample_run(run, n=2, temperature=0.0, prompt="the dog")
