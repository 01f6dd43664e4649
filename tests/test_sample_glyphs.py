"""Samples a researcher can read (issue #22, item 10): no look-alike glyphs, token ids on request,
greedy rows that differ, and statistics that say what "correct" means and show a sample that
repeats the wrong symbol."""

from __future__ import annotations

import re
import unicodedata

import jax.numpy as jnp
import numpy as np
import pytest

from spamlang import glyphs, languages
from spamlang.cli import main
from spamlang.errors import UserError
from spamlang.sample import SampleResult, describe, render_html, render_text, sample_with


def test_no_glyph_looks_like_another():
    text = glyphs.render(np.arange(4096))
    # A letter with a mark or in another form of a letter is left out: token 945 was Ӯ, which
    # reads as ȳ; and letters of other scripts that copy A, a, o, e, p, c, x, y, 3.
    assert all(unicodedata.normalize("NFKD", c) == c for c in text)
    for copy in "ӮȳΑАᎪꓮаαοоеерсхуЗ":
        assert copy not in text
        with pytest.raises(UserError, match="not a token glyph"):
            glyphs.token_of(copy)
    # Right-to-left letters would make a terminal reorder the sample around them.
    assert not any(unicodedata.bidirectional(c) in ("R", "AL") for c in text)
    assert glyphs.tokens_of(text) == list(range(4096))


def _spam(v=64):
    return languages.make("spam", vocab_size=v)


def _result(tokens, v=1024, info=None):
    tokens = np.asarray(tokens)
    correct = np.asarray(_spam(v).is_most_likely(jnp.asarray(tokens)))
    base = {
        "language": "spam",
        "vocab_size": v,
        "temperature": 0.9,
        "seed": 0,
        "correct": "the seed symbol again",
    }
    return SampleResult.from_flags(tokens, correct, 1, {**base, **(info or {})})


def test_a_sample_that_repeats_the_wrong_symbol_shows_it():
    xi = 945
    r = _result([[0] + [xi] * 9, [0] * 10])
    wrong, right = r.stats
    assert (wrong.longest_run, wrong.longest_repeat, wrong.repeat_token) == (0, 9, xi)
    assert (right.longest_run, right.longest_repeat, right.repeat_token) == (9, 9, 0)
    text = render_text(r)
    assert (
        "correct: a token the language most likely emits next, given the tokens before it "
        "(the seed symbol again)"
    ) in text
    assert "repeat: the longest stretch of one symbol, correct or not" in text
    header = next(line for line in text.splitlines() if line.lstrip().startswith("#"))
    assert header.split() == ["#", "correct", "1st", "err", "run", "repeat", "sample"]
    rows = [line.split() for line in text.splitlines() if re.match(r"\s+[01]\s", line)]
    assert [row[3:5] for row in rows] == [["0", "9"], ["9", "9"]]


def test_ids_instead_of_glyphs_with_markers_under_each():
    r = _result([[0, 0, 945, 945], [0, 0, 0, 0]])
    text = render_text(r, ids=True)
    lines = text.splitlines()
    sample = next(line for line in lines if line.endswith("0   0 945 945"))
    marks = lines[lines.index(sample) + 1]
    assert marks.endswith("  s   .   x   x")
    assert len(marks) == len(sample)
    assert glyphs.glyph(945) not in text
    page = render_html(r, ids=True)
    assert '<td class="tok incorrect" title="token 945">945</td>' in page
    assert glyphs.glyph(945) not in page


def test_lrs_and_vocabularies_are_written_as_everywhere_else():
    r = _result([[0, 0]], info={"lr": 0.005, "tie_embeddings": True, "head": "softmax"})
    assert "spam V=1024; lr 5e-3, tied" in describe(r)


def _perfect(prompt_NxP, length, key, temperature):
    return jnp.tile(prompt_NxP[:, :1], (1, length))


def test_greedy_samples_start_from_different_symbols():
    r = sample_with(_perfect, _spam(), n=4, length=6, temperature=0.0)
    assert len({tuple(row) for row in r.tokens.tolist()}) == 4
    assert r.summary.mean_fraction_correct == 1.0
    assert "prompt drawn from the language" in describe(r)
    # One greedy sample, or sampling at a temperature, keeps the paper's seed A.
    assert (sample_with(_perfect, _spam(), n=1, length=4, temperature=0.0).tokens == 0).all()
    assert (sample_with(_perfect, _spam(), n=3, length=4).tokens == 0).all()
    with pytest.raises(UserError, match="greedy decoding of one prompt gives 4 identical samples"):
        sample_with(_perfect, _spam(), n=4, length=6, temperature=0.0, prompt="B")


def test_cli_refuses_n_identical_greedy_samples_before_loading(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()  # no checkpoint: the refusal must come first
    assert main(["sample", str(run), "--greedy", "-n", "4", "--prompt", "A"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(
            "spamlang sample: error: --greedy with --prompt gives 4 identical samples; use -n 1"
        )
        and err.count("\n") == 1
    )


def test_cli_greedy_ids_end_to_end(tmp_path, capsys):
    from spamlang.train import run_training
    from spamlang.train.config import TrainConfig

    run = tmp_path / "run"
    run_training(
        TrainConfig(
            preset="tiny",
            vocab_size=16,
            seq_len=16,
            batch_size=8,
            tokens=10_240,
            lr=1e-2,
            eval_sequences=16,
            log_every=20,
            model={"n_layers": 1},  # one layer: learns as well, compiles faster
        ),
        run,
        quiet=True,
    )
    capsys.readouterr()
    assert (
        main(
            [
                "sample",
                str(run),
                "--greedy",
                "-n",
                "4",
                "--length",
                "8",
                "--ids",
                "--color",
                "never",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if re.match(r"\s+[0-3]\s+\d", line)]
    assert len(rows) == 4 and all(len(row) == 5 + 8 for row in rows)
    assert len({tuple(row[5:]) for row in rows}) == 4  # four different greedy samples
    assert len({row[5] for row in rows}) == 4  # each from its own seed symbol
