"""The sample PNG shows what the terminal and the HTML page show (issue 61, item 16): a glyph
for every token, never an id in digits beside glyphs (token 2679 was drawn as "2679")."""

from __future__ import annotations

import os
import re

import matplotlib
import numpy as np
import pytest
from matplotlib.ft2font import FT2Font

from spamlang import glyphs
from spamlang.cli.sample_cmd import sample_figure
from spamlang.plots import canvas, samples
from spamlang.sample import SampleResult, render_html, render_text

V = 8192


def _result(tokens) -> SampleResult:
    tokens = np.asarray(tokens)
    correct = tokens[:, 1:] == tokens[:, :1]
    info = {"language": "spam", "vocab_size": V, "temperature": 0.9, "seed": 0}
    return SampleResult.from_flags(tokens, correct, 1, info)


def _png_rows(result, tmp_path, monkeypatch, ids=False) -> tuple[list[str], str]:
    """The token texts the PNG draws, a string per sample, and its caption."""
    drawn = []
    monkeypatch.setattr(canvas, "save_figure", lambda fig, path: drawn.append(fig) or path)
    sample_figure(result, tmp_path / "s.png", ids=ids)
    (fig,) = drawn
    (ax,) = fig.axes
    rows: dict[float, str] = {}
    for t in ax.texts:  # a token's cell is at x = 0 .. length - 1 (the statistics: further right)
        x, y = t.get_position()
        if 0 <= x < result.tokens.shape[1]:
            rows[y] = rows.get(y, "") + (t.get_text() if not ids else f" {t.get_text()}")
    caption = next(t.get_text() for t in fig.texts if "correct:" in t.get_text())
    return [rows[y].strip() for y in sorted(rows, reverse=True)], caption


def _terminal_rows(result, ids=False) -> list[str]:
    lines = render_text(result, ids=ids).splitlines()
    n, length = result.tokens.shape
    rows = [next(x for x in lines if x.startswith(f"{i:>3}  ")) for i in range(n)]
    return [" ".join(r.split()[-length:]) if ids else r[-length:] for r in rows]


def _html_rows(result, ids=False) -> list[str]:
    page = render_html(result, ids=ids)
    rows = [re.findall(r'title="token \d+">([^<]*)</td>', line) for line in page.splitlines()]
    return [(" " if ids else "").join(r) for r in rows if r]


def test_the_png_draws_the_terminals_glyph_for_every_token(tmp_path, monkeypatch):
    # Ids inside the figure font (945), past it (2679 was "2679" beside glyphs; 5257) and the
    # seed A: one glyph each in all three renderers.
    r = _result([[0, 0, 2679, 0, 945, 5257], [0] * 6, [0, 7000, 7000, 0, 0, 3]])
    png, _ = _png_rows(r, tmp_path, monkeypatch)
    assert png == _terminal_rows(r) == _html_rows(r)
    assert png[0] == glyphs.render([0, 0, 2679, 0, 945, 5257])
    assert not any(c.isdigit() for row in png for c in row)


def test_with_ids_all_three_write_the_same_ids(tmp_path, monkeypatch):
    r = _result([[0, 0, 2679, 0], [0, 12, 0, 0]])
    png, _ = _png_rows(r, tmp_path, monkeypatch, ids=True)
    assert png == _terminal_rows(r, ids=True) == _html_rows(r, ids=True)
    assert png == ["0 0 2679 0", "0 12 0 0"]


def test_the_figure_font_draws_every_glyph_of_the_first_ids():
    """Ids from 52 are ordered so that the figure font (matplotlib's DejaVu Sans, regular and
    bold) draws the first 3,000: a sample up to that V needs no other font on any machine."""
    drawn = glyphs.figure_font_code_points()
    assert len(drawn) > 3000
    assert [t for t in range(3000) if ord(glyphs.glyph(t)) not in drawn] == []
    assert glyphs.render(range(52)) == glyphs.render(range(26)) + glyphs.render(range(26, 52))


def test_a_glyph_the_figure_font_lacks_comes_from_a_font_that_has_it(monkeypatch):
    stix = os.path.join(matplotlib.get_data_path(), "fonts", "ttf", "STIXGeneral.ttf")
    face = FT2Font(stix)
    token = next(t for t in range(3072, V) if face.get_char_index(ord(glyphs.glyph(t))))
    monkeypatch.setattr(samples, "_machine_fonts", lambda: [stix])
    samples._font_with.cache_clear()
    try:
        font, drawn = samples.cell_font(glyphs.glyph(token), bold=False, digits=False)
        assert drawn and font.get_file() == stix
    finally:
        samples._font_with.cache_clear()


def test_a_glyph_no_font_has_is_still_that_glyph_and_the_caption_names_it(tmp_path, monkeypatch):
    monkeypatch.setattr(samples, "_machine_fonts", lambda: [])
    samples._font_with.cache_clear()
    try:
        r = _result([[0, 0, 5257, 0]])
        png, caption = _png_rows(r, tmp_path, monkeypatch)
    finally:
        samples._font_with.cache_clear()
    assert png == _terminal_rows(r)
    cp = ord(glyphs.glyph(5257))
    assert f"tokens 5257 (U+{cp:04X})" in caption and "--ids" in caption


@pytest.mark.parametrize("bold", [False, True])
def test_a_wrong_tokens_glyph_is_bold_in_the_figure_font(bold):
    font, drawn = samples.cell_font(glyphs.glyph(945), bold=bold, digits=False)
    assert drawn and font.get_file() == glyphs.figure_font_file("bold" if bold else "normal")
