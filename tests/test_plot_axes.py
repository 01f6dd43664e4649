"""Plots over any results.csv column: axes, --where, sort order, seed averaging, best LR, colours.

Every sweep here is a handmade results.csv (and a few run directories); nothing is trained.
"""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from matplotlib.colors import LogNorm, to_rgba
from matplotlib.patches import Rectangle

from spamlang.cli import main
from spamlang.errors import UserError
from spamlang.plots import layout
from spamlang.plots.canvas import BEST_EDGE
from spamlang.plots.curves import curves_figure
from spamlang.plots.lines import auto_logx, lines_figure
from spamlang.plots.sweep import best_cells, color_limits, heatmap_figure
from spamlang.results import column_values, frame, matches, parse_cell, select

SETTINGS = [
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
]
OUTCOMES = [
    "final_train_loss",
    "final_eval_loss",
    "loss_above_floor",
    "optimal_loss",
    "repetition_accuracy",
    "eval_accuracy",
    "diverged",
    "diverged_step",
    "steps",
    "tokens",
    "tokens_per_s",
    "wall_seconds",
    "sequences_per_symbol",
    "exposure_min",
    "exposure_median",
    "exposure_max",
    "unseen_fraction",
    "eval_loss_seen",
    "eval_loss_unseen",
    "repetition_accuracy_seen",
    "repetition_accuracy_unseen",
    "eval_seen_sequences",
    "eval_unseen_sequences",
    "kernel_fraction",
    "projected_cosine",
]


def row(v=64, lr=1e-3, tied=True, seed=0, loss=1.0, seq_len=64, head="softmax", **extra) -> dict:
    r = {c: "nan" for c in OUTCOMES}
    r.update(
        run_id=f"V{v}-lr{lr:g}-{'tied' if tied else 'untied'}-s{seed}-L{seq_len}-{head}",
        language="spam",
        preset="tiny",
        d_model=16,
        vocab_size=v,
        lr=lr,
        tie_embeddings=tied,
        head=head,
        seed=seed,
        seq_len=seq_len,
        batch_size=8,
        final_train_loss=loss,
        final_eval_loss=loss,
        loss_above_floor=loss,
        optimal_loss=0.0,
        repetition_accuracy=max(0.0, 1 - loss / 10),
        diverged=False,
        diverged_step="",
        steps=100,
        tokens=100 * 8 * seq_len,
        sequences_per_symbol=100 * 8 / v,
    )
    r.update(extra)
    return r


def write_sweep(root, rows, extra_columns=()):
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=SETTINGS + list(extra_columns) + OUTCOMES)
        writer.writeheader()
        writer.writerows(rows)
    return root


def texts(ax) -> dict:
    return {
        (round(t.get_position()[0]), round(t.get_position()[1])): t.get_text() for t in ax.texts
    }


def panels(fig):
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


# ----- pure helpers -------------------------------------------------------------------------


def test_sort_values_numeric_text_and_bool():
    assert layout.sort_values([64, 4, 1024, 16, 256, 16.0]) == [4, 16, 64, 256, 1024]
    assert layout.sort_values(["mos:4", "softmax", "lowrank:8"]) == [
        "lowrank:8",
        "mos:4",
        "softmax",
    ]
    # A rank inside a name sorts as a number (Figure 1's legend: 4, 8, 16, ..., softmax).
    heads = ["softmax", "lowrank:16", "lowrank:4", "lowrank:64", "lowrank:8", "mos:2"]
    assert layout.sort_values(heads) == [
        "lowrank:4",
        "lowrank:8",
        "lowrank:16",
        "lowrank:64",
        "mos:2",
        "softmax",
    ]
    assert layout.sort_values([False, True]) == [True, False]  # tied first, as in the paper
    assert layout.sort_values([None, 3, 1]) == [1, 3, None]
    # CSV cells become numbers, so they sort by value rather than as text ("1024" < "256").
    assert [parse_cell(s) for s in ("1024", "1e-3", "True", "", "mos:4")] == [
        1024,
        1e-3,
        True,
        None,
        "mos:4",
    ]
    assert layout.sort_values(parse_cell(s) for s in ("256", "1024", "64")) == [
        64,
        256,
        1024,
    ]


def test_color_limits():
    assert color_limits([2.05, 3.51, 2.8]) == (2.05, 3.51, False)  # not a 2-20 log scale
    assert color_limits([0.01, 0.5, 5.0]) == (0.01, 5.0, True)  # positive, spans >= 10x
    assert color_limits([0.0, 0.5, 7.7]) == (0.0, 7.7, False)  # a zero loss: linear
    assert color_limits([1.0, 9.99]) == (1.0, 9.99, False)  # under 10x: linear
    assert color_limits([float("nan"), None, 2.0, 4.0, float("inf")]) == (2.0, 4.0, False)
    assert color_limits([3.0]) == pytest.approx((2.85, 3.15, False))
    assert color_limits([]) == (0.0, 1.0, False)


def test_best_cells():
    nan = np.nan
    grid = np.array(
        [
            [3.0, 1.0, nan, 5.0],  # rows: LRs, ascending
            [2.0, 4.0, nan, nan],
            [2.5, 0.5, nan, 5.0],
        ]
    )
    assert best_cells(grid) == [(0, 3), (1, 0), (2, 1), (2, 3)]  # a tie keeps both; nan column none
    assert best_cells(grid, higher_is_better=True) == [(0, 0), (0, 3), (1, 1), (2, 3)]
    assert best_cells(np.array([[1.0, 2.0]])) == []  # a single LR: nothing to choose


def test_stats_and_points_average_seeds_only():
    rows = [
        row(seed=s, loss=x, repetition_accuracy=0.2) for s, x in ((0, 2.2), (1, 2.31), (2, 2.45))
    ]
    rows.append(row(seed=0, loss=9.0, lr=1e-2, repetition_accuracy=0.9))
    runs = frame(
        SETTINGS + OUTCOMES, [[parse_cell(str(r[k])) for k in SETTINGS + OUTCOMES] for r in rows]
    )
    runs.attrs["settings"] = SETTINGS[1:]
    points = layout.group_points(runs)
    assert sorted(len(p.runs) for p in points) == [1, 3]
    (s,) = layout.pool([max(points, key=lambda p: len(p.runs))], "final_eval_loss").itertuples()
    assert (s.mean, s.lo, s.hi, s.n) == (pytest.approx((2.2 + 2.31 + 2.45) / 3), 2.2, 2.45, 3)
    best = layout.best_over(points, "lr", "final_eval_loss")
    assert len(best) == 1 and best[0].best == 1e-3 and best[0].grid == (1e-3, 1e-2)
    assert layout.best_over(points, "lr", "repetition_accuracy")[0].best == 1e-2  # maximised
    assert auto_logx([1, 4, 8]) and not auto_logx([1, 4, 7.9]) and not auto_logx([0, 10])


# ----- heatmap ------------------------------------------------------------------------------


def test_heatmap_averages_seeds_with_range_and_data_colour_limits(tmp_path):
    rows = [
        row(v=v, lr=lr, tied=t, seed=s, loss=base + off)
        for v, base in ((4, 2.05), (16, 2.6), (64, 3.1))
        for lr, off in ((1e-3, 0.3), (1e-2, 0.0))
        for t in (True, False)
        for s in (0, 1, 2)
    ]
    # One cell with a spread: V=16, lr=1e-2, tied -> 2.20, 2.31, 2.45 (mean 2.32).
    for r, x in zip(
        (r for r in rows if (r["vocab_size"], r["lr"], r["tie_embeddings"]) == (16, 1e-2, True)),
        (2.2, 2.31, 2.45),
    ):
        r["final_eval_loss"] = x
    fig = heatmap_figure(write_sweep(tmp_path / "s", rows))
    tied, untied = panels(fig)  # one panel per tying, none per seed
    assert (tied.get_title(), untied.get_title()) == ("tied", "untied")
    assert [t.get_text() for t in tied.get_xticklabels()] == ["4", "16", "64"]
    assert texts(tied)[(1, 1)] == "2.32\n2.20\u20132.45"
    assert texts(tied)[(0, 1)] == "2.05"  # identical seeds: no range line
    norms = [ax.images[0].norm for ax in (tied, untied)]
    assert all(type(n) is not LogNorm for n in norms)
    assert [(n.vmin, n.vmax) for n in norms] == [pytest.approx((2.05, 3.4))] * 2
    assert "mean over seed (3 runs)" in fig.get_supxlabel()


def test_heatmap_outlines_the_best_lr_of_each_column(tmp_path):
    losses = {
        (64, 1e-3): 0.5,
        (64, 3e-3): 0.2,
        (64, 1e-2): 0.3,
        (256, 1e-3): 2.0,
        (256, 3e-3): 1.5,
        (256, 1e-2): 1.0,
    }
    rows = [row(v=v, lr=lr, loss=x) for (v, lr), x in losses.items()]
    fig = heatmap_figure(write_sweep(tmp_path / "s", rows))
    (ax,) = panels(fig)
    boxes = [p for p in ax.patches if isinstance(p, Rectangle) and not p.get_fill()]
    assert sorted((round(p.get_x() + 0.45), round(p.get_y() + 0.45)) for p in boxes) == [
        (0, 1),
        (1, 2),
    ]
    assert all(p.get_edgecolor() == to_rgba(BEST_EDGE) and p.get_linewidth() >= 2 for p in boxes)
    assert "red outline: best learning rate of each V" in fig.get_supxlabel()
    assert isinstance(ax.images[0].norm, LogNorm)  # 0.2 .. 2.0 spans 10x


def test_heatmap_any_axes_and_where_on_outcomes(tmp_path):
    rows = [
        row(v=v, seq_len=L, tied=t, loss=v / L + (0 if t else 1), head=h)
        for v in (16, 256)
        for L in (8, 64, 1024)
        for t in (True, False)
        for h in ("softmax", "mos:4")
    ]
    root = write_sweep(tmp_path / "s", rows)
    fig = heatmap_figure(
        root,
        x="seq_len",
        y="vocab_size",
        cols="none",
        rows="tie_embeddings",
        where={"head": "softmax"},
    )
    top, bottom = panels(fig)
    assert [t.get_text() for t in top.get_xticklabels()] == ["8", "64", "1024"]
    assert [t.get_text() for t in top.get_yticklabels()] == ["16", "256"]
    assert (top.get_title(), bottom.get_title()) == ("tied", "untied")
    # Without --where, head varies and gets rows of its own (never silently averaged).
    fig = heatmap_figure(root, x="seq_len", y="vocab_size")
    assert sorted(ax.get_title() for ax in panels(fig)) == [
        "tied (head=mos:4)",
        "tied (head=softmax)",
        "untied (head=mos:4)",
        "untied (head=softmax)",
    ]
    # --where on an outcome, numbers by value; a repeated key matches any of its values.
    # --rows none: head is averaged, and the caption says so.
    fig = heatmap_figure(root, x="seq_len", y="vocab_size", rows="none", where={"tied": "true"})
    assert len(panels(fig)) == 1 and "mean over head (2 runs)" in fig.get_supxlabel()
    runs = select(layout.finished_runs(root), {"sequences_per_symbol": "50"})
    assert set(column_values(runs, "vocab_size")) == {16}
    runs = select(layout.finished_runs(root), {"seq_len": ["8", "1.024e3"], "tied": "true"})
    assert sorted(set(column_values(runs, "seq_len"))) == [8, 1024]
    assert all(column_values(runs, "tie_embeddings"))
    with pytest.raises(UserError, match="no run has seq_len=5; its values are: 8, 64, 1024"):
        select(layout.finished_runs(root), {"seq_len": "5"})


# ----- lines --------------------------------------------------------------------------------


def coverage_rows() -> list[dict]:
    """V in {64, 256} x seq_len {16, 64, 256} x lr {1e-3, 3e-3, 1e-2} x tying x 2 seeds.

    Loss = base(V, coverage) + lr penalty + seed offset; the best LR is 3e-3 for V=64 and
    1e-2 (the grid's edge) for V=256. sequences_per_symbol = seq_len / 4 whatever V is.
    """
    rows = []
    for v in (64, 256):
        for L in (16, 64, 256):
            for lr in (1e-3, 3e-3, 1e-2):
                for tied in (True, False):
                    for seed in (0, 1):
                        base = (1.0 if v == 64 else 3.0) * 16 / L + (0.0 if tied else 0.5)
                        best = 3e-3 if v == 64 else 1e-2
                        loss = base + abs(math.log10(lr / best)) + 0.1 * seed
                        rows.append(
                            row(
                                v=v,
                                lr=lr,
                                tied=tied,
                                seed=seed,
                                seq_len=L,
                                loss=loss,
                                sequences_per_symbol=L / 4,
                                kernel_fraction=1 - 16 / v - lr,
                            )
                        )
    return rows


def test_lines_coverage_figure_best_lr_seed_mean(tmp_path):
    root = write_sweep(tmp_path / "cov", coverage_rows())
    fig = lines_figure(
        root,
        x="sequences_per_symbol",
        y="final_eval_loss",
        color="vocab_size",
        cols="tie_embeddings",
    )
    tied, untied = fig.axes
    assert (tied.get_title(), untied.get_title()) == ("tied", "untied")
    assert tied.get_xscale() == "log"  # 4 .. 64 spans 16x
    assert [c.get_label() for c in tied.containers] == ["V=64", "V=256"]
    v64, v256 = tied.containers
    assert list(v64.lines[0].get_xdata()) == [4, 16, 64]
    # Best LR per point after the seed mean (seeds 0 and 1 -> +0.05), range = the two seeds.
    assert list(v64.lines[0].get_ydata()) == pytest.approx([1.05, 0.30, 0.1125])
    assert list(v256.lines[0].get_ydata()) == pytest.approx([3.05, 0.8, 0.2375])
    assert v64.lines[2][0].get_segments()[0][:, 1].tolist() == pytest.approx([1.0, 1.1])
    # V=256's best LR, 1e-2, is the largest of the grid: hollow markers say so.
    hollow = [ln for ln in tied.get_lines() if ln.get_markerfacecolor() == "white"]
    assert len(hollow) == 1 and list(hollow[0].get_xdata()) == [4, 16, 64]
    caption = fig.get_supxlabel()
    assert "lr with the lowest final_eval_loss (1e-3, 3e-3, 1e-2)" in caption
    assert "mean over seed (2 runs)" in caption and "hollow" in caption
    # seq_len, which sequences_per_symbol determines, gets no rows of its own.
    assert len(fig.axes) == 2
    # A log x of a few values is labelled at them, not at 1-2-5 ticks that name none.
    assert [t.get_text() for t in tied.get_xticklabels()] == ["4", "16", "64"]


def test_lines_best_over_none_and_accuracy_maximised(tmp_path):
    root = write_sweep(tmp_path / "cov", coverage_rows())
    fig = lines_figure(
        root,
        x="sequences_per_symbol",
        y="repetition_accuracy",
        cols="tie_embeddings",
        where={"vocab_size": "64"},
    )
    ys = fig.axes[0].containers[0].lines[0].get_ydata()
    assert list(ys) == pytest.approx([1 - 1.05 / 10, 1 - 0.30 / 10, 1 - 0.1125 / 10])
    # No optimisation: lr varies and is not an axis, so it splits rows of panels.
    fig = lines_figure(
        root,
        x="sequences_per_symbol",
        y="final_eval_loss",
        cols="tie_embeddings",
        best_over="none",
        where={"vocab_size": "64"},
    )
    assert [ax.get_title() for ax in fig.axes][:2] == ["tied (lr=1e-3)", "untied (lr=1e-3)"]
    assert len(fig.axes) == 6


def test_lines_scatter_of_two_outcomes(tmp_path):
    root = write_sweep(tmp_path / "cov", coverage_rows())
    fig = lines_figure(
        root,
        x="kernel_fraction",
        y="final_eval_loss",
        points=True,
        where={"seq_len": "64", "tied": "True"},
    )
    (ax,) = fig.axes
    assert ax.get_xscale() == "linear"
    assert len(ax.containers) == 2  # the two runs kept: the loop below must see both
    for c in ax.containers:
        assert c.lines[0].get_linestyle() == "None"
    xs = sorted(x for c in ax.containers for x in c.lines[0].get_xdata())
    assert xs == pytest.approx([1 - 16 / 64 - 3e-3, 1 - 16 / 256 - 1e-2])


# ----- curves -------------------------------------------------------------------------------


def _run_dir(root, v, seed, losses, lr=1e-3):
    run = root / f"V{v}-s{seed}"
    run.mkdir(parents=True)
    (run / "config.json").write_text(
        json.dumps(
            {
                "vocab_size": v,
                "lr": lr,
                "tie_embeddings": True,
                "seed": seed,
                "head": "softmax",
                "language": "spam",
                "language_params": {"period": 2},
                "seq_len": 16,
            }
        )
    )
    (run / "metrics.jsonl").write_text(
        "".join(
            json.dumps({"kind": "train", "step": 10 * (i + 1), "tokens": 100 * (i + 1), "loss": x})
            + "\n"
            for i, x in enumerate(losses)
        )
    )
    (run / "result.json").write_text(json.dumps({"final_eval_loss": losses[-1], "diverged": False}))


def test_curves_average_seeds_with_a_band(tmp_path):
    root = tmp_path / "s"
    _run_dir(root, 64, 0, [4.0, 2.0, 1.0])
    _run_dir(root, 64, 1, [6.0, 3.0, 2.0])
    _run_dir(root, 1024, 0, [7.0, 6.0, 5.0])
    fig = curves_figure(root, x="step")
    (ax,) = fig.axes  # one tying, seeds averaged: one panel
    v64, v1k = ax.get_lines()[:2]
    assert (v64.get_label(), v1k.get_label()) == ("V=64", "V=1024")
    assert list(v64.get_xdata()) == [10, 20, 30] and list(v64.get_ydata()) == [5.0, 2.5, 1.5]
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert min(band) == 1.0 and max(band) == 6.0
    # Any column: one line per seed, config.json's language_params as param.* columns.
    fig = curves_figure(
        root, color="seed", cols="none", where={"param.period": "2", "vocab_size": "64"}
    )
    assert [ln.get_label() for ln in fig.axes[0].get_lines()][:2] == ["seed=0", "seed=1"]


# ----- the CLI ------------------------------------------------------------------------------


def test_cli_axes_and_errors(tmp_path, capsys):
    root = write_sweep(tmp_path / "cov", coverage_rows())
    out = tmp_path / "cov.png"
    assert (
        main(
            [
                "plot",
                "lines",
                str(root),
                "-o",
                str(out),
                "--x",
                "sequences_per_symbol",
                "--y",
                "final_eval_loss",
                "--color",
                "vocab_size",
                "--cols",
                "tie_embeddings",
            ]
        )
        == 0
    )
    assert out.read_bytes().startswith(b"\x89PNG")
    assert (
        main(
            [
                "plot",
                "heatmap",
                str(root),
                "-o",
                str(tmp_path / "h.png"),
                "--x",
                "seq_len",
                "--rows",
                "vocab_size",
                "--where",
                "seed=0",
            ]
        )
        == 0
    )
    capsys.readouterr()
    bad = [
        (["lines", "--x", "language", "--y", "final_eval_loss"], "--x language is not numeric"),
        (
            ["lines", "--x", "colour", "--y", "final_eval_loss"],
            "unknown column 'colour' for --x; known columns: language, preset, d_model",
        ),
        (["heatmap", "--where", "seq_len=3"], "no run has seq_len=3; its values are: 16, 64, 256"),
        (["heatmap", "--x", "lr"], "--y and --x are both 'lr'"),
        (
            ["lines", "--x", "seq_len", "--y", "final_eval_loss", "--best-over", "seq_len"],
            "--best-over seq_len is also an axis",
        ),
    ]
    for args, message in bad:
        assert main(["plot", args[0], str(root), "-o", str(out), *args[1:]]) == 2, args
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and message in err, (args, err)


def test_where_excludes_matches_wildcards_and_run_ids(tmp_path, capsys):
    runs = layout.finished_runs(write_sweep(tmp_path / "cov", coverage_rows()))
    vocabs = set(column_values(select(runs, {"vocab_size!": ["64"]}), "vocab_size"))
    assert vocabs == {256}
    # A vocabulary's K is binary, as --vocab-size reads it: 0.25K is 256, not 250; a token
    # count's is decimal.
    assert set(column_values(select(runs, {"vocab_size": ["0.25K"]}), "vocab_size")) == {256}
    assert matches(1024, "1K", binary=True) and not matches(1000, "1K", binary=True)
    assert matches(1000, "1K") and not matches(1024, "1K")
    # A wildcard on text; run_id selects like a column ("V64-lr0.001-tied-s0-L16-softmax").
    assert set(select(runs, {"run_id": ["V64-*-tied-s0-L16-*"]})["run_id"]) == {
        f"V64-lr{lr:g}-tied-s0-L16-softmax" for lr in (1e-3, 3e-3, 1e-2)
    }
    kept = select(runs, {"run_id!": ["*-untied-*"], "seq_len": ["16"]})
    assert len(kept) == 2 * 3 * 2 and all(kept["tie_embeddings"])
    with pytest.raises(UserError, match="leaves no run"):
        select(runs, {"language!": ["sp*"]})
    # The command line: key!=value, and a bare "!=" is a usage error (status 2, one line).
    out = tmp_path / "x.png"
    assert (
        main(
            [
                "plot",
                "lines",
                str(tmp_path / "cov"),
                "-o",
                str(out),
                "--x",
                "sequences_per_symbol",
                "--y",
                "final_eval_loss",
                "--where",
                "vocab_size!=256",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "plot",
                "lines",
                str(tmp_path / "cov"),
                "-o",
                str(out),
                "--x",
                "sequences_per_symbol",
                "--y",
                "final_eval_loss",
                "--where",
                "!=3",
            ]
        )
        == 2
    )
    assert "key!=value" in capsys.readouterr().err


def test_heatmap_cells_never_round_a_small_loss_to_zero():
    from spamlang.plots.sweep import _cell_text, _range_text

    assert [_cell_text(v) for v in (0.0, 5e-4, 7e-4, 1.3e-6, 0.0123, 0.5, 12.34)] == [
        "0",
        "5e-4",
        "7e-4",
        "1.3e-6",
        "0.012",
        "0.50",
        "12.3",
    ]
    assert _range_text(7.1e-7, 7.6e-7) == "7.1\u20137.6e-7"  # one exponent for both ends
    assert _range_text(4e-4, 0.0012) == "4e-4\u20130.001"
