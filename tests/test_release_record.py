"""release.json against the package's JSON Schema, and the data users' README in release/."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Literal

import numpy as np
import pytest
from jsonschema import Draft202012Validator

from synthgeo.config import _SECTIONS, DataConfig, ModelConfig, ReleaseSpec
from synthgeo.release.schema import release_schema, validate_release_record
from synthgeo.release.writer import EMPTY_REVIEW, release_record, write_release


@pytest.fixture(scope="module")
def fake_result():
    from synthgeo.testing import fake_release_result

    return fake_release_result(n_implicates=12)


@pytest.fixture(scope="module")
def record(fake_result):
    return json.loads(json.dumps(release_record(fake_result, seconds={"total": 1.0})))


@pytest.fixture(scope="module")
def written(fake_result, tmp_path_factory):
    out = tmp_path_factory.mktemp("rel") / "out"
    write_release(fake_result, out, report_html="<!-- CONFIDENTIAL -->\n<html></html>")
    return out


def _walk(node, path="#"):
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            yield from _walk(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, f"{path}/{i}")


def test_schema_is_valid_and_every_object_is_closed():
    schema = release_schema()
    Draft202012Validator.check_schema(schema)
    open_objects = [p for p, n in _walk(schema)
                    if n.get("type") == "object" and n.get("additionalProperties") is not False]
    assert open_objects == []
    # optional: the location diagnostics (a run may skip that stage), the baselines, the chain
    # of earlier releases (only with --previous), the design of text covariates, dropped
    # records, the fresh-draw judgement (null or absent under at_risk = "spatial"; records
    # before issue 24 item 3 have none), and the sequential release's blocks; a record has
    # either the single-response blocks or `responses` (issue 15); the signature and register
    # blocks, which the writer adds (release_record() alone has neither; issue 26); the stored
    # synthesiser, which the writer adds for a single response (issue 27 item 3); the release
    # attacker (single response, with a risk stage; issue 25)
    single = {"at_risk", "priors", "fits", "risk_summary", "utility", "neighbour_check",
              "synthesis"}
    assert set(schema["properties"]) - set(schema["required"]) == {
        "locations", "risk_attributable", "previous_releases", "design", "missing", "responses",
        "joint_risk", "correlations", "general_utility", "signature", "register", "detector",
        "at_risk_selection", "protection", "synthesiser", "risk_release_attacker", *single}
    assert set(schema["anyOf"][0]["required"]) == single
    assert schema["anyOf"][1] == {"required": ["responses"]}


def test_schema_spec_keys_match_the_config_dataclasses():
    spec = release_schema()["properties"]["spec"]["properties"]
    for section, cls in _SECTIONS.items():
        assert set(spec[section]["properties"]) == {f.name for f in dataclasses.fields(cls)}, (
            f"update [spec.{section}] in synthgeo/data/release.schema.json")


def test_record_validates_and_leaves_the_review_empty(record):
    validate_release_record(record)
    assert record["review"] == EMPTY_REVIEW
    assert record["released_label"].startswith("restricted (")  # the paper's mechanism
    assert all(v is None for v in record["review"].values())


@pytest.mark.parametrize("where", [
    (), ("fits", "unrestricted", "convergence"), ("review",), ("at_risk",),
    ("spec", "model"), ("input",),
])
def test_an_unknown_field_fails(record, where):
    bad = copy.deepcopy(record)
    node = bad
    for key in where:
        node = node[key]
    node["surprise"] = 1
    with pytest.raises(ValueError, match=r"Additional properties are not allowed "
                                         r"\('surprise' was unexpected\)"):
        validate_release_record(bad)


def test_unknown_field_in_a_table_row_fails(record):
    bad = copy.deepcopy(record)
    bad["utility"]["table"][0]["p_value"] = 0.5
    with pytest.raises(ValueError, match=r"utility/table/0: Additional properties"):
        validate_release_record(bad)


def test_missing_review_fails(record):
    bad = copy.deepcopy(record)
    del bad["review"]
    with pytest.raises(ValueError, match=r"'review' is a required property"):
        validate_release_record(bad)


def test_a_filled_in_review_validates_and_a_bad_one_does_not(record):
    good = copy.deepcopy(record)
    good["review"] = {"reviewer": "Disclosure Review Board (chair: A. N. Other)",
                      "decision": "approved with conditions", "date": "2026-12-01",
                      "conditions": ["publish with the README", "re-review in 2027"]}
    validate_release_record(good)
    for field, value, match in (("decision", "ok", r"review/decision: 'ok' is not one of"),
                                ("date", "1 Dec 2026", r"review/date: '1 Dec 2026' does not"),
                                ("conditions", 3, r"review/conditions: 3 is not valid")):
        bad = copy.deepcopy(good)
        bad["review"][field] = value
        with pytest.raises(ValueError, match=match):
            validate_release_record(bad)


def test_locations_and_fit_engines_are_closed(record):
    """The location summary and each fit's engine validate; unknown fields in them fail."""
    assert record["locations"]["moves_locations"] is False
    validate_release_record(record)
    for where in (("locations",), ("locations", "spatial_k"), ("locations", "outlier_policy"),
                  ("fits", "restricted", "engine")):
        bad = copy.deepcopy(record)
        obj = bad
        for key in where:
            obj = obj.setdefault(key, {"sampler": "nutpie", "gp": "exact"}) if key == "engine" \
                else obj[key]
        obj["surprise"] = 1
        with pytest.raises(Exception, match="surprise"):
            validate_release_record(bad)
    no_loc = copy.deepcopy(record)
    del no_loc["locations"]  # optional: a run without the location stage
    validate_release_record(no_loc)


def test_written_record_lists_the_release_files_with_hashes(written):
    rec = json.loads((written / "release.json").read_text())
    validate_release_record(rec)
    files = sorted(p for p in (written / "release").rglob("*") if p.is_file())
    listed = {f["path"]: f for f in rec["release_files"]}
    assert sorted(listed) == [p.relative_to(written).as_posix() for p in files]
    for p in files:
        entry = listed[p.relative_to(written).as_posix()]
        assert entry["bytes"] == p.stat().st_size
        assert entry["sha256"] == hashlib.sha256(p.read_bytes()).hexdigest()


# --- the data users' README -------------------------------------------------------------------


def _code(readme: str, lang: str) -> str:
    return re.search(rf"```{lang}\n(.*?)```", readme, re.S).group(1)


def test_readme_names_the_real_files_and_says_what_is_synthetic(written, fake_result):
    readme = (written / "release" / "README.md").read_text()
    for name in re.findall(r"`csv/(implicate_\d+\.csv)`", readme):
        assert (written / "release" / "csv" / name).is_file()
    assert "`csv/implicate_001.csv` … `csv/implicate_012.csv`" in readme
    assert "m = 12 implicates" in readme
    assert "**synthetic**" in readme and "no record was suppressed" in readme
    assert "T_p   = u_bar + b_m / m" in readme and "not** Rubin's rule" in readme
    # no count of at-risk records and no M: they would point at the smoothed records
    assert str(fake_result.at_risk.n_at_risk) + " at-risk" not in readme
    assert f"{fake_result.M_m:,.0f}" not in readme
    # no true value
    for v in np.exp(fake_result.data.y[:20]):
        assert f"{v:.6g}" not in readme


def _expected(fake_result):
    util = fake_result.utility
    return util[util["model"] == "restricted"].set_index("term")


def test_readme_python_example_reproduces_the_reiter_table(written, fake_result, tmp_path):
    script = tmp_path / "example.py"
    script.write_text(_code((written / "release" / "README.md").read_text(), "python"))
    out = subprocess.run([sys.executable, str(script)], cwd=written / "release",
                         capture_output=True, text=True, timeout=60, check=True).stdout
    want = _expected(fake_result)
    for term, row in want.iterrows():
        line = next(ln for ln in out.splitlines() if ln.startswith(term))
        q_bar, se, df, lower, upper = map(float, line.split()[1:])
        np.testing.assert_allclose([q_bar, se, df, lower, upper],
                                   [row["estimate"], row["se"], row["df"], row["lower"],
                                    row["upper"]], rtol=2e-5)


@pytest.mark.skipif(shutil.which("Rscript") is None,
                    reason="R is not installed (Debian: apt-get install r-base-core)")
def test_readme_r_example_reproduces_the_reiter_table(written, fake_result, tmp_path):
    script = tmp_path / "example.R"
    script.write_text(_code((written / "release" / "README.md").read_text(), "r"))
    out = subprocess.run(["Rscript", str(script)], cwd=written / "release",
                         capture_output=True, text=True, timeout=60, check=True).stdout
    want = _expected(fake_result)
    for term, row in want.iterrows():
        r_term = "(Intercept)" if term == "Intercept" else term
        line = next(ln for ln in out.splitlines() if ln.startswith(r_term))
        vals = list(map(float, line.split()[1:]))
        np.testing.assert_allclose(vals, [row["estimate"], row["se"], row["df"], row["lower"],
                                          row["upper"]], rtol=2e-5)


# --- the real bundled run (slow) --------------------------------------------------------------


@pytest.mark.slow
def test_bundled_run_record_validates(bundled_release):
    rec = json.loads((Path(bundled_release) / "release.json").read_text())
    validate_release_record(rec)
    assert rec["review"] == EMPTY_REVIEW
    assert len(rec["release_files"]) == 22


def test_readme_values_cannot_break_the_markdown(fake_result):
    """Column names, the CRS label and the formula stay text: no HTML, link, cell or fence."""
    from synthgeo.release._templates import markdown_env, md_code, md_text
    from synthgeo.release.readme import README_TEMPLATE, readme_context

    assert md_code("a`b") == "``a`b``" and md_code("`x") == "`` `x ``"
    assert md_text("<b>[x](y)|*z*") == r"\<b\>\[x\](y)\|\*z\*"
    ctx = readme_context(fake_result)
    ctx.update(covariates=["a|b", "<script>x</script>"], response="y`z",
               crs_label="<b>WGS</b> | [x](javascript:1)",
               formula="y ~ x\n```\n<script>alert(1)</script>")
    readme = markdown_env().get_template(README_TEMPLATE).render(ctx)
    table = readme.split("| column | meaning | status |")[1].split("\n\n")[0]
    for row in table.strip().splitlines():
        assert len(re.findall(r"(?<!\\)\|", row)) == 4, row  # 3 cells, whatever the names
    assert "| ``y`z`` | response (log scale) | **synthetic** |" in table
    assert r"\<b\>WGS\</b\> \| \[x\](javascript:1)" in readme  # escaped, not a link
    assert "\n```\n<script>" not in readme  # the formula cannot close the code block
    assert "fits = [smf.ols('y ~ x ``` <script>alert(1)</script>', data" in readme
    assert "<script>x</script>" not in readme.replace("`<script>x</script>`", "")


# --- the spec part of the schema is built from the config dataclasses -------------------------

def _spec_validator(spec_type=None):
    from synthgeo.release.schema import spec_schema

    return Draft202012Validator(spec_schema(spec_type))


def test_shipped_file_leaves_the_spec_part_to_the_config():
    raw = json.loads((Path(__file__).parents[1] / "src" / "synthgeo" / "data"
                      / "release.schema.json").read_text())
    assert set(raw["properties"]["spec"]) == {"$comment"}
    spec = release_schema()["properties"]["spec"]
    assert spec["required"] == [f.name for f in dataclasses.fields(ReleaseSpec)]
    assert spec["properties"]["sampling"]["properties"]["draws"] == {
        "type": "integer", "minimum": 10, "default": 1000}


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Targets:
    measure: str = "rel:0.1"
    max_share_above: float | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class _NewModel(ModelConfig):
    at_risk: Literal["spatial", "risk", "both"] = "spatial"
    weights: list[float] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Compute:
    """Where the work runs."""

    scheduler: str | None = None
    targets: _Targets | None = dataclasses.field(default_factory=_Targets)


@dataclasses.dataclass(frozen=True, kw_only=True)
class _NewSpec(ReleaseSpec):
    """A spec with a new key in [model] and a new section, as a later issue may add them."""

    model: _NewModel = dataclasses.field(default_factory=_NewModel)
    compute: _Compute = dataclasses.field(default_factory=_Compute)


def test_a_new_config_field_is_in_the_schema_with_no_other_edit():
    validator = _spec_validator(_NewSpec)
    schema = validator.schema
    assert schema["properties"]["model"]["properties"]["at_risk"] == {
        "enum": ["spatial", "risk", "both"], "default": "spatial"}
    assert schema["properties"]["model"]["properties"]["weights"]["items"] == {"type": "number"}
    compute = schema["properties"]["compute"]
    assert compute["description"] == "[compute] Where the work runs."
    assert compute["additionalProperties"] is False and compute["required"] == [
        "scheduler", "targets"]
    targets = compute["properties"]["targets"]["anyOf"][0]
    assert "description" not in targets  # no docstring: none (not the generated signature)
    assert targets["additionalProperties"] is False and set(targets["properties"]) == {
        "measure", "max_share_above"}
    spec = _NewSpec(data=DataConfig(path="p.csv", response="y"))
    record = json.loads(json.dumps(spec.to_dict()))
    validator.validate(record)
    for bad, where in ((dict(record, compute={**record["compute"], "surprise": 1}), "compute"),
                       (dict(record, model={**record["model"], "at_risk": "all"}), "model")):
        errors = list(validator.iter_errors(bad))
        assert errors and errors[0].absolute_path[0] == where
    real = _spec_validator().schema["properties"]["compute"]["properties"]
    assert set(real) == {"scheduler"}  # the real spec unchanged


@pytest.mark.parametrize("toml", sorted((Path(__file__).parents[1] / "models").glob("*.toml")),
                         ids=lambda p: p.name)
def test_every_bundled_spec_matches_the_schema(toml):
    from synthgeo.config import load_spec
    from synthgeo.io.jsonable import jsonable as _jsonable

    _spec_validator().validate(_jsonable(load_spec(toml).to_dict()))


_BASE = {"data": {"path": "p.csv", "response": "y"}}
#: Other keys a probe needs so that only the probed key decides (cross-key rules).
_CONTEXT = {("data", "x"): {"y": "b"}, ("data", "y"): {"x": "a"},
            ("model", "at_risk_weight"): {"gamma": 0.0, "at_risk": "risk"},
            ("sampling", "chains"): {"on_convergence_failure": "warn"},
            ("anonymity", "generalise_ratio"): {"merge_ratio": 1.0},
            ("anonymity", "time"): {"r_max_time": "6h"},
            ("anonymity", "r_max_time"): {"time": "t"},
            ("data", "decimal"): {"sep": ";"}}
#: A valid value of a string key whose constraint is not about its content.
_VALID = {("utility", "formula"): "y ~ x", ("anonymity", "r_max_time"): "6h",
          ("data", "encoding"): "utf-8", ("data", "sep"): ";", ("data", "decimal"): ","}


def _probes(section, key, constraint, kind):
    """(value, accepted?) pairs that test each keyword of one SPEC_CONSTRAINTS entry."""
    step = 1 if kind == "integer" else 1e-9
    valid = _VALID.get((section, key), "a")
    for word, bound in constraint.items():
        if word == "enum":
            yield from ((v, True) for v in bound)
            yield "not-a-choice", False
        elif word == "minimum":
            yield from ((bound, True), (bound - step, False))
        elif word == "maximum":
            yield from ((bound, True), (bound + step, False))
        elif word == "exclusiveMinimum":
            yield from ((bound, False), (bound + step, True))
        elif word == "exclusiveMaximum":
            yield from ((bound, False), (bound - step, True))
        elif word == "maxLength":
            yield from ((valid, True), (valid * (bound + 1), False))
        elif word in ("minLength", "pattern"):
            yield from ((valid, True), ("" if word == "minLength" else "no tilde", False))
        elif word == "minItems":
            yield [], False
        elif word == "uniqueItems":
            yield from ((["a", "b"], True), (["a", "a"], False))
        elif word == "items":
            yield from (([v], ok) for v, ok in _probes(section, key, bound, "number"))
        elif word == "anyOf":  # [model] gamma
            yield from ((0, True), (2.5, True), (-1, False), ("inf", True), ("x", False))
        elif word == "properties":  # [model.priors]
            yield from (({k: 1.0}, True) for k in bound)
            yield from (({k: 0.0}, False) for k, s in bound.items() if "exclusiveMinimum" in s)
            yield {"surprise": 1.0}, False
        else:
            raise AssertionError(f"no probe for `{word}` ([{section}] {key}): add one")


def _constraint_cases():
    from synthgeo.config import SPEC_CONSTRAINTS

    for section, keys in SPEC_CONSTRAINTS.items():
        for key, constraint in keys.items():
            yield pytest.param(section, key, constraint, id=f"{section}.{key}")


@pytest.mark.parametrize("section, key, constraint", list(_constraint_cases()))
def test_spec_constraints_are_what_the_config_accepts(section, key, constraint):
    """The schema's allowed values and ranges agree with each section's __post_init__."""
    from synthgeo._errors import SpecError

    prop = release_schema()["properties"]["spec"]["properties"][section]["properties"][key]
    kind = prop.get("type", "number")
    kind = kind[0] if isinstance(kind, list) else kind
    sub = Draft202012Validator(prop)
    for value, accepted in _probes(section, key, constraint, kind):
        kwargs = {**_BASE.get(section, {}), **_CONTEXT.get((section, key), {}), key: value}
        try:
            _SECTIONS[section](**kwargs)
            ok = True
        except SpecError:
            ok = False
        assert ok is accepted, f"[{section}] {key} = {value!r}: config accepted={ok}"
        assert sub.is_valid(value) is accepted, f"[{section}] {key} = {value!r}: schema"
