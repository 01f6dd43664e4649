"""The README and docs/ link only to what exists: every relative link and image in README.md and
docs/**/*.md names a file of this repository, and every #anchor a heading of the file it points
into (GitHub's heading slugs). The README stays a page to start from: at most 220 lines.

Links inside fenced code blocks and inline code are text, not links, and are not checked; links
with a scheme (https:, mailto:) are not checked either (no network in tests).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 220

# [text](target) and ![alt](target); the target may be <in angle brackets> and may carry a
# "title". Nested brackets one level deep in the text (a link around `code`) are allowed.
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]*)(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _prose_lines(text: str, blank_code: bool = True):
    """(line number, line) for every line outside fenced code blocks, inline code blanked
    unless `blank_code` is False."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        match = _FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)[0] * len(match.group(1))
            continue
        if fence is not None:
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
            continue
        yield (
            number,
            (re.sub(r"(`+)(.+?)\1", lambda m: " " * len(m.group(0)), line) if blank_code else line),
        )


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text: markup dropped, lower case, every character that is
    not a letter, digit, space, hyphen or underscore removed, spaces turned into hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link shows its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").replace("*", "")
    text = text.strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading anchor of a Markdown text; a repeated slug gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    out = set()
    for _, line in _prose_lines(text, blank_code=False):
        match = _HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def broken_links(text: str, path: Path, root: Path = ROOT) -> list[str]:
    """One message per link or image of `text` (the Markdown file at `path`) that does not
    resolve: a missing file, a path outside `root`, or an #anchor that no heading of the target
    file has. Empty when every link is good."""
    problems = []
    for number, line in _prose_lines(text):
        for match in _LINK.finditer(line):
            target = match.group(1).strip("<>")
            where = f"{path.name}:{number}: {target!r}"
            if not target or _SCHEME.match(target) or target.startswith("//"):
                continue
            file_part, _, anchor = target.partition("#")
            if not file_part:  # an anchor in this very text
                if anchor not in anchors(text):
                    problems.append(f"{where}: no heading #{anchor} in {path.name}")
                continue
            if file_part.startswith("/"):
                problems.append(f"{where}: an absolute path; link relative to the file")
                continue
            dest = (path.parent / file_part).resolve()
            if not dest.is_relative_to(root.resolve()):
                problems.append(f"{where}: points outside the repository")
                continue
            if not dest.exists():
                problems.append(f"{where}: no such file {dest.relative_to(root.resolve())}")
                continue
            if anchor and dest.suffix == ".md":
                if anchor not in anchors(dest.read_text(encoding="utf-8")):
                    problems.append(f"{where}: no heading #{anchor} in {dest.name}")
    return problems


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_and_image_resolves(path):
    assert broken_links(path.read_text(encoding="utf-8"), path) == []


def test_readme_is_a_page_to_start_from():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_the_docs_are_linked_from_the_readme():
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    linked = {
        (readme.parent / m.group(1).strip("<>").partition("#")[0]).resolve()
        for _, line in _prose_lines(text)
        for m in _LINK.finditer(line)
    }
    missing = [str(p.relative_to(ROOT)) for p in markdown_files()[1:] if p.resolve() not in linked]
    assert missing == []


def test_a_broken_link_is_caught(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "a.png").write_bytes(b"")
    (tmp_path / "docs" / "other.md").write_text("# Other page\n\n## Its `second` part, too\n")
    page = tmp_path / "docs" / "page.md"
    good = (
        "# Page\n\n## A section\n\n![a](../figures/a.png) [o](other.md) "
        "[o2](other.md#its-second-part-too) [here](#a-section) [web](https://example.com)\n"
        "```bash\n# not a heading [x](missing.md)\n```\n`[y](missing.md)` in code\n"
    )
    assert broken_links(good, page, tmp_path) == []
    for bad, why in [
        ("[x](missing.md)", "no such file"),
        ("![x](../figures/b.png)", "no such file"),
        ("[x](other.md#no-such-heading)", "no heading"),
        ("[x](#not-here)", "no heading"),
        ("[x](../../shared/notes.md)", "outside the repository"),
        ("[x](/etc/passwd)", "absolute path"),
    ]:
        problems = broken_links(good + bad + "\n", page, tmp_path)
        assert len(problems) == 1 and why in problems[0], (bad, problems)


@pytest.mark.parametrize(
    "heading, expected",
    [
        (
            "Pretrained language models (Hugging Face checkpoints)",
            "pretrained-language-models-hugging-face-checkpoints",
        ),
        ("PyTorch `DataLoader`", "pytorch-dataloader"),
        ("Languages, and the generators as a dataset", "languages-and-the-generators-as-a-dataset"),
        ("Dry run, run, resume, grow, plot", "dry-run-run-resume-grow-plot"),
        ("Experiment trackers (TensorBoard, W&B)", "experiment-trackers-tensorboard-wb"),
        ("a_b c--d", "a_b-c--d"),
    ],
)
def test_slugs_follow_github(heading, expected):
    assert slug(heading) == expected


def test_a_repeated_heading_gets_a_number():
    assert anchors("# Notes\n\n## Notes\n\n## Notes\n") == {"notes", "notes-1", "notes-2"}
