"""Every measured number the README quotes (a decimal or a percentage in its headline, remedy and
real-text sections) also appears in docs/findings.md, which is where it lives and is argued."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# A decimal (5.91, 2.2e-7, 1,024.5) or a percentage, not part of a longer number or word.
NUMBER = re.compile(r"(?<![\w.,])(\d+(?:,\d{3})*\.\d+(?:e-?\d+)?|\d+%)(?!\w|\.\d)")


def quoted(text: str) -> set[str]:
    return set(NUMBER.findall(text))


def test_the_number_pattern_takes_whole_numbers_only():
    assert quoted("0.158 and 0.15, 94% of 2.2e-7 (v1.2x)") == {"0.158", "0.15", "94%", "2.2e-7"}


def test_the_readmes_numbers_are_in_the_findings():
    readme = (ROOT / "README.md").read_text()
    answer = readme[readme.index("## The headline finding") : readme.index("## Your first sweep")]
    findings = quoted((ROOT / "docs" / "findings.md").read_text())
    assert quoted(answer) - findings == set()
