"""Settings results.csv leaves out, read from the runs' own config.json.

results.csv lists weight_decay, b2, optimizer and sampling only when they are axes of the
sweep; a sweep that fixed b2 = 0.999 in its base would otherwise be fitted at the default
0.95. A run whose config.json cannot be read keeps the cell empty (the default, later).
"""

from __future__ import annotations

import json
from pathlib import Path

from spamlang.law.cells import DEFAULTED, missing
from spamlang.schema import CONFIG


def fill_from_configs(frame, sweep_dir: str | Path):
    """`frame` (results.csv of `sweep_dir`, or of the single run `sweep_dir`) with the
    DEFAULTED columns it lacks, or lacks in some rows, taken from each run's config.json."""
    root = Path(sweep_dir)
    frame = frame.copy()
    wanted = [c for c in DEFAULTED if c not in frame.columns or frame[c].map(missing).any()]
    if not wanted or "run_id" not in frame.columns:
        return frame
    configs = [_config(root, run_id) for run_id in frame["run_id"]]
    for column in wanted:
        old = list(frame[column]) if column in frame.columns else [None] * len(frame)
        frame[column] = [c.get(column) if missing(v) else v for v, c in zip(old, configs)]
    return frame


def _config(root: Path, run_id) -> dict:
    for path in (root / str(run_id) / CONFIG, root / CONFIG):  # a sweep's run, or the run
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            return data
    return {}
