"""Issue #30's figure fixes, on hand-written results.csv files: log y for `plot lines`, the
memory = return time diagonal of the phase heatmap, optimizers against updates per symbol,
head kinds named in rank_width's cells, and 1 - kernel fraction on a log axis."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from matplotlib.lines import Line2D
from test_plot_axes import OUTCOMES, SETTINGS, _run_dir, row

from spamlang.errors import UserError
from spamlang.plots.curves import curves_figure
from spamlang.plots.lines import lines_figure
from spamlang.plots.sweep import GID, heatmap_figure, log_index


def write(root, rows, settings=(), outcomes=()):
    """results.csv with extra setting columns (before the outcomes) and extra outcome ones."""
    root.mkdir(parents=True, exist_ok=True)
    rows = [dict(r, run_id=f"run{i}") for i, r in enumerate(rows)]  # row()'s ids repeat here
    with open(root / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=SETTINGS + list(settings) + OUTCOMES + list(outcomes))
        writer.writeheader()
        writer.writerows(rows)
    return root


def panels(fig):
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


# ----- plot lines: log y --------------------------------------------------------------------


def test_lines_log_y_by_default_only_beyond_two_decades(tmp_path):
    wide = write(
        tmp_path / "wide",
        [row(v=v, loss=loss) for v, loss in ((64, 5.0), (256, 0.5), (1024, 0.01))],
    )
    narrow = write(
        tmp_path / "narrow",
        [row(v=v, loss=loss) for v, loss in ((64, 5.0), (256, 0.5), (1024, 0.06))],
    )
    assert (
        panels(lines_figure(wide, "vocab_size", "final_eval_loss", color="none"))[0].get_yscale()
        == "log"
    )
    assert (
        panels(lines_figure(narrow, "vocab_size", "final_eval_loss", color="none"))[0].get_yscale()
        == "linear"
    )
    assert (
        panels(lines_figure(wide, "vocab_size", "final_eval_loss", color="none", logy=False))[
            0
        ].get_yscale()
        == "linear"
    )
    assert (
        panels(lines_figure(narrow, "vocab_size", "final_eval_loss", color="none", logy=True))[
            0
        ].get_yscale()
        == "log"
    )


def assert_minor_not_larger(fig):
    fig.canvas.draw()
    for axis in (panels(fig)[0].xaxis, panels(fig)[0].yaxis):
        major = axis.get_major_ticks()
        minor = [t for t in axis.get_minor_ticks() if t.label1.get_visible()]
        size = max(t.label1.get_fontsize() for t in major)
        length = min(t.tick1line.get_markersize() for t in major)
        assert all(t.label1.get_fontsize() <= size for t in minor)
        assert all(t.tick1line.get_markersize() <= length for t in axis.get_minor_ticks())


@pytest.mark.parametrize("losses", [(0.2, 0.5), (0.03, 0.5), (1e-4, 5.0)])
def test_minor_ticks_never_larger_than_major(tmp_path, losses):
    root = write(tmp_path / "s", [row(v=64, loss=losses[0]), row(v=256, loss=losses[1])])
    assert_minor_not_larger(
        lines_figure(root, "vocab_size", "final_eval_loss", color="none", logy=True)
    )
    # A log loss axis within one decade: matplotlib labels its minor ticks.
    _run_dir(tmp_path / "c", 64, 0, [losses[1] * 1.9, losses[1] * 1.3, losses[1]])
    assert_minor_not_larger(curves_figure(tmp_path / "c", x="step"))


# ----- plot lines: optimizers against updates per symbol --------------------------------------


def test_lines_updates_per_symbol_coloured_by_optimizer(tmp_path):
    rows = [
        row(v=1024, loss=loss, optimizer=opt, batch_size=b, updates_per_symbol=b * 128 / 1024)
        for opt, base in (("adamw", 3.0), ("adafactor", 1.0))
        for b, loss in ((8, base), (128, base / 2))
    ]
    root = write(tmp_path / "opt", rows, settings=["optimizer"], outcomes=["updates_per_symbol"])
    (ax,) = panels(lines_figure(root, "updates_per_symbol", "final_eval_loss", color="optimizer"))
    assert ax.get_xscale() == "log"  # 1 to 16 updates
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == [
        "optimizer=adafactor",
        "optimizer=adamw",
    ]


# ----- plot lines: 1 - kernel fraction ---------------------------------------------------------


def test_one_minus_kernel_fraction_on_a_log_axis(tmp_path):
    fractions = (0.95, 0.99, 0.999)
    rows = [row(v=64 * 4**i, loss=1.0 + i, kernel_fraction=kf) for i, kf in enumerate(fractions)]
    root = write(tmp_path / "kf", rows)
    (ax,) = panels(
        lines_figure(
            root,
            "1-kernel_fraction",
            "final_eval_loss",
            color="none",
            points=True,
            best_over="none",
        )
    )
    assert ax.get_xscale() == "log"
    assert "kernel fraction" in ax.get_xlabel() and ax.get_xlabel().startswith("1 ")
    xs = np.concatenate([ln.get_xdata() for ln in ax.lines if len(ln.get_xdata())])
    assert sorted(xs) == pytest.approx(sorted(1 - kf for kf in fractions))
    with pytest.raises(UserError, match="no_such"):
        lines_figure(root, "1-no_such", "final_eval_loss")


# ----- heatmap: the memory = return time diagonal ----------------------------------------------


def phase_rows() -> list[dict]:
    return [
        row(
            v=1024,
            lr=lr,
            batch_size=1024 // ret,
            b2=1 - 1 / mem,
            loss=1.0 + lr + (mem < ret),
            symbol_return_steps=ret,
            adam_memory_steps=mem,
        )
        for ret in (8, 32, 128)
        for mem in (10, 100, 1000)
        for lr in (1e-2, 3e-2)
    ]


def diagonals(ax):
    return [ln for ln in ax.lines if isinstance(ln, Line2D) and ln.get_gid() == GID]


def test_log_index_interpolates_between_ticks():
    got = log_index([10.0, 100.0, 1000.0], np.array([10.0, 100.0, 1000.0, 10**1.5, 10**3.5]))
    assert got == pytest.approx([0, 1, 2, 0.5, 2.5])


def test_heatmap_diagonal_on_for_memory_against_return_time(tmp_path):
    root = write(
        tmp_path / "rt",
        phase_rows(),
        settings=["b2"],
        outcomes=["symbol_return_steps", "adam_memory_steps"],
    )
    phase = dict(x="symbol_return_steps", y="adam_memory_steps", cols="none", best_over="lr")
    (ax,) = panels(heatmap_figure(root, **phase))
    (line,) = diagonals(ax)
    # Through memory = return time: at return time 32 (x index 1) the memory axis (10, 100,
    # 1000) reads 32, log-interpolated between 10 and 100.
    y_at = np.interp(1.0, line.get_xdata(), line.get_ydata())
    assert y_at == pytest.approx(np.log10(32 / 10))
    assert any(t.get_text().strip() == "memory = return time" for t in ax.texts)
    assert ax.get_xlim() == pytest.approx((-0.5, 2.5))  # the line did not widen the image
    swapped = dict(phase, x="adam_memory_steps", y="symbol_return_steps")
    assert len(diagonals(panels(heatmap_figure(root, **swapped))[0])) == 1
    assert not diagonals(panels(heatmap_figure(root, **phase, diagonal=False))[0])
    other = dict(phase, x="batch_size", y="b2")  # the same cells by settings: no default line
    assert not diagonals(panels(heatmap_figure(root, **other))[0])


def test_explicit_diagonal_needs_numeric_axes(tmp_path):
    root = write(tmp_path / "h", [row(head=h) for h in ("softmax", "mlp:64")])
    with pytest.raises(UserError, match="--diagonal"):
        heatmap_figure(root, x="head", y="lr", cols="none", diagonal=True)


# ----- heatmap: head kinds named in the cells -----------------------------------------------


def test_heatmap_cells_name_their_head_when_heads_mix(tmp_path):
    heads = {
        (16, 4): "lowrank:4",
        (16, 16): "softmax",
        (16, 64): "mlp:64",
        (64, 4): "lowrank:4",
        (64, 64): "softmax",
    }
    rows = [
        row(v=4096, d_model=d, head=h, loss=1.0 + r / 100, head_rank=r)
        for (d, r), h in heads.items()
    ]
    root = write(tmp_path / "rw", rows, outcomes=["head_rank"])
    (ax,) = panels(heatmap_figure(root, x="d_model", y="head_rank", cols="none"))
    labels = [t.get_text() for t in ax.texts]
    for head in set(heads.values()):
        assert sum(head in text.splitlines() for text in labels) == sum(
            h == head for h in heads.values()
        )
    same = write(tmp_path / "one", [row(v=v, lr=lr) for v in (64, 256) for lr in (1e-3, 1e-2)])
    (ax,) = panels(heatmap_figure(same, cols="none"))
    assert not any("softmax" in t.get_text() for t in ax.texts)
