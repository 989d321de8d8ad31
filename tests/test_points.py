"""Tests for synthgeo.io.points: reading, validation and projection of input points."""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import geopandas
import numpy as np
import pandas as pd
import pyproj
import pytest

import synthgeo
from synthgeo._errors import InputError
from synthgeo.io.points import check_projected, coordinates_m, load_points

SACRAMENTO = Path(synthgeo.__file__).parent / "data" / "sacramento_home_sales.csv"
LONLAT = {"x": "lon", "y": "lat", "crs": "EPSG:4326"}


def _frame(n: int = 12) -> pd.DataFrame:
    """n distinct records around Sacramento, lon/lat in degrees."""
    i = np.arange(n)
    return pd.DataFrame(
        {
            "id": 100 + i,
            "lon": -121.5 + 0.001 * i,
            "lat": 38.5 + 0.0005 * i,
            "price": 1000.0 * (i + 1),
            "beds": i % 3 + 1,
        }
    )


def _csv(tmp_path: Path, frame: pd.DataFrame, name: str = "points.csv") -> Path:
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


def _projected(n: int = 12, crs: object = "EPSG:32610") -> geopandas.GeoDataFrame:
    i = np.arange(n)
    return geopandas.GeoDataFrame(
        {"id": i, "value": np.linspace(0.0, 1.0, n)},
        geometry=geopandas.points_from_xy(630_000.0 + 37.5 * i, 4_260_000.0 + 11.25 * i),
        crs=crs,
    )


# --- the real file ---------------------------------------------------------------------------


def test_sacramento_two_bed_subset():
    # the bundled file has two exact duplicate sales (ids 341/342, 403/404); 341/342 have 2 beds
    with pytest.warns(UserWarning, match=r"1 exact duplicate row.*`id` \[342\]\): kept"):
        gdf = load_points(SACRAMENTO, **LONLAT, id_column="id", query="beds == 2",
                          numeric_columns=["price_usd", "log_price", "sqft_living"])
    assert len(gdf) == 140
    assert gdf.crs.to_epsg() == 32610
    assert gdf.crs.axis_info[0].unit_name == "metre"
    assert list(gdf.index) == list(range(140))
    assert (gdf["beds"] == 2).all()
    assert {"id", "lon", "lat", "price_usd", "log_price"} <= set(gdf.columns)
    assert gdf.attrs["n_read"] == 932
    assert gdf.attrs["n_duplicates"] == 1
    assert gdf["sqft_living"].dtype.kind == "i"  # integer columns stay integer
    assert gdf.attrs["sha256"] == hashlib.sha256(SACRAMENTO.read_bytes()).hexdigest()
    assert pyproj.CRS.from_wkt(gdf.attrs["source_crs"]).to_epsg() == 4326

    xy = coordinates_m(gdf)
    assert xy.shape == (140, 2) and xy.dtype == np.float64
    assert 500_000 < xy[:, 0].mean() < 800_000  # UTM easting, metres
    assert 4_200_000 < xy[:, 1].mean() < 4_350_000  # northing at ~38.5°N, metres
    # planar distance in UTM vs geodesic distance on the ellipsoid, two far-apart records
    a, b = int(np.argmin(xy[:, 0])), int(np.argmax(xy[:, 0]))
    planar = float(np.hypot(*(xy[a] - xy[b])))
    _, _, geodesic = pyproj.Geod(ellps="WGS84").inv(
        gdf["lon"][a], gdf["lat"][a], gdf["lon"][b], gdf["lat"][b]
    )
    assert planar > 10_000
    assert planar == pytest.approx(geodesic, rel=1e-3)


def test_default_record_id(tmp_path):
    path = _csv(tmp_path, _frame().drop(columns="id"))
    gdf = load_points(path, **LONLAT)
    assert gdf["record"].tolist() == list(range(12))
    assert gdf.columns[0] == "record"
    assert gdf.attrs["id_column"] == "record"


def test_explicit_target_crs(tmp_path):
    gdf = load_points(_csv(tmp_path, _frame()), **LONLAT, target_crs="EPSG:3310")
    assert gdf.crs.to_epsg() == 3310
    assert check_projected(gdf).to_epsg() == 3310


# --- failures --------------------------------------------------------------------------------


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        load_points(tmp_path / "nope.csv", **LONLAT)


def test_missing_column_lists_available(tmp_path):
    path = _csv(tmp_path, _frame())
    with pytest.raises(InputError, match=r"\['sqft'\] not found.*available columns.*'price'"):
        load_points(path, **LONLAT, numeric_columns=["sqft"])
    with pytest.raises(InputError, match=r"\['zip'\] not found"):
        load_points(path, **LONLAT, required_columns=["zip"])


def test_text_in_numeric_column(tmp_path):
    frame = _frame().astype({"price": object})
    frame.loc[4, "price"] = "12a"
    with pytest.raises(InputError, match=r"`price` holds text.*'12a'.*`id` \[104\]"):
        load_points(_csv(tmp_path, frame), **LONLAT, id_column="id", numeric_columns=["price"])


def test_nan_response(tmp_path):
    frame = _frame()
    frame.loc[[2, 7], "price"] = np.nan
    with pytest.raises(InputError, match=r"`price` has 2 missing.*`id` \[102, 107\]"):
        load_points(_csv(tmp_path, frame), **LONLAT, id_column="id", numeric_columns=["price"])


def test_nan_coordinate(tmp_path):
    frame = _frame().drop(columns="id")
    frame.loc[3, "lat"] = np.nan
    with pytest.raises(InputError, match=r"coordinate column `lat` has 1 missing.*data rows \[3\]"):
        load_points(_csv(tmp_path, frame), **LONLAT)


def test_latitude_out_of_range(tmp_path):
    frame = _frame()
    frame.loc[5, "lat"] = 95.0
    with pytest.raises(InputError, match=r"latitude \(column `lat`\) outside \[-90, 90\].*95"):
        load_points(_csv(tmp_path, frame), **LONLAT, id_column="id")


def test_csv_without_crs(tmp_path):
    with pytest.raises(InputError, match=r'has no CRS: set `crs`.*"EPSG:4326"'):
        load_points(_csv(tmp_path, _frame()), x="lon", y="lat")


def test_geopackage_without_crs(tmp_path):
    path = tmp_path / "nocrs.gpkg"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyogrio warns that no crs is written
        _projected(crs=None).to_file(path)
    with pytest.raises(InputError, match="has no CRS and `crs` is not set"):
        load_points(path)
    gdf = load_points(path, crs="EPSG:32610")  # supplying it works
    assert gdf.crs.to_epsg() == 32610


def test_conflicting_crs(tmp_path):
    path = tmp_path / "layer.gpkg"
    _projected().to_file(path)
    with pytest.raises(InputError, match=r"EPSG:3310.*conflicts.*EPSG:32610"):
        load_points(path, crs="EPSG:3310")


def test_too_few_records(tmp_path):
    path = _csv(tmp_path, _frame())
    with pytest.raises(InputError, match=r"only 4 record.*`min_records` = 10"):
        load_points(path, **LONLAT, query="beds == 1")


def test_duplicate_ids(tmp_path):
    frame = _frame()
    frame.loc[6, "id"] = 101
    with pytest.raises(InputError, match=r"`id` is not unique: \[101\]"):
        load_points(_csv(tmp_path, frame), **LONLAT, id_column="id")


@pytest.mark.parametrize("target", ["EPSG:3857", 3857, "EPSG:4326", "EPSG:2249"])
def test_bad_target_crs(tmp_path, target):
    path = _csv(tmp_path, _frame())
    with pytest.raises(InputError, match=r"`target_crs`.*(Web Mercator|geographic|not metre)"):
        load_points(path, **LONLAT, target_crs=target)


def test_bad_query(tmp_path):
    with pytest.raises(InputError, match=r"`query` = 'bedz == 2' failed.*bedz"):
        load_points(_csv(tmp_path, _frame()), **LONLAT, query="bedz == 2")


def test_non_point_geometry(tmp_path):
    gdf = _projected()
    gdf.geometry = gdf.buffer(5.0)
    path = tmp_path / "polys.gpkg"
    gdf.to_file(path)
    with pytest.raises(InputError, match=r"\['Polygon'\] geometries; only Point"):
        load_points(path)


def test_unsupported_suffix_and_xy_on_layer(tmp_path):
    path = tmp_path / "points.txt"
    path.write_text("a,b\n")
    with pytest.raises(InputError, match=r"suffix '.txt'; supported"):
        load_points(path)
    layer = tmp_path / "layer.gpkg"
    _projected().to_file(layer)
    with pytest.raises(InputError, match=r"`x`/`y`.*apply to CSV only"):
        load_points(layer, x="lon", y="lat")


def test_wide_span_warns(tmp_path):
    frame = _frame()
    frame["lon"] = np.linspace(-125.0, -115.0, len(frame))
    with pytest.warns(UserWarning, match=r"span 10.0° of longitude"):
        load_points(_csv(tmp_path, frame), **LONLAT)


def test_check_projected_refuses():
    with pytest.raises(InputError, match="no CRS"):
        check_projected(_projected(crs=None))
    with pytest.raises(InputError, match="geographic.*estimate_utm_crs"):
        check_projected(_projected().to_crs(4326))
    with pytest.raises(InputError, match="Web Mercator"):
        coordinates_m(_projected().to_crs(3857))


# --- formats ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["layer.gpkg", "layer.parquet", "layer.geojson", "layer.shp"])
def test_round_trip(tmp_path, name):
    original = _projected()
    path = tmp_path / name
    if name.endswith(".parquet"):
        original.to_parquet(path)
    else:
        original.to_file(path)
    gdf = load_points(path, id_column="id", numeric_columns=["value"])
    assert gdf.crs.to_epsg() == 32610
    np.testing.assert_allclose(coordinates_m(gdf), coordinates_m(original), atol=1e-3)
    assert gdf["id"].tolist() == original["id"].tolist()


# --- duplicates ------------------------------------------------------------------------------


def test_duplicate_rows_warn_and_drop(tmp_path):
    frame = _frame()
    copies = frame.iloc[[2, 2, 5]].assign(id=[900, 901, 902])  # new ids, same everything else
    path = _csv(tmp_path, pd.concat([frame, copies]))
    with pytest.warns(UserWarning, match="3 exact duplicate row"):
        kept = load_points(path, **LONLAT, id_column="id")
    assert len(kept) == 15 and kept.attrs["n_duplicates"] == 3
    with pytest.warns(UserWarning, match="dropped"):
        dropped = load_points(path, **LONLAT, id_column="id", drop_duplicates=True)
    assert len(dropped) == 12
    assert dropped["id"].tolist() == frame["id"].tolist()
    assert list(dropped.index) == list(range(12))


def test_coincident_points_with_different_values_do_not_warn(tmp_path):
    frame = _frame()
    frame.loc[1, ["lon", "lat"]] = frame.loc[0, ["lon", "lat"]].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gdf = load_points(_csv(tmp_path, frame), **LONLAT, id_column="id")
    xy = coordinates_m(gdf)
    assert np.array_equal(xy[0], xy[1])  # never jittered
    assert gdf.attrs["n_duplicates"] == 0


# --- the input is read only ------------------------------------------------------------------


def test_input_file_unchanged(tmp_path):
    frame = _frame()
    frame = pd.concat([frame, frame.iloc[[0]].assign(id=999)])
    path = _csv(tmp_path, frame)
    before = path.read_bytes()
    with pytest.warns(UserWarning):
        gdf = load_points(path, **LONLAT, id_column="id", drop_duplicates=True)
    assert path.read_bytes() == before
    assert gdf.attrs["sha256"] == hashlib.sha256(before).hexdigest()
