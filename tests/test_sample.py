"""Glyphs, sample statistics, renderers and the `spamlang sample` command."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import unicodedata
import warnings

import jax.numpy as jnp
import numpy as np
import pytest

from spamlang import glyphs, languages
from spamlang.cli import main
from spamlang.errors import UserError
from spamlang.sample import (
    SampleResult,
    SampleStats,
    parse_prompt,
    render_html,
    render_text,
    sample_stats,
    sample_with,
    summarize,
)

N_IDS = 131_072  # the paper's largest vocabulary


# ----- glyphs ------------------------------------------------------------------------------------
def test_glyphs_are_visible_single_columns_unique_and_reversible():
    wcwidth = pytest.importorskip("wcwidth").wcwidth  # the reference terminals follow
    n = glyphs.num_glyphs()
    text = glyphs.render(np.arange(n))
    assert len(text) == n and len(set(text)) == n  # one code point each, all distinct
    assert glyphs.tokens_of(text) == list(range(n))
    assert text[:52] == "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    # Every id up to the paper's largest V: one visible column, or no glyph at all.
    assert [i for i in range(min(n, N_IDS)) if wcwidth(text[i]) != 1] == []
    assert not glyphs.has_glyphs([n]) and glyphs.has_glyphs([n - 1])
    cats = {unicodedata.category(c) for c in set(text)}
    assert not cats & {"Mn", "Mc", "Me", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn"}
    assert not set(text) & set("0123456789, \t\n")  # ids can be written in digits unambiguously
    assert not any(unicodedata.category(c) == "Nd" for c in text)


def test_tokens_past_the_glyphs_show_as_ids_everywhere(tmp_path):
    from spamlang.cli.sample_cmd import sample_figure
    from spamlang.sample import shows_ids

    past = glyphs.num_glyphs() + 5
    tokens = np.array([[past, past, past], [past, 3, past]])
    r = SampleResult.from_flags(
        tokens,
        np.array([[1, 1], [0, 0]], bool),
        1,
        {
            "language": "spam",
            "vocab_size": past + 1,
            "seed": 0,
            "prompt": str(past),
            "prompt_ids": [past],
        },
    )
    assert shows_ids(r)
    assert str(past) in render_text(r) and f'title="token {past}">{past}<' in render_html(r)
    sample_figure(r, tmp_path / "s.png")  # no error: the cells show ids


def test_prompt_as_ids_in_the_header_with_ids():
    r = _spam_result()
    r.info.update(prompt="F", prompt_ids=[5])
    assert "prompt F" in render_text(r).splitlines()[0]
    assert "prompt 5" in render_text(r, ids=True).splitlines()[0]
    assert "prompt 5" in render_html(r, ids=True)


def test_glyph_errors():
    for bad in (-1, glyphs.num_glyphs()):
        with pytest.raises(UserError, match="has no glyph"):
            glyphs.glyph(bad)
    with pytest.raises(UserError, match="not a token glyph"):
        glyphs.token_of("7")
    with pytest.raises(UserError, match="one character"):
        glyphs.token_of("AB")
    assert parse_prompt("AAb") == [0, 0, 27]
    assert parse_prompt(" 3, 5 7 ") == [3, 5, 7]
    with pytest.raises(UserError, match="bad prompt"):
        parse_prompt("A A")


# ----- statistics --------------------------------------------------------------------------------
def test_sample_stats_hand_made():
    # flag t judges token t+1; one seed token, so every flag is a generated token.
    assert sample_stats([1, 1, 0, 1, 1, 1, 0], 1) == SampleStats(5 / 7, 2, 3)
    assert sample_stats([1, 1, 1], 1) == SampleStats(1.0, -1, 3)
    assert sample_stats([0, 0, 0, 0], 1) == SampleStats(0.0, 0, 0)
    # A 3-token prompt: the first two flags judge prompt tokens and are ignored.
    assert sample_stats([0, 1, 1, 0, 1, 1, 1, 1], 3) == SampleStats(5 / 6, 1, 4)
    with pytest.raises(UserError):
        sample_stats([1, 1], 3)


def test_summary_means():
    stats = [SampleStats(1.0, -1, 8), SampleStats(0.5, 2, 4), SampleStats(0.25, 5, 2)]
    m = summarize(stats)
    assert (m.n, m.error_free) == (3, 1)
    assert m.mean_fraction_correct == pytest.approx(1.75 / 3)
    assert m.mean_first_error == pytest.approx(3.5)  # over samples that have an error
    assert m.mean_longest_run == pytest.approx(14 / 3)
    assert summarize([SampleStats(1.0, -1, 3)]).mean_first_error is None


def _spam_result():
    lang = languages.make("spam", vocab_size=64)
    tokens = np.array([[0, 0, 0, 0, 0, 0], [0, 0, 0, 30, 30, 0], [0, 5, 5, 5, 5, 5]])
    correct = np.asarray(lang.is_most_likely(jnp.asarray(tokens)))
    return SampleResult.from_flags(
        tokens, correct, 1, {"language": "spam", "vocab_size": 64, "temperature": 0.9, "seed": 0}
    )


def test_result_from_language_flags():
    r = _spam_result()
    assert [s.first_error for s in r.stats] == [-1, 2, 0]
    assert [s.longest_run for s in r.stats] == [5, 2, 0]
    assert [s.fraction_correct for s in r.stats] == [1.0, 3 / 5, 0.0]
    assert list(r.kinds()[1]) == ["seed", "correct", "correct", "incorrect", "incorrect", "correct"]


def test_renderers():
    r = _spam_result()
    plain = render_text(r, colour=False)
    assert "\x1b[" not in plain
    assert "AAAAAA" in plain and "AAAeeA" in plain and "AFFFFF" in plain
    assert "s..xx." in plain and "sxxxxx" in plain
    assert re.search(r"avg\s+53\.3%\s+1\.0\s+2\.3", plain)  # means: 8/15, (2+0)/2, 7/3
    ansi = render_text(r, colour=True)
    assert "\x1b[1;4;31mee\x1b[0m" in ansi and "\x1b[1;34mA\x1b[0m" in ansi
    page = render_html(r)
    assert page.count('<td class="tok seed"') == 3  # one per sample
    assert page.count('<td class="tok incorrect"') == 2 + 5
    assert '<span class="tok incorrect">incorrect</span>' in page  # the legend
    assert '<td class="tok incorrect" title="token 30">e</td>' in page


def test_sample_with_fake_models():
    lang = languages.make("spam", vocab_size=64)

    def perfect(prompt_NxP, length, key, temperature):
        return jnp.tile(prompt_NxP[:, :1], (1, length))

    def breaks_at_3(prompt_NxP, length, key, temperature):
        tokens = jnp.tile(prompt_NxP[:, :1], (1, length))
        return tokens.at[:, 3].set((prompt_NxP[:, 0] + 1) % 64)

    r = sample_with(perfect, lang, n=4, length=10)
    assert r.tokens.shape == (4, 10) and (r.tokens == 0).all()  # seeded with token 0, 'A'
    assert r.summary.mean_fraction_correct == 1.0 and r.summary.error_free == 4
    r = sample_with(breaks_at_3, lang, n=2, length=10, prompt="B")
    assert [(s.first_error, s.longest_run) for s in r.stats] == [(2, 6), (2, 6)]
    # A language that needs a longer seed gets its own first tokens, one pattern per sample.
    cycle = languages.make("cycle", vocab_size=64, k=3)
    r = sample_with(lambda p, n, k, t: jnp.tile(p, (1, 4))[:, :n], cycle, n=5, length=12, seed=1)
    assert r.prompt_len == 3 and r.summary.mean_fraction_correct == 1.0
    with pytest.raises(UserError, match="outside the vocabulary"):
        sample_with(perfect, lang, n=1, length=4, prompt=[64])
    with pytest.raises(UserError, match="temperature"):
        sample_with(perfect, lang, n=1, length=4, temperature=-1.0)
    with pytest.raises(UserError, match="must exceed the prompt"):
        sample_with(perfect, lang, n=1, length=2, prompt="AB")


def test_sample_png(tmp_path):
    from spamlang.cli.sample_cmd import sample_figure

    for name, magic in (("t.png", b"\x89PNG"), ("t.pdf", b"%PDF")):
        data = sample_figure(_spam_result(), tmp_path / name).read_bytes()
        assert data.startswith(magic) and len(data) > 3000
    with pytest.raises(UserError, match=r"\.png or \.pdf"):
        sample_figure(_spam_result(), tmp_path / "t.gif")


# ----- CLI ---------------------------------------------------------------------------------------
def test_cli_errors(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    assert main(["sample", str(tmp_path / "missing")]) == 2
    assert main(["sample", str(run), "--temperature", "-0.5"]) == 2
    assert main(["sample", str(run), "--html", str(tmp_path / "x.txt")]) == 2
    assert main(["sample", str(run), "--png", str(tmp_path / "x.jpg")]) == 2
    assert main(["sample", str(run), "--prompt", "A?"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 5 and all(line.startswith("spamlang sample: error: ") for line in err)
    assert "no such run directory" in err[0] and "temperature" in err[1] and "'?'" in err[4]


def test_cli_output_files_need_existing_folders(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    for flag, name in (("--html", "s.html"), ("--png", "s.png")):
        assert main(["sample", str(run), flag, str(tmp_path / "no" / name)]) == 2
        assert capsys.readouterr().err == (
            f"spamlang sample: error: no such directory: {tmp_path / 'no'} (create it first)\n"
        )
    assert not (tmp_path / "no").exists()


def test_length_beyond_training_warns_and_beyond_the_model_is_refused():
    from spamlang.sample import check_length

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_length(16, 16, 2048)
    with pytest.warns(
        UserWarning,
        match="length 20 exceeds the run's trained seq_len 16: "
        "positions 16-19 are RoPE extrapolation",
    ):
        check_length(20, 16, 2048)
    with pytest.raises(UserError, match="length 2049 exceeds the model's max_seq_len 2048"):
        check_length(2049, 16, 2048)
    # SpamLang is position-invariant: a long sample of an L = 2 run is no extrapolation.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_length(64, 2, 2048, invariant=True)
    with pytest.raises(UserError, match="max_seq_len"):
        check_length(2049, 2, 2048, invariant=True)


def test_cli_subprocess_missing_run(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "spamlang", "sample", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert (
        proc.stderr.strip() == f"spamlang sample: error: no such run directory: {tmp_path / 'nope'}"
    )


def test_sample_end_to_end(tmp_path, capsys):
    from spamlang.sample import sample_run
    from spamlang.train import run_training
    from spamlang.train.config import TrainConfig

    run = tmp_path / "run"
    config = TrainConfig(
        preset="tiny",
        vocab_size=16,
        seq_len=16,
        batch_size=8,
        tokens=10_240,
        lr=1e-2,
        eval_sequences=16,
        log_every=20,
        weight_decay=0.0,
        model={"n_layers": 1},  # one layer: learns as well, compiles faster
    )
    run_training(config, run, quiet=True)
    r = sample_run(run, n=3, length=12, prompt="C")
    assert r.tokens.shape == (3, 12) and (r.tokens[:, 0] == 2).all()
    assert r.info["language"] == "spam" and r.info["lr"] == 1e-2
    # The title names what the run moved off the defaults (here the decay), and nothing else.
    from spamlang.sample import describe

    assert "; n_layers 1, weight_decay 0;" in describe(r) and "d_model" not in describe(r)
    assert r.summary.mean_fraction_correct > 0.5  # a V=16 SpamLang is learnt in 80 steps
    # The same shapes and temperature again, through the CLI (the compiled sampler is reused).
    html, png = tmp_path / "s.html", tmp_path / "s.png"
    assert (
        main(
            [
                "sample",
                str(run),
                "-n",
                "3",
                "--length",
                "12",
                "--prompt",
                "C",
                "--color",
                "never",
                "--html",
                str(html),
                "--png",
                str(png),
            ]
        )
        == 0
    )
    page = html.read_text()
    assert page.count('<td class="tok seed"') == 3 and page.count(">C</td>") >= 3
    assert png.read_bytes().startswith(b"\x89PNG")
    capsys.readouterr()
    assert main(["sample", str(run), "--length", "4096"]) == 2  # refused before sampling
    assert capsys.readouterr().err == (
        "spamlang sample: error: length 4096 exceeds the model's max_seq_len 2048\n"
    )


def test_sample_a_sweep_cell_at_its_best_lr(tmp_path, capsys):
    from spamlang.cli.sweep_cmd import main as sweep_main
    from spamlang.sweep import Sweep
    from spamlang.train import TrainConfig

    base = TrainConfig(
        preset="tiny",
        vocab_size=64,
        seq_len=2,
        batch_size=4,
        tokens=4 * 2 * 10,
        log_every=5,
        eval_sequences=8,
        model={"n_layers": 1},
    )
    # Seeds, not tying, as the second axis: both seeds are members of one program (one compile).
    sweep = Sweep("pick", base, {"lr": [1e-4, 1e-1], "seed": [0, 1]})
    assert sweep_main(sweep, ["--out", str(tmp_path), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["sample", str(tmp_path)]) == 2  # a sweep directory needs --where
    assert "--where" in capsys.readouterr().err
    assert main(["sample", str(tmp_path), "--where", "seed=1", "-n", "1", "--length", "3"]) == 0
    out = capsys.readouterr().out
    losses = {
        lr: json.loads((tmp_path / run_id / "result.json").read_text())["final_eval_loss"]
        for run_id, lr in (("lr1e-4-seed1", 1e-4), ("lr1e-1-seed1", 1e-1))
    }
    best = min(losses, key=losses.get)
    headers = [line for line in out.splitlines() if line.startswith("== ")]
    assert len(headers) == 1 and f"lr{best:.0e}".replace("e-0", "e-") + "-seed1" in headers[0]
