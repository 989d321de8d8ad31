"""The command line refuses bad input with one line naming the column/parameter (release.md).

Fast: every ``run`` here must fail before any model is fitted, and the output folder must not
appear. The CLI runs in-process through :func:`synthgeo.cli.main.main`; one subprocess call checks the
real exit code and that no traceback reaches the user.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from synthgeo.cli.main import main
from synthgeo.config import bundled_spec_path

SACRAMENTO = bundled_spec_path().parent / "sacramento_home_sales.csv"

SPEC = """\
[data]
path = "data/points.csv"
x = "lon"
y = "lat"
crs = "EPSG:4326"
id = "id"
response = "log_price"
covariates = ["sqft_living"]
{data_extra}
[sampling]
chains = 2
draws = 10
tune = 10
{extra}
[synthesis]
n_implicates = 10
"""


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    """Run ``synthgeo ARGV`` in-process; return (exit code, stdout, stderr)."""
    capsys.readouterr()  # drop anything printed before
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def assert_one_error(rc: int, err: str, match: str) -> None:
    """Non-zero exit; stderr is one ``synthgeo: error:`` line that matches `match`."""
    assert rc != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("synthgeo: error: "), err
    assert "Traceback" not in err
    assert re.search(match, lines[0]), f"{match!r} not in {lines[0]!r}"


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    """Return the first 20 Sacramento sales (ids 1..20, no duplicates)."""
    return pd.read_csv(SACRAMENTO, nrows=20)


@pytest.fixture()
def case(tmp_path, rows):
    """Write ``data/points.csv`` (from `frame` or the 20 rows) and ``spec.toml``; return paths."""

    def make(frame: pd.DataFrame | None = None, *, extra: str = "", data_extra: str = "",
             spec_text: str | None = None) -> dict[str, Path]:
        data_dir = tmp_path / "data"
        data_dir.mkdir(exist_ok=True)
        (rows if frame is None else frame).to_csv(data_dir / "points.csv", index=False)
        spec = tmp_path / "spec.toml"
        text = spec_text if spec_text is not None else SPEC.format(extra=extra,
                                                                   data_extra=data_extra)
        spec.write_text(text, encoding="utf-8")
        return {"spec": spec, "data": data_dir / "points.csv", "out": tmp_path / "out",
                "root": tmp_path}

    return make


def _with(rows: pd.DataFrame, column: str, row: int, value) -> pd.DataFrame:
    frame = rows.copy().astype({column: object})
    frame.loc[row, column] = value
    return frame


# --- the good path (no fitting) ---------------------------------------------------------------


def test_validate_bundled_spec(capsys):
    rc, out, err = cli(capsys, "validate")
    assert rc == 0, err
    assert "140 records" in out
    assert "136 sites" in out
    assert "UTM zone 10N" in out
    assert "'log_price ~ sqft_living'" in out
    # named as README.md names it (the repository's copy), not by the installed package's path
    assert out.startswith("OK: the bundled spec (models/sacramento_2bed.toml in the repository")
    assert "synthgeo/data" not in out and "site-packages" not in out
    # the known exact duplicate (ids 341/342) is a one-line warning, not an error
    assert err.strip().splitlines() == [
        line for line in err.strip().splitlines() if line.startswith("synthgeo: warning: ")]
    assert "duplicate" in err


def test_validate_small_case(capsys, case):
    paths = case()
    rc, out, err = cli(capsys, "validate", paths["spec"])
    assert rc == 0, err
    assert "20 records at 20 sites" in out
    assert err == ""


def test_version_lists_dependencies(capsys):
    rc, out, _ = cli(capsys, "--version")
    assert rc == 0
    lines = out.splitlines()
    assert re.fullmatch(r"synthgeo \S+", lines[0])
    names = [line.split()[0] for line in lines]
    for dep in ("python", "pymc", "nutpie", "numpy", "geopandas", "pyproj", "arviz"):
        assert dep in names
    assert names.count("synthgeo") == 1
    assert re.search(r"^pymc \d+\.\d+", out, re.MULTILINE)
    assert re.search(r"^nutpie \d+\.\d+", out, re.MULTILINE)


def test_run_help_gives_units_and_defaults(capsys):
    rc, out, _ = cli(capsys, "run", "--help")
    assert rc == 0
    text = " ".join(out.split())
    assert "metres" in text
    assert "default: ./synthgeo-out" in text
    assert "per chain" in text
    assert "--implicates L" in text and "Reiter's m" in text and ">= 2" in text
    assert "--draws N" in text and ">= 10" in text
    assert "--overwrite" in text and "default: refuse" in text


def test_validate_help(capsys):
    rc, out, _ = cli(capsys, "validate", "--help")
    assert rc == 0
    assert "without fitting" in out


def test_no_command_prints_help(capsys):
    rc, out, _ = cli(capsys)
    assert rc == 2
    assert "validate" in out and "run" in out


# --- bad data: validate and run refuse it alike; run creates no output folder ----------------

DATA_CASES = {
    # name: (how to build the case, regex the message must match)
    "missing data file": (
        dict(spec_text=SPEC.format(extra="", data_extra="").replace("points.csv", "nope.csv")),
        r"input file .*nope\.csv does not exist"),
    # break-it: a folder and /dev/zero were both said not to exist
    "data path is a folder": (
        dict(spec_text=SPEC.format(extra="", data_extra="").replace('"data/points.csv"',
                                                                     '"data"')),
        r"input file .*data is a folder; give the data file itself"),
    "data path is a device": (
        dict(spec_text=SPEC.format(extra="", data_extra="").replace('"data/points.csv"',
                                                                     '"/dev/zero"')),
        r"input file /dev/zero is not a regular file \(a device, pipe or socket\); give the "
        r"data file itself"),
    "missing response column": (
        dict(spec_text=SPEC.format(extra="", data_extra="").replace(
            'response = "log_price"', 'response = "log_prize"')),
        r"column\(s\) \['log_prize'\] not found in points\.csv.*available columns"),
    "missing covariate column": (
        dict(spec_text=SPEC.format(extra="", data_extra="").replace(
            '["sqft_living"]', '["sqft"]')),
        r"column\(s\) \['sqft'\] not found"),
    "missing x column": (
        dict(spec_text=SPEC.format(extra="", data_extra="").replace('x = "lon"', 'x = "long"')),
        r"column\(s\) \['long'\] not found"),
    "text in numeric column": (
        dict(frame=("sqft_living", 3, "about 900")),
        r"numeric column `sqft_living` holds text .*in 1 record.*`id` \[4\]"),
    "NaN response": (
        dict(frame=("log_price", 5, None)),
        r"numeric column `log_price` has 1 missing \(NaN\) value\(s\) at `id` \[6\]"),
    "NaN coordinate": (
        dict(frame=("lat", 0, None)),
        r"coordinate column `lat` has 1 missing \(NaN\) value\(s\) at `id` \[1\]"),
    "NaN covariate": (
        dict(frame=("sqft_living", 19, None)),
        r"numeric column `sqft_living` has 1 missing \(NaN\) value\(s\) at `id` \[20\]"),
    "latitude 95": (
        dict(frame=("lat", 2, 95.0)),
        r"latitude \(column `lat`\) outside \[-90, 90\].*for 1 of 20 points, at `id` \[3\] "
        r"\(no value is shown"),
    "no CRS for a CSV": (
        dict(spec_text=SPEC.format(extra="", data_extra="").replace('crs = "EPSG:4326"\n', "")),
        r"the CSV points\.csv has no CRS: set `crs` in the spec"),
    "fewer than 10 records": (
        dict(data_extra='query = "id <= 8"'),
        r"only 8 record\(s\) left after `query` = 'id <= 8'.*`min_records` = 10"),
    "unknown spec key": (
        dict(extra="draw = 100"),
        r"unknown key\(s\) in `\[sampling\]`: \['draw'\]"),
    "impossible spec value": (
        dict(spec_text=SPEC.format(extra="", data_extra="") + "\n[model]\nrho0 = 1.5\n"),
        r"`\[model\] rho0` must be a number strictly between 0 and 1, got 1\.5"),
    "negative prior override": (
        dict(spec_text=SPEC.format(extra="", data_extra="")
             + "\n[model]\npriors = { nugget_sd_scale = -1.0 }\n"),
        r"`\[model\.priors\] nugget_sd_scale` must be a positive number, got -1\.0"),
    "prior range beyond the data": (  # only the data tell the default range_max_m
        # (past the location verdict: these 20 scattered records have k >= 2 within 100 km)
        dict(spec_text=SPEC.format(
            extra="\n[anonymity]\nk = 2\nradius_m = 100000.0\nr_max_m = 100000.0\n",
            data_extra="")
             + "\n[model]\npriors = { range_min_m = 1e9 }\n"),
        r"prior range bounds must satisfy 0 < `range_min_m` < `range_max_m`, got 1000000000\.0"),
}


def _build(case, rows, how: dict) -> dict[str, Path]:
    how = dict(how)
    if "frame" in how:
        column, row, value = how.pop("frame")
        how["frame"] = _with(rows, column, row, value)
    return case(**how)


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("name", list(DATA_CASES))
def test_bad_input_is_one_line(capsys, case, rows, name, command):
    how, match = DATA_CASES[name]
    paths = _build(case, rows, how)
    argv = [command, paths["spec"]] + (["--out", paths["out"]] if command == "run" else [])
    rc, _, err = cli(capsys, *argv)
    assert rc == 1
    assert_one_error(rc, err, match)
    assert not paths["out"].exists()


def test_missing_spec_file(capsys, tmp_path):
    rc, _, err = cli(capsys, "run", tmp_path / "nope.toml", "--out", tmp_path / "out")
    assert_one_error(rc, err, r"spec file .*nope\.toml.* does not exist")
    assert not (tmp_path / "out").exists()


def test_spec_not_toml(capsys, case):
    paths = case(spec_text="[data\n")
    rc, _, err = cli(capsys, "validate", paths["spec"])
    assert_one_error(rc, err, r"spec\.toml.* is not valid TOML")


# --- output folder ----------------------------------------------------------------------------


def test_existing_output_folder_needs_overwrite(capsys, case):
    paths = case()
    out = paths["out"]
    out.mkdir()
    (out / "keep.txt").write_text("mine", encoding="utf-8")
    rc, _, err = cli(capsys, "run", paths["spec"], "--out", out)
    assert_one_error(rc, err, r"output folder .*out' exists; pass `--overwrite`")
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    assert (out / "keep.txt").read_text(encoding="utf-8") == "mine"


def test_overwrite_refuses_a_folder_that_is_not_a_synthgeo_output(capsys, case):
    paths = case()
    out = paths["out"]
    out.mkdir()
    (out / "thesis.tex").write_text("years of work", encoding="utf-8")
    rc, _, err = cli(capsys, "run", paths["spec"], "--out", out, "--overwrite")
    assert_one_error(rc, err, r"not empty and holds no release\.json.*choose another `--out`")
    assert (out / "thesis.tex").read_text(encoding="utf-8") == "years of work"


def test_overwrite_with_bad_data_leaves_the_old_output(capsys, case, rows):
    paths = case(_with(rows, "log_price", 1, None))
    out = paths["out"]
    out.mkdir()
    (out / "release.json").write_text('{"synthgeo_release_record": 1}', encoding="utf-8")
    rc, _, err = cli(capsys, "run", paths["spec"], "--out", out, "--overwrite")
    assert_one_error(rc, err, r"`log_price` has 1 missing")
    assert [p.name for p in out.iterdir()] == ["release.json"]


def test_overwrite_refuses_a_release_holding_the_analysts_budget(capsys, case):
    """New-user trial 2026-12-07: a rerun with --overwrite erased verify's budget store."""
    paths = case()
    out = paths["out"]
    (out / "confidential").mkdir(parents=True)
    (out / "release.json").write_text('{"synthgeo_release_record": 1}', encoding="utf-8")
    (out / "confidential" / "verification.sqlite").write_bytes(b"spent")
    rc, _, err = cli(capsys, "run", paths["spec"], "--out", out, "--overwrite")
    assert_one_error(rc, err, r"holds confidential/verification\.sqlite.*privacy budget.*"
                              r"verify --store")
    assert (out / "confidential" / "verification.sqlite").read_bytes() == b"spent"


@pytest.mark.parametrize("kept", ["reg.sqlite", "sub/agency.db", "reg.sqlite.files/",
                                  "confidential/r.sqlite3"])
def test_overwrite_refuses_a_release_holding_a_register(capsys, case, kept):
    """Break-it: `run --out o --overwrite` deleted o/reg.sqlite and its .files/ folder."""
    paths = case()
    out = paths["out"]
    out.mkdir()
    (out / "release.json").write_text('{"synthgeo_release_record": 1}', encoding="utf-8")
    target = out / kept.rstrip("/")
    if kept.endswith("/"):
        (target / "predictive").mkdir(parents=True)
        (target / "predictive" / "u.parquet").write_bytes(b"summaries")
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"ledger")
    before = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    rc, _, err = cli(capsys, "run", paths["spec"], "--out", out, "--overwrite")
    assert_one_error(rc, err, rf"holds {re.escape(kept)}, a register's .* that synthgeo's "
                              r"release writer did not write: `--overwrite` would erase it; "
                              r"move it out")
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == before


def test_a_register_inside_out_is_refused(capsys, case, monkeypatch):
    """--register (or SYNTHGEO_REGISTER) inside --out: refused before any work."""
    paths = case()
    out = paths["out"]
    out.mkdir()
    rc, _, err = cli(capsys, "run", paths["spec"], "--out", out, "--overwrite",
                     "--register", out / "new.sqlite", "--allow-unsigned")
    assert_one_error(rc, err, r"the register '.*new\.sqlite' lies inside `--out` .*move the "
                              r"register out")
    monkeypatch.setenv("SYNTHGEO_REGISTER", str(out / "deeper" / "reg.db"))
    rc, _, err = cli(capsys, "run", paths["spec"], "--out", out, "--overwrite",
                     "--allow-unsigned")
    assert_one_error(rc, err, r"the register '.*reg\.db' lies inside `--out`")
    assert list(out.iterdir()) == []
    # the API (Release.write / write_release) checks the ledger's register the same way
    from synthgeo import SpecError
    from synthgeo.register import open_register
    from synthgeo.release.writer import check_output_dir

    with pytest.raises(SpecError, match=r"the register .*api\.sqlite.* lies inside"):
        check_output_dir(out, overwrite=True, inputs=[],
                         register=open_register(out / "api.sqlite"))


@pytest.mark.parametrize("overwrite", [False, True])
def test_out_at_the_data_folder_is_refused(capsys, case, overwrite):
    paths = case()
    data_dir = paths["data"].parent
    before = paths["data"].read_bytes()
    argv = ["run", paths["spec"], "--out", data_dir] + (["--overwrite"] if overwrite else [])
    rc, _, err = cli(capsys, *argv)
    assert_one_error(rc, err, r"output folder .*data' contains the input .*points\.csv")
    assert paths["data"].read_bytes() == before
    assert [p.name for p in data_dir.iterdir()] == ["points.csv"]


def test_out_at_the_spec_folder_is_refused(capsys, case):
    paths = case()
    rc, _, err = cli(capsys, "run", paths["spec"], "--out", paths["root"], "--overwrite")
    assert_one_error(rc, err, r"contains the input .*(points\.csv|spec\.toml)")
    assert paths["spec"].is_file() and paths["data"].is_file()


def test_out_at_the_spec_folder_with_packaged_data_is_refused(capsys, tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(bundled_spec_path().read_text(encoding="utf-8"), encoding="utf-8")
    rc, _, err = cli(capsys, "run", spec, "--out", tmp_path, "--overwrite")
    assert_one_error(rc, err, r"contains the input .*spec\.toml")
    assert spec.is_file()


# --- command-line overrides -------------------------------------------------------------------


@pytest.mark.parametrize(("argv", "match"), [
    (["--implicates", "1"],
     r"`--implicates 1` is invalid: .*n_implicates` must be an integer >= 2"),
    (["--draws", "5"], r"`--draws 5` is invalid: .*draws` must be an integer >= 10, got 5"),
    (["--tune", "0", "--draws", "100"], r"^synthgeo: error: `--tune 0` is invalid: .*tune`"),
    (["--chains", "0"], r"`--chains 0` is invalid: .*>= 1"),
    (["--seed", "-3"], r"`--seed -3` is invalid: .*non-negative integer"),
])
def test_bad_override(capsys, case, argv, match):
    paths = case()
    rc, _, err = cli(capsys, "run", paths["spec"], "--out", paths["out"], *argv)
    assert_one_error(rc, err, match)
    assert not paths["out"].exists()


def test_one_chain_is_accepted_for_a_preview(capsys, case, rows):
    # accepted together with "warn"; the run then stops at the data, before any fit
    paths = case(_with(rows, "log_price", 5, None))
    rc, _, err = cli(capsys, "run", paths["spec"], "--out", paths["out"], "--chains", "1",
                     "--on-convergence-failure", "warn")
    assert_one_error(rc, err, r"`log_price` has 1 missing")
    assert not paths["out"].exists()


def test_usage_error_is_one_line(capsys, tmp_path):
    rc, _, err = cli(capsys, "run", "--implicates", "many", "--out", tmp_path / "out")
    assert rc == 2
    assert_one_error(rc, err, r"argument --implicates/?.*invalid int value: 'many'")
    rc, _, err = cli(capsys, "run", "--on-convergence-failure", "ignore")
    assert_one_error(rc, err, r"--on-convergence-failure.*invalid choice: 'ignore'")
    rc, _, err = cli(capsys, "frobnicate")
    assert_one_error(rc, err, r"invalid choice: 'frobnicate'")
    assert not (tmp_path / "out").exists()


# --- the real process -------------------------------------------------------------------------


def test_subprocess_exit_code_and_one_line(case, rows):
    paths = case(_with(rows, "log_price", 5, None))
    proc = subprocess.run(
        [sys.executable, "-m", "synthgeo", "run", str(paths["spec"]), "--out", str(paths["out"])],
        capture_output=True, text=True, timeout=120, cwd=paths["root"],
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert_one_error(proc.returncode, proc.stderr,
                     r"numeric column `log_price` has 1 missing \(NaN\) value\(s\) at `id` \[6\]")
    assert "report:" not in proc.stdout
    assert not paths["out"].exists()


# --- found by the break-it tester (session 2) ------------------------------------------------


def test_formula_cannot_run_code(capsys, case, tmp_path):
    marker = tmp_path / "pwned"
    paths = case(extra=f'[utility]\nformula = "log_price ~ sqft_living + '
                       f'0*__import__(\\"os\\").system(\\"touch {marker}\\")"\n')
    rc, _, err = cli(capsys, "validate", paths["spec"])
    assert_one_error(rc, err, r"formula.*quotes, brackets, `__`")
    assert not marker.exists()
    paths = case(extra='[utility]\nformula = "log_price ~ os.system"\n')
    rc, _, err = cli(capsys, "validate", paths["spec"])
    assert_one_error(rc, err, r"names `os.system`")
    # break-it 2026-12-07: full-width letters are exec/chr/len/str to Python (NFKC)
    code = "+".join(f"ｃｈｒ({ord(c)})" for c in f"open({str(marker)!r},'w')")
    paths = case(extra=f'[utility]\nformula = "log_price ~ I(sqft_living + '
                       f'0*ｌｅｎ(ｓｔｒ(ｅｘｅｃ({code}))))"\n')
    rc, _, err = cli(capsys, "validate", paths["spec"])
    assert_one_error(rc, err, r"formula.*compatibility characters.*plain characters")
    assert not marker.exists()


@pytest.mark.parametrize("key", ["id", "x"])
def test_released_columns_must_not_carry_the_response(capsys, case, rows, key):
    frame = rows.copy()
    frame["price_copy"] = frame["price_usd"] + frame.index * 1e-6  # unique, = the price
    data_extra = "" if key == "id" else ""
    text = SPEC.format(extra="", data_extra=data_extra)
    if key == "id":
        text = text.replace('id = "id"', 'id = "price_copy"')
    else:  # eastings from the price, northings near Sacramento: plausible UTM 10N metres
        frame["price_copy"] = 620_000.0 + 0.1 * frame["price_copy"]
        frame["north"] = 4_260_000.0 + 1e5 * (frame["lat"] - 38.5)
        text = text.replace('x = "lon"', 'x = "price_copy"').replace(
            'y = "lat"', 'y = "north"').replace('crs = "EPSG:4326"', 'crs = "EPSG:32610"')
    paths = case(frame, spec_text=text)
    rc, _, err = cli(capsys, "validate", paths["spec"])
    assert_one_error(rc, err, rf"`\[data\] {key}` column `price_copy` determines the response")


def test_a_non_2d_crs_is_bad_input_not_a_bug(capsys, case):
    paths = case(spec_text=SPEC.format(extra="", data_extra="").replace(
        'crs = "EPSG:4326"', 'crs = "EPSG:4978"'))
    rc, _, err = cli(capsys, "validate", paths["spec"])
    assert_one_error(rc, err, r"cannot project the points.*2-D CRS")
    assert "unexpected" not in err


def test_numeric_time_column_is_refused():
    from synthgeo._errors import InputError
    from synthgeo.locations.outliers import times_s

    with pytest.raises(InputError, match="holds numbers, not date-times"):
        times_s(pd.Series([1995, 1996, 1997]), np.arange(3), "syear")


def test_outliers_keep_cannot_publish_true_coordinates(capsys, tmp_path, rows):
    f = tmp_path / "p.csv"
    rows.to_csv(f, index=False)
    rc, _, err = cli(capsys, "outliers", f, "--x", "lon", "--y", "lat", "--crs", "EPSG:4326",
                     "--id-col", "id", "--k", "3", "--r-max-m", "500", "--keep", "lat,lon",
                     "--out", tmp_path / "o")
    assert_one_error(rc, err, r"`--keep` names the coordinate column")
    assert not (tmp_path / "o").exists()


def test_gamma_auto_record_is_schema_valid():
    from synthgeo.release.schema import release_schema

    gamma = release_schema()["properties"]["spec"]["properties"]["model"]["properties"]["gamma"]
    from jsonschema import validate

    for ok in (0, 2.5, "inf", "auto"):
        validate(ok, gamma)


@pytest.mark.parametrize("command", ["draw", "mask", "choose-k", "verify"])
@pytest.mark.parametrize("seed", ["-1", "seven"])
def test_a_bad_seed_is_one_line_naming_seed_and_its_range(capsys, tmp_path, command, seed):
    """`synthgeo draw --seed -1` (and the other commands' --seed): refused before any work."""
    rc, _, err = cli(capsys, command, tmp_path / "nowhere", "--seed", seed)
    assert rc == 2
    assert_one_error(rc, err, r"argument --seed: .*a seed is an integer >= 0")
    assert "Traceback" not in err and not any(tmp_path.iterdir())


def test_formula_columns_in_other_scripts_and_with_spaces():
    """Break-it 2026-12-07: `log_prïce` was read as `log_pr`; a spaced covariate was unusable
    without a word why."""
    from synthgeo._errors import SpecError
    from synthgeo.pipeline.data import check_formula_names, formula_names

    assert formula_names("log_prïce ~ 面积 + sqft") == ["log_prïce", "面积", "sqft"]
    check_formula_names("log_prïce ~ 面积", ["log_prïce", "面积"])
    with pytest.raises(SpecError, match=r"column `surface m2` cannot be named.*`surface_m2`"):
        check_formula_names("price ~ surface m2", ["price", "surface m2"])
