"""The token rows a checkpoint is measured on: a spamlang token file, or plain text.

Both give int32[N, L] with N <= num_seqs rows of L tokens, taken in file order, so a
measurement is a function of its inputs alone (no sampling, no seed).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from spamlang.errors import UserError


def _bounds(num_seqs: int | None, seq_len: int | None) -> None:
    if num_seqs is not None and num_seqs < 1:
        raise UserError(f"--num-seqs must be >= 1, got {num_seqs}")
    if seq_len is not None and seq_len < 2:
        raise UserError(
            f"--seq-len must be >= 2 (one predicted position needs two tokens), got {seq_len}"
        )


def rows_from_token_file(
    path: str | os.PathLike, *, num_seqs: int | None = None, seq_len: int | None = None
) -> np.ndarray:
    """The first num_seqs rows of a `spamlang export` file, each cut to its first seq_len
    tokens (default: the file's own seq_len; a longer one is an error, not padding)."""
    from spamlang.token_files import load_tokens

    _bounds(num_seqs, seq_len)
    rows_NxL = load_tokens(path)
    N, L = rows_NxL.shape
    if seq_len is not None and seq_len > L:
        raise UserError(
            f"--seq-len {seq_len} is longer than the rows of {os.fspath(path)!r} ({L} tokens)"
        )
    if L < 2 or N < 1:
        raise UserError(
            f"{os.fspath(path)!r} holds {N} rows of {L} tokens; diagnose-lm needs "
            "at least one row of 2 tokens"
        )
    return np.asarray(rows_NxL[:num_seqs, :seq_len], np.int32)


def rows_from_text(
    path: str | os.PathLike, tokenizer, *, num_seqs: int | None = None, seq_len: int = 128
) -> np.ndarray:
    """The text of `path` tokenized in one stream (no special tokens added) and cut into
    consecutive rows of seq_len tokens; the last partial row is dropped."""
    _bounds(num_seqs, seq_len)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"no such text file: {os.fspath(path)}") from None
    except UnicodeDecodeError as e:
        raise UserError(
            f"{os.fspath(path)!r} is not UTF-8 text ({e.reason} at byte {e.start})"
        ) from None
    # Only as much text as the rows need: a tokenizer on a multi-GB file would take minutes.
    if num_seqs is not None:
        text = text[: num_seqs * seq_len * 64]
    ids = np.asarray(tokenizer(text, add_special_tokens=False)["input_ids"], np.int64)
    n = len(ids) // seq_len
    if num_seqs is not None:
        n = min(n, num_seqs)
    if n < 1:
        raise UserError(
            f"{os.fspath(path)!r} gives {len(ids)} tokens, fewer than one row of "
            f"--seq-len {seq_len}"
        )
    return ids[: n * seq_len].reshape(n, seq_len).astype(np.int32)
