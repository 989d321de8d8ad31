"""Distances need the right CRS: why Web Mercator is refused, and what we measure instead.

At 52°N a true distance d reads as d / cos(52°) = 1.62 d in EPSG:3857, so counts within 100 m
computed there miss neighbours that are truly within 100 m. Ours (load_points → UTM) match the
geodesic counts on the WGS84 ellipsoid.
"""

from __future__ import annotations

import geopandas
import numpy as np
import pandas as pd
import pyproj
import pytest

from synthgeo import InputError
from synthgeo.locations import measure_spatial_k, radius_counts
from synthgeo.io.points import coordinates_m, load_points

GEOD = pyproj.Geod(ellps="WGS84")
# distances (m) from each centre: none within 3% of the 100 m radius, so that the tiny scale
# error of a UTM zone cannot move a pair across it, while 3857's factor of 1.62 does
OFFSETS_M = (12.0, 35.0, 58.0, 70.0, 85.0, 96.0, 104.0, 130.0, 170.0, 240.0)


def _layout(seed):
    az = np.random.default_rng(seed).uniform(0, 360, len(OFFSETS_M))
    lon, lat = [], []
    for c in range(10):
        clon, clat = 0.6 + 0.02 * c, 52.0 + 0.01 * (c % 3)
        lon.append(clon)
        lat.append(clat)
        plon, plat, _ = GEOD.fwd(np.full(len(OFFSETS_M), clon), np.full(len(OFFSETS_M), clat),
                                 az, np.array(OFFSETS_M))
        lon.extend(plon)
        lat.extend(plat)
    lon, lat = np.array(lon), np.array(lat)
    n = len(lon)
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    _, _, dist = GEOD.inv(lon[i.ravel()], lat[i.ravel()], lon[j.ravel()], lat[j.ravel()])
    return lon, lat, dist.reshape(n, n)


@pytest.fixture(scope="module")
def layout_52n():
    """Ten centres near 52°N, 0.6°E, each with ten points at known geodesic distances.

    The same azimuths at every centre, drawn (seeded) until no pair lies within 3 m of the
    100 m radius; centres are over 1 km apart.
    """
    for seed in range(200):
        lon, lat, dist = _layout(seed)
        if np.abs(dist - 100.0).min() > 3.0:
            break
    else:  # pragma: no cover - the seeds above are deterministic
        raise AssertionError("no unambiguous layout")
    # brute-force geodesic counts within 100 m, itself included
    return lon, lat, (dist <= 100.0).sum(axis=1)


def test_counts_in_web_mercator_are_wrong_ours_match_geodesic(layout_52n, tmp_path):
    lon, lat, truth = layout_52n
    path = tmp_path / "points.csv"
    pd.DataFrame({"lon": lon, "lat": lat}).to_csv(path, index=False)
    gdf = load_points(path, x="lon", y="lat", crs="EPSG:4326", min_records=1)
    assert gdf.crs.to_epsg() == 32631  # UTM zone 31N, a local metric CRS
    ours = measure_spatial_k(gdf, 100.0, k=5, k_max=None).spatial_k
    np.testing.assert_array_equal(ours, truth)

    merc = geopandas.GeoSeries(geopandas.points_from_xy(lon, lat), crs=4326).to_crs(3857)
    xy_3857 = np.column_stack([merc.x, merc.y])
    wrong = radius_counts(xy_3857, 100.0)
    assert (wrong < truth).sum() >= 10  # neighbours at 70-96 m read as 113-156 m
    assert not (wrong > truth).any()
    # the factor itself: 1 / cos(52°) = 1.62
    d_true = GEOD.inv(lon[0], lat[0], lon[4], lat[4])[2]
    d_3857 = float(np.hypot(*(xy_3857[4] - xy_3857[0])))
    assert d_3857 / d_true == pytest.approx(1 / np.cos(np.radians(lat[0])), rel=2e-3)


def test_layers_without_crs_are_refused_lonlat_and_web_mercator_are_projected(layout_52n,
                                                                              tmp_path):
    lon, lat, truth = layout_52n
    pts = geopandas.points_from_xy(lon, lat)
    with pytest.raises(InputError, match="has no CRS"):
        measure_spatial_k(geopandas.GeoDataFrame(geometry=pts), 100.0)
    # lon/lat and Web Mercator frames are projected to UTM as sg.synthesize does (issue 26),
    # so the counts are the geodesic ones, never measured in degrees or in 3857
    lonlat = geopandas.GeoDataFrame(geometry=pts, crs=4326)
    got = measure_spatial_k(lonlat, 100.0, k=5, k_max=None)
    np.testing.assert_array_equal(got.spatial_k, truth)
    assert pyproj.CRS(got.crs_wkt).to_epsg() == 32631
    merc = lonlat.to_crs(3857)
    np.testing.assert_array_equal(measure_spatial_k(merc, 100.0, k=5, k_max=None).spatial_k,
                                  truth)
    with pytest.raises(InputError, match="Web Mercator"):
        coordinates_m(merc)
    # a Web Mercator file is reprojected to UTM by load_points, never measured in 3857
    path = tmp_path / "merc.gpkg"
    merc.to_file(path)
    gdf = load_points(path, min_records=1)
    assert gdf.crs.to_epsg() == 32631
    path_csv = tmp_path / "nocrs.csv"
    pd.DataFrame({"lon": lon, "lat": lat}).to_csv(path_csv, index=False)
    with pytest.raises(InputError, match="has no CRS"):
        load_points(path_csv, x="lon", y="lat")
    with pytest.raises(InputError, match="Web Mercator"):
        load_points(path_csv, x="lon", y="lat", crs="EPSG:4326", target_crs="EPSG:3857")


def test_local_crs_is_utm_in_one_zone_and_equidistant_across_zones(tmp_path):
    """Spec: the UTM zone of the data, or an azimuthal equidistant projection centred on the
    data when it spans several zones; distances then stay close to geodesic."""
    rng = np.random.default_rng(7)
    # northern California (on land: zone 10) and Nebraska (zone 14)
    lon = np.concatenate([rng.uniform(-123.9, -122.9, 20), rng.uniform(-101, -100, 20)])
    lat = rng.uniform(40, 41, 40)
    path = tmp_path / "wide.csv"
    pd.DataFrame({"lon": lon, "lat": lat}).to_csv(path, index=False)
    gdf = load_points(path, x="lon", y="lat", crs="EPSG:4326", target_crs="local")
    assert gdf.crs.coordinate_operation.method_name == "Azimuthal Equidistant"
    xy = coordinates_m(gdf)
    # 1,000+ km pairs: equidistant from the centre, so within ~1% of geodesic here, whereas the
    # UTM zone of the centre distorts them more
    i, j = 0, 25
    d_geo = GEOD.inv(lon[i], lat[i], lon[j], lat[j])[2]
    assert np.hypot(*(xy[i] - xy[j])) == pytest.approx(d_geo, rel=0.01)
    with pytest.warns(UserWarning, match="more than one UTM zone"):
        utm = load_points(path, x="lon", y="lat", crs="EPSG:4326")
    d_utm = np.hypot(*(coordinates_m(utm)[i] - coordinates_m(utm)[j]))
    assert abs(d_utm / d_geo - 1) > abs(np.hypot(*(xy[i] - xy[j])) / d_geo - 1)
    narrow = tmp_path / "narrow.csv"
    pd.DataFrame({"lon": lon[:20], "lat": lat[:20]}).to_csv(narrow, index=False)
    assert load_points(narrow, x="lon", y="lat", crs="EPSG:4326",
                       target_crs="local").crs.to_epsg() == 32610


def test_kanon_measures_a_metric_crs_as_it_is(tmp_path, capsys):
    """Review: British National Grid points were reprojected to UTM zone 30N by kanon's "local".

    A projected CRS in metres is measured in as it is; only geographic coordinates are
    projected. The counts are those of a brute-force count in the file's own metres.
    """
    from synthgeo.cli.main import main

    rng = np.random.default_rng(3)
    east = 353_000.0 + rng.uniform(0, 3000, 60)  # Chorley, in BNG metres
    north = 422_000.0 + rng.uniform(0, 3000, 60)
    path = tmp_path / "bng.csv"
    pd.DataFrame({"id": range(60), "e": east, "n": north}).to_csv(path, index=False)
    gdf = load_points(path, x="e", y="n", crs="EPSG:27700", target_crs="local")
    assert gdf.crs.to_epsg() == 27700
    np.testing.assert_array_equal(coordinates_m(gdf), np.column_stack([east, north]))
    assert main(["kanon", str(path), "--x", "e", "--y", "n", "--crs", "EPSG:27700",
                 "--id-col", "id", "--radius-m", "400"]) == 0
    out = capsys.readouterr().out
    assert "in OSGB36 / British National Grid" in out and "UTM" not in out
    k = measure_spatial_k(gdf, 400.0, k=5, k_max=None).spatial_k
    d = np.hypot(east[:, None] - east[None, :], north[:, None] - north[None, :])
    np.testing.assert_array_equal(k, (d <= 400.0 + 1e-9).sum(axis=1))
    # "utm" still forces UTM
    assert load_points(path, x="e", y="n", crs="EPSG:27700").crs.to_epsg() == 32630
