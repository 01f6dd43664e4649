"""spamlang.results: a hand-made sweep directory read back as typed pandas DataFrames."""

from __future__ import annotations

import csv
import json
import math

import pytest

from spamlang.errors import UserError

pd = pytest.importorskip("pandas")

import spamlang.results as results  # noqa: E402  (after the skip: it needs pandas)

HEADER = [
    "run_id",
    "language",
    "preset",
    "d_model",
    "vocab_size",
    "lr",
    "tie_embeddings",
    "head",
    "seed",
    "seq_len",
    "batch_size",
    "param.s",
    "final_eval_loss",
    "diverged",
    "diverged_step",
    "steps",
    "kernel_fraction",
]


def _run(root, run_id, config, rows, finished=True):
    d = root / run_id
    d.mkdir()
    (d / "config.json").write_text(json.dumps(config))
    lines = [json.dumps(r) for r in rows]
    (d / "metrics.jsonl").write_text("\n".join(lines) + '\n{"kind": "tra')  # torn last line
    if finished:
        (d / "result.json").write_text("{}")


@pytest.fixture()
def sweep(tmp_path):
    """Two finished runs in results.csv (one diverged) and one still going (config.json only)."""
    root = tmp_path / "sweep"
    root.mkdir()
    base = {
        "language": "zipf-spam",
        "preset": "tiny",
        "vocab_size": 64,
        "seq_len": 16,
        "batch_size": 8,
        "tie_embeddings": False,
        "head": "softmax",
        "seed": 0,
    }
    with open(root / "results.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        w.writerow(
            [
                "lr1e-3",
                "zipf-spam",
                "tiny",
                16,
                64,
                0.001,
                True,
                "softmax",
                0,
                16,
                8,
                1.0,
                0.25,
                False,
                "",
                60,
                "",
            ]
        )
        w.writerow(
            [
                "lr1",
                "zipf-spam",
                "tiny",
                16,
                64,
                1,
                False,
                "softmax",
                1,
                16,
                8,
                1.5,
                "nan",
                True,
                7,
                7,
                "",
            ]
        )
    train = {"kind": "train", "step": 5, "tokens": 640, "loss": 2.0, "lr": 1e-3}
    _run(
        root,
        "lr1e-3",
        {**base, "lr": 1e-3, "tie_embeddings": True, "language_params": {"s": 1.0}},
        [train, {"kind": "eval", "step": 60, "tokens": 7680, "eval_loss": 0.25}],
    )
    _run(
        root,
        "lr1",
        {**base, "lr": 1.0, "seed": 1, "language_params": {"s": 1.5}},
        [{**train, "loss": None}],
    )
    # Not in results.csv yet: its axes come from config.json (d_model from the preset, the
    # language's default s).
    _run(root, "lr3e-3", {**base, "lr": 3e-3}, [{**train, "lr": 3e-3}], finished=False)
    return root


def test_load_types_every_column(sweep):
    df = results.load(sweep)
    assert list(df.columns) == HEADER and len(df) == 2
    assert df["run_id"].tolist() == ["lr1e-3", "lr1"]  # names, not numbers (lr1e-3 != 0.001)
    for column in ("d_model", "vocab_size", "seed", "seq_len", "batch_size", "steps"):
        assert df[column].dtype == "int64", column
    for column in ("lr", "param.s", "final_eval_loss", "diverged_step", "kernel_fraction"):
        assert df[column].dtype == "float64", column
    assert df["tie_embeddings"].dtype == bool and df["diverged"].dtype == bool
    assert df["lr"].tolist() == [0.001, 1.0]  # "1" and "0.001": one float column
    assert math.isnan(df["final_eval_loss"][1]) and math.isnan(df["diverged_step"][0])
    assert df["diverged_step"][1] == 7 and df["kernel_fraction"].isna().all()
    assert df["head"].tolist() == ["softmax", "softmax"]


def test_load_metrics_is_the_long_table_with_the_axes(sweep):
    with pytest.warns(results.RunWarning, match="dropped the torn last line") as caught:
        m = results.load_metrics(sweep)
    assert len(caught) == 2  # one per finished run whose last line is torn
    assert list(m.columns[:4]) == ["run_id", "kind", "step", "tokens"]
    assert list(m.columns[-12:]) == [*HEADER[1:12], "finished"]  # the axes, then finished
    assert m["run_id"].tolist() == ["lr1", "lr1e-3", "lr1e-3", "lr3e-3"]  # torn lines skipped
    assert m["step"].dtype == "int64" and m["tokens"].dtype == "int64"
    assert m["loss"].dtype == "float64" and math.isnan(m["loss"][0])  # null: non-finite
    assert math.isnan(m["eval_loss"][1]) and m["eval_loss"][2] == 0.25
    # The train rows' lr is the LR of their step; `lr` stays the run's peak LR (an axis).
    assert m["lr_at_step"][3] == 3e-3 and m["lr"].tolist() == [1.0, 0.001, 0.001, 0.003]
    assert m["tie_embeddings"].dtype == bool and m["finished"].tolist() == [True, True, True, False]
    going = m[m["run_id"] == "lr3e-3"].iloc[0]
    assert going["d_model"] == 16 and going["param.s"] == 1.0 and going["seq_len"] == 16
    assert m["d_model"].dtype == "int64"


def test_errors_are_one_line_user_errors(sweep, tmp_path):
    with pytest.raises(UserError, match="no such directory"):
        results.load(tmp_path / "nope")
    (sweep / "results.csv").unlink()
    with pytest.raises(UserError, match="no results.csv in"):
        results.load(sweep)
    # Without results.csv every run's axes come from its config.json.
    with pytest.warns(results.RunWarning, match="torn last line"):
        assert results.load_metrics(sweep)["vocab_size"].tolist() == [64] * 4
