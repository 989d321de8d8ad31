"""The leave-out unit as a setting, ``[risk] loo_unit`` (issue 24, item 5).

Blocks per unit on a hand example; the spec key (validation, the refusal of "subject" without
a subject column, the default's switch); the pipeline on the bundled data under each unit (the
fake fitter replaces sampling: fast), whose other-unit figures equal a run under that unit; the
figures in release.json, the report and the console line.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import synthgeo as sg
from synthgeo._errors import SpecError
from synthgeo.config import RiskConfig, bundled_spec_path, load_spec
from synthgeo.pipeline import run_release
from synthgeo.pipeline.risk_stage import record_blocks
from synthgeo.release.report._risk_sections import section_risk
from synthgeo.release.schema import validate_release_record
from synthgeo.release.writer import write_release
from synthgeo.risk.loo import block_differs, leave_out_blocks
from synthgeo.testing import fake_fitter, fake_spec

# --- blocks on a hand example ----------------------------------------------------------------

# records 0 and 1 share a geocode, records 4 and 5 another; records 1 and 3 are one subject
SITE = np.array([0, 0, 1, 2, 3, 3])
SUBJECT = np.array(["a", "b", "c", "b", "d", "e"])


def _sets(blocks):
    """Each record's block as a frozenset of record indices (labels do not matter)."""
    return [frozenset(np.flatnonzero(blocks == b)) for b in blocks]


def test_record_unit_leaves_out_the_record_alone():
    assert _sets(leave_out_blocks("record", SITE, SUBJECT)) == [frozenset({i}) for i in range(6)]
    assert _sets(leave_out_blocks("record", SITE)) == [frozenset({i}) for i in range(6)]


def test_site_unit_joins_geocode_and_subject_transitively():
    got = _sets(leave_out_blocks("site", SITE, SUBJECT))
    assert got == [{0, 1, 3}, {0, 1, 3}, {2}, {0, 1, 3}, {4, 5}, {4, 5}]
    # without a subject column: the geocode alone
    assert _sets(leave_out_blocks("site", SITE)) == [{0, 1}, {0, 1}, {2}, {3}, {4, 5}, {4, 5}]


def test_subject_unit_leaves_out_the_subjects_records_only():
    got = _sets(leave_out_blocks("subject", SITE, SUBJECT))
    assert got == [{0}, {1, 3}, {2}, {1, 3}, {4}, {5}]


def test_subject_unit_without_subjects_and_unknown_units_are_refused():
    with pytest.raises(ValueError, match="subject"):
        leave_out_blocks("subject", SITE)
    with pytest.raises(ValueError, match="unit"):
        leave_out_blocks("parcel", SITE, SUBJECT)
    with pytest.raises(ValueError, match="shape"):
        leave_out_blocks("site", SITE, SUBJECT[:3])


def test_block_differs_compares_sets_not_labels():
    site, record = (leave_out_blocks(u, SITE, SUBJECT) for u in ("site", "record"))
    subject = leave_out_blocks("subject", SITE, SUBJECT)
    assert block_differs(site, record).tolist() == [True, True, False, True, True, True]
    assert block_differs(subject, record).tolist() == [False, True, False, True, False, False]
    assert block_differs(site, subject).tolist() == [True, True, False, True, True, True]
    relabelled = np.array([7, 7, 2, 7, 9, 9])
    assert not block_differs(site, relabelled).any()


# --- the spec key ----------------------------------------------------------------------------


def test_loo_unit_key_is_validated_with_a_one_line_error():
    with pytest.raises(SpecError, match=r"`\[risk\] loo_unit` must be .*\"record\"") as exc:
        RiskConfig(loo_unit="parcel")
    assert "\n" not in str(exc.value)
    spec = load_spec(bundled_spec_path())
    with pytest.raises(SpecError, match=r"loo_unit = \"subject\"` needs a `\[data\] subject`"):
        spec.replace("risk", loo_unit="subject")


def test_loo_unit_in_a_spec_file_subject_refused_without_column(tmp_path):
    text = bundled_spec_path().read_text(encoding="utf-8")
    path = tmp_path / "spec.toml"
    path.write_text(text.replace("[risk]", '[risk]\nloo_unit = "subject"', 1), encoding="utf-8")
    with pytest.raises(SpecError, match=r"\[data\] subject") as exc:
        load_spec(path)
    assert "\n" not in str(exc.value)
    path.write_text(text.replace("[risk]", '[risk]\nloo_unit = "record"', 1), encoding="utf-8")
    assert load_spec(path).loo_unit == "record"


def test_default_is_site_and_switches_to_subject_with_a_subject_column():
    spec = load_spec(bundled_spec_path())
    assert spec.risk.loo_unit is None and spec.loo_unit == "site"
    assert spec.to_dict()["risk"]["loo_unit"] == "site"  # the default as run, filled in
    with_subject = spec.replace("data", subject="id")
    assert with_subject.loo_unit == "subject"
    assert with_subject.to_dict()["risk"]["loo_unit"] == "subject"
    assert with_subject.replace("risk", loo_unit="site").loo_unit == "site"


# --- the pipeline on the bundled data --------------------------------------------------------

N_DRAWS, L = 100, 10


@pytest.fixture(scope="module")
def subject_csv(tmp_path_factory):
    """The bundled file with an ``owner`` column: records paired into two-record subjects."""
    spec = load_spec(bundled_spec_path())
    df = pd.read_csv(spec.data_path())
    df["owner"] = [f"o{i // 2}" for i in range(len(df))]  # neighbours in file order
    path = tmp_path_factory.mktemp("loo_unit") / "sales.csv"
    df.to_csv(path, index=False)
    return path


def _spec(subject_csv=None, **risk):
    spec = fake_spec(load_spec(bundled_spec_path()), n_draws=N_DRAWS, n_implicates=L)
    if subject_csv is not None:
        spec = spec.replace("data", path=str(subject_csv), subject="owner")
    return spec.replace("risk", **risk) if risk else spec


def _run(spec):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return run_release(spec, fitter=fake_fitter(n_draws=N_DRAWS, random_seed=0))


@pytest.fixture(scope="module")
def runs(subject_csv):
    """One run per unit on the bundled data with a subject column."""
    return {u: _run(_spec(subject_csv, loo_unit=u)) for u in ("site", "subject", "record")}


def _loo(result):
    return result.risk_scores.records["restricted"].per_record["loo"].values


@pytest.mark.parametrize("unit", ["site", "subject", "record"])
def test_pipeline_runs_each_unit_and_reports_every_other(runs, unit):
    res = runs[unit]
    units = res.risk_scores.loo_units
    assert units.unit == unit and units.source == "spec"
    assert [f.unit for f in units.others] == [u for u in ("site", "subject", "record")
                                              if u != unit]
    # the other units' figures are those of a run under that unit (same draws and implicates)
    for other in units.others:
        direct = {(r["model"], r["measure"]): r for r in runs[other.unit].risk_scores
                  .loo_units.as_run.rows()}
        for row in other.rows():
            want = direct[(row["model"], row["measure"])]
            assert row["largest_attributable"] == pytest.approx(want["largest_attributable"],
                                                                abs=1e-12)
            assert row["attributable"] == pytest.approx(want["attributable"], abs=1e-12)
        differs = block_differs(record_blocks(res.spec, res.data),
                                record_blocks(res.spec, res.data, other.unit))
        assert other.n_records_block_differs == int(differs.sum()) > 0
        # a record's leave-out predictive depends on its own block only
        same = ~differs
        np.testing.assert_allclose(_loo(res)[same], _loo(runs[other.unit])[same], atol=1e-12)
        assert np.abs(_loo(res)[differs] - _loo(runs[other.unit])[differs]).max() > 1e-6


def test_leaving_out_more_records_weakens_the_loo_baseline(runs):
    """Mean LOO risk: record ≥ subject and record ≥ site (the site joins geocode and subject)."""
    mean = {u: _loo(r).mean() for u, r in runs.items()}
    assert mean["record"] > mean["site"] and mean["record"] > mean["subject"]


def test_same_blocks_are_said_not_computed_again():
    # every record its own subject: "subject" leaves out the record alone, as "record" does
    res = _run(_spec().replace("data", subject="id"))
    units = res.risk_scores.loo_units
    assert units.unit == "subject" and units.source == "default"
    record = next(f for f in units.others if f.unit == "record")
    assert record.same_blocks and record.n_records_block_differs == 0 and record.seconds == 0
    site = next(f for f in units.others if f.unit == "site")
    assert not site.same_blocks and site.n_records_block_differs > 0  # shared geocodes
    assert "under record: same blocks" in units.line()
    table = units.table()
    assert set(table.loc[table["unit"] == "record", "note"]) == {"same blocks as subject"}


def test_default_without_subject_is_site_with_record_beside_it(tmp_path):
    res = _run(_spec())
    units = res.risk_scores.loo_units
    assert units.unit == "site" and units.source == "default"
    assert [f.unit for f in units.others] == ["record"]  # "subject" needs a column
    n_shared = int((np.bincount(res.data.sites.site_index)[res.data.sites.site_index]
                    > 1).sum())
    assert units.others[0].n_records_block_differs == n_shared > 0
    out = tmp_path / "out"
    write_release(res, out, report_html="<!-- CONFIDENTIAL -->\n<html></html>")
    rec = json.loads((out / "release.json").read_text())
    validate_release_record(rec)
    block = rec["risk_attributable"]["loo_unit"]
    assert block["unit"] == "site" and block["source"] == "default"
    assert rec["spec"]["risk"]["loo_unit"] == "site"
    other = block["other_units"][0]
    assert other["unit"] == "record" and not other["same_blocks"]
    assert other["n_records_block_differs"] == n_shared
    keys = {(r["model"], r["measure"]) for r in other["figures"]}
    assert keys == {(m, k) for m in ("unrestricted", "restricted")
                    for k in ("abs:10000", "rel:0.1")}
    largest = {(r["model"], r["measure"]): r["largest_attributable"] for r in other["figures"]}
    want = units.others[0].attributable[("restricted", "rel:0.1")].max()
    assert largest[("restricted", "rel:0.1")] == pytest.approx(want)
    # the as-run figures are the attributable table's all-records share rows
    t = res.risk_scores.table.query("group == 'all' and attack == 'share'")
    for row in block["as_run"]:
        hit = t[(t["model"] == row["model"]) & (t["measure"] == row["measure"])].iloc[0]
        assert row["largest_attributable"] == pytest.approx(hit["largest_attributable"])
        assert row["attributable"] == pytest.approx(hit["attributable"])
    # a schema that names the block: a stray key fails
    bad = json.loads(json.dumps(rec))
    bad["risk_attributable"]["loo_unit"]["other_units"][0]["per_record"] = [0.1]
    with pytest.raises(ValueError, match="per_record"):
        validate_release_record(bad)
    # the report's risk section states the unit and tabulates the other
    body = str(section_risk(res).body)
    assert "Leave-out unit: site" in body and "table-loo-units" in body
    assert f"{n_shared} records' blocks differ" in body
    line = units.line()
    assert line.startswith("leave-out unit: site (default;") and "under record (" in line


def test_front_door_accepts_the_key(subject_csv):
    frame = pd.read_csv(subject_csv).query("beds == 2").reset_index(drop=True)
    import geopandas

    pts = geopandas.GeoDataFrame(frame, geometry=geopandas.points_from_xy(frame.lon, frame.lat),
                                 crs="EPSG:4326")
    kw = dict(response="log_price", covariates=["sqft_living"], implicates=L, seed=3,
              sampling=sg.SamplingConfig(sampler="grid", draws=N_DRAWS, tune=10,
                                         on_convergence_failure="warn"),
              anonymity=sg.AnonymityConfig(on_location_failure="warn"),
              fitter=fake_fitter(n_draws=N_DRAWS, random_seed=0))
    with pytest.raises(SpecError, match=r"\[data\] subject"):
        sg.synthesize(pts, risk=RiskConfig(loo_unit="subject"), **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        rel = sg.synthesize(pts, subject="owner", risk=RiskConfig(loo_unit="record"), **kw)
    assert rel.result.risk_scores.loo_units.unit == "record"
    assert [f.unit for f in rel.result.risk_scores.loo_units.others] == ["site", "subject"]


def test_docs_block_is_what_the_benchmark_makes_from_its_records(benchmark_module):
    """docs/risk-and-utility.md's leave-out-unit figures come from bench_loo_unit's records."""
    mod = benchmark_module("bench_loo_unit")
    records = mod.newest_records()
    assert set(records) == {"sacramento_all", "lucas"}  # both files measured
    text = mod.DOC.read_text(encoding="utf-8")
    i, j = text.index(mod.BEGIN), text.index(mod.END) + len(mod.END)
    assert text[i:j] == mod.render_block(records)
    for _, rec in records.values():  # each names how many records share a geocode
        assert rec["detail"]["n_records_sharing_a_geocode"] >= 0
        assert {r["unit"] for r in rec["detail"]["rows"]} == {"site", "record"}
