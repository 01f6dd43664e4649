"""docs/design.md's Layout section is the package's map: its code block has one line per module
(`spamlang/x.py`, or `spamlang/x/` for a package, its `__init__.py`), each starting with the
module's path, every module of spamlang/ listed and nothing that does not exist; any other path
the section names (`benchmarks/...`, `tests/...`) exists too.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "docs" / "design.md"
# A repository path as the section writes one: spamlang/..., benchmarks/..., and the like.
# A `*` or a path component X (sweeps/X.py) stands for any name: at least one must exist.
_PATH = re.compile(r"(?<![\w./])((?:spamlang|benchmarks|sweeps|figures|tests|docs)/[\w./*-]*)")


def layout_section() -> list[str]:
    lines = DESIGN.read_text().splitlines()
    start = lines.index("## Layout") + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("## "))
    return lines[start:end]


def code_block(section: list[str]) -> list[str]:
    fences = [i for i, line in enumerate(section) if line.startswith("```")]
    assert len(fences) == 2, "the Layout section holds one code block"
    return section[fences[0] + 1 : fences[1]]


def modules() -> list[str]:
    """Every module of the package as the Layout names it: packages as `spamlang/x/`."""
    names = []
    for path in sorted((ROOT / "spamlang").rglob("*.py")):
        rel = path.relative_to(ROOT)
        names.append(f"{rel.parent}/" if path.name == "__init__.py" else str(rel))
    return sorted(names)


def test_the_layout_lists_every_module_once_one_a_line():
    block = code_block(layout_section())
    listed = [line.split()[0] for line in block if line.startswith("spamlang/")]
    assert len(listed) == len(set(listed)), "a module listed twice"
    assert sorted(listed) == modules(), (
        f"missing: {sorted(set(modules()) - set(listed))}; "
        f"not modules: {sorted(set(listed) - set(modules()))}"
    )
    for line in block:
        # one module a line: no other spamlang/ path after the line's own
        assert len(re.findall(r"spamlang/", line)) <= 1, line
        assert not line.startswith("spamlang/") or len(line.split()) > 1, f"{line}: says nothing"


def test_every_path_the_layout_names_exists():
    named = {m.group(1).rstrip(".") for line in layout_section() for m in _PATH.finditer(line)}
    assert named, "the section names no path"
    patterns = [re.sub(r"(?<![^/])X(?=\.|/|$)", "*", p) for p in named]
    assert sorted(p for p in patterns if not any(ROOT.glob(p))) == []
