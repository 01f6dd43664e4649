"""`spamlang.rundir`: metrics.jsonl is cut back on resume, and only a torn last line may go; the
best value of each group of a results table (`reading.best_over`)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from spamlang import rundir
from spamlang.errors import UserError
from spamlang.rundir import reading

ROWS = [{"kind": "train", "step": s, "loss": 1.0 / s} for s in (1, 2, 3)]


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines))


def test_a_torn_last_line_is_cut_on_resume(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS) + '{"kind": "tr')
    log = rundir.MetricsLog(tmp_path, 2)
    log.close()
    assert [json.loads(line) for line in path.read_text().splitlines()] == ROWS[:2]


@pytest.mark.parametrize("bad", ['{"kind": "tr', "garbage", "[1, 2]"])
def test_a_bad_line_before_the_last_is_an_error_naming_it_and_nothing_is_deleted(tmp_path, bad):
    path = tmp_path / "metrics.jsonl"
    _write(path, [json.dumps(ROWS[0]), bad, json.dumps(ROWS[1]), json.dumps(ROWS[2])])
    before = path.read_bytes()
    with pytest.raises(UserError, match=rf"{path} line 2 is not a metrics row"):
        rundir.MetricsLog(tmp_path, 3)
    with pytest.raises(UserError, match="line 2"):
        rundir.MetricsLog(tmp_path, 1)  # cutting back does not hide it either
    assert path.read_bytes() == before


def test_a_users_own_folder_is_refused_as_out_and_nothing_is_written_there(tmp_path, capsys):
    """`--out mine`, a folder of the user's own files that is not a run: it trained into it,
    scattering config.json and checkpoints/ among them. Now one line, exit 2, folder as it was;
    an empty folder, or one holding only a run's lock, is still a fine --out."""
    from spamlang.cli import main

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "analysis.py").write_text("print('mine')\n")
    args = ["--vocab-size", "16", "--seq-len", "2", "--batch-size", "4", "--tokens", "16"]
    assert main(["train", *args, "--out", str(mine)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not empty and not a run directory" in err[0]
    assert sorted(p.name for p in mine.iterdir()) == ["analysis.py"]
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / ".lock").write_text("")  # a crash between taking the lock and config.json
    assert main(["train", *args, "--out", str(empty)]) == 0
    assert (empty / "result.json").is_file()


@pytest.mark.parametrize("name", ["metrics.jsonl", "result.json", "checkpoints"])
def test_run_files_without_a_config_are_refused_and_nothing_is_written(tmp_path, name):
    """A folder holding a run's files but no config.json was not written by `prepare` (its
    writer writes config.json first): reusing it could mix two runs, so it is refused, and
    prepare leaves no config.json there."""
    from spamlang.train.config import TrainConfig

    out = tmp_path / "run"
    out.mkdir()
    (out / name).mkdir() if name == "checkpoints" else (out / name).write_text("{}\n")
    with pytest.raises(UserError, match="has run files but no config.json"):
        rundir.prepare(out, TrainConfig(vocab_size=16, seq_len=2, batch_size=4, tokens=16))
    assert sorted(p.name for p in out.iterdir()) == [name]


def test_best_over_is_the_lowest_group_mean_ties_to_the_smaller_value():
    nan = math.nan
    frame = pd.DataFrame(
        [  # (cell, lr, loss): cell "b" first appears before cell "a" has its best lr
            ("a", 1e-2, 2.0),
            ("b", 1e-2, nan),
            ("a", 3e-3, 1.0),
            ("a", 3e-3, 3.0),  # mean 2.0: a tie with 1e-2, which goes to the smaller lr
            ("b", 3e-3, 5.0),
            ("c", 1e-2, nan),  # no value at all: left out
            ("a", 1e-1, 4.0),
        ],
        columns=["cell", "lr", "loss"],
    )
    best = reading.best_over(frame, "cell", "lr", "loss")
    assert best.to_dict("records") == [
        {"cell": "a", "lr": 3e-3, "mean": 2.0, "min": 1.0, "max": 3.0, "count": 2},
        {"cell": "b", "lr": 3e-3, "mean": 5.0, "min": 5.0, "max": 5.0, "count": 1},
    ]
    highest = reading.best_over(frame, "cell", "lr", "loss", highest=True)
    assert list(highest["lr"]) == [1e-1, 3e-3]
