"""Every script in sweeps/ loads, validates and lists its grid (dry run: nothing trains)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spamlang.cli import main as cli_main

SWEEPS = sorted((Path(__file__).resolve().parents[1] / "sweeps").glob("*.py"))

# Points per script, from the grids their docstrings describe.
EXPECTED_RUNS = {"cpu_demo": 24, "paper_fig5": 80, "heads": 18, "languages": 48, "bottleneck": 24}


def test_every_sweep_script_is_covered():
    assert {p.stem for p in SWEEPS} == set(EXPECTED_RUNS)


@pytest.mark.parametrize("script", SWEEPS, ids=lambda p: p.stem)
def test_sweep_script_dry_run(script, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli_main(["sweep", str(script), "--out", str(out), "--dry-run"]) == 0
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    assert summary.startswith(f"{EXPECTED_RUNS[script.stem]} runs in "), summary
    assert not out.exists() or not any(out.iterdir())  # a dry run writes nothing
