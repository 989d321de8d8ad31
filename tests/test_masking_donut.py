"""Donut mask to k: r_k against brute force, displacement bounds, uniform in area, bad input."""

from __future__ import annotations

import geopandas
import numpy as np
import pytest
import shapely
from scipy import stats
from scipy.spatial.distance import cdist

from synthgeo._errors import InputError, SpecError
from synthgeo.masking import kth_household_distance, mask_to_k
from synthgeo.masking.donut import _draw_donut

CRS = "EPSG:27700"  # British National Grid, metres


def points(xy, crs=CRS, **columns) -> geopandas.GeoDataFrame:
    xy = np.asarray(xy, dtype=float)
    gdf = geopandas.GeoDataFrame(columns, geometry=geopandas.points_from_xy(xy[:, 0], xy[:, 1]),
                                 crs=crs)
    if "id" in columns:
        gdf.attrs["id_column"] = "id"  # as load_points sets it
    return gdf


@pytest.fixture(scope="module")
def layout():
    """40 cases and 600 households, uniform on a 5 km square (seeded)."""
    rng = np.random.default_rng(20)
    cases = rng.uniform(0, 5000, (40, 2)) + [350_000, 410_000]
    hh = rng.uniform(0, 5000, (600, 2)) + [350_000, 410_000]
    return points(cases, id=np.arange(100, 140)), points(hh), cases, hh


@pytest.mark.parametrize("k", [1, 2, 7, 50])
def test_kth_distance_matches_brute_force(layout, k):
    cases, hh, cxy, hxy = layout
    expected = np.sort(cdist(cxy, hxy), axis=1)[:, k - 1]
    np.testing.assert_allclose(kth_household_distance(cases, hh, k), expected, rtol=1e-12)


def test_weighted_kth_distance_equals_repeated_points(layout):
    # a point holding w households is the same as w households at that point
    cases, hh, cxy, hxy = layout
    w = np.random.default_rng(1).integers(0, 5, len(hxy))
    repeated = np.repeat(hxy, w, axis=0)
    for k in (1, 3, 10, 40):
        expected = np.sort(cdist(cxy, repeated), axis=1)[:, k - 1]
        got = kth_household_distance(cases, hh, k, weights=w)
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    # by column name, and fractional counts (1.5 + 1.5 >= 3 at the second point)
    hh2 = points([[0, 10], [0, 20], [0, 30]], people=[1.5, 1.5, 10.0])
    case = points([[0, 0]])
    assert kth_household_distance(case, hh2, 3, weights="people")[0] == pytest.approx(20.0)
    assert kth_household_distance(case, hh2, 4, weights="people")[0] == pytest.approx(30.0)


def test_own_household_counted_when_in_layer():
    hh = points([[0, 0], [30, 0], [0, 40], [100, 0]])
    case = points([[0, 0]])  # lives at the first household
    np.testing.assert_allclose([kth_household_distance(case, hh, k)[0] for k in (1, 2, 3, 4)],
                               [0, 30, 40, 100])


def test_displacement_within_annulus_and_points_move(layout):
    cases, hh, cxy, _ = layout
    for k in (3, 20):
        m = mask_to_k(cases, hh, k=k, random_seed=5)
        mxy = np.column_stack([m.masked.geometry.x, m.masked.geometry.y])
        d = np.hypot(*(mxy - cxy).T)
        np.testing.assert_allclose(d, m.displacement_m, rtol=1e-9)
        np.testing.assert_allclose(m.r_k_m, kth_household_distance(cases, hh, k))
        assert (d >= 0.5 * m.r_k_m * (1 - 1e-12)).all() and (d <= m.r_k_m * (1 + 1e-12)).all()
        assert (d > 0).all()  # every masked point differs from its true point
        assert m.masked["id"].tolist() == list(range(100, 140))
        assert m.masked.crs == cases.crs and m.k == k


def test_uniform_in_area_two_sample_ks():
    """Seeded: d² is uniform on [r²/4, r²] and the angle on [0, 2π); uniform radius is not."""
    rng = np.random.default_rng(2024)
    xy = np.zeros((1, 2))
    masked, d, _ = _draw_donut(xy, np.array([1.0]), 20_000, rng)
    d = d[:, 0]
    u_area = (d**2 - 0.25) / 0.75
    assert stats.kstest(u_area, "uniform").pvalue > 0.01
    angle = np.arctan2(masked[:, 0, 1], masked[:, 0, 0]) % (2 * np.pi)
    assert stats.kstest(angle / (2 * np.pi), "uniform").pvalue > 0.01
    # the test has power: uniform-in-radius (d uniform on [0.5, 1]) is clearly rejected
    assert stats.kstest((d - 0.5) / 0.5, "uniform").pvalue < 1e-6
    # mean distance of uniform-in-area on [1/2, 1]: (2/3)(1 - 1/8)/(1 - 1/4) = 7/9
    assert d.mean() == pytest.approx(7 / 9, abs=3 * d.std() / np.sqrt(len(d)))


def test_region_redraws_keep_points_inside():
    # households on a grid; a region that cuts off everything west of x = 0
    g = np.arange(-1000, 1001, 50.0)
    hh = points(np.column_stack([a.ravel() for a in np.meshgrid(g, g)]))
    cases = points([[10, 0], [20, 300], [400, -200]])
    region = shapely.box(0, -2000, 2000, 2000)
    m = mask_to_k(cases, hh, k=200, region=region, random_seed=3)
    assert shapely.contains_xy(region, m.masked.geometry.x, m.masked.geometry.y).all()
    assert (m.displacement_m >= 0.5 * m.r_k_m).all() and (m.displacement_m <= m.r_k_m).all()
    many, _, n_redraws = _draw_donut(np.array([[10.0, 0.0]]), np.array([400.0]), 2000,
                                     np.random.default_rng(0), region)
    assert (many[..., 0] >= 0).all()
    # a case 10 m from the edge with r_k = 400 m: about half its draws leave the region
    assert 0.3 * 2000 < n_redraws < 3 * 2000
    # a region given as a GeoSeries in the same CRS works too
    mask_to_k(cases, hh, k=20, region=geopandas.GeoSeries([region], crs=CRS), random_seed=1)


def test_deterministic_by_seed(layout):
    cases, hh, _, _ = layout
    a = mask_to_k(cases, hh, k=10, random_seed=42)
    b = mask_to_k(cases, hh, k=10, random_seed=42)
    c = mask_to_k(cases, hh, k=10, random_seed=43)
    xy = [np.column_stack([m.masked.geometry.x, m.masked.geometry.y]) for m in (a, b, c)]
    np.testing.assert_array_equal(xy[0], xy[1])
    assert (xy[0] != xy[2]).all()
    assert a.random_seed == 42
    frame = a.to_dataframe()
    assert list(frame.columns) == ["id", "r_k_m", "displacement_m"] and len(frame) == 40


def test_zero_r_k_warns():
    hh = points([[0, 0]] * 3 + [[500, 0]])
    with pytest.warns(UserWarning, match=r"1 case\(s\) have at least k = 3 households at their"):
        m = mask_to_k(points([[0, 0]]), hh, k=3, random_seed=1)
    assert m.displacement_m[0] == 0


def test_bad_input_refused(layout):
    cases, hh, cxy, hxy = layout
    with pytest.raises(InputError, match="`cases`: the layer has no CRS"):
        mask_to_k(cases.set_crs(None, allow_override=True), hh, k=5)
    with pytest.raises(InputError, match="`households`.*geographic"):
        mask_to_k(cases, hh.to_crs(4326), k=5)
    with pytest.raises(InputError, match="Web Mercator"):
        mask_to_k(cases.to_crs(3857), hh.to_crs(3857), k=5)
    with pytest.raises(InputError, match=r"`cases` is in .*27700.* but `households` is in .*32630"):
        mask_to_k(cases, hh.to_crs(32630), k=5)
    nan = cxy.copy()
    nan[3] = np.nan
    with pytest.raises(InputError, match=r"1 point\(s\) with missing \(NaN\).*ids \[103\]"):
        mask_to_k(points(nan, id=np.arange(100, 140)), hh, k=5)
    with pytest.raises(SpecError, match="`k` = 601 exceeds the 600 households"):
        mask_to_k(cases, hh, k=601)
    with pytest.raises(SpecError, match="`k` = 0 must be at least 2"):
        mask_to_k(cases, hh, k=0)
    with pytest.raises(TypeError, match="`k` must be an integer"):
        mask_to_k(cases, hh, k=2.5)
    with pytest.raises(TypeError, match="GeoDataFrame or GeoSeries"):
        mask_to_k(cxy, hh, k=5)
    with pytest.raises(InputError, match="negative"):
        mask_to_k(cases, hh, k=5, weights=-np.ones(len(hxy)))
    with pytest.raises(InputError, match=r"shape \(3,\); expected \(600,\)"):
        mask_to_k(cases, hh, k=5, weights=[1, 2, 3])
    with pytest.raises(SpecError, match="`k` = 601 exceeds the 300 households"):
        mask_to_k(cases, hh, k=601, weights=np.full(len(hxy), 0.5))
    with pytest.raises(SpecError, match="`random_seed` = -1"):
        mask_to_k(cases, hh, k=5, random_seed=-1)


def test_bad_region_refused(layout):
    cases, hh, _, _ = layout
    with pytest.raises(InputError, match=r"40 case\(s\) lie outside the study region"):
        mask_to_k(cases, hh, k=5, region=shapely.box(0, 0, 10, 10))
    bowtie = shapely.Polygon([(0, 0), (1, 1), (1, 0), (0, 1)])
    with pytest.raises(InputError, match="not a valid polygon.*Self-intersection"):
        mask_to_k(cases, hh, k=5, region=bowtie)
    with pytest.raises(InputError, match="region` has no CRS"):
        mask_to_k(cases, hh, k=5, region=geopandas.GeoSeries([shapely.box(0, 0, 1, 1)]))
    # a 2 m wide corridor around a case whose annulus is 100 m or more away: cannot stay inside
    hh2 = points([[0, 200], [0, -200], [200, 0]])
    sliver = shapely.box(-1, -1000, 1, 1000)
    with pytest.raises(InputError, match=r"after 3 redraws the displacement of case\(s\) \[0\]"):
        mask_to_k(points([[0, 0]]), hh2, k=2, region=sliver, random_seed=0, max_redraws=3)
