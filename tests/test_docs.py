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


def test_readme_tells_a_user_to_copy_the_bundled_spec_before_editing_it():
    """README: at most 200 lines, the two commands first, and the spec edited as a copy."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    first = re.search(r"```bash\n(.*?)```", text, flags=re.DOTALL).group(1).splitlines()
    assert text.index("```bash") < text.index("\n## ")  # before any section
    assert len(first) == 2 and first[0].endswith("synthgeo run --overwrite")
    assert first[1].endswith("python -m pytest")
    copy = "cp models/sacramento_2bed.toml my_release.toml"
    assert copy in text
    # the copy comes before any edit the tour asks for, and the packaged file is never edited
    assert text.index(copy) < text.index("Uncomment")
    assert "src/synthgeo/data/" not in text
    assert not re.search(r"(?i)(uncomment|edit)[^.(]*models/sacramento_2bed\.toml", text)
    # the repository's copy is the packaged spec, byte for byte (what a user copies)
    assert (ROOT / "models" / "sacramento_2bed.toml").read_bytes() == (
        SRC / "data" / "sacramento_2bed.toml").read_bytes()
