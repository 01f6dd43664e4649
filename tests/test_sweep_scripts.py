"""Every script in sweeps/ loads, validates and lists its grid (dry run: nothing trains)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spamlang.cli import main as cli_main

SWEEPS = sorted((Path(__file__).resolve().parents[1] / "sweeps").glob("*.py"))

# Points per script, from the grids their docstrings describe.
EXPECTED_RUNS = {"cpu_demo": 24, "paper_fig5": 80, "heads": 18, "languages": 48, "bottleneck": 24,
                 "coverage": 60, "paper_fig5_coverage": 80}


def test_every_sweep_script_is_covered():
    assert {p.stem for p in SWEEPS} == set(EXPECTED_RUNS)


@pytest.mark.parametrize("script", SWEEPS, ids=lambda p: p.stem)
def test_sweep_script_dry_run(script, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli_main(["sweep", str(script), "--out", str(out), "--dry-run"]) == 0
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    assert summary.startswith(f"{EXPECTED_RUNS[script.stem]} runs in "), summary
    assert not out.exists() or not any(out.iterdir())  # a dry run writes nothing


def _points(name: str):
    from spamlang.sweep.command import load_sweep_file

    sweep, _ = load_sweep_file(Path(__file__).resolve().parents[1] / "sweeps" / f"{name}.py")
    return [c for _, c in sweep.points()]


def test_coverage_sweep_holds_the_budget_and_cuts_it_by_coverage(tmp_path, capsys):
    points = _points("coverage")
    # one budget and one step size for every run: only the cut into sequences differs
    assert {(c.tokens, c.seq_len * c.batch_size) for c in points} == {(512_000, 1_024)}
    per_symbol = {(c.vocab_size, c.model_config().d_model): set() for c in points}
    for c in points:
        per_symbol[(c.vocab_size, c.model_config().d_model)].add(
            c.steps * c.batch_size / c.vocab_size)
    assert per_symbol[(256, 16)] == per_symbol[(1024, 16)] == per_symbol[(4096, 16)] \
        == {3.90625, 15.625, 62.5}
    assert per_symbol[(16384, 16)] == {3.90625, 15.625}
    assert per_symbol[(4096, 32)] == per_symbol[(4096, 64)] == {3.90625, 15.625}  # width control
    assert {c.lr for c in points} == {1e-2, 3e-2} and {c.tie_embeddings for c in points} == \
        {True, False}
    # the dry run lists each run's sequences per symbol
    script = Path(__file__).resolve().parents[1] / "sweeps" / "coverage.py"
    assert cli_main(["sweep", str(script), "--dry-run", "--out", str(tmp_path / "o")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[-1] == "seq/symbol"
    assert any(l.startswith("D16-V16384-L2-B512-tied-lr1e-2 ") and l.endswith(" 15.6")
               for l in lines)


def test_paper_fig5_coverage_holds_sequences_per_symbol():
    points = _points("paper_fig5_coverage")
    assert {c.steps * c.batch_size / c.vocab_size for c in points} == {16.0}
    assert {c.tokens for c in points} == {2**25}
    assert sorted({c.vocab_size for c in points}) == [2**e for e in range(10, 18)]
