"""Sweep figures from a small synthetic sweep directory (no training involved)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest

from spamlang.cli import main
from spamlang.errors import UserError
from spamlang.notation import format_count as format_vocab
from spamlang.notation import format_lr
from spamlang.plots import layout
from spamlang.plots.curves import choose_runs, curves_figure, plot_curves
from spamlang.plots.sweep import heatmap_figure, plot_heatmap
from spamlang.results import read_runs, records

COLUMNS = [
    "run_id",
    "language",
    "preset",
    "d_model",
    "vocab_size",
    "lr",
    "tie_embeddings",
    "head",
    "seed",
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
]


def _row(v, lr, tied, loss, diverged=False, head="softmax"):
    tie = "tied" if tied else "untied"
    return {
        "run_id": f"V{v}-lr{lr:g}-{tie}" + ("" if head == "softmax" else f"-{head}"),
        "language": "spam",
        "preset": "tiny",
        "d_model": 16,
        "vocab_size": v,
        "lr": lr,
        "tie_embeddings": str(tied),
        "head": head,
        "seed": 0,
        "final_train_loss": "nan" if diverged else loss,
        "final_eval_loss": "nan" if diverged else loss,
        "loss_above_floor": "nan" if diverged else loss,
        "optimal_loss": 0.0,
        "repetition_accuracy": 0.5,
        "eval_accuracy": 0.5,
        "diverged": str(diverged),
        "diverged_step": 7 if diverged else "",
        "steps": 10,
        "tokens": 5120,
        "tokens_per_s": 1000.0,
        "wall_seconds": 5.0,
    }


def _write_run(root, v, lr, tied, losses, finished=True, optimal=0.0):
    tie = "tied" if tied else "untied"
    run = root / f"V{v}-lr{lr:g}-{tie}"
    run.mkdir()
    config = {
        "vocab_size": v,
        "lr": lr,
        "tie_embeddings": tied,
        "head": "softmax",
        "language": "spam",
        "language_params": {},
        "seed": 0,
        "preset": "tiny",
    }
    (run / "config.json").write_text(json.dumps(config))
    lines = [
        json.dumps({"kind": "train", "step": i, "tokens": 512 * (i + 1), "loss": x, "lr": lr})
        for i, x in enumerate(losses)
    ]
    lines.append(
        json.dumps(
            {
                "kind": "eval",
                "step": len(losses),
                "tokens": 512 * len(losses),
                "eval_loss": losses[-1] + optimal,
                "loss_above_floor": losses[-1],
            }
        )
    )
    (run / "metrics.jsonl").write_text("\n".join(lines) + '\n{"kind": "tra')  # torn last line
    if finished:
        (run / "result.json").write_text(
            json.dumps(
                {
                    "final_eval_loss": losses[-1],
                    "final_train_loss": losses[-1],
                    "optimal_loss": optimal,
                    "loss_above_floor": losses[-1] - optimal,
                    "diverged": False,
                    "diverged_step": None,
                }
            )
        )
    return run


def make_sweep(tmp_path):
    """V in {64, 1024, 4096} x lr in {1e-3, 1e-2} x tied/untied; one diverged run, one missing cell."""
    tmp_path.mkdir()
    rows = []
    for v, scale in ((64, 0.0), (1024, 0.5), (4096, 6.0)):
        for lr in (1e-3, 1e-2):
            for tied in (True, False):
                if (v, lr, tied) == (4096, 1e-2, True):
                    continue  # missing cell
                rows.append(
                    _row(
                        v,
                        lr,
                        tied,
                        scale * (1.5 if lr == 1e-2 else 1.0),
                        diverged=(v, lr, tied) == (4096, 1e-2, False),
                    )
                )
    with open(tmp_path / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    _write_run(tmp_path, 64, 1e-3, True, [4.0, 1.0, 0.01, 0.0])
    _write_run(tmp_path, 1024, 1e-3, True, [7.0, 3.0, 1.0, 0.5])
    _write_run(tmp_path, 4096, 1e-3, True, [8.0, 7.0, 6.5, 6.0], finished=False)
    _write_run(tmp_path, 1024, 1e-3, False, [7.0, 4.0, 2.0, 0.9])
    _write_run(tmp_path, 1024, 1e-2, False, [7.0, 2.0, 0.2, 0.1])
    return tmp_path


@pytest.fixture()
def sweep_dir(tmp_path):
    return make_sweep(tmp_path / "sweep")


def _assert_figure(path, magic):
    data = path.read_bytes()
    assert data.startswith(magic) and len(data) > 5000


def test_formatters():
    # Counts in the notation flags parse (K = 1,000): a suffix only where it is exact.
    assert [format_vocab(v) for v in (64, 1024, 1536, 4096, 131072, 1 << 20)] == [
        "64",
        "1024",
        "1536",
        "4096",
        "131072",
        "1048576",
    ]
    assert [format_vocab(v) for v in (1000, 1500, 100_000, 2_000_000)] == [
        "1K",
        "1.5K",
        "100K",
        "2M",
    ]
    assert [format_lr(x) for x in (5e-4, 2.5e-4, 0.01, 3e-2)] == ["5e-4", "2.5e-4", "1e-2", "3e-2"]


def test_heatmap_png_and_pdf(sweep_dir, tmp_path):
    for metric in ("final_eval_loss", "loss_above_floor", "final_train_loss"):
        _assert_figure(
            plot_heatmap(sweep_dir, tmp_path / f"{metric}.png", metric=metric), b"\x89PNG"
        )
    _assert_figure(plot_heatmap(sweep_dir, tmp_path / "h.pdf"), b"%PDF")


def _panel_texts(ax):
    return {
        (round(t.get_position()[0]), round(t.get_position()[1])): t.get_text() for t in ax.texts
    }


def test_heatmap_cells(sweep_dir):
    fig = heatmap_figure(sweep_dir)
    tied, untied = fig.axes[:2]
    assert (tied.get_title(), untied.get_title()) == ("tied", "untied")
    assert [t.get_text() for t in tied.get_xticklabels()] == ["64", "1024", "4096"]
    assert [t.get_text() for t in tied.get_yticklabels()] == ["1e-3", "1e-2"]
    # (x = V index, y = LR index) -> annotation; the missing tied cell (4K, 1e-2) has none, nor
    # has (4K, 1e-3), whose run folder holds no result.json yet: results.csv's row aside, it is
    # still running (as `plot curves` draws it).
    assert _panel_texts(tied) == {(0, 0): "0", (1, 0): "0.50", (0, 1): "0", (1, 1): "0.75"}
    assert _panel_texts(untied)[(2, 1)] == "div"
    assert sum(p.get_hatch() is not None for p in untied.patches) == 1
    # Zero losses: a linear scale over the data's range, shared by both panels.
    assert [(ax.images[0].norm.vmin, ax.images[0].norm.vmax) for ax in (tied, untied)] == [
        (0, 6)
    ] * 2
    assert "log" not in fig.axes[-1].get_ylabel()


def test_curves_lines(sweep_dir):
    fig = curves_figure(sweep_dir)
    tied = fig.axes[0]
    labels = [line.get_label() for line in tied.get_lines()]
    # A zero floor cannot be drawn on a log axis, so the legend says so in an empty entry.
    # Each line at its cell's best LR, named in the legend.
    assert labels == [
        "V=64, lr=1e-3",
        "V=1024, lr=1e-3",
        "V=4096, lr=1e-3 (running)",
        "floor: 0 nats (off the log axis)",
    ]
    assert len(tied.get_lines()[3].get_xdata()) == 0
    assert tied.get_yscale() == "log" and tied.get_title() == "tied"
    # The zero loss of V=64's last step cannot sit on a log axis and is dropped.
    assert list(tied.get_lines()[0].get_ydata()) == [4.0, 1.0, 0.01]


def test_plots_do_not_import_training_or_jax():
    code = (
        "import sys, spamlang.plots.sweep, spamlang.plots.samples, spamlang.cli.plot_cmd; "
        "print(sorted(m for m in sys.modules if m.startswith(('spamlang.train', 'jax'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr


def test_heatmap_facets_by_head(sweep_dir, tmp_path):
    with open(sweep_dir / "results.csv", "a", newline="") as f:
        csv.DictWriter(f, fieldnames=COLUMNS).writerow(_row(1024, 1e-3, True, 0.2, head="mos:4"))
    points = layout.group_points(layout.finished_runs(sweep_dir))
    rows = layout.auto_rows(points, ["vocab_size", "lr", "tie_embeddings"], ["seed"])
    assert [p.row_label for p in layout.Facets(points, None, rows, []).panels] == [
        "head=mos:4",
        "head=softmax",
    ]
    _assert_figure(plot_heatmap(sweep_dir, tmp_path / "f.png"), b"\x89PNG")
    _assert_figure(plot_heatmap(sweep_dir, tmp_path / "g.png", where={"head": "mos:4"}), b"\x89PNG")


def test_heatmap_from_run_dirs_without_csv(sweep_dir, tmp_path):
    (sweep_dir / "results.csv").unlink()
    assert len(layout.finished_runs(sweep_dir)) == 4
    _assert_figure(plot_heatmap(sweep_dir, tmp_path / "h.png"), b"\x89PNG")


def test_curves(sweep_dir, tmp_path):
    _assert_figure(plot_curves(sweep_dir, tmp_path / "c.png"), b"\x89PNG")
    _assert_figure(
        plot_curves(sweep_dir, tmp_path / "c.pdf", lr="best", metric="eval_loss"), b"%PDF"
    )
    scanned = read_runs(sweep_dir)
    scanned = scanned[scanned["path"].notna()]  # the runs with a folder, as curves reads them
    # Default: each cell's best LR, as "best" picks it.
    assert choose_runs(scanned, None).equals(choose_runs(scanned, "best"))
    best = records(choose_runs(scanned, "best"))
    assert {(r["vocab_size"], r["tie_embeddings"]): r["lr"] for r in best}[(1024, False)] == 1e-2
    with pytest.raises(UserError, match="no run has lr=3e-1"):
        plot_curves(sweep_dir, tmp_path / "c.png", lr=0.3)


def test_errors(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UserError, match="no finished runs in"):
        plot_heatmap(empty, tmp_path / "h.png")
    with pytest.raises(UserError, match="no finished runs in"):
        plot_curves(empty, tmp_path / "c.png")
    with pytest.raises(UserError, match="no such directory"):
        plot_heatmap(tmp_path / "nope", tmp_path / "h.png")
    with pytest.raises(UserError, match=r"\.png or \.pdf"):
        plot_heatmap(empty, tmp_path / "h.jpg")
    with pytest.raises(UserError, match="no finished runs in"):
        plot_heatmap(empty, tmp_path / "h.png", metric="accuracy")


def test_unknown_metric(sweep_dir, tmp_path):
    with pytest.raises(UserError, match="unknown column 'accuracy' for --metric"):
        plot_heatmap(sweep_dir, tmp_path / "h.png", metric="accuracy")
    with pytest.raises(UserError, match="unknown metric 'bogus' for --y; metrics.jsonl has: "):
        plot_curves(sweep_dir, tmp_path / "c.png", metric="bogus")


def test_cli(sweep_dir, tmp_path, capsys):
    out = tmp_path / "cli.png"
    assert (
        main(
            [
                "plot",
                "heatmap",
                str(sweep_dir),
                "-o",
                str(out),
                "--metric",
                "loss_above_floor",
                "--where",
                "head=softmax",
            ]
        )
        == 0
    )
    _assert_figure(out, b"\x89PNG")
    assert (
        main(["plot", "curves", str(sweep_dir), "-o", str(tmp_path / "c.pdf"), "--lr", "1e-2"]) == 0
    )
    _assert_figure(tmp_path / "c.pdf", b"%PDF")
    assert main(["plot", "heatmap", str(tmp_path), "-o", str(tmp_path / "x.svg")]) == 2
    assert main(["plot", "heatmap", str(sweep_dir), "-o", str(out), "--where", "head"]) == 2
    assert main(["plot", "curves", str(sweep_dir), "-o", str(out), "--lr", "fast"]) == 2
    err = capsys.readouterr().err
    assert ".png or .pdf" in err and "key=value" in err and "'best'" in err


def test_cli_subprocess_empty_dir(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "spamlang",
            "plot",
            "heatmap",
            str(tmp_path),
            "-o",
            str(tmp_path / "h.png"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"spamlang plot: error: no finished runs in {tmp_path}"
    ]


@pytest.mark.parametrize("kind", ["heatmap", "curves", "lines", "bottleneck"])
def test_an_output_file_needs_an_existing_folder(sweep_dir, tmp_path, capsys, kind):
    missing = tmp_path / "missing" / "dir"
    extra = ["--x", "vocab_size", "--y", "final_eval_loss"] if kind == "lines" else []
    assert main(["plot", kind, str(sweep_dir), "-o", str(missing / "x.png"), *extra]) == 2
    assert capsys.readouterr().err == (
        f"spamlang plot: error: no such directory: {missing} (create it first)\n"
    )
    assert not (tmp_path / "missing").exists()


def test_curves_of_end_only_evaluations_say_so(sweep_dir, tmp_path, capsys):
    for config in sweep_dir.glob("*/config.json"):
        config.write_text(json.dumps({**json.loads(config.read_text()), "eval_every": 0}))
    fig = curves_figure(sweep_dir, metric="eval_loss")
    note = "the runs evaluate only at the end (eval_every=0): one point per run"
    assert capsys.readouterr().err == f"note: {note}\n"
    assert note in fig.get_supxlabel()
    ends = [line for ax in fig.axes for line in ax.get_lines() if len(line.get_xdata()) == 1]
    assert ends and all(line.get_marker() == "o" for line in ends)  # the end points, drawn
    curves_figure(sweep_dir)  # train loss: many points per line, no note
    assert capsys.readouterr().err == ""
