"""Gather finished runs into results.csv: one row per run directory that holds result.json.

Gathering reads only what is on disk (each run's config.json and result.json, and the sweep's
sweep.json for the extra axis columns), never any in-memory state, so however a sweep was
interrupted (even SIGKILL), the next gather lists every finished run exactly once. Shards
running at the same time take turns at results.csv (`write_results` holds a lock).
"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path
from typing import Any

from spamlang.fileio import atomic_write_text
from spamlang.filelock import locked

from spamlang.schema import (CONFIG, RESULT, RESULT_COLUMNS, RESULTS_FILE, RESULTS_LOCK,
                             SETTING_COLUMNS, SWEEP_FILE)


def _read(path: Path) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def extra_axes(out_dir: str | Path) -> list[str]:
    """Axis names of the sweep in `out_dir` that are not already standard columns."""
    try:
        axes = _read(Path(out_dir) / SWEEP_FILE).get("axes", {})
    except (OSError, ValueError, AttributeError):
        return []
    names = [n.strip() for a in axes for n in a.split(",")]  # a linked axis sets several
    standard = {*SETTING_COLUMNS, *RESULT_COLUMNS, "model.d_model"}  # d_model is a column
    return [n for n in dict.fromkeys(names) if n not in standard]


def _model_value(config: dict, name: str) -> Any:
    """A model field as the run saw it: override, else preset value, else ModelConfig default."""
    overrides = config.get("model_overrides") or {}
    if name in overrides:
        return overrides[name]
    from spamlang.errors import UserError
    from spamlang.model.config import ModelConfig, preset_fields
    import dataclasses

    try:  # a width-family name (tiny-w64) resolves to its own d_model, not the base's
        preset = preset_fields(config.get("preset"))
    except UserError:  # a preset this version does not know: fall back to the defaults
        preset = {}
    if name in preset:
        return preset[name]
    defaults = {f.name: f.default for f in dataclasses.fields(ModelConfig)}
    return defaults.get(name)


def _param_value(config: dict, name: str) -> Any:
    params = config.get("language_params") or {}
    if name in params:
        return params[name]
    try:
        from spamlang import languages

        lang = languages.make(config["language"], vocab_size=config["vocab_size"], **params)
        return lang.params().get(name)
    except Exception:  # an old or foreign config: leave the cell empty rather than fail the gather
        return None


def _setting(config: dict, column: str) -> Any:
    if column == "d_model":
        return _model_value(config, "d_model")
    if column.startswith("model."):
        return _model_value(config, column[len("model."):])
    if column.startswith("param."):
        return _param_value(config, column[len("param."):])
    return config.get(column)


def _fill_older(row: dict, config: dict) -> None:
    """The config-derived outcomes of a run written before they were reported."""
    if row["updates_per_symbol"] is None:  # the column's old name
        row["updates_per_symbol"] = row["sequences_per_symbol"]
    missing = [k for k in ("symbol_return_steps", "adam_memory_steps") if row[k] is None]
    if not missing:
        return
    from spamlang.train.config import TrainConfig

    try:
        row.update({k: TrainConfig.from_json(config).return_time[k] for k in missing})
    except (ValueError, TypeError):  # a foreign config (UserError is a ValueError): leave empty
        pass


def gather(out_dir: str | Path) -> list[dict]:
    """One dict per finished run under `out_dir` (columns of results.csv), sorted by run id.

    A run directory whose result.json or config.json cannot be read is skipped with a warning
    on stderr (it will be picked up once it is whole).
    """
    root = Path(out_dir)
    if not root.is_dir():
        return []
    extras = extra_axes(root)
    rows = []
    for run_dir in sorted(p for p in root.iterdir() if (p / RESULT).is_file()):
        try:
            result, config = _read(run_dir / RESULT), _read(run_dir / CONFIG)
            if not isinstance(result, dict) or not isinstance(config, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as e:
            print(f"warning: skipping {run_dir}: {e}", file=sys.stderr)
            continue
        row = {"run_id": run_dir.name}
        row.update({c: _setting(config, c) for c in SETTING_COLUMNS[1:]})
        row.update({c: _setting(config, c) for c in extras})
        row.update({c: result.get(c) for c in RESULT_COLUMNS})
        _fill_older(row, config)
        rows.append(row)
    return rows


def _cell(value: Any) -> Any:
    # csv writes None as "" and bools as True/False already; containers need to be one cell.
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True)
    return value


def write_results(out_dir: str | Path) -> list[dict]:
    """Gather `out_dir` and rewrite its results.csv atomically; return the rows.

    Gather and write happen under a lock (`.results.lock` in `out_dir`, waited for), so that
    concurrent writers (the shards of one sweep) take turns: a gather that began before
    another shard's run finished can no longer overwrite that shard's newer table, and the
    last table written lists every run finished before its writer took the lock.
    """
    root = Path(out_dir)
    with locked(root / RESULTS_LOCK):
        rows = gather(root)
        columns = [*SETTING_COLUMNS, *extra_axes(root), *RESULT_COLUMNS]
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n",
                                extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _cell(v) for k, v in row.items()})
        atomic_write_text(root / RESULTS_FILE, buf.getvalue())
    return rows
