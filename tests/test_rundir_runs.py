"""`spamlang.rundir.runs`: a sweep directory read as runs, and `--where` selecting among them
(on test_plots' small synthetic sweep directory)."""

from __future__ import annotations

import pytest
from test_plots import sweep_dir  # noqa: F401 (a fixture)

from spamlang.errors import UserError
from spamlang.rundir import runs as sweep_runs
from spamlang.rundir.reading import iter_metrics


def test_results_reading(sweep_dir):  # noqa: F811 (the fixture imported above)
    runs = sweep_runs.finished_runs(sweep_dir)
    assert len(runs) == 11
    diverged = [r for r in runs if r.diverged]
    assert [(r.get("vocab_size"), r.lr, r.get("tie_embeddings")) for r in diverged] == [
        (4096, 1e-2, False)
    ]
    assert diverged[0].value("final_eval_loss") is None  # nan is not a value
    assert sweep_runs.varying_settings(runs) == ["vocab_size", "lr", "tie_embeddings"]
    scanned = sweep_runs.scan_runs(sweep_dir)
    assert len(scanned) == 5 and sum(not r.finished for r in scanned) == 1
    assert len(iter_metrics(scanned[0].path, "train")) == 4  # torn last line skipped
    picked = sweep_runs.select(runs, {"lr": "1e-2", "tie_embeddings": "false"})
    assert {(r.get("vocab_size"), r.get("tie_embeddings")) for r in picked} == {
        (64, False),
        (1024, False),
        (4096, False),
    }
    with pytest.raises(UserError, match="unknown column 'colour' for --where; known columns: "):
        sweep_runs.select(runs, {"colour": "red"})
    with pytest.raises(UserError, match="no run has lr"):
        sweep_runs.select(runs, {"lr": "0.5"})
