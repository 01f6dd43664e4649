"""The generators as a dataset: random access by index, a batched NumPy iterator, token files.

Sequence i of `SequenceDataset(lang, seed, L)` is `lang.sample(fold_in(PRNGKey(seed), i), 1, L)[0]`:
no iterator state, so any slice can be generated on any host, in any order, after any resume,
and `batches(B, start)` yields the same sequences whatever B and start. Generation is one jitted
function (vmap over folded keys) compiled per chunk size; chunk sizes are powers of two so a
handful of compilations serve every request.

Token files (`export_tokens` / `load_tokens`) are flat little-endian binaries, row-major [N, L],
uint16 when V <= 65536 else uint32, with a JSON sidecar `<file>.json`. The data are written to
a temporary name and renamed into place, then the sidecar is written (atomically) last: a token
file with a sidecar is complete; an interrupted export leaves neither behind.
"""

from __future__ import annotations

import math
import operator
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from spamlang.errors import UserError
from spamlang.fileio import atomic_write_json, read_json

FORMAT = "spamlang-tokens-v1"  # the sidecar's "format" field
MAX_INDEX = 2**32  # fold_in data is uint32: sequence indices must be below this
_CHUNK_TOKENS = 2**20  # tokens generated per device call when serving large requests


def _as_int(what: str, value: Any, low: int, high: int | None = None) -> int:
    try:
        if isinstance(value, bool):
            raise TypeError
        value = operator.index(value)
    except TypeError:
        raise UserError(f"{what} must be an int, got {value!r}") from None
    if value < low or (high is not None and value >= high):
        bound = f"in [{low}, {high})" if high is not None else f">= {low}"
        raise UserError(f"{what} must be {bound}, got {value}")
    return value


class SequenceDataset:
    """An infinite, reproducible dataset of sequences of one language (no `len`).

    `ds[i]` is int32[L]; `ds[a:b:c]` is int32[n, L] (non-negative, finite slices); both are NumPy.

    >>> from spamlang import languages
    >>> ds = SequenceDataset(languages.make("spam", vocab_size=8), seed=0, seq_len=4)
    >>> ds[3].shape, ds[0:5].shape
    ((4,), (5, 4))
    >>> first = next(ds.batches(2, start=3))
    >>> bool((first == ds[3:5]).all())
    True
    """

    def __init__(self, lang, seed: int, seq_len: int):
        import jax

        self.lang = lang
        self.seed = _as_int("seed", seed, 0, 2**32)
        self.seq_len = _as_int("seq_len", seq_len, 1)
        self._key = jax.random.PRNGKey(self.seed)
        self._rows = jax.jit(self._rows_impl, static_argnums=(2,))

    def __repr__(self) -> str:
        return f"SequenceDataset({self.lang!r}, seed={self.seed}, seq_len={self.seq_len})"

    def _rows_impl(self, start, step, count: int):
        import jax
        import jax.numpy as jnp

        idx_N = start + step * jnp.arange(count, dtype=jnp.uint32)
        keys_N = jax.vmap(jax.random.fold_in, (None, 0))(self._key, idx_N)
        return jax.vmap(lambda k: self.lang.sample(k, 1, self.seq_len)[0])(keys_N)

    def _dispatch(self, start: int, step: int, count: int):
        """Start generating rows start, start+step, ... (count of them); returns a device array."""
        return self._rows(np.uint32(start), np.uint32(step % MAX_INDEX), count)

    def _chunks(self, start: int, step: int, count: int) -> Iterator[np.ndarray]:
        """NumPy chunks of rows start + step * (0..count-1); the next chunk is dispatched before
        the current one is copied to the host, so generation overlaps the consumer."""
        if count and start + step * (count - 1) >= MAX_INDEX:
            last = start + step * (count - 1)
            raise IndexError(f"sequence indices must be < 2^32, asked up to {last}")
        max_rows = 1 << max(0, (_CHUNK_TOKENS // self.seq_len).bit_length() - 1)
        # Large requests reuse one chunk size (one compilation); small ones round up to a power
        # of two so that arbitrary slice lengths share a few compilations.
        plan, done = [], 0
        while done < count:
            need = min(count - done, max_rows)
            size = max_rows if count > max_rows else 1 << (need - 1).bit_length()
            plan.append((start + step * done, need, size))
            done += need
        nxt = None
        for i, (s, need, size) in enumerate(plan):
            cur = nxt if nxt is not None else self._dispatch(s, step, size)
            if i + 1 < len(plan):
                s_next, _, size_next = plan[i + 1]
                nxt = self._dispatch(s_next, step, size_next)
            yield np.array(cur[:need])

    def __getitem__(self, index):
        """Sequence `index` (int) as int32[L], or a finite slice of sequences as int32[n, L]."""
        if isinstance(index, slice):
            if index.stop is None:
                raise IndexError("the dataset is infinite: slices need an explicit stop")
            start, stop, step = index.start or 0, index.stop, index.step or 1
            if start < 0 or stop < 0 or step <= 0:
                raise IndexError("slices need non-negative start/stop and a positive step")
            count = len(range(start, stop, step))
            chunks = list(self._chunks(start, step, count))
            return (np.concatenate(chunks) if chunks
                    else np.zeros((0, self.seq_len), np.int32))
        i = operator.index(index)
        if i < 0:
            raise IndexError("the dataset is infinite: negative indices have no meaning")
        return next(self._chunks(i, 1, 1))[0]

    def batches(self, batch_size: int, start: int = 0) -> Iterator[np.ndarray]:
        """Endless iterator of int32[batch_size, L] batches: sequences start, start+1, ...

        The same sequences come out whatever `batch_size` and `start`, so a resumed or sharded
        reader sees the same data (shard s of n: `batches(B, start=s * B * steps)` or slices).
        """
        batch_size = _as_int("batch_size", batch_size, 1)
        start = _as_int("start", start, 0, MAX_INDEX)

        def dispatch(first: int):  # None once a batch would reach index 2^32: the end
            return self._dispatch(first, 1, batch_size) if first + batch_size <= MAX_INDEX else None

        cur = dispatch(start)
        while cur is not None:
            start += batch_size
            nxt = dispatch(start)  # generated while the consumer works on `cur`
            yield np.array(cur)
            cur = nxt

    def __iter__(self) -> Iterator[np.ndarray]:
        for batch in self.batches(256):
            yield from batch


def token_dtype(vocab_size: int) -> np.dtype:
    """uint16 when every id fits (V <= 65536), else uint32; always little-endian."""
    return np.dtype("<u2") if vocab_size <= 2**16 else np.dtype("<u4")


def sidecar_path(path: str | os.PathLike) -> Path:
    """The JSON sidecar of a token file: `<path>.json`."""
    return Path(f"{os.fspath(path)}.json")


def export_tokens(lang, seed: int, seq_len: int, num_seqs: int, path: str | os.PathLike, *,
                  force: bool = False, progress: bool | None = None) -> dict:
    """Write sequences 0..num_seqs-1 of `SequenceDataset(lang, seed, seq_len)` to a token file.

    Memory stays bounded (chunks of about 1M tokens); `progress` (None: only for >= 16M tokens)
    shows a tqdm bar on stderr. Refuses to replace an existing file (or sidecar) unless `force`.
    Returns the sidecar dict.
    """
    from tqdm import tqdm

    seq_len = _as_int("seq_len", seq_len, 1)
    num_seqs = _as_int("num_seqs", num_seqs, 1, MAX_INDEX + 1)
    path, side = Path(path), sidecar_path(path)
    if not path.parent.is_dir():
        raise UserError(f"output directory {str(path.parent)!r} does not exist")
    if path.is_dir():
        raise UserError(f"output path {str(path)!r} is a directory")
    for p in (path, side):
        if p.exists() and not force:
            raise UserError(f"{str(p)!r} already exists; pass --force (force=True) to overwrite")
    ds = SequenceDataset(lang, seed, seq_len)
    dtype = token_dtype(lang.vocab_size)
    total = num_seqs * seq_len
    show = total >= 2**24 if progress is None else progress
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f, tqdm(total=total, unit="tok", unit_scale=True,
                                            file=sys.stderr, disable=not show) as bar:
            for chunk in ds._chunks(0, 1, num_seqs):
                f.write(chunk.astype(dtype).tobytes())
                bar.update(chunk.size)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _umask_mode())  # mkstemp's 0600 would hide the file from other users
        # The old sidecar goes first, so an old sidecar never describes new data.
        side.unlink(missing_ok=True)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    meta = {
        "format": FORMAT,
        "language": lang.name,
        "params": lang.params(),
        "vocab_size": lang.vocab_size,
        "seed": ds.seed,
        "dtype": dtype.name,
        "byte_order": "little",
        "shape": [num_seqs, seq_len],
        "optimal_loss": lang.optimal_loss(seq_len) if seq_len >= 2 else None,
        "note": ("flat row-major [num_seqs, seq_len] token ids; row i is sequence i of "
                 "spamlang.data.SequenceDataset(language, seed, seq_len)"),
    }
    atomic_write_json(side, meta)
    return meta


def _umask_mode() -> int:
    """The mode a plain `open(path, "w")` would give a new file (0666 minus the umask)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def read_sidecar(path: str | os.PathLike) -> dict:
    """The sidecar dict of a token file (UserError if it is missing or not ours)."""
    side = sidecar_path(path)
    if not side.exists():
        raise UserError(f"no sidecar {str(side)!r}: not an exported token file, "
                        "or an interrupted export")
    meta = read_json(side)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise UserError(f"{str(side)!r} is not a {FORMAT} sidecar")
    return meta


def load_tokens(path: str | os.PathLike) -> np.memmap:
    """Memory-map an exported token file as a read-only [num_seqs, seq_len] array."""
    meta = read_sidecar(path)
    dtype = np.dtype(meta["dtype"]).newbyteorder("<")
    shape = tuple(int(n) for n in meta["shape"])
    expected = math.prod(shape) * dtype.itemsize
    actual = os.path.getsize(path)
    if actual != expected:
        raise UserError(f"{os.fspath(path)!r} has {actual} bytes; its sidecar says {expected}")
    return np.memmap(path, dtype=dtype, mode="r", shape=shape)
