"""A corpus folder read back: meta.json checked, train.bin / val.bin memory-mapped, train.bin
hashed. nanoGPT's convention, so token files from other tools load too (meta.json needs only
`vocab_size` and `dtype`)."""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from spamlang.errors import UserError
from spamlang.rundir.reading import read_json

META, TRAIN, VAL, TOKENIZER = "meta.json", "train.bin", "val.bin", "tokenizer.json"
FORMAT = "spamlang-corpus-v1"  # meta.json's "format" when `spamlang tokenize` wrote it
_DTYPES = {"uint16": np.dtype("<u2"), "uint32": np.dtype("<u4")}
MAX_TOKENS = 2**31 - 1  # window starts are drawn as int32 (`spamlang.corpus.windows`)


@dataclass(frozen=True)
class Corpus:
    """A checked corpus folder: its meta.json and its two token files, memory-mapped."""

    path: Path  # the folder
    meta: dict  # meta.json as read
    vocab_size: int  # every token id is below it (checked)
    train: np.ndarray  # train.bin, read-only memmap, flat
    val: np.ndarray  # val.bin, read-only memmap, flat

    @property
    def name(self) -> str:  # what run ids call the corpus
        return self.path.name

    @property
    def tokenizer_file(self) -> Path | None:
        path = self.path / TOKENIZER
        return path if path.is_file() else None


def open_corpus(path: str | os.PathLike) -> Corpus:
    """The corpus at folder `path`, checked once per process and file version; UserError else."""
    folder = Path(path)
    if not folder.is_dir():
        raise UserError(f"corpus {folder} is not a folder (expected train.bin, val.bin, meta.json)")
    stamps = tuple(_stamp(folder / name) for name in (META, TRAIN, VAL))
    return _open(str(folder.resolve()), stamps)


def _stamp(path: Path) -> tuple:
    try:
        st = path.stat()
    except OSError:
        raise UserError(f"corpus {path.parent} has no {path.name}") from None
    return (st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _open(folder: str, _stamps: tuple) -> Corpus:
    path = Path(folder)
    try:
        meta = read_json(path / META)
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read {path / META}: {e}") from None
    if not isinstance(meta, dict):
        raise UserError(f"{path / META} is not a JSON object")
    vocab = meta.get("vocab_size")
    if not isinstance(vocab, int) or isinstance(vocab, bool) or not 2 <= vocab <= 2**32:
        raise UserError(f"{path / META}: vocab_size must be an integer >= 2, got {vocab!r}")
    dtype = _DTYPES.get(meta.get("dtype"))
    if dtype is None:
        raise UserError(f"{path / META}: dtype must be uint16 or uint32, got {meta.get('dtype')!r}")
    if vocab > 2 ** (8 * dtype.itemsize):
        raise UserError(f"{path / META}: vocab_size {vocab} does not fit in {meta['dtype']}")
    train, val = (_tokens(path / name, dtype, vocab) for name in (TRAIN, VAL))
    return Corpus(path=path, meta=meta, vocab_size=vocab, train=train, val=val)


def _tokens(path: Path, dtype: np.dtype, vocab: int) -> np.ndarray:
    size = path.stat().st_size
    if size % dtype.itemsize:
        raise UserError(f"{path} has {size} bytes, not a whole number of {dtype.name} tokens")
    n = size // dtype.itemsize
    if n < 2:
        raise UserError(f"{path} holds {n} token(s); a window needs at least 2")
    if n > MAX_TOKENS:
        raise UserError(f"{path} holds {n:,} tokens; at most {MAX_TOKENS:,} are supported")
    tokens = np.memmap(path, dtype=dtype, mode="r", shape=(n,))
    # In blocks, so that a large file is never copied whole into memory.
    top = max(int(tokens[i : i + 2**24].max()) for i in range(0, n, 2**24))
    if top >= vocab:
        raise UserError(f"{path} holds token id {top}, at or above meta.json's vocab_size {vocab}")
    return tokens


@functools.lru_cache(maxsize=8)
def _sha256(path: str, _stamp: tuple) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def train_sha256(path: str | os.PathLike) -> str:  # hashed once per process and file version
    file = Path(path) / TRAIN
    return _sha256(str(file.resolve()), _stamp(file))
