"""The README is a front page and docs/performance.md is made from the benchmark records.

Issue 22: the README stays at most 200 lines with the two set-up commands first (exactly the
commands `.ci/run` and the first-time user run); its spec excerpt is the bundled spec's; every
relative link in the README, CONTRIBUTING.md, CHANGELOG.md and docs/ resolves; the committed
docs/performance.md is byte for byte what ``benchmarks/make_performance.py`` makes from the
committed records in ``benchmarks/results/`` (no benchmark is rerun here).
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from synthgeo.config import bundled_spec_path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BENCH = ROOT / "benchmarks"

#: the two set-up commands, first in the README (install + the bundled job; the test suite)
SETUP = [
    "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/synthgeo run --overwrite",
    "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/python -m pytest",
]


# --- the README ------------------------------------------------------------------------------


def test_readme_is_a_front_page_with_the_two_commands_first():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    first = re.search(r"```(\w*)\n(.*?)```", text, flags=re.DOTALL)
    assert first is not None and first.group(1) == "bash"
    assert first.group(2).splitlines() == SETUP
    assert text.index(first.group(0)) < text.index("\n## ")  # before any section
    # .ci/run runs the second command as the README gives it
    assert SETUP[1] in (ROOT / ".ci" / "run").read_text()


def test_readme_spec_excerpt_is_the_bundled_spec():
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```toml\n(.*?)```", text, flags=re.DOTALL)
    assert len(blocks) == 1, "README should hold one ```toml block (the spec excerpt)"
    excerpt = tomllib.loads(blocks[0])
    bundled = tomllib.loads(bundled_spec_path().read_text(encoding="utf-8"))
    assert excerpt and all(excerpt[s] for s in excerpt)
    for section, keys in excerpt.items():
        for key, value in keys.items():
            assert bundled[section][key] == value, f"[{section}] {key}"
    # each line as it stands, comments included, is a line of the bundled file
    lines = set(bundled_spec_path().read_text(encoding="utf-8").splitlines())
    assert [ln for ln in blocks[0].splitlines() if ln and ln not in lines] == []


def test_readme_screenshot_exists():
    shots = re.findall(r"!\[[^\]]*\]\((docs/screenshots/[^)]+\.png)\)",
                       README.read_text(encoding="utf-8"))
    assert shots and all((ROOT / s).is_file() for s in shots)


def _links(page: Path):
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        yield target


@pytest.mark.parametrize("page", [README, ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md",
                                  *sorted((ROOT / "docs").glob("*.md"))],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(page):
    broken = []
    for target in _links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md":
            heads = re.findall(r"^#+ (.*)$", dest.read_text(encoding="utf-8"), flags=re.M)
            slugs = {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in heads}
            if anchor not in slugs:
                broken.append(target)
    assert broken == []


# --- docs/performance.md -----------------------------------------------------------------------


def test_performance_page_is_what_the_script_makes_from_the_records(benchmark_module):
    make = benchmark_module("make_performance")
    records = make.load_records()
    assert records, "no benchmark record committed in benchmarks/results/"
    page = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    assert page == make.render(records), \
        "docs/performance.md is out of date: run python benchmarks/make_performance.py"
    for name, _ in records:  # the page names every record it used
        assert f"(../benchmarks/results/{name})" in page


def test_every_record_says_command_date_machine_load_commit_and_figures(benchmark_module):
    record = benchmark_module("_record")
    for path in sorted((BENCH / "results").glob("*.json")):
        rec = json.loads(path.read_text(encoding="utf-8"))
        assert set(record.REQUIRED) <= set(rec), path.name
        assert rec["command"].split()[0] != "" and "benchmarks/" in rec["command"], path.name
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", rec["date"]), path.name
        assert rec["machine"]["nproc"] >= 1 and rec["machine"]["memory_gib"] > 0, path.name
        assert len(rec["load"]["start"]) == 3 and len(rec["load"]["end"]) == 3, path.name
        assert re.fullmatch(r"[0-9a-f]{40}", rec["git"]["commit"]), path.name
        assert rec["figures"] and all({"name", "value", "unit"} <= set(f)
                                      for f in rec["figures"]), path.name


def test_record_round_trip_and_page_names_its_record(tmp_path, monkeypatch, benchmark_module):
    monkeypatch.setenv("SYNTHGEO_BENCH_RESULTS", str(tmp_path))
    record, make = benchmark_module("_record"), benchmark_module("make_performance")
    rec = record.Record.start("bench_job", case="grid",
                              argv=[str(BENCH / "bench_job.py"), "--repeat", "3"])
    with pytest.raises(ValueError, match="no figure to record"):
        rec.finish()
    rec.figure("wall time, median of 3 runs", 16.5, "s", goal_max=15)
    path = rec.finish(detail={"runs": [16.0, 16.5, 17.0]})
    assert path.parent == tmp_path and path.name.startswith("bench_job-grid-")
    stored = json.loads(path.read_text(encoding="utf-8"))
    assert stored["command"].endswith("python benchmarks/bench_job.py --repeat 3")
    page = make.render(make.load_records(tmp_path))
    line = next(ln for ln in page.splitlines() if ln.startswith("| wall time, median"))
    assert line.startswith("| wall time, median of 3 runs | 16.5 s | ≤ 15 s: **not met**")
    assert line.endswith(f" | {path.name} |")
    assert f"[{path.name}](../benchmarks/results/{path.name})" in page
    (tmp_path / "bad.json").write_text(json.dumps({"benchmark": "x"}))
    with pytest.raises(SystemExit, match=r"bad\.json: record lacks \['case', 'command'"):
        make.load_records(tmp_path)


def _hand_record(folder: Path, name: str, load: float, value: float) -> None:
    rec = {"benchmark": "bench_compare", "case": "cli", "command": "python benchmarks/x.py",
           "date": "2026-12-02T10:00:00Z", "machine": {"nproc": 2, "memory_gib": 8.0},
           "load": {"start": [load, 1.0, 1.0], "end": [load, 1.0, 1.0]},
           "git": {"commit": "a" * 40, "dirty": False},
           "figures": [{"name": "wall", "value": value, "unit": "s", "goal": {"max": 10,
                                                                           "unit": "s"}},
                       {"name": "faults", "value": 53018, "unit": ""}]}
    (folder / name).write_text(json.dumps(rec))


def test_goal_column_says_met_and_flags_a_busy_machine(tmp_path, benchmark_module):
    make = benchmark_module("make_performance")
    _hand_record(tmp_path, "quiet.json", load=1.5, value=7.8)
    page = make.render(make.load_records(tmp_path))
    assert "| wall | 7.8 s | ≤ 10 s: met | quiet.json |" in page
    assert "| faults | 53,018 |  | quiet.json |" in page
    assert "load average 1.50 → 1.50" in page and "commit `aaaaaaa`" in page
    (tmp_path / "quiet.json").unlink()
    _hand_record(tmp_path, "busy.json", load=7.0, value=74.9)
    page = make.render(make.load_records(tmp_path))
    assert ("| wall | 74.9 s | ≤ 10 s: **not met** (measured at a load above the CPU count) | "
            "busy.json |") in page
