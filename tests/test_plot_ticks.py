"""Axes that do not mislead (issue #22, item 8): ticks at the data's V values, one LR notation,
bottleneck ticks that do not overlap and a note on the runs it could not draw, and `--where`
taking back what a figure shows (item 9). Handmade sweeps; nothing is trained."""

from __future__ import annotations

import json

from matplotlib.backends.backend_agg import FigureCanvasAgg
from test_plot_axes import row, write_sweep

from spamlang.cli import main
from spamlang.plots import layout
from spamlang.plots.diagnostics import bottleneck_figure
from spamlang.plots.lines import lines_figure
from spamlang.plots.sweep import heatmap_figure
from spamlang.results import column_values, select

VOCABS = [2**k for k in range(6, 16)]  # 64 .. 32768: ten values, a log axis


def shown_labels(fig, axis) -> list[tuple[str, float, float]]:
    """(text, left, right) in pixels of every drawn tick label inside the axis's view."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    lo, hi = sorted(axis.get_view_interval())
    found = []
    for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
        label = tick.label1
        if label.get_visible() and label.get_text() and lo <= tick.get_loc() <= hi:
            box = label.get_window_extent(renderer)
            found.append((label.get_text(), box.x0, box.x1))
    return sorted(found, key=lambda t: t[1])


def test_a_log_v_axis_is_labelled_at_the_data_values(tmp_path):
    root = write_sweep(tmp_path / "v", [row(v=v, loss=1 + v / 1e5) for v in VOCABS])
    fig = lines_figure(root, x="vocab_size", y="final_eval_loss", color="none")
    (ax,) = fig.axes
    labels = [text for text, _, _ in shown_labels(fig, ax.xaxis)]
    # Ten values: every other one is labelled, the first and the last included; no 100, 200, 500.
    assert labels == ["64", "256", "1024", "4096", "16384", "32768"]


def test_lrs_print_alike_on_lines_and_heatmaps(tmp_path):
    rows = [row(v=v, lr=lr, loss=1 + lr) for v in (64, 256) for lr in (1e-3, 5e-3)]
    root = write_sweep(tmp_path / "lr", rows)
    fig = lines_figure(root, x="lr", y="final_eval_loss", best_over="none")
    ax = fig.axes[0]
    assert [t for t, _, _ in shown_labels(fig, ax.xaxis)] == ["1e-3", "5e-3"]
    heat = heatmap_figure(root)
    assert [t.get_text() for t in heat.axes[0].get_yticklabels()] == ["1e-3", "5e-3"]


def test_where_takes_back_the_v_a_figure_shows(tmp_path):
    rows = [row(v=v, loss=1.0, tokens=100_000) for v in (64, 1024, 4096)]
    root = write_sweep(tmp_path / "w", rows)
    fig = heatmap_figure(root)
    runs = layout.finished_runs(root)
    for label in [t.get_text() for t in fig.axes[0].get_xticklabels()]:
        (picked,) = column_values(select(runs, {"vocab_size": label}), "vocab_size")
        assert str(picked) == label
    # K is 1,000, as --tokens has always read it: 1K is not 1024, 100K is 100,000.
    assert set(column_values(select(runs, {"tokens": "100K"}), "tokens")) == {100_000}
    assert set(column_values(select(runs, {"vocab_size": "4096"}), "vocab_size")) == {4096}
    assert (
        main(
            [
                "plot",
                "heatmap",
                str(root),
                "-o",
                str(tmp_path / "h.png"),
                "--where",
                "vocab_size!=1K",
                "--where",
                "tokens=100K",
            ]
        )
        == 0
    )


BOTTLENECK_VOCABS = (512, 576, 640, 704, 768, 832, 896, 960)


def write_bottleneck_sweep(root, with_diagnostics) -> None:
    """Eight runs of D = 16 at V near 700 (a narrow D/V range); those of the indices
    `with_diagnostics` (the first k, given an int k) have a diagnostics.json."""
    if isinstance(with_diagnostics, int):
        with_diagnostics = range(with_diagnostics)
    for i, v in enumerate(BOTTLENECK_VOCABS):
        run = root / f"V{v}"
        run.mkdir(parents=True)
        (run / "config.json").write_text(
            json.dumps(
                {
                    "vocab_size": v,
                    "lr": 1e-2,
                    "tie_embeddings": True,
                    "head": "softmax",
                    "language": "spam",
                    "language_params": {},
                    "seed": 0,
                    "preset": "tiny",
                }
            )
        )
        if i in with_diagnostics:
            (run / "diagnostics.json").write_text(json.dumps({"kernel_fraction": 0.9 + i / 100}))


def test_bottleneck_says_which_runs_it_could_not_draw(tmp_path, capsys):
    root = tmp_path / "b"
    write_bottleneck_sweep(root, 1)
    assert main(["plot", "bottleneck", str(root), "-o", str(tmp_path / "b.png")]) == 0
    assert capsys.readouterr().err == (
        f"note: 7 of 8 runs in {root} have no diagnostics.json (run `spamlang diagnose` on "
        "them, or train with diag_every > 0); drawing 1\n"
    )
    full = tmp_path / "full"
    write_bottleneck_sweep(full, 8)
    bottleneck_figure(full)
    assert capsys.readouterr().err == ""


def test_bottleneck_tick_labels_do_not_overlap(tmp_path, capsys):
    for k, drawn in enumerate([[i] for i in range(len(BOTTLENECK_VOCABS))] + [range(8)]):
        root = tmp_path / f"b{k}"
        write_bottleneck_sweep(root, drawn)
        fig = bottleneck_figure(root)
        labels = shown_labels(fig, fig.axes[0].xaxis)
        assert 2 <= len(labels) <= 6, labels
        assert all(a[2] < b[1] for a, b in zip(labels, labels[1:])), labels
