"""A finished sweep written by hand, as `spamlang sweep` leaves it, for tests of what reads
one (results tables, damage reports, read-only storage) without training anything."""

import json
from pathlib import Path

from spamlang.rundir.schema import RESULT_COLUMNS
from spamlang.sweep.sweep_file import check_sweep_file


def write_finished_sweep(sweep, root: Path, metrics=lambda run_id: "") -> None:
    """Every point of `sweep` as a finished run under `root`: its config.json, `metrics(run_id)`
    as its metrics.jsonl, and a result.json of 1.0 in every outcome column, not diverged."""
    root.mkdir()
    check_sweep_file(sweep, root)
    for run_id, config in sweep.points():
        d = root / run_id
        d.mkdir()
        (d / "config.json").write_text(json.dumps(config.to_json()))
        (d / "metrics.jsonl").write_text(metrics(run_id))
        result = {k: 1.0 for k in RESULT_COLUMNS}
        result.update(diverged=False, diverged_step=None)
        (d / "result.json").write_text(json.dumps(result))
