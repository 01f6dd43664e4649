"""The generators as a dataset: random access by index, batched NumPy iteration, token export.

Sequence i of `SequenceDataset(lang, seed, L)` is `lang.sample(fold_in(PRNGKey(seed), i), 1,
L)[0]`: no iterator state, so any slice can be generated on any host, in any order, after any
resume. A dataset holds no compiled code, so it pickles: a PyTorch `DataLoader` or Grain's
`MapDataset.source` can serve it from worker processes.
"""

from __future__ import annotations

import functools
import operator
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from spamlang import fields
from spamlang.errors import UserError
from spamlang.rundir.atomic import signals_held
from spamlang.token_files import load_tokens, read_sidecar, write_tokens

MAX_INDEX = 2**32  # fold_in data is uint32: sequence indices must be below this
_CHUNK_TOKENS = 2**20  # tokens generated per device call when serving large requests


def _as_int(what: str, value: Any, low: int, high: int | None = None) -> int:  # in [low, high)
    return fields.in_range(what, fields.as_int(what, value), ge=low, lt=high)


def chunk_tokens() -> int:
    return _CHUNK_TOKENS


# True in a process forked from one running JAX, where a JAX call would hang (it is told so).
_FORKED_FROM_JAX = False


def _note_fork() -> None:
    global _FORKED_FROM_JAX
    bridge = sys.modules.get("jax._src.xla_bridge")  # imported only where JAX was used
    if bridge is not None and getattr(bridge, "_backends", None):
        _FORKED_FROM_JAX = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_note_fork)

FORK_MESSAGE = (
    "this process was forked from one whose JAX had started, and JAX cannot run "
    "after a fork (it would hang): start the workers with "
    'multiprocessing_context="forkserver" (or "spawn"), e.g. '
    'DataLoader(ds, num_workers=2, multiprocessing_context="forkserver")'
)


@functools.cache
def _rows_fn():
    """The process-wide jitted generator: (lang, L static; key, uint32[n] rows) -> int32[n, L]."""
    import jax

    def rows(lang, seq_len: int, key, idx_N):
        keys_N = jax.vmap(jax.random.fold_in, (None, 0))(key, idx_N)
        return jax.vmap(lambda k: lang.sample(k, 1, seq_len)[0])(keys_N)

    return jax.jit(rows, static_argnums=(0, 1))


class SequenceDataset:
    """A reproducible dataset of sequences of one language: infinite, or the first N.

    `ds[i]` is int32[L]; `ds[a:b:c]` and `ds[[i, j, ...]]` are int32[n, L], NumPy. Infinite: no
    `len`, indices below 2^32, slices need a stop. With `num_sequences=N` it indexes like a list.

    >>> from spamlang import languages
    >>> ds = SequenceDataset(languages.make("spam", vocab_size=8), seed=0, seq_len=4)
    >>> ds[3].shape, ds[0:5].shape, ds[[7, 2]].shape
    ((4,), (5, 4), (2, 4))
    >>> first = next(ds.batches(2, start=3))
    >>> bool((first == ds[3:5]).all())
    True
    >>> finite = SequenceDataset(ds.lang, seed=0, seq_len=4, num_sequences=10)
    >>> len(finite), bool((finite[-1] == ds[9]).all())
    (10, True)"""

    def __init__(self, lang, seed: int, seq_len: int, num_sequences: int | None = None):
        self.lang = lang
        self.seed = _as_int("seed", seed, 0, 2**32)
        self.seq_len = _as_int("seq_len", seq_len, 1)
        n = num_sequences
        self.num_sequences = n if n is None else _as_int("num_sequences", n, 0, MAX_INDEX + 1)
        self._key = None  # PRNGKey(seed), made on first use (not pickled)

    def __repr__(self) -> str:
        n = "" if self.num_sequences is None else f", num_sequences={self.num_sequences}"
        return f"SequenceDataset({self.lang!r}, seed={self.seed}, seq_len={self.seq_len}{n})"

    def __getstate__(self) -> dict:
        # A language travels as its class and parameters: its tables (JAX arrays) stay behind.
        state = {k: v for k, v in self.__dict__.items() if k != "_key"}
        if hasattr(self.lang, "__dataclass_fields__") and callable(
            getattr(self.lang, "params", None)
        ):
            state["lang"] = (type(self.lang), self.lang.params())
        return state

    def __setstate__(self, state: dict) -> None:
        lang = state["lang"]
        if isinstance(lang, tuple):
            lang = lang[0](**lang[1])
        self.__dict__.update(state, lang=lang, _key=None)

    def __len__(self) -> int:
        if self.num_sequences is None:
            raise TypeError("the dataset is infinite: give num_sequences=N for a length")
        return self.num_sequences

    def __bool__(self) -> bool:  # an infinite dataset is not empty (and has no len to ask)
        return self.num_sequences != 0

    def _dispatch(self, rows: range | np.ndarray, size: int):
        """Start generating `rows` padded (with row 0) to `size`; a device array."""
        if _FORKED_FROM_JAX:
            raise UserError(FORK_MESSAGE)
        import jax

        idx_N = np.zeros(size, np.uint32)
        idx_N[: len(rows)] = (
            np.arange(rows.start, rows.stop, rows.step) if isinstance(rows, range) else rows
        )
        with signals_held():  # a JAX call cut by Ctrl-C crashes the exit (`signals_held`)
            if self._key is None:
                self._key = jax.random.PRNGKey(self.seed)
            return _rows_fn()(self.lang, self.seq_len, self._key, idx_N)

    @staticmethod
    def _fetch(pending: tuple) -> np.ndarray:
        with signals_held():
            return np.array(pending[0])[: pending[1]]

    def _stream(self, rows: range | np.ndarray, size: int) -> Iterator[np.ndarray]:
        """NumPy chunks of `size` rows, the next one dispatched before this one is copied."""
        pending = None
        for first in range(0, len(rows), size):
            piece = rows[first : first + size]
            nxt = (self._dispatch(piece, size), len(piece))
            if pending is not None:
                yield self._fetch(pending)
            pending = nxt
        if pending is not None:
            yield self._fetch(pending)

    def _generate(self, rows: range | np.ndarray) -> Iterator[np.ndarray]:
        # Powers of two (at most ~1M tokens, at least 8 rows): lengths share a few compilations.
        max_rows = 1 << max(0, (_CHUNK_TOKENS // self.seq_len).bit_length() - 1)
        return self._stream(rows, min(max_rows, 1 << max(3, (len(rows) - 1).bit_length())))

    def _take(self, rows: range | np.ndarray) -> np.ndarray:
        chunks = list(self._generate(rows))
        if not chunks:
            return np.zeros((0, self.seq_len), np.int32)
        return chunks[0] if len(chunks) == 1 else np.concatenate(chunks)

    def _out_of_range(self, i: int) -> IndexError:
        if self.num_sequences is not None:
            return IndexError(f"sequence {i} is out of range for {self.num_sequences} sequences")
        if i < 0:
            return IndexError("the dataset is infinite: negative indices have no meaning")
        return IndexError(f"sequence indices must be < 2^32, got {i}")

    def _slice(self, s: slice) -> range:
        if self.num_sequences is not None:
            return range(*s.indices(self.num_sequences))
        if s.stop is None:
            raise IndexError("the dataset is infinite: slices need an explicit stop")
        start, stop = operator.index(s.start or 0), operator.index(s.stop)
        step = operator.index(s.step or 1)
        if start < 0 or stop < 0 or step <= 0:
            raise IndexError("slices need non-negative start/stop and a positive step")
        rows = range(start, stop, step)
        if rows and rows[-1] >= MAX_INDEX:
            raise IndexError(f"sequence indices must be < 2^32, asked up to {rows[-1]}")
        return rows

    def _vector(self, index) -> np.ndarray:
        """A 1-D sequence of indices as non-negative int64 rows (IndexError if any is out)."""
        given = np.asarray(index)
        if given.ndim == 1 and given.size == 0:
            return np.zeros(0, np.int64)
        if given.ndim != 1 or not np.issubdtype(given.dtype, np.integer):
            raise IndexError(
                "index with an int, a slice or a 1-D sequence of ints, got "
                f"{type(index).__name__} of {given.dtype}{list(given.shape)}"
            )
        idx = given.astype(np.int64)
        n = self.num_sequences
        if n is not None:
            idx = np.where(idx < 0, idx + n, idx)
        bad = (idx < 0) | (idx >= (MAX_INDEX if n is None else n))
        if bad.any():
            raise self._out_of_range(int(given[bad.argmax()]))
        return idx

    def __getitem__(self, index) -> np.ndarray:
        if isinstance(index, slice):
            return self._take(self._slice(index))
        try:
            i = operator.index(index)
        except TypeError:
            return self._take(self._vector(index))
        return self._take(self._vector([i]))[0]

    def __getitems__(self, indices: Sequence[int]) -> list[np.ndarray]:
        """The rows of `indices` in one call: PyTorch's and Grain's batched read."""
        return list(self._take(self._vector(list(indices))))

    _getitems = __getitems__

    def batches(self, batch_size: int, start: int = 0) -> Iterator[np.ndarray]:
        """int32[batch_size, L] batches from sequence `start`, whatever the size."""
        batch_size = _as_int("batch_size", batch_size, 1)
        start = _as_int("start", start, 0, MAX_INDEX)
        if self.num_sequences is None:  # whole batches only
            end = start + (MAX_INDEX - start) // batch_size * batch_size
        else:
            end = max(start, self.num_sequences)
        yield from self._stream(range(start, end), batch_size)

    def __iter__(self) -> Iterator[np.ndarray]:
        """Sequences 0, 1, ... as int32[L]: all N of a finite dataset, else up to 2^32."""
        # An endless one in batches of 256 rows: its first item waits for no whole chunk.
        chunks = (
            self.batches(256)
            if self.num_sequences is None
            else self._generate(range(self.num_sequences))
        )
        for chunk in chunks:
            yield from chunk


def export_tokens(
    lang,
    seed: int,
    seq_len: int,
    num_seqs: int,
    path,
    *,
    force: bool = False,
    progress: bool | None = None,
) -> dict:
    """Write sequences 0..num_seqs-1 as a token file and its sidecar; return the sidecar."""
    seq_len = _as_int("seq_len", seq_len, 1)
    num_seqs = fields.in_range(
        "num_seqs",
        fields.as_int("num_seqs", num_seqs),
        ge=1,
        le=MAX_INDEX,
        why="2^32, the sequences a dataset indexes",
    )
    if seq_len > chunk_tokens():
        raise UserError(
            f"seq_len must be <= {chunk_tokens()} for an export (one sequence is "
            f"generated in one chunk of {chunk_tokens()} tokens), got {seq_len}"
        )
    ds = SequenceDataset(lang, seed, seq_len, num_seqs)
    about = {
        "language": lang.name,
        "params": lang.params(),
        "seed": ds.seed,
        "optimal_loss": lang.optimal_loss(seq_len) if seq_len >= 2 else None,
        "note": (
            "flat row-major [num_seqs, seq_len] token ids; row i is sequence i of "
            "spamlang.data.SequenceDataset(language, seed, seq_len)"
        ),
    }
    return write_tokens(
        path,
        ds._generate(range(num_seqs)),
        vocab_size=lang.vocab_size,
        shape=(num_seqs, seq_len),
        about=about,
        force=force,
        progress=progress,
    )


__all__ = ["MAX_INDEX", "SequenceDataset", "export_tokens", "load_tokens", "read_sidecar"]
