"""`spamlang.results.read_runs`: a sweep directory read as runs, and `--where` selecting among
them (on test_plots' small synthetic sweep directory)."""

from __future__ import annotations

import pytest
from test_plots import sweep_dir  # noqa: F401 (a fixture)

from spamlang.errors import UserError
from spamlang.plots.layout import varying
from spamlang.results import RunWarning, load_metrics, read_runs, records, select


def test_results_reading(sweep_dir):  # noqa: F811 (the fixture imported above)
    every = read_runs(sweep_dir)
    # 11 rows of results.csv, 4 with a folder; one more folder holds a run still going.
    assert len(every) == 11 and every["path"].notna().sum() == 5
    runs = every[every["finished"]]
    assert len(runs) == 10 and every.loc[~every["finished"], "run_id"].tolist() == [
        "V4096-lr0.001-tied"
    ]
    diverged = [r for r in records(runs) if r["diverged"]]
    assert [(r["vocab_size"], r["lr"], r["tie_embeddings"]) for r in diverged] == [
        (4096, 1e-2, False)
    ]
    assert diverged[0]["final_eval_loss"] is None  # nan is not a value
    assert varying(records(runs), runs.attrs["settings"]) == ["vocab_size", "lr", "tie_embeddings"]
    with pytest.warns(RunWarning, match="torn last line"):  # of the finished runs
        metrics = load_metrics(every[every["path"].notna()])
    first = metrics[metrics["run_id"] == "V64-lr0.001-tied"]
    assert len(first[first["kind"] == "train"]) == 4  # torn last line skipped
    picked = records(select(runs, {"lr": "1e-2", "tie_embeddings": "false"}))
    assert {(r["vocab_size"], r["tie_embeddings"]) for r in picked} == {
        (64, False),
        (1024, False),
        (4096, False),
    }
    with pytest.raises(UserError, match="unknown column 'colour' for --where; known columns: "):
        select(runs, {"colour": "red"})
    with pytest.raises(UserError, match="no run has lr"):
        select(runs, {"lr": "0.5"})
