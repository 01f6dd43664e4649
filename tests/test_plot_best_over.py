"""`spamlang plot heatmap --best-over COL`: each cell at its own best value of COL.

The sweep is a handmade results.csv shaped like sweeps/return_time.py (V fixed, batch x b2 x
lr x 2 seeds, plus sgd runs without an Adam memory); nothing is trained.
"""

from __future__ import annotations

import csv
import math

import pytest
from matplotlib.patches import Rectangle

from spamlang.cli import main
from spamlang.plots.sweep import GID, heatmap_figure

V = 4096
LRS = (1e-2, 3e-2, 1e-1)
# (batch, b2) -> the cell's best lr; None: every lr diverged.
BEST = {
    (32, 0.9): 1e-2,
    (32, 0.999): 3e-2,
    (32, 0.9999): None,
    (512, 0.9): 1e-1,
    (512, 0.999): 3e-2,
    (512, 0.9999): 1e-1,
}
BASE = {32: 1.0, 512: 2.0}  # the best lr's loss for seed 0, + 0.1 * b2's index
B2S = (0.9, 0.999, 0.9999)
COLUMNS = [
    "run_id",
    "vocab_size",
    "batch_size",
    "optimizer",
    "b2",
    "lr",
    "seed",
    "final_eval_loss",
    "repetition_accuracy",
    "diverged",
    "symbol_return_steps",
    "adam_memory_steps",
]


def loss(batch: int, b2: float, lr: float, seed: int) -> float:
    """Grows by 1 per decade away from the cell's best lr; seed 1 is 0.1 worse."""
    return BASE[batch] + 0.1 * B2S.index(b2) + abs(math.log10(lr / BEST[batch, b2])) + 0.1 * seed


def rows() -> list[dict]:
    out = []
    for (batch, b2), best in BEST.items():
        for lr in LRS:
            for seed in (0, 1):
                x = float("nan") if best is None else loss(batch, b2, lr, seed)
                out.append(
                    dict(
                        run_id=f"B{batch}-b2_{b2}-lr{lr:g}-s{seed}",
                        vocab_size=V,
                        batch_size=batch,
                        optimizer="adamw",
                        b2=b2,
                        lr=lr,
                        seed=seed,
                        final_eval_loss=x,
                        repetition_accuracy=1 - x / 10,
                        diverged=best is None,
                        symbol_return_steps=V / batch,
                        adam_memory_steps=1 / (1 - b2),
                    )
                )
    for seed in (0, 1):  # no Adam memory: left out of a heatmap whose y is adam_memory_steps
        out.append(
            dict(
                run_id=f"sgd-s{seed}",
                vocab_size=V,
                batch_size=32,
                optimizer="sgd",
                b2=0.9,
                lr=1e-1,
                seed=seed,
                final_eval_loss=0.5,
                repetition_accuracy=0.95,
                diverged=False,
                symbol_return_steps=V / 32,
                adam_memory_steps="",
            )
        )
    return out


@pytest.fixture
def sweep(tmp_path):
    root = tmp_path / "return_time"
    root.mkdir()
    with open(root / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows())
    return root


PHASE = dict(x="symbol_return_steps", y="adam_memory_steps", cols="none", best_over="lr")


def cells(ax) -> dict:
    """(x index, y index) -> the cell's text (the diagonal's label is no cell's)."""
    return {
        (round(t.get_position()[0]), round(t.get_position()[1])): t.get_text()
        for t in ax.texts
        if t.get_gid() != GID
    }


def test_cells_show_the_best_lr_seed_mean_range_and_name(sweep, capsys):
    fig = heatmap_figure(sweep, **PHASE)
    (ax,) = [a for a in fig.axes if a.get_label() != "<colorbar>"]  # sgd left no row behind
    assert "left out 2 runs without a value of adam_memory_steps" in capsys.readouterr().err
    # Plain tick labels, the float noise of 1 / (1 - 0.999) included.
    assert [t.get_text() for t in ax.get_xticklabels()] == ["8", "128"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["10", "1000", "10000"]
    xs = {512: 0, 32: 1}  # return time V/B: 8 for B=512, 128 for B=32
    got = cells(ax)
    for (batch, b2), best in BEST.items():
        text = got[xs[batch], B2S.index(b2)]
        if best is None:
            assert text == "div"  # every lr diverged: hatched, not blank
            continue
        lo, hi = loss(batch, b2, best, 0), loss(batch, b2, best, 1)
        mean, spread, name = text.split("\n")
        assert float(mean) == pytest.approx((lo + hi) / 2, abs=0.005)
        assert spread == f"{lo:.2f}\u2013{hi:.2f}"
        assert name == "lr " + {1e-2: "1e-2", 3e-2: "3e-2", 1e-1: "1e-1"}[best]
    # The drawn colours are the best-lr seed means.
    grid = ax.images[0].get_array()
    assert grid[B2S.index(0.999), xs[512]] == pytest.approx(BASE[512] + 0.1 + 0.05)
    # The red outline still marks the best y of each x: b2=0.9 for both return times.
    boxes = [p for p in ax.patches if isinstance(p, Rectangle) and not p.get_fill()]
    assert sorted((round(p.get_x() + 0.45), round(p.get_y() + 0.45)) for p in boxes) == [
        (0, 0),
        (1, 0),
    ]
    caption = fig.get_supxlabel()
    assert "each cell: its best lr of 1e-2, 3e-2, 1e-1" in caption
    assert "mean over seed (2 runs)" in caption and "left out 2 runs" in caption


def test_accuracy_picks_the_highest(sweep):
    fig = heatmap_figure(sweep, metric="repetition_accuracy", **PHASE)
    got = cells(fig.axes[0])
    assert got[0, 0].endswith("\nlr 1e-1") and got[1, 0].endswith("\nlr 1e-2")
    assert "highest seed-mean repetition_accuracy" in fig.get_supxlabel()


def test_without_best_over_lr_gets_rows(sweep):
    """The old behaviour stays: a varying lr that is no axis gets rows of panels."""
    fig = heatmap_figure(sweep, x="symbol_return_steps", y="adam_memory_steps", cols="none")
    assert len([a for a in fig.axes if a.get_label() != "<colorbar>"]) == 3


def test_cli_and_errors(sweep, tmp_path, capsys):
    out = tmp_path / "phase.png"
    assert (
        main(
            [
                "plot",
                "heatmap",
                str(sweep),
                "-o",
                str(out),
                "--x",
                "symbol_return_steps",
                "--y",
                "adam_memory_steps",
                "--best-over",
                "lr",
                "--cols",
                "none",
            ]
        )
        == 0
    )
    assert out.read_bytes().startswith(b"\x89PNG")
    capsys.readouterr()
    phase = ["--x", "symbol_return_steps", "--y", "adam_memory_steps", "--cols", "none"]
    bad = [
        (
            ["--best-over", "learning_rate"] + phase,
            "unknown column 'learning_rate' for --best-over",
        ),
        (
            ["--best-over", "lr", "--x", "b2", "--cols", "none"],  # --y defaults to lr
            "--best-over lr is also an axis",
        ),
        (
            ["--best-over", "b2", "--x", "lr", "--y", "seed", "--cols", "b2"],
            "--best-over b2 is also an axis",
        ),
        (["--best-over", "b2"] + phase + ["--rows", "b2"], "--best-over b2 is also an axis"),
        (["--best-over", "repetition_accuracy"] + phase, "repetition_accuracy is an outcome"),
    ]
    for args, message in bad:
        assert main(["plot", "heatmap", str(sweep), "-o", str(out), *args]) == 2, args
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and message in err, (args, err)
