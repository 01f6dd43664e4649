"""`spamlang law fit|predict|validate` and the dry run's law column, on synthetic sweeps; every
bad input is one line on stderr and exit status 2."""

from __future__ import annotations

import json
import math
import re

import _synthetic_law as synthetic  # tests/_synthetic_law.py
import pytest

from spamlang.cli import main
from spamlang.law import fit, load
from spamlang.law import law as law_module

# Small grids: each sweep holds one value of b2 or two, 2 widths, both tyings.
GRID = {
    "vocab_size": (256, 1024),
    "batch_size": (32, 128),
    "n": (4, 16, 64),
    "d_model": (16, 32),
    "weight_decay": (0.1,),
}
SWEEP_FILE = """
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig
SWEEP = Sweep("lawcells", TrainConfig(preset="tiny", seq_len=2, batch_size=32, tokens=32768,
                                      tie_embeddings=True),
              {{"language": {languages}, "vocab_size": [256, 1024], "b2": [0.95, 0.999],
               "lr": [1e-3, 3e-3], "seed": [0, 1]}})
"""


def _sweep_dir(root, name, b2s, seed=0, **columns):
    frame = synthetic.frame(noise=0.02, seed=seed, grid={**GRID, "b2": b2s}).assign(**columns)
    (root / name).mkdir()
    frame.to_csv(root / name / "results.csv", index=False)
    return str(root / name)


@pytest.fixture
def sweeps(tmp_path):
    return [
        _sweep_dir(tmp_path, "low", (0.9, 0.95)),
        _sweep_dir(tmp_path, "high", (0.99, 0.999), 1),
    ]


@pytest.fixture
def law_file(tmp_path, sweeps, capsys):
    assert main(["law", "fit", *sweeps, "-o", str(tmp_path / "law.json")]) == 0
    capsys.readouterr()
    return tmp_path / "law.json"


def _sweep_file(tmp_path, languages=("spam",)):
    path = tmp_path / "cells.py"
    path.write_text(SWEEP_FILE.format(languages=list(languages)))
    return str(path)


def test_fit_prints_the_law_and_writes_it(tmp_path, sweeps, capsys):
    out = tmp_path / "law.json"
    assert main(["law", "fit", *sweeps, "-o", str(out)]) == 0
    text = capsys.readouterr().out
    law = load(out)
    assert str(law) in text and f"wrote {out}" in text
    assert law.sources == ["low", "high"] and law.ranges["M"][1] == 1000  # b2 = 0.999


def test_fit_skips_what_is_no_sweep_with_a_note(tmp_path, sweeps, capsys):
    """`spamlang law fit results/*` as the docs write it: results/ also holds a README and the
    forecasts folder, each skipped with one note (it failed on the README before)."""
    (tmp_path / "README.md").write_text("# results\n")
    (tmp_path / "forecasts").mkdir()
    (tmp_path / "forecasts" / "depth.csv").write_text("cell,predicted_loss\n")
    argv = ["law", "fit", str(tmp_path / "README.md"), *sweeps, str(tmp_path / "forecasts")]
    assert main(argv) == 0
    captured = capsys.readouterr()
    notes = captured.err.strip().splitlines()
    assert len(notes) == 2 and all("not a sweep or run directory" in n for n in notes)
    assert "fitted on" in captured.out
    assert main(["law", "fit", str(tmp_path / "README.md")]) == 2  # nothing left: an error
    assert "no sweep or run directory" in capsys.readouterr().err


def test_predict_prints_every_cell_once(tmp_path, law_file, capsys):
    assert main(["law", "predict", _sweep_file(tmp_path), "--law", str(law_file)]) == 0
    lines = capsys.readouterr().out.splitlines()
    cells = [f"language=spam vocab_size={v} b2={b2}" for v in (256, 1024) for b2 in (0.95, 0.999)]
    # a legend of R, M and n, a header, then one line per cell: lr and seed collapsed
    assert len(lines) == 2 + len(cells)
    assert all(f"{x} = " in lines[0] for x in ("R", "M", "n")) and lines[0].startswith("#")
    for cell in cells:
        (line,) = [x for x in lines if x.startswith(cell + " ")]
        assert "extrapolation" not in line


def test_predict_writes_the_forecast_csv_with_the_law_that_made_it(tmp_path, law_file, capsys):
    """--csv: one row per cell with its loss, class and extrapolation as printed, and the law
    file's sha256 and the git commit that last changed it ("uncommitted" once it differs)."""
    import csv
    import hashlib
    import subprocess

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "law.json").write_bytes(law_file.read_bytes())
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "law.json"], check=True)
    subprocess.run([*git, "commit", "-qm", "law"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    out = tmp_path / "forecast.csv"
    argv = ["law", "predict", _sweep_file(tmp_path), "--law", str(repo / "law.json")]
    assert main([*argv, "--csv", str(out)]) == 0
    printed = capsys.readouterr().out
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["cell"] for r in rows] == [
        f"language=spam vocab_size={v} b2={b2}" for v in (256, 1024) for b2 in (0.95, 0.999)
    ]
    law = load(repo / "law.json")
    sha = hashlib.sha256(law_file.read_bytes()).hexdigest()
    for row in rows:
        line = next(x for x in printed.splitlines() if x.startswith(row["cell"] + " "))
        # printed to 3 digits, written to 4: equal to the printed digits' rounding
        assert float(line.split()[3]) == pytest.approx(float(row["predicted_loss"]), rel=6e-3)
        assert row["predicted_class"] in ("learned", "partial", "failed")
        assert (row["law_commit"], row["law_sha256"]) == (head.strip(), sha)
    assert law is not None and f"wrote {out}" in printed
    (repo / "law.json").write_text(law_file.read_text().replace('"rms"', '"rms" ', 1))
    assert main([*argv, "--csv", str(out)]) == 0
    with open(out, newline="") as f:
        assert {r["law_commit"] for r in csv.DictReader(f)} == {"uncommitted"}


def test_compare_puts_each_forecast_cell_beside_its_measurement(tmp_path, law_file, capsys):
    """`law compare`: the best LR's seed mean, its seeds' range, the classes and the count of
    cells classified right; a cell with no finished run yet is '-' and not counted."""
    import csv

    from spamlang.law import forecast

    out = tmp_path / "forecast.csv"
    argv = ["law", "predict", _sweep_file(tmp_path), "--law", str(law_file), "--csv", str(out)]
    assert main(argv) == 0
    sweep = tmp_path / "swept"
    sweep.mkdir()
    columns = ["run_id", "language", "vocab_size", "lr", "seed", "b2", "tie_embeddings"]
    columns += ["batch_size", "d_model", "steps", "final_eval_loss", "diverged"]
    losses = {(1e-3, 0): 3.0, (1e-3, 1): 3.2, (3e-3, 0): 5.0, (3e-3, 1): 5.5}  # 1e-3 is best
    with open(sweep / "results.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for (lr, seed), loss in losses.items():
            writer.writerow(
                [f"r{lr}{seed}", "spam", 1024, lr, seed, 0.95, True, 32, 16, 32, loss, False]
            )
    capsys.readouterr()
    assert main(["law", "compare", str(out), str(sweep)]) == 0
    text = capsys.readouterr().out
    (line,) = [x for x in text.splitlines() if "vocab_size=1024 b2=0.95 " in x]
    assert " 3.1 " in line and " 3 " in line and " 3.2 " in line  # mean, low, high
    assert text.strip().splitlines()[-1].startswith("1 of 4 cells measured: ")
    assert sum(" - " in x for x in text.splitlines()) == 3  # the cells not run yet
    compared = forecast.compare(
        forecast.read(out), __import__("pandas").read_csv(sweep / "results.csv")
    )
    done = [r for r in compared if r["measured"] is not None]
    assert len(done) == 1 and done[0]["best_lr"] == 1e-3 and done[0]["seeds"] == 2
    assert done[0]["class_measured"] == "partial"  # 3.1 nats at V = 1,024: 0.45 log V
    assert forecast.summary(compared).startswith("1 of 4 cells measured: ")
    assert main(["law", "compare", str(tmp_path / "absent.csv"), str(sweep)]) == 2


def test_predict_marks_cells_outside_the_law(tmp_path, law_file, capsys):
    path = _sweep_file(tmp_path, languages=("spam", "cycle"))
    assert main(["law", "predict", path, "--law", str(law_file)]) == 0
    lines = capsys.readouterr().out.splitlines()[2:]
    assert len(lines) == 8
    for line in lines:
        assert ("extrapolation: language cycle" in line) == line.startswith("language=cycle")
        # Outside the law's scope the loss column shows no number.
        assert (line.split()[3] == "-") == line.startswith("language=cycle")


def test_compare_puts_a_sweep_beside_the_law_cell_by_cell(tmp_path, sweeps, law_file, capsys):
    """`law compare SWEEP_DIR`: every cell's measured best-LR seed mean beside the law's
    prediction, both classes, and the count classified right."""
    from spamlang.law import forecast
    from spamlang.results import load as results

    assert main(["law", "compare", sweeps[0], "--law", str(law_file)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    rows = forecast.against(load(law_file), results(sweeps[0]))
    assert len(lines) == 1 + len(rows) + 1  # header, one line a cell, the count
    assert all(r["predicted_class"] in ("learned", "partial", "failed") for r in rows)
    assert "memory_ratio" in lines[0] and all(r["memory_ratio"] > 0 for r in rows)
    labels = [r["cell"] for r in rows]  # the settings that differ between cells name each
    assert len(set(labels)) == len(rows) and all("vocab_size=" in x for x in labels)
    right = sum(r["class_measured"] == r["predicted_class"] for r in rows)
    assert lines[-1].startswith(f"{len(rows)} of {len(rows)} cells measured: {right} classified")
    # The RMS error over each measured class's cells, each class that has any named once.
    per_class = re.findall(r"(learned|partial|failed) ([\d.]+) over (\d+)", lines[-1])
    assert per_class and {c for c, _, _ in per_class} == {r["class_measured"] for r in rows}
    for c, shown, count in per_class:
        errors = [r["error"] for r in rows if r["class_measured"] == c]
        assert int(count) == len(errors)
        assert float(shown) == pytest.approx(
            math.sqrt(sum(e * e for e in errors) / len(errors)), abs=0.005
        )
    # The law that made a forecast is not given twice; a third path is one too many.
    assert main(["law", "compare", "x.csv", sweeps[0], "--law", str(law_file)]) == 2
    assert main(["law", "compare", "x.csv", sweeps[0], sweeps[1]]) == 2


def test_validate_prints_the_table_and_draws_it(tmp_path, sweeps, capsys):
    figure = tmp_path / "validate.png"
    assert main(["law", "validate", *sweeps, "-o", str(figure)]) == 0
    out = capsys.readouterr().out
    assert figure.stat().st_size > 0 and f"wrote {figure}" in out
    assert "classified" in out and all(f"{name} " in out for name in ("low", "high"))


@pytest.mark.parametrize(
    "case",
    [
        "empty",
        "missing column",
        "language",
        "no such dir",
        "no such sweep file",
        "no such law",
        "no shipped law",
        "bad flag",
        "bad figure",
        "one sweep",
        "bad forecast path",
        "no tying column",
        "infinite loss",
        "bad law value",
    ],
)
def test_bad_input_is_one_line_and_status_2(tmp_path, case, capsys, monkeypatch):
    good = _sweep_dir(tmp_path, "good", (0.95, 0.999))
    monkeypatch.setattr(law_module, "shipped_path", lambda: tmp_path / "absent.json")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "results.csv").write_text(
        (tmp_path / "good" / "results.csv").read_text().splitlines()[0] + "\n"
    )
    argv = {
        "empty": ["law", "fit", str(tmp_path / "empty")],
        "missing column": ["law", "fit", _sweep_dir(tmp_path, "cut", (0.95,))],
        "language": ["law", "fit", _sweep_dir(tmp_path, "cycle", (0.95,), language="cycle")],
        "no such dir": ["law", "fit", str(tmp_path / "absent")],
        "no such sweep file": ["law", "predict", str(tmp_path / "absent.py"), "--law", "x"],
        "no such law": [
            "law",
            "predict",
            _sweep_file(tmp_path),
            "--law",
            str(tmp_path / "absent.json"),
        ],
        "no shipped law": ["law", "predict", _sweep_file(tmp_path)],
        "bad flag": ["law", "fit", good, "--bogus"],
        "bad figure": ["law", "validate", good, good, "-o", str(tmp_path / "fig.txt")],
        "one sweep": ["law", "validate", good],
        "bad forecast path": [
            "law",
            "predict",
            _sweep_file(tmp_path),
            "--csv",
            str(tmp_path / "no" / "such" / "dir.csv"),
        ],
    }.get(case)
    if case in ("no tying column", "infinite loss"):  # the dict made tmp_path / "cut"
        argv = ["law", "fit", str(tmp_path / "cut")]
    if case == "bad law value":  # a law file whose k is NaN would print nan for every cell
        # (a law of few cells, some constants not pinned down: said, and beside the point)
        with pytest.warns(UserWarning, match="do not pin down"):
            law = fit(synthetic.frame(noise=0.02, grid={**GRID, "b2": (0.95, 0.999)}))
        data = law.to_json()
        data["constants"]["k"] = float("nan")
        (tmp_path / "bad.json").write_text(json.dumps(data))
        argv = ["law", "compare", good, "--law", str(tmp_path / "bad.json")]
    if case in ("missing column", "no tying column", "infinite loss"):
        path = tmp_path / "cut" / "results.csv"
        frame = __import__("pandas").read_csv(path)
        if case == "missing column":
            frame = frame.drop(columns="final_eval_loss")
        elif case == "no tying column":
            frame = frame.drop(columns="tie_embeddings")
        else:
            frame.loc[0, "final_eval_loss"] = float("inf")
        frame.to_csv(path, index=False)
    try:
        status = main(argv)
    except SystemExit as e:  # a bad flag: argparse exits (with the one-line message)
        status = e.code
    assert status == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1, captured.err


def test_every_law_command_explains_itself(capsys):
    for kind in ("fit", "predict", "validate"):
        with pytest.raises(SystemExit) as done:
            main(["law", kind, "--help"])
        assert done.value.code == 0
        assert "law" in capsys.readouterr().out


def test_dry_run_shows_the_shipped_law_beside_each_run(tmp_path, law_file, capsys, monkeypatch):
    argv = [
        "sweep",
        _sweep_file(tmp_path, languages=("spam", "cycle")),
        "--dry-run",
        "--out",
        str(tmp_path / "out"),
    ]
    monkeypatch.setattr(law_module, "shipped_path", lambda: tmp_path / "absent.json")
    assert main(argv) == 0
    silent = capsys.readouterr().out
    assert "law" not in silent.splitlines()[0]
    monkeypatch.setattr(law_module, "shipped_path", lambda: law_file)
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("law loss")
    law = load(law_file)
    runs = [x for x in lines[1:] if x.startswith(("spam-", "cycle-"))]
    assert len(runs) == 32  # 2 languages x 2 V x 2 b2 x 2 LRs x 2 seeds
    for line in runs:
        assert ("extrapolation: language cycle" in line) == line.startswith("cycle-")
    spam = [x for x in runs if x.startswith("spam-V256-b2_0.95-")]
    from spamlang.train.config import TrainConfig

    expected = law.predict(
        TrainConfig(
            preset="tiny",
            seq_len=2,
            batch_size=32,
            tokens=32768,
            tie_embeddings=True,
            vocab_size=256,
            b2=0.95,
        )
    ).loss
    assert all(x.endswith(f"  {expected:.3g}") for x in spam) and len(spam) == 4
    assert "loss  law loss" not in lines[0]  # no run done: no measured column
    # A finished run shows its own final eval loss beside the law's (the rest: '-').
    import json

    from spamlang.sweep import load_sweep_file

    done = tmp_path / "out" / spam[0].split()[0]
    done.mkdir(parents=True)
    # A run directory of the sweep's (its config.json marks it as the sweep's own folder).
    points = dict(load_sweep_file(argv[1])[0].points())
    (done / "config.json").write_text(json.dumps(points[done.name].to_json()))
    (done / "result.json").write_text(json.dumps({"final_eval_loss": 4.321}))
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("    loss  law loss")
    (line,) = [x for x in lines if x.startswith(done.name + " ")]
    assert line.split()[1] == "done" and line.endswith(f"4.32  {expected:.3g}")
    assert all(x.split()[-2] == "-" for x in lines[1:] if x.startswith("spam-V1024-"))


def test_settings_results_csv_leaves_out_come_from_the_runs_configs(tmp_path):
    import json

    from spamlang.law import fill_from_configs

    frame = synthetic.frame(grid={**GRID, "b2": (0.95,)}).drop(columns=["weight_decay", "b2"])
    for k, run_id in enumerate(frame["run_id"][:2]):
        (tmp_path / run_id).mkdir()
        (tmp_path / run_id / "config.json").write_text(
            json.dumps({"weight_decay": 0.0, "b2": 0.9 + k / 100})
        )
    filled = fill_from_configs(frame, tmp_path)
    assert list(filled["weight_decay"][:2]) == [0.0, 0.0] and list(filled["b2"][:2]) == [0.9, 0.91]
    assert filled["weight_decay"][2:].isna().all()  # no config.json: the default, later
