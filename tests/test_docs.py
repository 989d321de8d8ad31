"""The method pages in docs/: every page a docstring cites exists, and no docstring cites a
specification file that is not in the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
SRC = ROOT / "src" / "synthgeo"


def _sources():
    return sorted(SRC.rglob("*.py"))


def test_every_cited_docs_page_exists():
    cited = {m for p in _sources() for m in re.findall(r"docs/[\w.-]+\.md", p.read_text())}
    assert cited, "no docstring cites docs/"
    missing = sorted(c for c in cited if not (ROOT / c).is_file())
    assert missing == []
    index = (ROOT / "docs" / "README.md").read_text()
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert page.name == "README.md" or f"({page.name})" in index, page.name


def test_no_citation_of_specification_files_outside_the_repository():
    spec_file = re.compile(r"(?<![\w/])(?:[Ss]pec: )?(model|anonymity|release|risk-utility|"
                           r"performance-notes|house-style)\.md")
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in _sources()
            for i, line in enumerate(p.read_text().splitlines(), 1) if spec_file.search(line)]
    assert hits == []
