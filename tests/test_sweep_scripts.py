"""Every script in sweeps/ loads, validates and lists its grid (dry run: nothing trains)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from spamlang.cli import main as cli_main

SWEEPS = sorted((Path(__file__).resolve().parents[1] / "sweeps").glob("*.py"))


@pytest.mark.parametrize("script", SWEEPS, ids=lambda p: p.stem)
def test_sweep_script_dry_run(script, tmp_path, capsys, monkeypatch, small_reference):
    monkeypatch.chdir(tmp_path)  # the real-text scripts tokenize into ./runs/corpora
    out = tmp_path / "out"
    assert cli_main(["sweep", str(script), "--out", str(out), "--dry-run"]) == 0
    summary = [line for line in capsys.readouterr().out.splitlines() if " runs in " in line][-1]
    # The dry run lists every point of the script's grid (LR bracketing adds runs later).
    assert summary.startswith(f"{len(_points(script.stem))} runs in "), summary
    assert not out.exists() or not any(out.iterdir())  # a dry run writes nothing


def test_no_sweep_file_shadows_a_module_a_run_imports():
    """`python sweeps/X.py` puts sweeps/ first on sys.path: a file there named like a module
    that pandas or matplotlib look for (sweeps/bottleneck.py once hid pandas' optional
    `bottleneck`, and every sweep failed at its results table) must not exist."""
    import subprocess

    folder = str(SWEEPS[0].parent)
    code = f"import sys; sys.path.insert(0, {folder!r}); import pandas, matplotlib.pyplot, scipy.optimize"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-500:]


def _points(name: str):
    from spamlang.sweep import load_sweep_file

    sweep, _, _ = load_sweep_file(Path(__file__).resolve().parents[1] / "sweeps" / f"{name}.py")
    return [c for _, c in sweep.points()]


def test_coverage_sweep_sets_updates_per_symbol_by_the_batch(tmp_path, capsys):
    points = _points("coverage")
    # L = 2 and 500 steps everywhere: only the batch sets the updates per symbol
    assert {(c.seq_len, c.steps) for c in points} == {(2, 500)}
    per_symbol = {c.vocab_size: set() for c in points}
    for c in points:
        per_symbol[c.vocab_size].add(c.updates_per_symbol)
    assert per_symbol[256] == per_symbol[1024] == per_symbol[4096] == {3.90625, 15.625, 62.5}
    assert per_symbol[16384] == {3.90625, 15.625}
    assert {c.lr for c in points} == {1e-2, 3e-2, 1e-1} and {c.seed for c in points} == {0, 1}
    assert {c.eval_sequences for c in points} == {2048}
    # the dry run lists each run's updates per symbol
    script = Path(__file__).resolve().parents[1] / "sweeps" / "coverage.py"
    assert cli_main(["sweep", str(script), "--dry-run", "--out", str(tmp_path / "o")]) == 0
    lines = capsys.readouterr().out.splitlines()
    column = lines[0].split().index("upd/symbol") - 1  # "run id" is two words
    assert any(
        ln.startswith("V16384-B512-tok512K-tied-lr1e-2-seed0 ") and ln.split()[column] == "15.6"
        for ln in lines
    )


def test_width_control_varies_only_the_width():
    points = _points("coverage_width")
    shapes = {c.model_config().d_model: c.model_config() for c in points}
    assert sorted(shapes) == [16, 32, 64]
    for d, m in shapes.items():  # the width family's rule: d_ff 4D, head_dim 8, init 1/sqrt(D)
        assert (m.d_ff, m.d_model // m.n_heads, m.n_layers) == (4 * d, 8, 2)
        assert m.init_std == pytest.approx(d**-0.5)
    assert {c.updates_per_symbol for c in points} == {3.90625, 15.625}


def test_paper_fig5_coverage_holds_updates_per_symbol():
    points = _points("paper_fig5_coverage")
    assert {c.updates_per_symbol for c in points} == {16.0}
    assert {(c.seq_len, c.steps) for c in points} == {(2, 2048)}
    assert sorted({c.vocab_size for c in points}) == [2**e for e in range(10, 18)]


def test_cpu_demo_runs_at_length_2_with_seeds_and_bracketing():
    from spamlang.sweep import load_sweep_file

    sweep, plots, samples = load_sweep_file(
        Path(__file__).resolve().parents[1] / "sweeps" / "cpu_demo.py"
    )
    points = [c for _, c in sweep.points()]
    assert {(c.seq_len, c.steps, c.batch_size) for c in points} == {(2, 500, 32)}
    assert {c.seed for c in points} == {0, 1} and sweep.bracket_lr > 0
    assert plots and samples == (
        {"vocab_size": 4096, "tie_embeddings": True, "b2": 0.95},
        {"vocab_size": 4096, "tie_embeddings": True, "b2": 0.999},
    )
    # the two b2 values of a cell are members of one vmapped group: 8 groups, as without b2
    from spamlang.sweep.spec import groups

    assert {c.b2 for c in points} == {0.95, 0.999} and len(groups(sweep)) == 8


def test_optimizer_sweeps_hold_what_their_docstrings_say():
    beta2 = _points("beta2_vocab")
    assert {(c.batch_size, c.updates_per_symbol, c.seq_len) for c in beta2} == {(32, 16.0, 2)}
    assert {c.b2 for c in beta2} == {0.9, 0.95, 0.99, 0.999, 0.9999}
    assert sorted({c.return_time["symbol_return_steps"] for c in beta2}) == [8, 32, 128]
    phase = _points("return_time")
    assert {(c.vocab_size, c.updates_per_symbol, c.seq_len) for c in phase} == {(4096, 16.0, 2)}
    assert sorted({c.return_time["symbol_return_steps"] for c in phase}) == [2, 8, 32, 128]
    assert sorted({round(c.return_time["adam_memory_steps"]) for c in phase}) == [
        10,
        20,
        100,
        1000,
        10000,
    ]
    family = _points("optimizers")
    assert {c.optimizer for c in family} == {"adamw", "lazy_adamw", "sgd", "adafactor"}
    assert {(c.vocab_size, c.batch_size, c.steps) for c in family} == {
        (4096, 32, 500),
        (4096, 32, 2048),
    }
    paper = _points("paper_fig5_optimizer")
    assert {(c.preset, c.seq_len, c.batch_size, c.steps) for c in paper} == {
        ("smollm2-106m", 2, 64, 2500)
    }
    assert {(c.optimizer, c.b2) for c in paper} == {
        ("adamw", 0.95),
        ("adamw", 0.999),
        ("adamw", 0.9999),
        ("lazy_adamw", 0.95),
        ("sgd", 0.95),
        ("adafactor", 0.95),
    }
