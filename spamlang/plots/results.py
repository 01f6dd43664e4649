"""Read a sweep directory from disk: results.csv, run directories, metrics.jsonl.

Plots only ever read files, so that they work on a sweep that another host is still running and
never import the trainer. A sweep directory holds `<run_id>/` run directories (config.json,
metrics.jsonl, result.json once finished) and `results.csv` (one row per finished run). When
results.csv is missing, finished runs are read from their run directories instead.

Every run is placed on the plotting grid by (vocab_size, lr, tie_embeddings); any other setting
that varies across runs (head, language, seed, ...) is an "axis" used to split figures into rows
(`facets`) or to select runs (`select`, from `--where key=value`).
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spamlang.errors import UserError

GRID_KEYS = ("vocab_size", "lr", "tie_embeddings")
# results.csv columns that are outcomes, not settings (contract of the sweep module).
METRIC_COLUMNS = (
    "final_train_loss", "final_eval_loss", "loss_above_floor", "optimal_loss",
    "repetition_accuracy", "eval_accuracy", "diverged", "diverged_step", "steps", "tokens",
    "tokens_per_s", "wall_seconds",
)
# Settings that identify a run's bookkeeping rather than an experimental axis.
_NOT_AXES = frozenset(GRID_KEYS) | {"run_id"} | frozenset(METRIC_COLUMNS)


@dataclass(frozen=True)
class Run:
    """One point of a sweep as the plots see it."""

    run_id: str  # the run directory's name (or results.csv's run_id)
    vocab_size: int  # V
    lr: float  # peak learning rate
    tied: bool  # tie_embeddings
    axes: dict[str, str] = field(default_factory=dict)  # every other setting, as text
    result: dict[str, Any] = field(default_factory=dict)  # result.json / results.csv outcome; {} if running
    path: Path | None = None  # run directory, when it exists

    @property
    def finished(self) -> bool:
        return bool(self.result)

    @property
    def diverged(self) -> bool:
        return bool(self.result.get("diverged"))

    def value(self, metric: str) -> float | None:
        """A finite float outcome, or None when missing or not finite."""
        v = self.result.get(metric)
        if v is None or isinstance(v, bool):
            return None
        v = float(v)
        return v if math.isfinite(v) else None


def _text(v: Any) -> str:
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True)
    return str(v)


def _parse_bool(s: str) -> bool:
    return str(s).strip().lower() in ("true", "1", "yes")


def _parse_cell(s: str) -> Any:
    s = s.strip()
    if s == "":
        return None
    if s in ("True", "False"):
        return s == "True"
    try:
        return float(s)
    except ValueError:
        return s


def check_dir(sweep_dir: str | Path) -> Path:
    path = Path(sweep_dir)
    if not path.is_dir():
        raise UserError(f"no such directory: {path}")
    return path


def _run_dirs(root: Path) -> list[Path]:
    dirs = [root] if (root / "config.json").is_file() else []
    return dirs + sorted(p for p in root.iterdir() if (p / "config.json").is_file())


def _read_json(path: Path) -> Any | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # a file being written by a live run; treat as absent


def _run_from_dir(path: Path) -> Run | None:
    config = _read_json(path / "config.json")
    if not isinstance(config, dict) or not all(k in config for k in GRID_KEYS):
        return None
    result = _read_json(path / "result.json") if (path / "result.json").is_file() else None
    axes = {k: _text(v) for k, v in config.items() if k not in _NOT_AXES}
    return Run(
        run_id=path.name,
        vocab_size=int(config["vocab_size"]),
        lr=float(config["lr"]),
        tied=bool(config["tie_embeddings"]),
        axes=axes,
        result=result if isinstance(result, dict) else {},
        path=path,
    )


def scan_runs(sweep_dir: str | Path) -> list[Run]:
    """Every run directory under `sweep_dir` (and `sweep_dir` itself if it is one), finished or not."""
    root = check_dir(sweep_dir)
    return [r for r in map(_run_from_dir, _run_dirs(root)) if r is not None]


def _runs_from_csv(path: Path, root: Path) -> list[Run]:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    missing = [k for k in GRID_KEYS if rows and k not in rows[0]]
    if missing:
        raise UserError(f"{path} lacks the column(s) {', '.join(missing)}")
    runs = []
    for row in rows:
        run_id = row.get("run_id") or ""
        result = {k: _parse_cell(row[k]) for k in METRIC_COLUMNS if k in row}
        result["diverged"] = _parse_bool(row.get("diverged", "False"))
        runs.append(Run(
            run_id=run_id,
            vocab_size=int(float(row["vocab_size"])),
            lr=float(row["lr"]),
            tied=_parse_bool(row["tie_embeddings"]),
            axes={k: v for k, v in row.items() if k not in _NOT_AXES and k is not None},
            result=result,
            path=(root / run_id) if run_id and (root / run_id).is_dir() else None,
        ))
    return runs


def finished_runs(sweep_dir: str | Path) -> list[Run]:
    """Finished runs: rows of results.csv, or run directories with result.json when it is absent."""
    root = check_dir(sweep_dir)
    csv_path = root / "results.csv"
    runs = _runs_from_csv(csv_path, root) if csv_path.is_file() else []
    if not runs:
        runs = [r for r in scan_runs(root) if r.finished]
    if not runs:
        raise UserError(f"no finished runs in {root}")
    return runs


def _same(a: str, b: str) -> bool:
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-9)
    except ValueError:
        pass
    if {a.lower(), b.lower()} <= {"true", "false"}:
        return a.lower() == b.lower()
    return a == b


def _field(run: Run, key: str) -> str | None:
    if key == "vocab_size":
        return str(run.vocab_size)
    if key == "lr":
        return repr(run.lr)
    if key in ("tie_embeddings", "tied"):
        return str(run.tied)
    return run.axes.get(key)


def select(runs: list[Run], where: dict[str, str] | None) -> list[Run]:
    """Runs whose settings match every `key=value` of `where` (numbers compare by value)."""
    for key, want in (where or {}).items():
        known = sorted(set(GRID_KEYS) | {k for r in runs for k in r.axes})
        if key not in known and key != "tied":
            raise UserError(f"unknown setting {key!r} in --where; known: {', '.join(known)}")
        kept = [r for r in runs if (v := _field(r, key)) is not None and _same(v, str(want))]
        if not kept:
            values = sorted({v for r in runs if (v := _field(r, key)) is not None})
            raise UserError(f"no run has {key}={want}; its values are: {', '.join(values)}")
        runs = kept
    return runs


def varying_axes(runs: list[Run]) -> list[str]:
    """Non-grid settings that take more than one value among `runs`."""
    keys = sorted({k for r in runs for k in r.axes})
    return [k for k in keys if len({r.axes.get(k) for r in runs}) > 1]


def facets(runs: list[Run], max_rows: int = 8) -> list[tuple[str, list[Run]]]:
    """Split runs into figure rows, one per combination of the settings that vary.

    The label is "" when nothing but the grid varies. Too many rows is a UserError that asks for
    `--where`, since such a figure would not be readable.
    """
    keys = varying_axes(runs)
    groups: dict[tuple, list[Run]] = {}
    for r in runs:
        groups.setdefault(tuple(r.axes.get(k) for k in keys), []).append(r)
    if len(groups) > max_rows:
        raise UserError(
            f"{len(groups)} combinations of {', '.join(keys)}: pick some with --where key=value"
        )
    return [
        (", ".join(f"{k}={v}" for k, v in zip(keys, combo)), members)
        for combo, members in sorted(groups.items(), key=lambda kv: [str(x) for x in kv[0]])
    ]


def read_metrics(run_dir: str | Path, kind: str = "train") -> list[dict]:
    """Rows of `metrics.jsonl` with the given kind; a torn last line (live run) is skipped."""
    path = Path(run_dir) / "metrics.jsonl"
    if not path.is_file():
        return []
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and row.get("kind") == kind:
                rows.append(row)
    return rows
