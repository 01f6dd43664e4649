"""`spamlang plot buckets`: a corpus run's val loss by training count and age, from handmade
result.json files (nothing is trained)."""

from __future__ import annotations

import json
import math

import pytest

from spamlang.cli import main
from spamlang.plots.buckets import (
    AGE0_X,
    age_x,
    buckets_figure,
    buckets_table,
    load_buckets,
    series,
)

STEPS = 100


def cell(count_lo, count_hi, age_lo, age_hi, targets, loss, ids=1) -> dict:
    return dict(
        count_lo=count_lo,
        count_hi=count_hi,
        age_lo=age_lo,
        age_hi=age_hi,
        ids=ids,
        val_targets=targets,
        val_loss=loss,
    )


ROWS = [
    cell(0, 1, None, None, 30, 7.5, ids=3),  # never a target
    cell(1, 2, 32, 64, 25, 7.0),
    cell(1, 2, 64, 128, 5, 7.2),  # too few targets: dropped
    cell(8, 16, 4, 8, 40, 6.0),
    cell(8, 16, 0, 1, 50, 5.0),  # listed out of age order on purpose
    cell(8, 16, 1, 2, 19, 5.5),  # one short of MIN_TARGETS: dropped
    cell(1024, 2048, 0, 1, 5000, 2.0),
]


def write_run(root, name: str, b2: float = 0.95, corpus: bool = True, finished: bool = True):
    run = root / name
    run.mkdir(parents=True)
    config = {"optimizer": "adamw", "b2": b2, "head_amsgrad": b2 > 0.99, "corpus": "/c"}
    (run / "config.json").write_text(json.dumps(config))
    if not finished:
        return run
    result = {"steps": STEPS, "final_eval_loss": 4.25, "adam_memory_steps": 1 / (1 - b2)}
    if corpus:
        result["corpus"] = {"name": "c", "val_unigram_loss": 3.5}
        result["target_buckets"] = {
            "steps": STEPS,
            "adam_memory_steps": 1 / (1 - b2),
            "rows": ROWS,
        }
    (run / "result.json").write_text(json.dumps(result))
    return run


def test_series_drop_small_cells_and_sort_by_age():
    lines, dropped = series(ROWS, STEPS, min_targets=20)
    assert dropped == 2
    assert [(s.count_lo, s.count_hi) for s in lines] == [(0, 1), (1, 2), (8, 16), (1024, 2048)]
    by_count = {s.count_lo: s for s in lines}
    assert by_count[8].x == (AGE0_X, math.sqrt(4 * 8))  # age 0 first, [1, 2) left out
    assert by_count[8].loss == (5.0, 6.0) and by_count[8].targets == (50, 40)
    assert by_count[1].x == (math.sqrt(32 * 64),)
    assert series(ROWS, STEPS, min_targets=0)[1] == 0  # nothing dropped
    assert series(ROWS, STEPS, min_targets=10**6) == ([], len(ROWS))


def test_never_a_target_sits_right_of_every_age():
    never = series(ROWS, STEPS)[0][0]
    assert never.count_lo == 0 and never.x == (STEPS,) and never.ids == (3,)
    # ages stay below steps: the oldest bucket's middle is left of the never-a-target cross
    assert age_x(64, 128, STEPS) < STEPS and age_x(None, None, STEPS) == STEPS
    assert age_x(0, 1, STEPS) == AGE0_X < age_x(1, 2, STEPS) == math.sqrt(2)


def test_figure_draws_memory_line_unigram_and_never(tmp_path):
    runs = [load_buckets(write_run(tmp_path, "a", 0.95)), load_buckets(write_run(tmp_path, "b"))]
    fig = buckets_figure(runs, min_targets=20)
    ax = fig.axes[0]
    (memory,) = [line for line in ax.lines if line.get_gid() == "memory"]
    assert memory.get_xdata()[0] == pytest.approx(20.0)
    assert "Adam memory 1/(1\u2212b2) = 20 steps" in memory.get_label()
    (unigram,) = [line for line in ax.lines if line.get_gid() == "unigram"]
    assert unigram.get_ydata()[0] == 3.5
    (never,) = [line for line in ax.lines if line.get_gid() == "never"]
    assert list(never.get_xdata()) == [STEPS] and "never a target (3 ids)" in never.get_label()
    assert ax.get_title() == "a\nadamw b2=0.95, eval loss 4.25"
    assert "fewer than 20 validation targets" in fig.get_supxlabel()
    assert fig.axes[1].get_shared_y_axes().joined(fig.axes[0], fig.axes[1])


def test_title_names_head_amsgrad_and_table_marks_dropped_cells(tmp_path):
    run = load_buckets(write_run(tmp_path, "slow", b2=0.999))
    assert (
        buckets_figure([run]).axes[0].get_title().startswith("slow\nadamw b2=0.999, head_amsgrad")
    )
    table = buckets_table(run, min_targets=20).splitlines()
    assert table[1].split() == ["count", "\\", "age", "0", "1", "4-7", "32-63", "64-127", "never"]
    assert table[2].split() == ["0", "7.500"]  # never a target: its one cell, last column
    assert table[4].split() == ["8-15", "5.000", ".", "6.000"]


def test_cli_draws_and_prints_the_table(tmp_path, capsys):
    out = tmp_path / "b.png"
    argv = ["plot", "buckets", str(write_run(tmp_path, "a")), str(write_run(tmp_path, "b", 0.999))]
    assert main([*argv, "-o", str(out), "--table", "--min-targets", "30"]) == 0
    stdout = capsys.readouterr().out
    assert out.stat().st_size > 0 and f"wrote {out}" in stdout
    assert stdout.count("val loss (nats) by times a target") == 2 and "under 30" in stdout


@pytest.mark.parametrize(
    "kind, words",
    [("plain", "is not a corpus run"), ("running", "has not finished"), ("missing", "no such")],
)
def test_a_run_that_is_not_a_finished_corpus_run_exits_2(tmp_path, capsys, kind, words):
    good = write_run(tmp_path, "good")
    bad = tmp_path / kind
    if kind != "missing":
        write_run(tmp_path, kind, corpus=kind != "plain", finished=kind != "running")
    out = tmp_path / "b.png"
    assert main(["plot", "buckets", str(good), str(bad), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0] and str(bad) in err[0]
    assert not out.exists()


def test_help(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["plot", "buckets", "--help"])
    assert stop.value.code == 0
    assert "Adam's memory" in capsys.readouterr().out
