"""Every command's options: one shared declaration, and help that states defaults and units."""

from __future__ import annotations

import argparse

import pytest

from synthgeo.cli._options import MASKING, READING, SPEC_ANONYMITY, SPEC_DATA
from synthgeo.cli.main import _parser
from synthgeo.cli.registry import COMMANDS


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    p = _parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {s: a for a in parser._actions for s in a.option_strings
            if not isinstance(a, argparse._HelpAction)}


@pytest.mark.parametrize("command", [c.replace("_", "-") for c in COMMANDS])
def test_every_option_states_its_default_and_unit(command):
    parser = _subparsers()[command]
    for flag, action in _options(parser).items():
        text = " ".join((action.help or "").split())
        assert "default" in text.lower(), f"{command} {flag}: no default in {text!r}"
        if action.dest.endswith("_m"):
            assert "metre" in text, f"{command} {flag}: no unit (metres) in {text!r}"


def test_location_commands_share_one_declaration():
    subs = _subparsers()
    for command in ("kanon", "outliers", "mask", "choose-k"):
        opts = _options(subs[command])
        for key, (flag, kwargs) in READING.items():
            assert opts[flag].dest == key and opts[flag].help == kwargs["help"], (command, flag)
    for command in ("mask", "choose-k"):
        opts = _options(subs[command])
        assert opts["--verify"].help == MASKING["verify"][1]["help"]
    assert "--attacker-only" in _options(subs["choose-k"])
    for command, tables in (("run", (SPEC_DATA, SPEC_ANONYMITY)), ("validate", (SPEC_DATA,)),
                            ("compare", (SPEC_DATA, SPEC_ANONYMITY))):
        opts = _options(subs[command])
        for table in tables:
            for key, (flag, kwargs) in table.items():
                assert opts[flag].dest == key and opts[flag].default is None, (command, flag)


@pytest.mark.parametrize("command", ["kanon", "outliers"])
def test_points_commands_read_shipped_data(command, capsys):
    """`synthgeo:NAME` works for kanon/outliers as for mask/choose-k (it was 'does not exist')."""
    from synthgeo.cli.main import main

    args = ["synthgeo:chorley_ribble_cancer.csv", "--x", "x_km", "--y", "y_km", "--crs",
            "EPSG:27700", "--coord-unit-m", "1000", "--id-col", "id", "--k", "5"]
    # 296 of the 1,036 cases repeat another (100 m grid, one cancer type): distinct people
    extra = (["--radius-m", "100", "--accept-repeated-records"] if command == "kanon"
             else ["--r-max-m", "2000"])
    assert main([command, *args, *extra]) == 0
    out = capsys.readouterr().out
    assert "chorley_ribble_cancer.csv: 1,036 records" in out
    if command == "kanon":  # worst offenders: x/y as in the file (km), not metres
        import re

        rows = out.split("worst offenders")[1].splitlines()[2:4]
        xs = [float(re.split(r"\s+", r.strip())[5]) for r in rows]
        assert all(300 < x < 400 for x in xs), rows


# --- the last lines of a run, and --strict (issue 26 items 2 and 5) ---------------------------

def _unreachable_target_text(on_risk_failure: str = "stop") -> str:
    """The bundled spec, small (100 draws, L = 5), with a target no release meets (a_i ≤ 0)."""
    from synthgeo.config import bundled_spec_path

    text = bundled_spec_path().read_text(encoding="utf-8")
    text = text.replace('on_risk_failure = "stop"', f'on_risk_failure = "{on_risk_failure}"')
    text = text.replace("draws = 1000", "draws = 100").replace("n_implicates = 100",
                                                               "n_implicates = 5")
    return text + ('\n[risk.targets]\nmeasure = "rel:0.1"\nattack = "share"\n'
                   "max_attributable_record = 0.0\n")


def test_strict_exits_3_after_writing_a_failed_release_and_the_end_says_why(tmp_path, capsys):
    """A FAIL under "warn" is written; --strict makes it visible to a scheduler (exit 3)."""
    import re

    from synthgeo.cli.main import main

    text = _unreachable_target_text("warn")
    spec = tmp_path / "spec.toml"
    spec.write_text(text, encoding="utf-8")
    code = main(["run", str(spec), "--out", str(tmp_path / "out"), "--strict",
                 "--progress", "never"])
    captured = capsys.readouterr()
    assert "disclosure-risk targets failed" in captured.err
    out = captured.out.strip().splitlines()
    assert code == 3 and (tmp_path / "out" / "release" / "implicates.parquet").exists()
    assert out[-1].startswith("--strict: a verdict is FAIL; exit code 3")
    assert re.match(r"verdicts: location \w[\w ]*, risk FAIL \(a FAIL written under", out[-5])
    assert out[-4] == "records: 140 released"
    assert out[-3].startswith("release (released model: restricted (differential smoothing, "
                              "γ = ∞)): ")
    assert out[-2].startswith("report (confidential): ")
    # the data users' README and the report's heading say it too, in words
    readme = (tmp_path / "out" / "release" / "README.md").read_text(encoding="utf-8")
    top = readme.split("##")[0]
    assert re.search(r"did not pass the releasing agency's review checks?\s+\(([a-z]+ and )?risk\)",
                     top), top
    report = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert re.search(r"FAIL \(([a-z]+, )?risk\)</title>", report)
    assert "id='verdict-failed'" in report


def test_a_stopped_run_says_the_folder_holds_an_earlier_release(tmp_path, capsys):
    """New-user finding: a run stopped by its targets writes nothing; the earlier release in
    --out is left as it was, and the run says so instead of letting it pass for this spec's."""
    from synthgeo.cli.main import main

    spec = tmp_path / "spec.toml"
    spec.write_text(_unreachable_target_text("stop"), encoding="utf-8")
    warn = tmp_path / "warn.toml"  # the earlier run: the same spec, written under "warn"
    warn.write_text(_unreachable_target_text("warn"), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["run", str(warn), "--out", str(out), "--progress", "never"]) == 0
    before = (out / "release.json").read_bytes()
    capsys.readouterr()
    code = main(["run", str(spec), "--out", str(out), "--overwrite", "--progress", "never"])
    err = capsys.readouterr().err
    assert code == 1 and "nothing was written" in err
    assert f"{out} still holds an earlier run's release, left as it was" in err
    assert (out / "release.json").read_bytes() == before
    # no earlier release: no note
    code = main(["run", str(spec), "--out", str(tmp_path / "new"), "--progress", "never"])
    assert code == 1 and "earlier run's release" not in capsys.readouterr().err


def test_closing_count_is_the_records_released_under_treatment_apply(monkeypatch, tmp_path):
    """Break-it: 140 read, 80 withheld printed "140 released, 80 withheld" (60 were released)."""
    from types import SimpleNamespace

    import synthgeo.pipeline.released as released
    from synthgeo.cli.run import closing_lines

    monkeypatch.setattr(released, "released_label_of", lambda result: "restricted")
    totals = {"n_records": 140, "n_released": 60, "n_withheld": 80}
    result = SimpleNamespace(
        data=SimpleNamespace(n_records=140, missing={"n_dropped": 10}),
        locations=SimpleNamespace(treatment=SimpleNamespace(totals=totals)))
    rel = SimpleNamespace(verdicts={"location": "PASS", "risk": "PASS"}, result=result)
    line = next(x for x in closing_lines(rel, tmp_path) if x.startswith("records:"))
    assert line == ('records: 60 released, 10 dropped for a missing value ([data] missing = '
                    '"drop"; 6.7% of 150), 80 withheld by the outlier policy ([anonymity] '
                    'treatment = "apply")')
