"""Issue 12, item 5: the location treatment of ``run`` and the location verdict."""

from __future__ import annotations

import json
import struct

import geopandas
import numpy as np
import pandas as pd
import pytest

from synthgeo._errors import LocationError
from synthgeo.cli.main import main
from synthgeo.config import bundled_spec_path, load_spec
from synthgeo.locations import (
    OutlierPolicy,
    apply_outlier_policy,
    measure_spatial_k,
    report_tables,
)
from synthgeo.locations.diagnostics import enforce_verdict, location_diagnostics
from synthgeo.locations.treatment import apply_treatment, location_verdict

LOOSE = dict(max_suppressed_share=1.0, max_unit_suppressed_share=1.0)


def layer(xy, **cols):
    xy = np.asarray(xy, float)
    return geopandas.GeoDataFrame(cols, geometry=geopandas.points_from_xy(xy[:, 0], xy[:, 1]),
                                  crs="+proj=aeqd +lat_0=45 +lon_0=-93 +units=m +datum=WGS84")


def cluster(n, at=(0.0, 0.0), spread=10.0):
    ang = 2 * np.pi * np.arange(n) / n
    return np.column_stack([at[0] + spread * np.cos(ang), at[1] + spread * np.sin(ang)])


@pytest.fixture()
def hand():
    """A cluster of 6 (ok), an outlier 160 m off (merge), one 300 m off (generalise), one
    far away (suppress); k = 5, r_max = 100 m, groups up to 3 r_max allowed, and disposals
    beyond r_max (issue 23's bound lifted, so that the group and the cell exist: the verdict
    fails on them)."""
    xy = np.vstack([cluster(6), [[160.0, 0.0]], [[0.0, 300.0]], [[5000.0, 5000.0]]])
    pts = layer(xy, unit=["a"] * 6 + ["a", "b", "b"])
    policy = OutlierPolicy(k=5, r_max_m=100.0, group_diameter_ratio=3.0,
                           disposal_bound_ratio=1e6, **LOOSE)
    ol = apply_outlier_policy(pts, policy, unit="unit", on_failure="report")
    sk = measure_spatial_k(pts, 100.0, k=5)
    return xy, pts, ol, sk


def test_apply_publishes_the_disposals_and_remeasures_spatial_k(hand):
    xy, pts, ol, sk = hand
    assert ol.label[6:].tolist() == ["merge", "generalise", "suppress"]
    t = apply_treatment(pts, ol, sk, treatment="apply")
    assert t.released.tolist() == [True] * 8 + [False]
    merged = np.flatnonzero(ol.disposal == "merged")
    assert 6 in merged and len(merged) == 5
    np.testing.assert_allclose(t.published_m[merged], np.tile(xy[merged].mean(0), (5, 1)))
    size = t.cell_size_m[7]
    assert t.disposal[7] == "generalised" and size > 0
    # the cell centre: the cell of side `size` on the quadtree holding the true point
    assert np.all(np.abs(t.published_m[7] - xy[7]) <= size / 2)
    assert np.isnan(t.published_m[8]).all()
    untouched = np.flatnonzero(ol.disposal == "none")
    np.testing.assert_array_equal(t.published_m[untouched], xy[untouched])
    # spatial k after the treatment: a brute-force count on the published points
    pub = t.published_m[t.released]
    d = np.hypot(*(pub[:, None, :] - pub[None, :, :]).transpose(2, 0, 1))
    brute = (d <= 100.0 + 1e-9).sum(axis=1)
    assert t.spatial_k_after["n_below_k"] == int((brute < 5).sum())
    assert t.spatial_k_after["n_records"] == 8
    assert t.withheld == {"n": 1, "unit_column": "unit", "by_unit": {"b": 1}}
    assert t.totals == {"n_records": 9, "n_released": 8, "n_withheld": 1, "consistent": True}
    none = apply_treatment(pts, ol, sk, treatment="none")
    assert none.released.all() and not none.moves_locations
    np.testing.assert_array_equal(none.published_m, xy)


def test_the_verdict_rules(hand):
    xy, pts, ol, sk = hand
    none = location_verdict(ol, apply_treatment(pts, ol, sk, treatment="none"), sk)
    assert none.status == "FAIL" and none.details["n_exact_flagged"] == 3
    assert "3 record(s) the outlier policy labels merge/generalise/suppress are released at " \
           "their exact location" in none.reasons[0]
    applied = location_verdict(ol, apply_treatment(pts, ol, sk, treatment="apply"), sk)
    # issue 23: the group and the cell lie beyond r_max = 100 m: never a PASS
    assert applied.status == "FAIL" and len(applied.reasons) == 1
    assert "beyond r_max = 100 m, the largest generalisation" in applied.reasons[0]
    d = applied.to_dict()
    assert (d["status"], d["treatment"], d["n_withheld"], d["n_moved"]) == ("FAIL", "apply", 1, 6)
    assert d["spatial_k_before"]["n_records"] == 9 and d["spatial_k_after"]["n_records"] == 8
    size = ol.cell_size_m[7]  # the record 300 m off: its cell's half-diagonal, by hand
    assert d["widest_disposal"]["kind"] == "cell" and d["widest_disposal"]["cell_m"] == size
    assert d["widest_disposal"]["radius_m"] == pytest.approx(size * np.sqrt(2) / 2)
    assert not d["widest_disposal"]["within_r_max"]
    assert "widest disposal cell " in applied.summary_line()
    # under the bound the two outliers cannot be placed within 100 m: suppressed, and it passes
    bounded = apply_outlier_policy(pts, OutlierPolicy(k=5, r_max_m=100.0,
                                                      group_diameter_ratio=3.0, **LOOSE),
                                   unit="unit", on_failure="report")
    ok = location_verdict(bounded, apply_treatment(pts, bounded, sk, treatment="apply"), sk)
    assert ok.status == "PASS" and ok.passed and ok.reasons == ()
    assert (ok.details["n_withheld"], ok.details["n_moved"]) == (3, 0)
    assert ok.details["widest_disposal"]["kind"] == "none"
    # a refused policy cannot be applied
    strict = apply_outlier_policy(pts, OutlierPolicy(k=5, r_max_m=100.0,
                                                     group_diameter_ratio=3.0),
                                  on_failure="report")
    refused = location_verdict(strict, apply_treatment(pts, strict, sk, treatment="apply"))
    assert refused.status == "FAIL" and "the outlier policy refuses" in refused.reasons[0]
    # everyone ok: "none" passes
    fine = layer(cluster(8))
    ol_fine = apply_outlier_policy(fine, OutlierPolicy(k=5, r_max_m=100.0), on_failure="report")
    sk_fine = measure_spatial_k(fine, 100.0, k=5)
    assert location_verdict(ol_fine, apply_treatment(fine, ol_fine, sk_fine)).status == "PASS"
    assert location_verdict(None, None).status == "NOT ASSESSED"


def test_stop_raises_and_warn_records_the_failure(hand):
    _, pts, _, _ = hand
    loc = location_diagnostics(pts, radius_m=100.0, k=5, policy=OutlierPolicy(
        k=5, r_max_m=100.0, **LOOSE), unit="unit", treatment="none")
    assert loc.verdict.status == "FAIL"
    with pytest.raises(LocationError, match=r"location verdict FAIL \(treatment = 'none'\).*"
                                            r"Nothing was written.*on_location_failure"):
        enforce_verdict(loc, "stop")
    with pytest.warns(UserWarning, match="location verdict FAIL"):
        warned = enforce_verdict(loc, "warn")
    assert [w["code"] for w in warned.warnings] == ["location_verdict_fail"]
    rows = dict(zip(*report_tables(warned)["overview"][["item", "value"]].T.to_numpy()))
    assert rows["location treatment"] == '"none"' and rows["location verdict"].startswith("FAIL")
    assert "warning: location_verdict_fail" in rows


# --- through the pipeline and the writer (fake sampler: seconds) ------------------------------


@pytest.fixture(scope="module")
def applied():
    from synthgeo.testing import fake_release_result

    # issue 23: at r_max = 2 km no disposal fits within r_max (80 of 140 would be withheld);
    # at 3 km with groups up to 2 r_max wide: 25 merged, 2 generalised, 37 withheld
    spec = load_spec(bundled_spec_path()).replace(
        "anonymity", treatment="apply", r_max_m=3000.0, group_diameter_ratio=2.0,
        max_suppressed_share=0.3, max_unit_suppressed_share=1.0, unit="city",
        on_location_failure="stop")
    return fake_release_result(spec, n_implicates=3, n_draws=200)


def test_released_frames_use_the_treated_geometry(applied):
    from synthgeo._seed import run_seed
    from synthgeo.release.records import released_records
    from synthgeo.release.writer import release_frames

    loc = applied.locations
    t = loc.treatment
    assert loc.verdict.status == "PASS" and t.totals["n_withheld"] == 37
    pub = release_frames(applied)["restricted"]
    rows = released_records(applied.spec, applied.data, applied.locations,
                            run_seed(applied)).rows  # released row i is record rows[i]
    n_kept = int(t.released.sum())
    assert len(pub) == 3 * n_kept and set(pub["id"]) == set(range(1, n_kept + 1))
    assert set(rows) == set(np.flatnonzero(t.released))  # withheld records left out
    first = pub[pub["implicate"] == 1].reset_index(drop=True)
    lonlat = geopandas.GeoSeries(geopandas.points_from_xy(*t.published_m[rows].T),
                                 crs=applied.data.gdf.crs).to_crs(4326)
    np.testing.assert_allclose(first.geometry.x, lonlat.x, atol=1e-9)
    np.testing.assert_allclose(first["lon"], lonlat.x, atol=1e-9)  # the x/y columns too
    np.testing.assert_allclose(first["lat"], lonlat.y, atol=1e-9)
    assert set(first["location_disposal"]) <= {"none", "merged", "generalised"}
    moved = first["location_disposal"] != "none"
    true = applied.data.gdf.to_crs(4326).geometry.iloc[rows].reset_index(drop=True)
    assert moved.sum() == loc.verdict.details["n_moved"] > 0
    assert (np.hypot(first.geometry.x - true.x, first.geometry.y - true.y)[moved] > 0).all()
    y = applied.implicates["restricted"]["y_synthetic"].values[0][rows]
    np.testing.assert_allclose(first["log_price"], y)


def test_no_exact_location_of_a_withheld_record_anywhere_in_release(applied, tmp_path):
    from synthgeo.release.writer import write_release

    out = write_release(applied, tmp_path / "out")
    t = applied.locations.treatment
    raw = pd.read_csv(bundled_spec_path().parent / "sacramento_home_sales.csv").set_index("id")
    gone = raw.loc[applied.data.record_id[~t.released]]
    blobs = [p.read_bytes() for p in (out / "release").rglob("*") if p.is_file()]
    assert blobs
    for lon, lat in gone[["lon", "lat"]].itertuples(index=False):
        for value in (lon, lat):
            for token in (repr(value).encode(), f"{value:.6f}".encode(),
                          struct.pack("<d", value)):
                assert not any(token in b for b in blobs), (value, token)
    # the data users' README says what was done (it said "every record is in the file")
    readme = (out / "release" / "README.md").read_text(encoding="utf-8")
    n_moved = applied.locations.verdict.details["n_moved"]
    assert "103 of the 140 records are in the file: 37 were withheld" in readme
    assert f"and {n_moved} are published at a coarser" in readme
    assert "Every record is in the file" not in readme and "(103 rows each)" in readme
    rec = json.loads((out / "release.json").read_text())
    v = rec["verdicts"]["location"]
    assert (v["status"], v["treatment"], v["n_withheld"]) == ("PASS", "apply", 37)
    assert sum(v["withheld"]["by_unit"].values()) == 37
    assert v["widest_disposal"]["within_r_max"] and v["widest_disposal"]["radius_m"] <= 3000.0
    assert rec["locations"]["moves_locations"] is True
    assert rec["crs"]["coordinate_unit"]["name"] == "degree"
    assert "exact_duplicates" in [w["code"] for w in rec["warnings"]]
    html_rows = report_tables(applied.locations)["overview"]
    assert "spatial k after the treatment: below k = 5 / median" in set(html_rows["item"])


def test_run_stops_on_a_failing_verdict_before_fitting_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    rc = main(["run", "--out", str(out), "--on-location-failure", "stop"])
    said = capsys.readouterr()
    err = said.err
    assert rc == 1 and "location verdict FAIL (treatment = 'none')" in err
    assert (said.out + err).count("location verdict FAIL") == 1  # said once (break-it finding)
    # 80 (was 79 before issue 23): a record left isolated once its neighbours, which could not
    # be placed within r_max, were suppressed
    assert "80 record(s) the outlier policy labels merge/generalise/suppress" in err
    assert not out.exists()
