"""The data each figure draws, pinned on small fake sweep folders: heatmap cells and best-LR
outlines, curves' lines and their LRs, the panel and row split, buckets, symbols, recency and
track points; and a run in progress read with the settings its finished neighbours have."""

from __future__ import annotations

import json

import pytest
from _fake_sweep import write_finished_sweep  # tests/_fake_sweep.py
from _figure_data import figure_data  # tests/_figure_data.py
from test_plot_axes import coverage_rows, write_sweep
from test_plot_buckets import write_run as write_bucket_run
from test_plot_curves import write_run as write_curve_run
from test_plot_recency import write_run as write_symbol_run
from test_plot_track import make_run as write_track_run
from test_plots import make_sweep

from spamlang.plots.buckets import buckets_figure, load_buckets
from spamlang.plots.curves import curves_figure
from spamlang.plots.lines import lines_figure
from spamlang.plots.sweep import heatmap_figure
from spamlang.plots.symbols import recency_figure, symbols_figure
from spamlang.plots.track import load_track, track_figure


def panels(fig) -> list[dict]:
    """The figure's panels with a title or lines (colour bars and twins left out)."""
    return [p for p in figure_data(fig)["panels"] if p["title"] or p["lines"]]


def cells(panel) -> dict:
    """A heatmap panel's cell texts by (x index, y index), and its outlined (best) cells."""
    texts = {(round(x), round(y)): t for (x, y), t in panel["texts"]}
    boxes = [(round(b[0] + 0.45), round(b[1] + 0.45)) for _, b, fill, *_ in panel["patches"]]
    return texts, sorted(b for b, (_, _, fill, *_) in zip(boxes, panel["patches"]) if not fill)


def curves(panel) -> list[tuple]:
    """A panel's lines with data: (legend label, y values, line style)."""
    return [(label, y, style) for label, x, y, style, *_ in panel["lines"] if x and len(x) > 2]


def test_heatmap_cells_best_lrs_and_panels(tmp_path):
    fig = heatmap_figure(make_sweep(tmp_path / "s"))
    tied, untied = panels(fig)
    assert (tied["title"], untied["title"]) == ("tied", "untied")
    assert tied["ticks"] == (["64", "1024", "4096"], ["1e-3", "1e-2"])
    # V=4096 at 1e-3, tied, is still running (no result.json), results.csv's row of it aside.
    texts, best = cells(tied)
    assert texts == {(0, 0): "0", (0, 1): "0", (1, 0): "0.50", (1, 1): "0.75"}
    assert best == [(0, 0), (0, 1), (1, 0)]  # V=64's tie keeps both LRs
    # A finished run folder's result.json is drawn: V=1024 ends at 0.9 and 0.1, untied.
    texts, best = cells(untied)
    assert (texts[(1, 0)], texts[(1, 1)], texts[(2, 1)]) == ("0.90", "0.10", "div")
    assert best == [(0, 0), (0, 1), (1, 1), (2, 0)]
    assert figure_data(fig)["titles"] == ["10 steps on spam"]


def test_heatmap_rows_and_best_over(tmp_path):
    root = write_sweep(tmp_path / "cov", coverage_rows())
    titles = [p["title"] for p in panels(heatmap_figure(root, where={"seq_len!": "256"}))]
    assert titles == [f"{t} (seq_len={L})" for L in (16, 64) for t in ("tied", "untied")]
    fig = heatmap_figure(root, best_over="lr", x="vocab_size", y="seq_len")
    tied = panels(fig)[0]
    texts, best = cells(tied)
    assert texts[(0, 0)] == "1.05\n1.00\u20131.10\nlr 3e-3" and texts[(1, 2)].endswith("lr 1e-2")
    assert best == [(0, 2), (1, 2)]
    assert "each cell: its best lr of 1e-3, 3e-3, 1e-2" in figure_data(fig)["caption"]


def test_curves_lines_at_each_cells_best_lr(tmp_path):
    root = tmp_path / "sweep"
    for v in (64, 1024):
        for tied in (True, False):
            low_wins = (v, tied) == (1024, False)
            for seed in (0, 1):
                final = (0.2 if low_wins else 2.0) + seed
                write_curve_run(root, v, 1e-2, tied, seed, [5.0, 3.0, final])
                write_curve_run(root, v, 3e-2, tied, seed, [5.0, 1.0, 0.5 + seed])
    tied, untied = panels(curves_figure(root))
    assert curves(tied) == [("V=64, lr=3e-2", [5, 1, 1], "-"), ("V=1024, lr=3e-2", [5, 1, 1], "-")]
    assert curves(untied) == [
        ("V=64, lr=3e-2", [5, 1, 1], "-"),
        ("V=1024, lr=1e-2", [5, 3, 0.7], "-"),
    ]


def test_curves_draw_a_running_run_dotted(tmp_path):
    tied, untied = panels(curves_figure(make_sweep(tmp_path / "s")))
    assert curves(tied) == [
        ("V=64, lr=1e-3", [4, 1, 0.01], "-"),  # the zero loss cannot sit on the log axis
        ("V=1024, lr=1e-3", [7, 3, 1, 0.5], "-"),
        ("V=4096, lr=1e-3 (running)", [8, 7, 6.5, 6], ":"),
    ]
    assert curves(untied) == [("V=1024, lr=1e-2", [7, 2, 0.2, 0.1], "-")]


@pytest.fixture
def sweep_with_running_runs(tmp_path):
    """V x lr x head x 2 seeds, finished and gathered into results.csv, but for the cell
    (V 64, mos:2), whose runs are still going: config.json and metrics.jsonl only."""
    from spamlang.sweep import Sweep, write_results
    from spamlang.sweep.results_csv import Report
    from spamlang.train.config import TrainConfig

    base = TrainConfig(preset="tiny", vocab_size=16, seq_len=16, batch_size=8, tokens=2560)
    axes = {"vocab_size": [16, 64], "lr": [1e-3, 3e-3], "head": ["softmax", "mos:2"]}
    sweep = Sweep("running", base, {**axes, "seed": [0, 1]})
    root = tmp_path / "sweep"

    def metrics(run_id: str) -> str:
        final = 1.0 if "lr1e-3" in run_id else 2.0
        rows = [
            {"kind": "train", "step": i, "tokens": 128 * i, "loss": final + 3 - i}
            for i in (1, 2, 3)
        ]
        return "".join(json.dumps(r) + "\n" for r in rows)

    write_finished_sweep(sweep, root, metrics)
    for run in root.iterdir():
        if run.name.startswith("V64-") and "mos2" in run.name:
            (run / "result.json").unlink()
        elif run.is_dir():
            result = json.loads((run / "result.json").read_text())
            result["final_eval_loss"] = 0.5 if "lr1e-3" in run.name else 1.5
            (run / "result.json").write_text(json.dumps(result))
    write_results(root, Report())
    return root


def test_a_running_run_has_the_settings_of_a_finished_one(sweep_with_running_runs):
    """d_model and n_layers come from the preset for a run without result.json too: the
    figure keeps one row of panels per V, not another one for 'd_model=n/a, n_layers=n/a'."""
    drawn = panels(curves_figure(sweep_with_running_runs, color="head"))
    assert [p["title"] for p in drawn] == ["untied, lr 1e-3 (V=16)", "untied, lr 1e-3 (V=64)"]
    assert curves(drawn[1]) == [
        ("head=mos:2 (running)", [3, 2, 1], ":"),  # its lowest latest train loss: lr 1e-3
        ("head=softmax", [3, 2, 1], "-"),
    ]


def test_lines_points_at_their_best_lr(tmp_path):
    root = write_sweep(tmp_path / "cov", coverage_rows())
    fig = lines_figure(
        root,
        x="sequences_per_symbol",
        y="final_eval_loss",
        color="vocab_size",
        cols="tie_embeddings",
    )
    tied, untied = panels(fig)
    means = [(x, y) for label, x, y, style, *_ in tied["lines"] if style == "-"]
    assert means == [([4, 16, 64], [1.05, 0.3, 0.1125]), ([4, 16, 64], [3.05, 0.8, 0.2375])]
    means = [y for label, x, y, style, *_ in untied["lines"] if style == "-"]
    assert means == [[1.55, 0.8, 0.6125], [3.55, 1.3, 0.7375]]


def test_symbols_and_recency_draw_each_cells_best_lr(tmp_path):
    sweep = tmp_path / "rec"
    for lr, loss in ((1e-2, 2.0), (3e-2, 1.0)):
        for seed in (0, 1):
            for b2 in (0.95, 0.999):
                name, seeded = f"lr{lr:g}-s{seed}-b{b2}", int(lr * 1e3) + seed
                write_symbol_run(sweep, name, lr=lr, seed=seed, b2=b2, loss=loss, rng_seed=seeded)
    drawn = panels(recency_figure([sweep], cols="b2"))
    assert [p["title"] for p in drawn] == [
        "V=16, B=4, b2=0.95\niid, untied, lr 3e-2",
        "V=16, B=4, b2=0.999\niid, untied, lr 3e-2",
    ]
    shown = [c[2] for c in drawn[0]["collections"] if c[1] == "shown"]
    assert shown[0][:4] == [38, 1.77889204, 12, 0.758017302]  # seed 0 of lr 3e-2 (rng 30)
    memory = [(label, x) for label, x, *_ in drawn[1]["lines"] if "memory" in label]
    assert memory == [("Adam memory 1/(1\u2212b2) = 1000, capped at 50 steps", [50, 50])]

    root = make_sweep(tmp_path / "s")
    for name in ("V64-lr0.001-tied", "V1024-lr0.001-untied", "V1024-lr0.01-untied"):
        result = json.loads((root / name / "result.json").read_text())
        result["symbol_curve"] = {"exposure": [1, 4, 16], "loss_median": [3.0, 1.0, 0.1]}
        (root / name / "result.json").write_text(json.dumps(result))
    tied, untied = panels(symbols_figure(root, cols="tie_embeddings"))
    assert [label for label, *_ in tied["lines"]][::2] == ["V=64"]
    assert [label for label, *_ in untied["lines"]][::2] == ["V=1024"]  # its best LR, 1e-2


def test_track_and_buckets_points(tmp_path):
    run = write_track_run(tmp_path, "r", [0, 4095], tied=False)
    fig = track_figure([load_track(run, "head")])
    first = panels(fig)[0]
    assert first["title"] == "id 0: pull +0.035 over 7 appearances\nbetween -0.0108, net +0.0242"
    (marks,) = [x for label, x, y, s, m, c, gid in first["lines"] if gid == "appearances"]
    assert marks == [9, 31, 41, 49, 51, 53, 60]

    runs = [write_bucket_run(tmp_path, "a", 0.95), write_bucket_run(tmp_path, "b", 0.999)]
    a, b = panels(buckets_figure([load_buckets(r) for r in runs]))
    by_gid = {gid: (x, y) for label, x, y, s, m, c, gid in a["lines"]}
    assert by_gid["count8"] == ([0.707106781, 5.65685425], [5, 6])
    assert by_gid["never"] == ([100], [7.5]) and by_gid["memory"][0] == [20, 20]
    assert b["title"] == "b\nadamw b2=0.999, head_amsgrad, eval loss 4.25"
