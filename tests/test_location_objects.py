"""The location stages' objects: short, safe reprs, and the lon/lat frames sg.synthesize accepts.

Issue 26: every public result's repr is short (≤ 2 kB), shows counts and settings, never a
record-level value; ``sg.spatial_k`` and ``sg.outlier_policy`` take an EPSG:4326 frame and
project it as ``sg.synthesize`` does.
"""

from __future__ import annotations

import geopandas
import numpy as np
import pandas as pd
import pytest

import synthgeo as sg
from synthgeo.config import bundled_spec_path


@pytest.fixture(scope="module")
def lonlat():
    """The bundled sales as a lon/lat GeoDataFrame built in memory (EPSG:4326)."""
    df = pd.read_csv(bundled_spec_path().parent / "sacramento_home_sales.csv")
    return geopandas.GeoDataFrame(df, geometry=geopandas.points_from_xy(df["lon"], df["lat"]),
                                  crs="EPSG:4326")


def _safe(obj, *needles: str) -> str:
    text = repr(obj)
    assert len(text) <= 2048 and "confidential contents not shown" in text
    assert "array" not in text and "seed" not in text
    for needle in needles:
        assert needle not in text, needle
    return text


def test_spatial_k_takes_a_lonlat_frame_as_synthesize_does(lonlat):
    before = lonlat.copy()
    got = sg.spatial_k(lonlat, radius_m=500, k=3)
    utm = lonlat.to_crs(lonlat.estimate_utm_crs())
    want = sg.spatial_k(utm, radius_m=500, k=3)
    np.testing.assert_array_equal(got.spatial_k, want.spatial_k)
    assert got.crs_wkt == want.crs_wkt
    pd.testing.assert_frame_equal(lonlat, before)  # the input is never modified
    text = _safe(got, f"{lonlat['lon'].iloc[0]:.4f}")
    assert text.startswith(f"SpatialKResult(n_records={len(lonlat)}, radius_m=500.0, k=3")


def test_a_frame_without_crs_is_still_refused_with_the_fix(lonlat):
    with pytest.raises(sg.InputError, match=r"no CRS.*set_crs"):
        sg.spatial_k(lonlat.set_crs(None, allow_override=True), radius_m=500)


def test_outlier_policy_takes_a_lonlat_frame_and_its_repr_is_counts(lonlat):
    policy = sg.OutlierPolicy(k=3, r_max_m=3000, max_suppressed_share=0.5,
                              max_unit_suppressed_share=1.0)
    res = sg.outlier_policy(lonlat, policy, on_failure="report")
    utm = sg.outlier_policy(lonlat.to_crs(lonlat.estimate_utm_crs()), policy,
                            on_failure="report")
    np.testing.assert_array_equal(res.disposal, utm.disposal)
    text = _safe(res, f"{lonlat['lon'].iloc[0]:.4f}")
    assert f"n_records={len(lonlat)}" in text and "disposals=" in text


def test_mask_and_choose_k_results_show_no_location_or_seed():
    from synthgeo.masking import ExcessNearSource

    rng = np.random.default_rng(3)
    crs = "EPSG:27700"
    # 40 cases spread out and 20 clustered within 300 m of the source (an excess to keep)
    cases_xy = np.vstack([rng.uniform(0, 4000, (40, 2)) + [350_000, 410_000],
                          rng.uniform(-200, 200, (20, 2)) + [352_000, 412_000]])
    hh_xy = rng.uniform(0, 4000, (1500, 2)) + [350_000, 410_000]
    cases = geopandas.GeoSeries(geopandas.points_from_xy(*cases_xy.T), crs=crs)
    hh = geopandas.GeoSeries(geopandas.points_from_xy(*hh_xy.T), crs=crs)
    masked = sg.mask(cases, hh, k=10, random_seed=987654)
    text = _safe(masked, "987654", f"{cases_xy[0, 0]:.1f}"[:8])
    assert text.startswith("DonutMask(n_records=60, k=10")
    test = ExcessNearSource.from_households(hh, source_xy_m=(352_000.0, 412_000.0),
                                            radius_m=1000)
    res = sg.choose_k(cases, hh, utility=test, k_grid=(5, 20), n_replicates=5,
                      random_seed=987654, progressbar=False)
    text = _safe(res, "987654")
    assert text.startswith("ChooseKResult(chosen_k=")
