"""One visible, one-column character per token id, so that a sample reads like text (the
paper's Table 1) and its columns line up in a terminal.

Ids 0..25 are 'A'..'Z' and 26..51 'a'..'z'; past them, letters and then other symbols that a
terminal draws in one column and a reader cannot take for another glyph (`_build`). Past
`num_glyphs()` a sample shows ids; within one interpreter `token_of(glyph(i)) == i`.
"""

from __future__ import annotations

import functools
import os
import string
import unicodedata
from collections.abc import Iterable

import numpy as np

from spamlang.errors import UserError

_ASCII_LETTERS = string.ascii_uppercase + string.ascii_lowercase
_NUM_CODE_POINTS = 0x110000
_SYMBOL_CATEGORIES = frozenset("Nd Nl No Pc Pd Ps Pe Pi Pf Po Sm Sc Sk So".split())
# Letters copying a Latin letter, a digit or another script's (confusables.txt); the first stays.
_COPIES = frozenset(
    map(
        ord,
        "ΑΒΕΖΗΙΚΜΝΟΡΤΥΧϒαγικνορυχϲϳϹͿ"  # Greek: Latin look-alikes
        "АВЕКМНОРСТХЅІЈҮԀԚԜҺӀЗаеорсухѕіјԁһԛԝүӏзѴѵ"  # Cyrillic: Latin look-alikes, З like 3
        "ГПФѰѡѲѳӘәӠӡћ"  # Cyrillic: copies of Greek or IPA letters
        "ՕօոսՍՏհզԼցՅ"  # Armenian: Latin look-alikes, Յ like 3
        "ıȷɑɡɩɛƐƩɸɣꭓſǀǃƖƟɵʔƻƼƽ"  # Latin (IPA): of Latin or Greek letters; ʔ like ?, ƽ like 5
        "‚„",
    )
)  # punctuation like the comma between ids
# Whole blocks whose letters copy Latin capitals: Cherokee, its supplement, Lisu, Coptic.
_COPYING_BLOCKS = (
    (0x13A0, 0x13FF), (0xAB70, 0xABBF), (0xA4D0, 0xA4FF), (0x2C80, 0x2CFF), (0x03E2, 0x03EF),
)  # fmt: skip
# Blocks drawn in two columns or none though Python may call them narrow: Hangul jamo, regional
# indicators, and the symbol blocks Unicode 15.1 made wide (as wcwidth draws them).
_NOT_ONE_COLUMN = (
    (0x1160, 0x11FF), (0xD7B0, 0xD7FF), (0x1F1E6, 0x1F1FF), (0x2630, 0x2637), (0x268A, 0x268F),
    (0x4DC0, 0x4DFF), (0x1D300, 0x1D376),
)  # fmt: skip
# The figures' font files (a wrong token is bold): matplotlib's own, the same everywhere.
_FIGURE_FONT_FILES = {"normal": "DejaVuSans.ttf", "bold": "DejaVuSans-Bold.ttf"}
# Names of letters that are another letter drawn differently.
_VARIANT_WORDS = ("SMALL CAPITAL", "TURNED", "REVERSED", "INVERTED", "SCRIPT ", "DOTLESS")


def _look_alike(ch: str) -> bool:
    """A character a reader would take for another glyph or a digit: marked or variant letters,
    Greek, Cyrillic, Armenian and IPA copies, modifiers, and scripts that copy Latin capitals."""
    cp = ord(ch)
    category = unicodedata.category(ch)
    if cp in _COPIES or any(lo <= cp <= hi for lo, hi in _COPYING_BLOCKS):
        return True
    if category in ("Lm", "Nd"):  # modifier letters (raised copies, marks); other scripts' digits
        return True
    if 0xAC00 <= cp <= 0xD7A3:  # Hangul syllables: NFKD spells them in jamo, they stand alone
        return False
    if unicodedata.normalize("NFKD", ch) != ch:  # ȳ, Ӯ, ﬁ, Ａ, 𝐀, ①, ½, …
        return True
    name = unicodedata.name(ch, "")
    return category[0] == "L" and any(word in name for word in _VARIANT_WORDS)


def _one_column(ch: str) -> bool:  # drawn visibly in exactly one terminal column
    if unicodedata.east_asian_width(ch) in ("W", "F"):
        return False
    if any(lo <= ord(ch) <= hi for lo, hi in _NOT_ONE_COLUMN):
        return False
    name = unicodedata.name(ch, "")
    return "FILLER" not in name and "BLANK" not in name  # U+FFA0, U+2800: nothing to see


def figure_font_file(weight: str = "normal") -> str:
    import matplotlib

    return os.path.join(matplotlib.get_data_path(), "fonts", "ttf", _FIGURE_FONT_FILES[weight])


@functools.cache
def figure_font_code_points() -> frozenset[int]:
    """Code points that both faces of the figures' font draw (none if matplotlib lacks them)."""
    from matplotlib.ft2font import FT2Font

    try:
        maps = [set(FT2Font(figure_font_file(w)).get_charmap()) for w in _FIGURE_FONT_FILES]
    except OSError:
        return frozenset()
    return frozenset(set.intersection(*maps))


def _build() -> list[int]:
    """All glyph code points in id order: ASCII letters, then what the figures' font draws, then the
    rest; single code points drawn in one column, left-to-right, no look-alikes."""
    letters, symbols = [], []
    for cp in range(128, _NUM_CODE_POINTS):
        ch = chr(cp)
        cat = unicodedata.category(ch)
        if cat[0] not in "LNPS" or _look_alike(ch) or not _one_column(ch):
            continue
        if unicodedata.bidirectional(ch) in ("R", "AL"):  # a terminal would reorder the sample
            continue
        if cat[0] == "L":
            letters.append(cp)
        elif cat in _SYMBOL_CATEGORIES:
            symbols.append(cp)
    drawn = figure_font_code_points()
    first = [cp for cp in letters + symbols if cp in drawn]
    rest = [cp for cp in letters + symbols if cp not in drawn]
    return [ord(c) for c in _ASCII_LETTERS] + first + rest


@functools.cache
def _table() -> tuple[np.ndarray, np.ndarray]:  # (id -> code point, code point -> id or -1)
    code_points = np.asarray(_build(), dtype=np.int32)
    ids = np.full(_NUM_CODE_POINTS, -1, dtype=np.int32)
    ids[code_points] = np.arange(len(code_points), dtype=np.int32)
    return code_points, ids


def num_glyphs() -> int:
    """How many token ids have a glyph (about 17,500)."""
    return len(_table()[0])


def _ids(tokens: Iterable[int]) -> np.ndarray:
    return np.asarray(tokens if hasattr(tokens, "shape") else list(tokens)).reshape(-1)


def has_glyphs(tokens: Iterable[int]) -> bool:  # else a sample shows ids
    ids = _ids(tokens)
    if ids.size == 0:
        return True
    return bool(ids.min() >= 0 and (ids.max() < len(_ASCII_LETTERS) or ids.max() < num_glyphs()))


def glyph(token: int) -> str:
    return render([int(token)])


def token_of(ch: str) -> int:
    """The token id whose glyph is `ch` (inverse of `glyph`)."""
    if len(ch) != 1:
        raise UserError(f"a glyph is one character, got {ch!r}")
    i = _ASCII_LETTERS.find(ch)
    if i >= 0:
        return i
    token = int(_table()[1][ord(ch)])
    if token < 0:
        raise UserError(f"{ch!r} (U+{ord(ch):04X}) is not a token glyph")
    return token


def tokens_of(text: str) -> list[int]:
    """Token ids of every character of `text` (inverse of `render`)."""
    if text.isascii():
        return [token_of(ch) for ch in text]
    ids = _table()[1][np.fromiter(map(ord, text), dtype=np.int64, count=len(text))]
    bad = np.flatnonzero(ids < 0)
    if bad.size:
        token_of(text[bad[0]])  # raises the error that names the character
    return ids.tolist()


def render(tokens: Iterable[int]) -> str:
    tokens = _ids(tokens).astype(np.int64)
    if tokens.size == 0:
        return ""
    if tokens.min() >= 0 and tokens.max() < len(_ASCII_LETTERS):
        return "".join(_ASCII_LETTERS[t] for t in tokens.tolist())
    cps = _table()[0]
    bad = (tokens < 0) | (tokens >= len(cps))
    if bad.any():
        raise UserError(
            f"token id {int(tokens[bad][0])} has no glyph (ids go from 0 to {len(cps) - 1})"
        )
    return "".join(map(chr, cps[tokens].tolist()))
