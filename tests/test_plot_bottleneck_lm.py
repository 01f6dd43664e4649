"""`spamlang plot bottleneck` over `spamlang diagnose-lm` outputs (pretrained LMs), alone and
next to a sweep of spamlang runs: Figure 6 with real models. No model is loaded: the
diagnostics.json files are written by hand with plausible numbers."""

from __future__ import annotations

import json
import math

import pytest

from spamlang.cli import main
from spamlang.errors import UserError
from spamlang.plots.diagnostics import PAPER_BAND, bottleneck_figure, bottleneck_points, family_name

BAND_LABEL = "paper: 95-99% (real LMs)"
ISOTROPIC_LABEL = "sqrt(1 - D/V) (isotropic G)"
# (directory, model_type, model_name, D, V, kernel fraction): shapes of the real checkpoints.
LMS = (
    ("gpt2", "gpt2", "gpt2", 768, 50257, 0.985),
    ("pythia", "gpt_neox", "pythia-160m", 768, 50277, 0.978),
    ("qwen", "qwen3", "Qwen3-0.6B", 1024, 151669, 0.993),
)


def write_lm(out_dir, model_type, model_name, D, V, kf, **extra):
    """A diagnose-lm output directory as the contract describes it."""
    out_dir.mkdir(parents=True)
    diag = {
        "source": "diagnose-lm",
        "kernel_fraction": kf,
        "projected_cosine": 0.05,
        "d_model": D,
        "vocab_size": V,
        "head_rank": D,
        "d_over_v": D / V,
        "model_type": model_type,
        "model_name": model_name,
        "model_dir": f"/models/{model_name}",
        "tokens": 4096,
        "tie_embeddings": model_type != "gpt_neox",
        "rank_curve": {
            "tokens": [1, 8, 64],
            "rank": [1, 8, 64],
            "max_rank": [1, 8, 64],
            "tol": None,
        },
        "singular_values": [1.0, 0.5, 0.1],
        **extra,
    }
    (out_dir / "diagnostics.json").write_text(json.dumps(diag))
    return out_dir


@pytest.fixture()
def lm_dirs(tmp_path):
    return [write_lm(tmp_path / "lm" / name, *rest) for name, *rest in LMS]


def write_sweep(root):
    """Two tiny spamlang runs (D = 16) with training-time "diag" rows, as the trainer logs them."""
    for V, kf in ((64, 0.85), (256, 0.96)):
        run = root / f"V{V}"
        run.mkdir(parents=True)
        config = {
            "vocab_size": V,
            "lr": 1e-2,
            "tie_embeddings": True,
            "head": "softmax",
            "language": "spam",
            "language_params": {},
            "seed": 0,
            "preset": "tiny",
            "model_overrides": {"d_model": 16},
        }
        (run / "config.json").write_text(json.dumps(config))
        rows = [
            {"kind": "diag", "step": s, "tokens": 512 * s, "kernel_fraction": kf - 0.1 / s}
            for s in (1, 2, 3)
        ]
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def _legend(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_family_names():
    assert [family_name(t) for t in ("gpt2", "gpt_neox", "llama", "qwen2", "qwen3", "falcon")] == [
        "GPT-2",
        "Pythia (GPT-NeoX)",
        "Llama",
        "Qwen",
        "Qwen",
        "falcon",
    ]


def test_one_point_per_lm_directory(lm_dirs):
    points = bottleneck_points(lm_dirs)
    assert [(p["series"], p["model_name"], p["source"]) for p in points] == [
        ("GPT-2", "gpt2", "diagnose-lm"),
        ("Pythia (GPT-NeoX)", "pythia-160m", "diagnose-lm"),
        ("Qwen", "Qwen3-0.6B", "diagnose-lm"),
    ]
    for p, (_, _, _, D, V, kf) in zip(points, LMS):
        assert p["d_over_v"] == pytest.approx(D / V) and p["kernel_fraction"] == kf
        assert p["curve"] == ([], [])
    # A parent of diagnose-lm outputs gives the same points; a directory given twice counts once.
    parent = lm_dirs[0].parent
    assert [p["model_name"] for p in bottleneck_points([parent, parent])] == [
        "gpt2",
        "pythia-160m",
        "Qwen3-0.6B",
    ]


def test_d_over_v_from_its_parts_and_name_from_the_directory(tmp_path):
    out = write_lm(tmp_path / "llama-tiny", "llama", "", 2048, 128256, 0.99)
    diag = json.loads((out / "diagnostics.json").read_text())
    del diag["d_over_v"], diag["model_name"]
    (out / "diagnostics.json").write_text(json.dumps(diag))
    (point,) = bottleneck_points(out)
    assert point["series"] == "Llama" and point["model_name"] == "llama-tiny"
    assert point["d_over_v"] == pytest.approx(2048 / 128256)


def test_figure_of_lm_families(lm_dirs):
    fig = bottleneck_figure(lm_dirs)
    (ax,) = fig.axes
    legend = _legend(ax)
    assert legend == ["GPT-2", "Pythia (GPT-NeoX)", "Qwen", ISOTROPIC_LABEL, BAND_LABEL]
    assert sorted(t.get_text() for t in ax.texts) == ["Qwen3-0.6B", "gpt2", "pythia-160m"]
    series = {line.get_label(): line for line in ax.get_lines()}
    assert list(series["GPT-2"].get_ydata()) == [0.985]
    # the band spans the paper's 0.95-0.99 across the whole axis
    (band,) = [p for p in ax.patches if p.get_label() == BAND_LABEL]
    # (a Rectangle from matplotlib 3.9, a Polygon before: the patch transform covers both)
    ys = band.get_path().transformed(band.get_patch_transform()).vertices[:, 1]
    assert min(ys) == pytest.approx(PAPER_BAND[0]) and max(ys) == pytest.approx(PAPER_BAND[1])
    assert not bottleneck_figure(lm_dirs, labels=False).axes[0].texts


def test_mixed_sweep_and_lms_share_one_axis(lm_dirs, tmp_path):
    sweep = write_sweep(tmp_path / "sweep")
    points = bottleneck_points([sweep, *lm_dirs])
    assert [p["source"] for p in points] == ["spamlang"] * 2 + ["diagnose-lm"] * 3
    assert sorted(p["d_over_v"] for p in points[:2]) == [16 / 256, 16 / 64]
    fig = bottleneck_figure([sweep, *lm_dirs])
    ax = fig.axes[0]  # then the along-training panel and its colour bar
    assert len(fig.axes) == 3
    legend = _legend(ax)
    assert legend[0] == "spam, softmax, tied" and {"GPT-2", "Qwen", BAND_LABEL} <= set(legend)
    # sqrt(1 - D/V) spans every point, from Qwen's D/V ~ 0.007 to the runs' 0.25
    iso = next(line for line in ax.get_lines() if line.get_label() == ISOTROPIC_LABEL)
    xs = iso.get_xdata()
    assert xs.min() <= min(p["d_over_v"] for p in points)
    assert xs.max() >= max(p["d_over_v"] for p in points)
    assert iso.get_ydata()[0] == pytest.approx(math.sqrt(1 - xs[0]))
    # markers: LM families apart from the runs
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert lines["spam, softmax, tied"].get_marker() != lines["GPT-2"].get_marker()


def test_a_head_wider_than_v_has_rank_v_as_diagnose_writes(tmp_path):
    # D = 16 > V = 8: the head's rank is min(D, V), so D / V on the axis is capped at 1
    sweep = write_sweep(tmp_path / "sweep")
    config = json.loads((sweep / "V64" / "config.json").read_text())
    (sweep / "V64" / "config.json").write_text(json.dumps({**config, "vocab_size": 8}))
    assert sorted(p["d_over_v"] for p in bottleneck_points([sweep])) == [16 / 256, 1.0]


def test_sweep_only_figure_has_no_lm_band(tmp_path):
    fig = bottleneck_figure(write_sweep(tmp_path / "sweep"))
    assert BAND_LABEL not in _legend(fig.axes[0]) and not fig.axes[0].texts


def test_cli_writes_the_figure(lm_dirs, tmp_path, capsys):
    out = tmp_path / "fig6.png"
    assert main(["plot", "bottleneck", *map(str, lm_dirs), "-o", str(out)]) == 0
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 5000
    assert capsys.readouterr().out == f"wrote {out}\n"
    sweep = write_sweep(tmp_path / "sweep")
    mixed = tmp_path / "mixed.pdf"
    assert (
        main(
            [
                "plot",
                "bottleneck",
                str(sweep),
                str(lm_dirs[0].parent),
                "-o",
                str(mixed),
                "--no-labels",
            ]
        )
        == 0
    )
    assert mixed.read_bytes().startswith(b"%PDF")


def _error_line(capsys):
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("spamlang plot: error: "), err
    return err


def test_cli_errors_name_the_input(lm_dirs, tmp_path, capsys):
    out = str(tmp_path / "f.png")
    good = [str(d) for d in lm_dirs]
    missing = tmp_path / "nope"
    assert main(["plot", "bottleneck", *good, str(missing), "-o", out]) == 2
    assert f"no such directory: {missing}" in _error_line(capsys)

    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    (empty / "notes.txt").write_text("hi")
    assert main(["plot", "bottleneck", str(empty), *good, "-o", out]) == 2
    assert f"nothing to plot in {empty}" in _error_line(capsys)

    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "diagnostics.json").write_text('{"source": "diagnose-lm", "kernel_fr')
    assert main(["plot", "bottleneck", *good, str(corrupt), "-o", out]) == 2
    assert f"cannot read {corrupt / 'diagnostics.json'}" in _error_line(capsys)

    # inside a parent directory too
    (lm_dirs[0].parent / "broken").mkdir()
    (lm_dirs[0].parent / "broken" / "diagnostics.json").write_text("[1, 2")
    assert main(["plot", "bottleneck", str(lm_dirs[0].parent), "-o", out]) == 2
    assert "broken" in _error_line(capsys)

    no_kf = write_lm(tmp_path / "no_kf", "gpt2", "gpt2", 768, 50257, float("nan"))
    with pytest.raises(UserError, match="no_kf.*no finite kernel_fraction"):
        bottleneck_points(no_kf)
    assert main(["plot", "bottleneck", str(no_kf), "-o", out]) == 2
    _error_line(capsys)
    assert not (tmp_path / "f.png").exists()
