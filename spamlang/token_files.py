"""Token files: flat binaries of token rows plus a JSON sidecar, written crash-safely.

A token file is little-endian, row-major [N, L], uint16 when V <= 65536 else uint32, with no
header (any framework memory-maps it); its sidecar `<file>.json` names the format (`FORMAT`),
language, seed, shape and bytes. An export cut short is refused by `load_tokens`
(`IncompleteExport`); a pair that is not ours is replaced only with force (`NotAnExport`).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from spamlang.errors import UserError
from spamlang.rundir.atomic import clean_stale_temps, open_temp, publish, signals_raise, staged
from spamlang.rundir.reading import read_json

FORMAT = "spamlang-tokens-v1"  # the sidecar's "format" field
_SIDECAR_SLACK = 64 * 1024  # room the sidecar and directory entries need beside the data
# np.load would read a file with these suffixes as NumPy's own format and fail (or unpickle).
_NUMPY_SUFFIXES = (".npy", ".npz")


class NotAnExport(UserError):
    """A file this module did not write: no sidecar, or one of another format."""


class IncompleteExport(UserError):
    """An export of ours cut short: publishing, without its tokens, or of the wrong size."""


class NeedsForce(UserError):
    """A file only `force` replaces; `message(flag)` names the caller's flag."""

    def __init__(self, taken: Path, detail: str):
        self.taken, self.detail = taken, detail
        super().__init__(self.message("force=True"))

    def message(self, flag: str) -> str:
        return f"{str(self.taken)!r} already exists; pass {flag} to replace it ({self.detail})"


def token_dtype(vocab_size: int) -> np.dtype:  # little-endian uint16 when every id fits
    return np.dtype("<u2") if vocab_size <= 2**16 else np.dtype("<u4")


def sidecar_path(path: str | os.PathLike) -> Path:  # `<path>.json`
    return Path(f"{os.fspath(path)}.json")


def _publishing_path(side: Path) -> Path:
    return side.with_name(side.name + ".publishing")


def _ours(side: Path) -> dict | None:  # the sidecar if this module wrote it, else None
    try:
        meta = read_json(side)
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return meta if isinstance(meta, dict) and meta.get("format") == FORMAT else None


def read_sidecar(path: str | os.PathLike) -> dict:
    """The sidecar dict of a token file (NotAnExport if it has none, or one not ours)."""
    side = sidecar_path(path)
    if not side.exists():
        raise NotAnExport(
            f"{os.fspath(path)!r} has no sidecar {str(side)!r}: not a spamlang "
            "export, or one whose sidecar was lost"
        )
    meta = _ours(side)
    if meta is None:
        raise NotAnExport(f"{str(side)!r} is not a {FORMAT} sidecar")
    return meta


def _layout(meta: dict) -> tuple[np.dtype, tuple[int, ...], int]:  # (dtype, shape, bytes)
    dtype = np.dtype(meta["dtype"]).newbyteorder("<")
    shape = tuple(int(n) for n in meta["shape"])
    return dtype, shape, math.prod(shape) * dtype.itemsize


def _check_pair(path: Path, meta: dict) -> None:
    """IncompleteExport unless our sidecar `meta` is final and describes the file at `path`."""
    side = sidecar_path(path)
    if meta.get("publishing"):
        raise IncompleteExport(f"{str(side)!r} says its export was being replaced when it stopped")
    if not path.exists():
        raise IncompleteExport(f"{str(side)!r} has no token file {str(path)!r}")
    try:
        expected = _layout(meta)[2]
    except (KeyError, TypeError, ValueError):
        raise IncompleteExport(f"{str(side)!r} lacks a valid dtype or shape") from None
    actual = os.path.getsize(path)
    if actual != expected:
        raise IncompleteExport(f"{str(path)!r} has {actual} bytes but its sidecar says {expected}")


def load_tokens(path: str | os.PathLike, dtype=None) -> np.ndarray:
    """A token file as a read-only [num_seqs, seq_len] memmap, or with `dtype` (np.int64 for
    PyTorch) a writable copy that must hold every id."""
    path = Path(path)
    if not path.exists() and not sidecar_path(path).exists():
        raise UserError(f"{str(path)!r} does not exist")
    meta = read_sidecar(path)
    try:
        _check_pair(path, meta)
    except IncompleteExport as e:
        raise IncompleteExport(
            f"{e}: an incomplete export; export it again to replace it (no force needed)"
        ) from None
    stored, shape, _ = _layout(meta)
    tokens = np.memmap(path, dtype=stored, mode="r", shape=shape)
    if dtype is None:
        return tokens
    want = np.dtype(dtype)
    if want.kind not in "iu" or not np.can_cast(stored, want, "safe"):
        raise UserError(
            f"load_tokens: dtype {want} cannot hold the file's {stored} token ids; "
            "use an integer type at least as wide (np.int64 for PyTorch)"
        )
    return np.array(tokens, dtype=want)


def _human(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if n < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000


def _size(path: Path) -> str:
    try:
        return _human(os.path.getsize(path))
    except OSError:
        return "size unknown"


def _check_target(path: Path, force: bool) -> None:
    """Refuse to replace a complete export or a file not ours unless `force`."""
    side = sidecar_path(path)
    has_data, has_side = path.exists(), side.exists()
    if not (has_data or has_side):
        return
    meta = _ours(side) if has_side else None
    if meta is None:  # not ours: a user's file that happens to have this name
        taken = path if has_data else side
        why = (
            f"it has no sidecar {str(side)!r}"
            if not has_side
            else f"{str(side)!r} ({_size(side)}) is not a {FORMAT} sidecar"
            if has_data
            else f"not a {FORMAT} sidecar"
        )
        detail = f"{_size(taken)}, not a spamlang export: {why}"
        if not force:
            raise NeedsForce(taken, detail)
        print(f"note: replacing {str(taken)!r} ({detail})", file=sys.stderr)
        return
    try:
        _check_pair(path, meta)
    except IncompleteExport as e:
        print(f"note: replacing an incomplete export ({e})", file=sys.stderr)
        return
    if not force:
        _, (n, length), _ = _layout(meta)
        raise NeedsForce(path, f"a spamlang export of {n} x {length} {meta['dtype']} tokens")


def write_tokens(
    path: str | os.PathLike,
    chunks: Iterable[np.ndarray],
    *,
    vocab_size: int,
    shape: tuple[int, int],
    about: dict,
    force: bool = False,
    progress: bool | None = None,
) -> dict:
    """Write the `shape` rows `chunks` yields (as `token_dtype(vocab_size)`) and a sidecar of the
    format fields and `about`; return the sidecar. Refuses a .npy name, a file that does not fit
    the disk, and (NeedsForce) replacing what is there unless `force`; a stop leaves the old
    pair."""
    from tqdm import tqdm

    path, side = Path(path), sidecar_path(path)
    if path.suffix.lower() in _NUMPY_SUFFIXES:
        raise UserError(
            f"{str(path)!r}: an export is a raw token file with a JSON sidecar, not "
            f"NumPy's {path.suffix} format (np.load cannot read it); name it e.g. "
            f"{path.with_suffix('.bin').name!r}, read it with "
            "spamlang.data.load_tokens or numpy.memmap"
        )
    if not path.parent.is_dir():
        raise UserError(f"output directory {str(path.parent)!r} does not exist")
    if path.is_dir():
        raise UserError(f"output path {str(path)!r} is a directory")
    for target in (path, side, _publishing_path(side)):
        clean_stale_temps(target)
    _check_target(path, force)
    dtype, total = token_dtype(vocab_size), math.prod(shape)
    # The old pair stays until the new one is complete: the new file must fit beside it.
    nbytes = total * dtype.itemsize
    free = shutil.disk_usage(path.parent).free
    if nbytes + _SIDECAR_SLACK > free:
        raise UserError(
            f"{str(path)!r} would need {_human(nbytes)} ({shape[0]} x {shape[1]} "
            f"{dtype.name}) but {str(path.parent)!r} has {_human(free)} free"
        )
    meta = {
        **about,
        "format": FORMAT,
        "vocab_size": vocab_size,
        "dtype": dtype.name,
        "byte_order": "little",
        "shape": list(shape),
        "bytes": nbytes,
    }
    show = total >= 2**24 if progress is None else progress
    with (
        signals_raise(),
        staged(path) as data_tmp,
        staged(side) as side_tmp,
        staged(_publishing_path(side)) as publishing_tmp,
    ):
        with tqdm(
            total=total, unit="tok", unit_scale=True, file=sys.stderr, disable=not show
        ) as bar:
            write_blocks(data_tmp, path, (_tick(bar, c).astype(dtype) for c in chunks))
        write_blocks(side_tmp, side, [_json_bytes(meta)])
        write_blocks(publishing_tmp, side, [_json_bytes({**meta, "publishing": True})])
        # "Publishing" sidecar, data, final sidecar: a pair cut between renames says so.
        publish((publishing_tmp, side), (data_tmp, path), (side_tmp, side))
    return meta


def _tick(bar, chunk: np.ndarray) -> np.ndarray:
    bar.update(chunk.size)
    return chunk


def _json_bytes(meta: dict) -> bytes:
    return (json.dumps(meta, indent=2, sort_keys=True) + "\n").encode("utf-8")


def write_blocks(tmp: Path, target: Path, blocks) -> None:
    """Write `blocks` to a fresh `tmp` and fsync it; an error names the target."""
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
