"""Token files: flat binaries of token rows plus a JSON sidecar, written crash-safely.

A token file is little-endian, row-major [N, L], uint16 when V <= 65536 else uint32; its sidecar
`<file>.json` names the language, seed, shape and byte count. The sidecar is the commit record:
it is published last (`spamlang.publish`), so a token file without one, or one whose size
differs from what its sidecar says, is an incomplete export. `load_tokens` refuses it, and a
rerun of the export replaces it without --force.

This module is the file format only: it knows nothing of languages or datasets, and
`spamlang.data` (above it) builds on it: `spamlang.data.export_tokens` generates the rows of a
`SequenceDataset` and hands them to `write_tokens` here. A write checks everything it can before
creating a file (the target, and that the whole file fits on the disk) and never holds more than
one chunk of rows in memory.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
from pathlib import Path
from typing import Iterable

import numpy as np

from spamlang.errors import UserError
from spamlang.fileio import read_json
from spamlang.publish import (
    clean_stale_temps, open_temp, publish_pair, signals_raise, staged,
)

FORMAT = "spamlang-tokens-v1"  # the sidecar's "format" field
_SIDECAR_SLACK = 64 * 1024  # room the sidecar and directory entries need beside the data


class IncompleteExport(UserError):
    """A token file without its sidecar (or the reverse), or one of the wrong size."""


def token_dtype(vocab_size: int) -> np.dtype:
    """uint16 when every id fits (V <= 65536), else uint32; always little-endian."""
    return np.dtype("<u2") if vocab_size <= 2**16 else np.dtype("<u4")


def sidecar_path(path: str | os.PathLike) -> Path:
    """The JSON sidecar of a token file: `<path>.json`."""
    return Path(f"{os.fspath(path)}.json")


def read_sidecar(path: str | os.PathLike) -> dict:
    """The sidecar dict of a token file (IncompleteExport if missing, UserError if not ours)."""
    side = sidecar_path(path)
    if not side.exists():
        raise IncompleteExport(f"{os.fspath(path)!r} has no sidecar {str(side)!r}")
    try:
        meta = read_json(side)
    except (ValueError, UnicodeDecodeError):
        meta = None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise UserError(f"{str(side)!r} is not a {FORMAT} sidecar")
    return meta


def _layout(meta: dict) -> tuple[np.dtype, tuple[int, ...], int]:
    """(dtype, shape, bytes) that a sidecar promises."""
    dtype = np.dtype(meta["dtype"]).newbyteorder("<")
    shape = tuple(int(n) for n in meta["shape"])
    return dtype, shape, math.prod(shape) * dtype.itemsize


def check_complete(path: str | os.PathLike) -> dict:
    """The sidecar of a complete export at `path`; IncompleteExport naming what is missing."""
    path = Path(path)
    if not path.exists():
        if sidecar_path(path).exists():
            raise IncompleteExport(f"{str(sidecar_path(path))!r} has no token file "
                                   f"{str(path)!r}")
        raise UserError(f"{str(path)!r} does not exist")
    meta = read_sidecar(path)
    expected, actual = _layout(meta)[2], os.path.getsize(path)
    if actual != expected:
        raise IncompleteExport(f"{str(path)!r} has {actual} bytes but its sidecar says "
                               f"{expected}")
    return meta


def load_tokens(path: str | os.PathLike) -> np.memmap:
    """Memory-map an exported token file as a read-only [num_seqs, seq_len] array."""
    try:
        meta = check_complete(path)
    except IncompleteExport as e:
        raise IncompleteExport(f"{e}: an incomplete export (or not a token file); rerun "
                               "`spamlang export` to replace it, no --force needed") from None
    dtype, shape, _ = _layout(meta)
    return np.memmap(path, dtype=dtype, mode="r", shape=shape)


def _human(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if n < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError


def _check_target(path: Path, force: bool) -> None:
    """Refuse to replace a complete export (or a file we did not write) unless `force`; a
    half-published one is replaced with a note on stderr."""
    side = sidecar_path(path)
    if not (path.exists() or side.exists()):
        return
    try:
        check_complete(path)
    except IncompleteExport as e:
        print(f"note: replacing an incomplete export ({e})", file=sys.stderr)
        return
    except UserError:
        pass  # a sidecar that is not ours: an existing file like any other
    if not force:
        taken = path if path.exists() else side
        raise UserError(f"{str(taken)!r} already exists; pass --force (force=True) to overwrite")


def _check_space(path: Path, shape: tuple[int, int], dtype: np.dtype) -> int:
    """Refuse, before any file exists, a file that does not fit on the disk (the old pair stays
    until the new one is complete, so the whole new file must fit beside it). Returns the
    file's size in bytes."""
    num_seqs, seq_len = shape
    need = num_seqs * seq_len * dtype.itemsize
    free = shutil.disk_usage(path.parent).free
    if need + _SIDECAR_SLACK > free:
        raise UserError(f"{str(path)!r} would need {_human(need)} ({num_seqs} x {seq_len} "
                        f"{dtype.name}) but {str(path.parent)!r} has {_human(free)} free")
    return need


def write_tokens(path: str | os.PathLike, chunks: Iterable[np.ndarray], *, vocab_size: int,
                 shape: tuple[int, int], about: dict, force: bool = False,
                 progress: bool | None = None) -> dict:
    """Write the [num_seqs, seq_len] = `shape` token rows that `chunks` yields, in order, to a
    token file at `path` and its sidecar; return the sidecar dict.

    `chunks` is iterated only after every check passed; its arrays are cast to the dtype of
    `vocab_size` (`token_dtype`). The sidecar holds the format fields (format, dtype,
    byte_order, shape, bytes, vocab_size) and `about` (what the rows are: language, seed, ...).
    Refuses to replace a complete export (or any other existing file) unless `force`; an
    incomplete one is replaced. `progress` (None: only for >= 16M tokens) shows a tqdm bar on
    stderr. Whatever stops it (an error, a full disk, Ctrl-C, SIGTERM: `publish.Terminated`)
    removes its temporaries and leaves the old pair as it was.
    """
    from tqdm import tqdm

    path, side = Path(path), sidecar_path(path)
    if not path.parent.is_dir():
        raise UserError(f"output directory {str(path.parent)!r} does not exist")
    if path.is_dir():
        raise UserError(f"output path {str(path)!r} is a directory")
    for target in (path, side):
        clean_stale_temps(target)
    _check_target(path, force)
    dtype = token_dtype(vocab_size)
    nbytes = _check_space(path, shape, dtype)
    meta = {**about, "format": FORMAT, "vocab_size": vocab_size, "dtype": dtype.name,
            "byte_order": "little", "shape": list(shape), "bytes": nbytes}
    total = math.prod(shape)
    show = total >= 2**24 if progress is None else progress
    with signals_raise(), staged(path) as data_tmp, staged(side) as side_tmp:
        with tqdm(total=total, unit="tok", unit_scale=True, file=sys.stderr,
                  disable=not show) as bar:
            _write(data_tmp, path, (_tick(bar, c).astype(dtype) for c in chunks))
        _write(side_tmp, side, [_json_bytes(meta)])
        publish_pair(data_tmp, path, side_tmp, side)
    return meta


def _tick(bar, chunk: np.ndarray) -> np.ndarray:
    bar.update(chunk.size)
    return chunk


def _json_bytes(meta: dict) -> bytes:
    import json

    return (json.dumps(meta, indent=2, sort_keys=True) + "\n").encode("utf-8")


def _write(tmp: Path, target: Path, blocks) -> None:
    """Write `blocks` (bytes-like) to a fresh `tmp` and fsync it. A failed write is re-raised
    naming the target, e.g. "[Errno 28] No space left on device: 'y.bin'"."""
    try:
        with open_temp(tmp) as f:
            for block in blocks:
                f.write(block)
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        if e.filename is not None or e.errno is None:
            raise
        raise OSError(e.errno, e.strerror or os.strerror(e.errno), str(target)) from e


__all__ = ["FORMAT", "IncompleteExport", "token_dtype", "sidecar_path", "read_sidecar",
           "check_complete", "load_tokens", "write_tokens"]
