"""A module's docstring says what the module is for, in at most six lines: the why sits at the
line it explains, and research history lives in docs/findings.md, which sweeps cite by section."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 6


def docstring_lines(source: str) -> int:
    """Lines of a module's docstring as written (0 without one)."""
    doc = ast.get_docstring(ast.parse(source), clean=False)
    return len(doc.splitlines()) if doc else 0


def test_the_count_is_of_the_docstring_as_written():
    assert docstring_lines("x = 1\n") == 0
    assert docstring_lines('"""One line."""\n') == 1
    assert docstring_lines('"""One.\n\nThree\n    four.\n"""\nx = 1\n') == 4


def test_no_module_docstring_is_over_six_lines():
    over = {
        str(path.relative_to(ROOT)): n
        for path in sorted((ROOT / "spamlang").rglob("*.py"))
        if (n := docstring_lines(path.read_text())) > MAX_LINES
    }
    assert over == {}, f"module docstrings over {MAX_LINES} lines (path: lines): {over}"


def test_sweep_scripts_cite_findings_sections_that_exist():
    findings = (ROOT / "docs" / "findings.md").read_text().splitlines()
    headings = {line.lstrip("#").strip() for line in findings if line.startswith("#")}
    cited = {}
    for path in sorted((ROOT / "sweeps").glob("*.py")):
        text = " ".join(path.read_text().split())
        for section in re.findall(r'docs/findings\.md, "([^"]+)"', text):
            cited.setdefault(section, []).append(path.name)
    assert cited, "no sweep cites a findings section"
    # A citation is a heading or its first words ("A remedy" for "A remedy: memory, ...").
    stale = {s: f for s, f in cited.items() if not any(h.startswith(s) for h in headings)}
    assert stale == {}, f"cited sections that docs/findings.md has no heading for: {stale}"
