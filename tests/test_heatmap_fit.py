"""Heatmap cell labels fit their cells: a min-max range across scales ("3.3e-7–1.1e-6") in a
narrow cell shrinks the panel's text rather than spilling into the neighbours."""

import csv

import matplotlib

matplotlib.use("Agg")

from spamlang.plots.sweep import heatmap_figure  # noqa: E402
from spamlang.rundir.schema import RESULT_COLUMNS, SETTING_COLUMNS  # noqa: E402

VOCABS = (64, 256, 1024, 4096, 16384, 65536, 131072)


def _sweep(tmp_path, losses):
    rows = []
    for v in VOCABS:
        for seed, loss in enumerate(losses):
            rows.append(
                {
                    "run_id": f"V{v}-seed{seed}",
                    "language": "spam",
                    "preset": "tiny",
                    "d_model": 16,
                    "vocab_size": v,
                    "lr": 1e-2,
                    "tie_embeddings": "True",
                    "head": "softmax",
                    "seed": seed,
                    "seq_len": 2,
                    "batch_size": 32,
                    "final_eval_loss": loss,
                    "optimal_loss": 0.0,
                    "diverged": "False",
                }
            )
    with open(tmp_path / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[*SETTING_COLUMNS, *RESULT_COLUMNS], restval="")
        writer.writeheader()
        writer.writerows(rows)
    return tmp_path


def _overflow(fig):
    """(label, its width, the cell's width) in pixels for every label wider than its cell."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)  # the figure is built without pyplot, on a bare canvas
    canvas.draw()
    renderer = canvas.get_renderer()
    out = []
    for ax in fig.axes[:-1]:  # the last axes is the colour bar
        n_cols = len(ax.get_xticks())
        cell = ax.get_window_extent(renderer).width / n_cols
        for text in ax.texts:
            width = text.get_window_extent(renderer).width
            if width > cell:
                out.append((text.get_text(), width, cell))
    return out


def test_a_range_across_scales_fits_its_cell(tmp_path):
    fig = heatmap_figure(_sweep(tmp_path, [3.3e-7, 1.1e-6]))
    texts = fig.axes[0].texts
    assert texts and all("3.3e-7\u20131.1e-6" in t.get_text() for t in texts)
    assert _overflow(fig) == []
    wide = heatmap_figure(_sweep(tmp_path, [2.0, 2.5]))  # short labels keep the usual size
    assert wide.axes[0].texts[0].get_fontsize() > texts[0].get_fontsize()
    assert _overflow(wide) == []
