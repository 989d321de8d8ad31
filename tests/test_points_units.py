"""load_points(coord_unit_m=...): CSV coordinates in kilometres on a metre-based CRS."""

from __future__ import annotations

from pathlib import Path

import geopandas
import numpy as np
import pandas as pd
import pytest

import synthgeo
from synthgeo._errors import InputError
from synthgeo.io.points import coordinates_m, load_points

CHORLEY = Path(synthgeo.__file__).parent / "data" / "chorley_ribble_cancer.csv"


def test_chorley_km_to_metres():
    raw = pd.read_csv(CHORLEY)
    with pytest.warns(UserWarning, match="exact duplicate"):
        gdf = load_points(CHORLEY, x="x_km", y="y_km", crs="EPSG:27700", coord_unit_m=1000,
                          target_crs="EPSG:27700", id_column="id")
    assert gdf.crs.to_epsg() == 27700 and len(gdf) == 1036
    np.testing.assert_allclose(coordinates_m(gdf), raw[["x_km", "y_km"]].to_numpy() * 1000)
    assert gdf["x_km"].tolist() == raw["x_km"].tolist()  # input columns kept as read
    # the derived lon/lat in the file agree with the km → m reading (to the 6 decimals given)
    lonlat = gdf.to_crs(4326)
    np.testing.assert_allclose(lonlat.geometry.x, raw["lon_derived"], atol=2e-6)
    np.testing.assert_allclose(lonlat.geometry.y, raw["lat_derived"], atol=2e-6)
    # and the distances to the incinerator are those the file states
    d_km = np.hypot(*(coordinates_m(gdf) - [354_500, 413_600]).T) / 1000
    np.testing.assert_allclose(d_km, raw["dist_incinerator_km"], atol=6e-4)


def test_default_unit_unchanged(tmp_path):
    path = tmp_path / "m.csv"
    pd.DataFrame({"x": [350_000.0 + 20 * i for i in range(10)], "y": 410_000.0}).to_csv(path)
    gdf = load_points(path, x="x", y="y", crs="EPSG:27700", target_crs="EPSG:27700")
    assert coordinates_m(gdf)[1, 0] == 350_020.0


def test_unit_refused_where_it_does_not_apply(tmp_path):
    with pytest.raises(InputError, match="`coord_unit_m` must be a positive number"):
        load_points(CHORLEY, x="x_km", y="y_km", crs="EPSG:27700", coord_unit_m=0)
    with pytest.raises(InputError, match="`coord_unit_m` must be a positive number"):
        load_points(CHORLEY, x="x_km", y="y_km", crs="EPSG:27700", coord_unit_m=float("nan"))
    with pytest.raises(InputError, match="is geographic"):
        load_points(CHORLEY, x="lon_derived", y="lat_derived", crs="EPSG:4326",
                    coord_unit_m=1000)
    gpkg = tmp_path / "p.gpkg"
    geopandas.GeoDataFrame({"a": range(10)}, geometry=geopandas.points_from_xy(range(10),
                           range(10)), crs=27700).to_file(gpkg)
    with pytest.raises(InputError, match="applies to CSV x/y columns only"):
        load_points(gpkg, coord_unit_m=1000)


def test_swapped_lat_lon_names_refused(tmp_path):
    """lon/lat both within ±90° (here Europe) pass the range checks; the names show the swap."""
    rng = np.random.default_rng(0)
    path = tmp_path / "eu.csv"
    pd.DataFrame({"lat": 48.1 + rng.uniform(0, 0.2, 60),
                  "lon": 11.5 + rng.uniform(0, 0.2, 60)}).to_csv(path, index=False)
    with pytest.raises(InputError, match=r"`x` = `lat` names a latitude and `y` = `lon` names "
                                         r"a longitude: .*swap them \(\[data\] x/y, or --x/--y\)"):
        load_points(path, x="lat", y="lon", crs="EPSG:4326")
    pd.read_csv(path).assign(east=lambda f: f["lat"]).to_csv(path, index=False)
    with pytest.raises(InputError, match=r"^`y` = `lon` names a longitude: x is the longitude"):
        load_points(path, x="east", y="lon", crs="EPSG:4326")
    gdf = load_points(path, x="lon", y="lat", crs="EPSG:4326")  # the right way round
    assert gdf.crs.is_projected and len(gdf) == 60


@pytest.mark.parametrize("epsg, lonlat, factor, said", [
    (2226, (-121.5, 38.6), 1200 / 3937, r"US survey foot' \(1 unit = 1200/3937 = 0\.3048006 m\)"),
    (2874, (-118.3, 34.1), 1200 / 3937, r"US survey foot' \(1 unit = 1200/3937 = 0\.3048006 m\)"),
    (2256, (-110.0, 46.5), 0.3048, r"foot' \(1 unit = 0\.3048 m\)"),
])
def test_a_crs_in_feet_is_read_in_metres_or_refused_naming_its_factor(tmp_path, epsg, lonlat,
                                                                      factor, said):
    """State-plane feet (US survey or international): projected to metres by the CRS's own
    factor; kept in feet (a feet `target_crs`, a layer in feet) refused, naming unit and factor."""
    import pyproj

    x0, y0 = pyproj.Transformer.from_crs(4326, epsg, always_xy=True).transform(*lonlat)
    rng = np.random.default_rng(epsg)
    xy_ft = np.c_[x0 + rng.uniform(0, 20_000, 30), y0 + rng.uniform(0, 20_000, 30)]
    path = tmp_path / "feet.csv"
    pd.DataFrame({"x": xy_ft[:, 0], "y": xy_ft[:, 1]}).to_csv(path, index=False)
    gdf = load_points(path, x="x", y="y", crs=f"EPSG:{epsg}", target_crs="utm")
    d_m = np.hypot(*(coordinates_m(gdf)[1:] - coordinates_m(gdf)[0]).T)
    d_ft = np.hypot(*(xy_ft[1:] - xy_ft[0]).T)
    # feet times the factor, to the scale distortion of the two projections (< 1e-3 here)
    np.testing.assert_allclose(d_m, d_ft * factor, rtol=1e-3)
    assert np.median(d_m / d_ft) != pytest.approx(1.0, rel=0.1)  # never read as metres
    refused = rf"`target_crs` = 'EPSG:{epsg}' has axis unit '.*{said}"
    with pytest.raises(InputError, match=refused):
        load_points(path, x="x", y="y", crs=f"EPSG:{epsg}", target_crs=f"EPSG:{epsg}")
    layer = geopandas.GeoDataFrame(geometry=geopandas.points_from_xy(*xy_ft.T), crs=epsg)
    with pytest.raises(InputError, match=rf"{said}, not metre; project it first"):
        coordinates_m(layer)
