"""Writing a run directory's files other than checkpoints (names: `spamlang.rundir.schema`);
result.json, written last, marks the run's end. Reading them: `reading` and `spamlang.results`."""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spamlang.errors import UserError, no_space
from spamlang.rundir.atomic import (
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    clean_stale_temps,
    temp_target,
)
from spamlang.rundir.reading import read_json, read_lines, read_object
from spamlang.rundir.schema import (  # noqa: F401
    CHECKPOINTS,
    CONFIG,
    DIAGNOSTICS,
    METRICS,
    RESULT,
    RUN_LOCK,
    SYMBOL_ARRAYS,
    SYMBOL_EVALS,
    SYMBOLS,
    TRACK,
)


@dataclasses.dataclass(frozen=True)
class Folder:
    """What a writing command keeps in its output folder, for `claim_folder`."""

    what: str  # "a run directory": said when a folder is refused
    # (file name, whether its JSON is one this package wrote): a folder holding one is its own
    marks: tuple[tuple[str, Callable[[Any], bool]], ...]
    files: tuple[str, ...]  # what it writes there (fnmatch); their temporaries are leftovers
    locks: tuple[str, ...] = ()  # the lock files it takes there
    subfolders: Folder | None = None  # what it keeps in folders of its own (a sweep: runs)

    def leftover(self, folder: Path, name: str) -> bool:
        """Whether `name` in `folder` is what this command leaves there (a lock, a temporary, a
        write probe), or a folder `subfolders` would take."""
        from spamlang.rundir.lock import is_lock_file

        if self.subfolders is not None and (folder / name).is_dir():
            try:
                claim_folder(folder / name, self.subfolders, "")
            except UserError:
                return False
            return True
        if name in self.locks:
            return is_lock_file(folder / name)
        if (target := temp_target(name)) is not None:
            return any(fnmatch.fnmatchcase(target, pattern) for pattern in self.files)
        return name.startswith(_PROBE)

    def marked(self, folder: Path, listing: list[str]) -> tuple[bool, str | None]:
        """(whether `folder`, holding `listing`, holds a mark, the first one we did not write)."""
        foreign = None
        for name, ours in self.marks:
            if name not in listing:
                continue
            if ours(read_object(folder / name)):
                return True, None
            foreign = foreign or name
        return False, foreign


def _has_keys(*keys: str) -> Callable[[Any], bool]:
    return lambda data: isinstance(data, dict) and all(k in data for k in keys)


# A run's config.json (`TrainConfig.to_json`: these fields since the first version).
is_config = _has_keys("language", "lr", "seed")
# What `spamlang diagnose` and `diagnose-lm` measure (`diagnostics.diagnose_states`).
is_diagnostics = _has_keys("kernel_fraction", "projected_cosine", "vocab_size", "d_model")
_PROBE = ".write-test-"  # `probe_writable`'s files
RUN_FOLDER = Folder(
    "a run directory",
    marks=((CONFIG, is_config),),
    files=(CONFIG, METRICS, TRACK, RESULT, SYMBOLS, SYMBOL_EVALS, DIAGNOSTICS),
    locks=(RUN_LOCK,),
)


def claim_folder(
    folder: str | os.PathLike, kind: Folder, flag: str, listing: list[str] | None = None
) -> Path:
    """`folder` as a Path, when `kind`'s command may write there (new, holding only its leftovers,
    or its mark); else UserError naming what is in it. `listing`: the folder's names, if known."""
    path = check_path(folder, flag)
    if path.exists() and not path.is_dir():
        raise UserError(f"{flag} {path} is not a folder")
    if listing is None:
        if not path.is_dir():
            return path
        try:
            listing = os.listdir(path)
        except OSError as e:
            raise UserError(f"cannot read {flag} {path}: {e.strerror or e}") from None
    marked, fake = kind.marked(path, listing)
    if marked:
        return path
    foreign = sorted(n for n in listing if not kind.leftover(path, n))
    if not foreign:
        return path
    shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" * (len(foreign) > 3))
    why = f"its {fake} is not one spamlang wrote" if fake else f"it holds {shown}"
    raise UserError(
        f"{path} is not empty and not {kind.what} ({why}); choose a new or empty folder for {flag}"
    )


def json_safe(value: Any) -> Any:
    """`value` with NaN/inf floats (also inside lists/dicts, NumPy scalars) replaced by None."""
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# Why a started run's token budget is fixed; said by `prepare` and by a sweep directory whose
# base differs only in tokens (`spamlang.sweep.sweep_file`).
BUDGET_FIXED = (
    "a run's token budget cannot change: the LR schedule's warmup and decay are "
    "fractions of its total steps, so another budget would change the LR of every "
    "step already trained"
)
# What to do instead, for `spamlang train` and sweeps alike.
BUDGET_INSTEAD = (
    "train the new budget in another directory (another --out; a sweep: "
    "--set tokens=N, which writes runs/<name>-tok<N>)"
)


def check_path(path: str | os.PathLike, what: str = "--out") -> Path:
    """`path` as a Path, or a UserError when it is not valid UTF-8 (orbax would fail later)."""
    text = os.fsdecode(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        why = "is not valid UTF-8 (checkpoints need UTF-8 paths); choose another name"
        raise UserError(f"{what} {ascii(text)} {why}") from None
    return Path(text)


def make_dir(out_dir: str | os.PathLike) -> Path:
    """Create run directory `out_dir` (and its parents) if missing; UserError if impossible, or
    when it is someone else's folder (`claim_folder`)."""
    out = check_path(out_dir, "run directory")
    if out.is_dir() and not (out / CONFIG).exists():  # with one: `prepare` compares configs
        try:
            listing = os.listdir(out)
        except OSError as e:
            raise UserError(f"cannot read run directory {out}: {e.strerror or e}") from None
        _claim_run_dir(out, listing)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot create run directory {out}: {e.strerror or e}") from None
    return out


def prepare(out_dir: str | os.PathLike, config, *, write: bool = True) -> Path:
    """Create `out_dir` and write config.json, or check that the existing one matches `config`;
    UserError when it cannot be written, holds another run's config, or run files without one."""
    out = make_dir(out_dir)
    if write and not (out / RESULT).exists():  # a finished run may live on read-only storage
        try:
            probe_writable(out)
        except OSError as e:
            raise UserError(f"cannot write to run directory {out}: {e.strerror or e}") from None
    new = config.to_json()
    path = out / CONFIG
    # One listing, taken before config.json is looked for: in a multi-process job the writer may
    # create config.json and run files after the look, which a later look would take as foreign.
    listing = os.listdir(out)
    if path.exists():
        try:
            old = read_json(path)
        except (OSError, ValueError) as e:
            raise UserError(f"cannot read {path}: {e}") from None
        if not isinstance(old, dict):
            raise UserError(f"{path} is not a JSON object")
        try:  # a field added since the run was written takes its default, as it did then
            old = type(config).from_json(old).to_json()
        except (UserError, TypeError, ValueError):
            pass  # compared as written, and refused below if it differs
        keys = sorted(old.keys() | new.keys())
        diff = [k for k in keys if (k in old, old.get(k)) != (k in new, new.get(k))]
        if diff == ["tokens"]:  # "continue with more tokens": say why not, and what instead
            raise UserError(
                f"{out} holds a run with tokens: {old.get('tokens')!r} -> "
                f"{new.get('tokens')!r}; {BUDGET_FIXED}; {BUDGET_INSTEAD}"
            )
        if diff:
            # Values for the first few, every other field by name: one line, nothing hidden.
            shown = "; ".join(f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in diff[:6])
            if len(diff) > 6:
                shown += f"; and {len(diff) - 6} more: {', '.join(diff[6:])}"
            why = f"holds a run with a different config ({shown})"
            raise UserError(f"{out} {why}; choose another --out or delete it")
    else:
        _claim_run_dir(out, [n for n in listing if n != CONFIG])
        try:
            if write:
                atomic_write_json(path, new)
        except OSError as e:
            raise UserError(f"cannot write to run directory {out}: {e.strerror or e}") from None
    if write:  # rid of the temporaries that killed writers left (not by a reader)
        clean_stale_temps(*(out / name for name in RUN_FOLDER.files))
    return out


def _claim_run_dir(out: Path, listing: list[str]) -> None:
    """UserError unless `out`, holding `listing` and no config.json, may become a run directory."""
    if any(name in listing for name in (METRICS, RESULT, CHECKPOINTS)):
        raise UserError(f"{out} has run files but no {CONFIG}; refusing to reuse it")
    claim_folder(out, RUN_FOLDER, "--out", listing)


def probe_writable(directory: Path) -> None:
    """OSError unless a file can be created in `directory` (permission bits do not tell)."""
    fd, probe = tempfile.mkstemp(dir=directory, prefix=_PROBE)
    os.close(fd)
    os.unlink(probe)


def write_result(out_dir: str | os.PathLike, result: dict) -> None:
    atomic_write_json(Path(out_dir) / RESULT, json_safe(result))


def write_symbols(out_dir: str | os.PathLike, *, steps: int, **arrays) -> None:
    """symbols.npz (`SYMBOL_ARRAYS`, each of length V, and the scalar `steps`), atomically."""
    import io

    import numpy as np

    dtypes = dict.fromkeys(("appearances", "last_step", "first_step", "max_gap"), np.int32)
    dtypes.update(loss=np.float32, probability=np.float64, mean_gap=np.float32)
    if sorted(arrays) != sorted(SYMBOL_ARRAYS):
        raise ValueError(f"symbols.npz holds {SYMBOL_ARRAYS}, got {sorted(arrays)}")
    buf = io.BytesIO()
    np.savez(buf, steps=np.int64(steps), **{k: np.asarray(v, dtypes[k]) for k, v in arrays.items()})
    atomic_write_bytes(Path(out_dir) / SYMBOLS, buf.getvalue())


class MetricsLog:
    """Append-only metrics.jsonl, cut back to a step on open, keeping the rows written so far;
    `write=False` (processes other than 0 of a multi-host job) never touches the file."""

    def __init__(self, out_dir, keep_through_step: int, *, write: bool = True, name=METRICS):
        self.path = Path(out_dir) / name
        self.records: list[dict] = []
        if self.path.exists():
            lines = read_lines(self.path)
            if lines.bad:  # only a crash's torn last write may be cut
                why = f"line {lines.bad[0]} is not a metrics row; nothing was changed"
                raise UserError(f"{self.path} {why}: repair or delete that line")
            self.records = [r for r in lines.rows if r.get("step", 0) <= keep_through_step]
            if write and (lines.torn or len(self.records) < len(lines.rows)):  # a line was cut
                atomic_write_text(self.path, "".join(_line(r) for r in self.records))
        self._file = open(self.path, "a", encoding="utf-8") if write else None

    def append(self, record: dict) -> None:
        record = json_safe(record)
        self.records.append(record)
        if self._file is not None:
            try:
                self._file.write(_line(record))
                self._file.flush()
            except OSError as e:
                raise (no_space(self.path, e) or e) from e

    def sync(self) -> None:
        """Make the lines durable before a checkpoint claims the steps they describe."""
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())

    def train(self, key: str) -> list:
        """`key` of every train row, in order (None where a row lacks it)."""
        return [r.get(key) for r in self.records if r.get("kind") == "train"]

    def last_diag(self) -> dict | None:
        """The newest diag row (None when the run logs no diagnostics)."""
        return next((r for r in reversed(self.records) if r.get("kind") == "diag"), None)

    def close(self) -> None:
        """Close the file (once); a full disk while flushing it is `no_space`'s UserError."""
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.close()
            except OSError as e:
                raise (no_space(self.path, e) or e) from e


def _line(record: dict) -> str:
    return json.dumps(record, allow_nan=False) + "\n"


def final_train_loss(losses: list) -> float | None:
    """Mean of the last 10% (at least one) of the train losses; None without any, or with a null
    one among them: a diverged tail is not a low loss."""
    if not losses:
        return None
    tail = losses[-max(1, math.ceil(len(losses) / 10)) :]
    if any(v is None for v in tail):
        return None
    return sum(tail) / len(tail)
