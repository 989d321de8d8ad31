"""Location diagnostics inside a release: the ``[anonymity]`` spec section, the summary that
goes into release.json, the per-record table for confidential/, and the report tables."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from synthgeo import SpecError
from synthgeo.config import AnonymityConfig, bundled_spec_path, load_spec
from synthgeo.io.jsonable import jsonable as _jsonable
from synthgeo.io.points import coordinates_m
from synthgeo.locations import location_diagnostics, report_tables
from synthgeo.model.at_risk import find_at_risk
from synthgeo.pipeline import prepare_data
from synthgeo.pipeline.run import _locations

MINIMAL = '[data]\npath = "points.csv"\nresponse = "log_price"\n'


@pytest.fixture(scope="module")
def bundled():
    spec = load_spec(bundled_spec_path())
    return spec, prepare_data(spec)


def test_defaults_of_the_optional_section(bundled):
    spec, _ = bundled
    a = spec.anonymity
    assert (a.radius_m, a.k, a.k_max, a.r_max_m) == (100.0, 5, 100, 2000.0)
    assert (a.max_suppressed_share, a.max_unit_suppressed_share, a.max_passes) == (0.01, 0.1, 5)
    assert spec.to_dict()["anonymity"]["radius_m"] == 100.0
    p = a.policy()
    assert (p.k, p.r_max_m, p.merge_ratio, p.generalise_ratio) == (5, 2000.0, 2.0, 4.0)


@pytest.mark.parametrize("line, match", [
    ("radius_m = 0", r"`\[anonymity\] radius_m` must be a positive distance"),
    ("k = 1", r"`\[anonymity\] k` must be an integer >= 2"),
    ("k_max = 3", r"`\[anonymity\] k_max` must be an integer >= `k` = 5"),
    ("r_max_m = -1", r"`\[anonymity\] r_max_m` must be a positive distance"),
    ("merge_ratio = 5", r"`\[anonymity\] merge_ratio` must be <= `generalise_ratio`"),
    ("max_suppressed_share = 1.5", r"`\[anonymity\] max_suppressed_share` must be a share"),
    ("group_by = \"race\"", r"`\[anonymity\] group_by` must be a list of column names"),
    ("time = \"t\"", r"`\[anonymity\] r_max_time` must be given together"),
    ("r_max_time = \"6\"\ntime = \"t\"", r"`\[anonymity\] r_max_time` must be a duration"),
    ("radius = 100", r"unknown key\(s\) in `\[anonymity\]`: \['radius'\]"),
])
def test_section_refusals(tmp_path, line, match):
    path = tmp_path / "spec.toml"
    path.write_text(f"{MINIMAL}\n[anonymity]\n{line}\n", encoding="utf-8")
    with pytest.raises(SpecError, match=match):
        load_spec(path)


def test_release_diagnostics_related_to_at_risk(bundled):
    spec, data = bundled
    loc = _locations(spec, data)
    assert loc.at_risk is None and loc.relation_to_at_risk() is None
    assert loc.spatial_k.radius_m == 100.0 and loc.outliers.policy.r_max_m == 2000.0
    coords = coordinates_m(data.gdf)
    at_risk = find_at_risk(coords, data.sites.site_index, 500.0).at_risk
    loc = loc.with_at_risk(at_risk)
    rel = loc.relation_to_at_risk()
    assert rel["n_at_risk"] == at_risk.sum()
    assert rel["n_at_risk_below_k"] == (at_risk & (loc.spatial_k.spatial_k < 5)).sum()
    # no other record within 500 m implies fewer than 5 within 100 m
    assert rel["n_at_risk_below_k"] == rel["n_at_risk"]
    assert rel["n_at_risk_labelled_not_ok"] == (at_risk & (loc.outliers.label != "ok")).sum()
    assert sum(rel["at_risk_by_label"].values()) == rel["n_at_risk"]
    summary = _jsonable(loc.summary())
    text = json.dumps(summary, allow_nan=False)
    assert summary["moves_locations"] is False
    assert summary["spatial_k"]["n_records"] == data.n_records == 140
    # summary numbers only: no per-record list, no coordinate
    def longest(obj):
        if isinstance(obj, dict):
            return max([longest(v) for v in obj.values()] or [0])
        if isinstance(obj, list):
            return max([len(obj)] + [longest(v) for v in obj])
        return 0

    assert longest(summary) < 20
    x = coordinates_m(data.gdf)[:, 0]
    assert not any(f"{v:.3f}"[:-1] in text for v in x[:20])
    per_record = loc.per_record()
    assert len(per_record) == 140
    assert {"id", "spatial_k", "below_k", "isolation_ratio", "policy_label",
            "policy_disposal", "at_risk"} <= set(per_record.columns)
    assert not {"x_m", "y_m", "published_x_m"} & set(per_record.columns)


def test_report_tables(bundled):
    spec, data = bundled
    loc = _locations(spec, data).with_at_risk(np.zeros(data.n_records, dtype=bool))
    t = report_tables(loc)
    assert {"overview", "k_distribution", "k_histogram", "k_by_group", "worst_offenders",
            "labels", "units", "at_risk", "bias", "bias_statement"} <= set(t)
    assert t["k_histogram"]["n_records"].sum() == 140
    items = dict(zip(t["overview"]["item"], t["overview"]["value"]))
    assert items["locations moved in this release"] == "none (diagnostics only)"
    assert t["at_risk"]["at_risk"].tolist() == ["not at risk"]


@pytest.mark.filterwarnings("error::UserWarning")
def test_cap_breach_in_a_release_is_reported_not_raised(bundled):
    _, data = bundled
    policy = AnonymityConfig(r_max_m=50.0, max_suppressed_share=0.0).policy()
    loc = location_diagnostics(data.gdf, policy=policy, id_column="id")  # no raise, no warning
    assert loc.outliers.refused and loc.summary()["outlier_policy"]["refused"]
    assert "exceeds `max_suppressed_share`" in loc.summary()["outlier_policy"]["failures"][0]


def test_missing_anonymity_column_fails_at_load(tmp_path):
    text = Path(bundled_spec_path()).read_text(encoding="utf-8")
    text = text.replace('path = "synthgeo:sacramento_home_sales.csv"',
                        f'path = "{Path(bundled_spec_path()).parent / "sacramento_home_sales.csv"}"')
    path = tmp_path / "spec.toml"
    # the bundled spec has an [anonymity] section: add the key to it
    path.write_text(text.replace("[anonymity]\n", '[anonymity]\nunit = "county"\n'),
                    encoding="utf-8")
    from synthgeo import InputError

    with pytest.raises(InputError, match=r"column\(s\) \['county'\] not found"):
        prepare_data(load_spec(path))


def test_bias_statement_of_a_diagnosed_policy_says_would_and_compares_model_columns(bundled):
    """New-user finding: under treatment = "none" the paragraph said records *were* suppressed
    and averaged zip and longitude; it now says *would* and compares covariates and response."""
    spec, data = bundled
    loc = _locations(spec, data)
    n_sup = loc.outliers.overall["n_suppressed"]
    assert n_sup > 0  # the bundled policy would suppress some sales
    text = loc.outliers.bias_statement
    assert f"{n_sup} record(s) would be suppressed" in text and " were suppressed" not in text
    compared = set(loc.outliers.bias["attribute"])
    assert compared <= {*spec.data.covariates, *spec.data.response_names}
    assert compared and "zip" not in compared
    # and the board reads it in the report (break-it: the report had no bias statement)
    from synthgeo.release.report import section_locations

    body = section_locations(loc).body
    assert "outlier-bias-statement" in body and "would be suppressed" in body
    assert "table-outlier-bias" in body
