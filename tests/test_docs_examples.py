"""Numbers and references quoted in prose, checked against their one source: the committed
results and the README's headings (a stale quote is a failing test, not a reader's doubt)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_sweeps_guide_quotes_the_cpu_demos_own_summary_line():
    from spamlang.results import parse_cell
    from spamlang.sweep.best_lr import cell_lines

    with open(ROOT / "results" / "cpu_demo" / "results.csv", newline="") as f:
        rows = [{k: parse_cell(v) for k, v in r.items()} for r in csv.DictReader(f)]
    guide = _flat((ROOT / "docs" / "guide" / "sweeps.md").read_text())
    (quoted,) = re.findall(r"`(vocab_size=4096, tie_embeddings=True, b2=0\.95: [^`]*)`", guide)
    assert quoted in cell_lines(rows)
    mean = re.search(r"final_eval_loss (\d\.\d+)", quoted).group(1)
    readme = _flat((ROOT / "README.md").read_text())
    assert f"({float(mean):.2f} tied" in readme  # the README's rounded figure of the same cell


def test_sweep_docstrings_cite_readme_headings_that_exist():
    headings = {
        line.lstrip("#").strip()
        for line in (ROOT / "README.md").read_text().splitlines()
        if line.startswith("#")
    }
    for path in sorted((ROOT / "sweeps").glob("*.py")):
        text = _flat(path.read_text())
        for cited in re.findall(r"README's \"([^\"]+)\"", text):
            assert cited in headings, (path.name, cited)


def test_the_cpu_demo_says_how_it_evaluates():
    text = _flat((ROOT / "sweeps" / "cpu_demo.py").read_text())
    assert "Eval: exact" in text and "fixed sequences" not in text


def test_the_readme_and_pyproject_say_the_same_of_torch():
    """The hf extra pins a torch version, not a build: the README says which build a pin gets
    from PyPI and where the CPU build comes from, and pins the same version (it once said 'pinned
    to its CPU build' over a plain pin)."""
    pins = set(re.findall(r'"(torch==[^"]+)"', (ROOT / "pyproject.toml").read_text()))
    assert len(pins) == 1, pins  # one torch version across the extras
    (pin,) = pins
    readme = _flat((ROOT / "README.md").read_text())
    assert f"torch {pin.split('==')[1]}" in readme and "CUDA build" in readme
    assert "https://download.pytorch.org/whl/cpu" in readme
    assert "pinned to its CPU build" not in readme
