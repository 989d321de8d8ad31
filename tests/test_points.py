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
from synthgeo.io.read import check_points_frame

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
    # counts only: a record id would tell an intruder which records repeat (break-it trial)
    with pytest.warns(UserWarning, match=r"1 exact duplicate row.*kept") as seen:
        gdf = load_points(SACRAMENTO, **LONLAT, id_column="id", query="beds == 2",
                          numeric_columns=["price_usd", "log_price", "sqft_living"])
    message = next(str(w.message) for w in seen if "exact duplicate" in str(w.message))
    assert "342" not in message and "`id`" not in message and "row" in message
    assert [w["message"] for w in gdf.attrs["warnings"]] == [message]  # release.json's words
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


def test_a_folder_or_a_device_is_named_as_such(tmp_path):
    """Break-it: a data path that is a folder, or /dev/zero, was said not to exist."""
    from synthgeo._errors import SpecError
    from synthgeo.config import load_spec
    from synthgeo.io.where import study_area
    from synthgeo.masking.inputs import read_region

    with pytest.raises(InputError, match=r"input file .* is a folder; give the data file"):
        load_points(tmp_path, **LONLAT)
    dev = Path("/dev/zero")
    if dev.exists():
        with pytest.raises(InputError, match=r"input file /dev/zero is not a regular file "
                                             r"\(a device, pipe or socket\)"):
            load_points(dev, **LONLAT)
        with pytest.raises(SpecError, match=r"spec file '/dev/zero' is not a regular file"):
            load_spec(dev)
    with pytest.raises(InputError, match=r"`study_area` file .* is a folder"):
        study_area(str(tmp_path))
    with pytest.raises(InputError, match=r"region file .* is a folder"):
        read_region(tmp_path, crs="EPSG:27700")


def test_missing_column_lists_available(tmp_path, load):
    path = _csv(tmp_path, _frame())
    with pytest.raises(InputError, match=r"\['sqft'\] not found.*available columns.*'price'"):
        load(path, **LONLAT, numeric_columns=["sqft"])
    with pytest.raises(InputError, match=r"\['zip'\] not found"):
        load(path, **LONLAT, required_columns=["zip"])


def test_text_in_numeric_column(tmp_path, load):
    frame = _frame().astype({"price": object})
    frame.loc[4, "price"] = "12a"
    with pytest.raises(InputError, match=r"`price` holds text.*in 1 record\(s\), at `id` \[104\]"):
        load(_csv(tmp_path, frame), **LONLAT, id_column="id", numeric_columns=["price"])


def test_nan_response(tmp_path, load):
    frame = _frame()
    frame.loc[[2, 7], "price"] = np.nan
    with pytest.raises(InputError, match=r"`price` has 2 missing.*`id` \[102, 107\]"):
        load(_csv(tmp_path, frame), **LONLAT, id_column="id", numeric_columns=["price"])


def test_nan_coordinate(tmp_path, load):
    frame = _frame().drop(columns="id")
    frame.loc[3, "lat"] = np.nan
    match = (r"coordinate column `lat` has 1 missing.*data rows \[3\]" if load.route == "file"
             else r"non-finite coordinates at rows \[3\] \(0-based positions\)")
    with pytest.raises(InputError, match=match):
        load(_csv(tmp_path, frame), **LONLAT)


def test_latitude_out_of_range(tmp_path, load):
    frame = _frame()
    frame.loc[5, "lat"] = 95.0
    given = "column `lat`" if load.route == "file" else "geometry"
    with pytest.raises(InputError, match=rf"latitude \({given}\) outside \[-90, 90\].*1 of \d+ points, at `id` \[\d+\]"):
        load(_csv(tmp_path, frame), **LONLAT, id_column="id")


def test_csv_without_crs(tmp_path, load):
    match = (r'has no CRS: set `crs`.*"EPSG:4326"' if load.route == "file"
             else r"the GeoDataFrame has no CRS: set the CRS .*`gdf.set_crs")
    with pytest.raises(InputError, match=match):
        load(_csv(tmp_path, _frame()), x="lon", y="lat")


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


def test_too_few_records(tmp_path, load):
    path = _csv(tmp_path, _frame())
    with pytest.raises(InputError, match=r"only 4 record.*`min_records` = 10"):
        load(path, **LONLAT, query="beds == 1")
    with pytest.raises(InputError, match=r"^only 3 record\(s\) in points.csv after duplicate "
                                         r"removal \(read 3\); `min_records` = 10"):
        load_points(_csv(tmp_path, _frame(3)), **LONLAT)  # no query: not "`query` = None"


def test_duplicate_ids(tmp_path, load):
    frame = _frame()
    frame.loc[6, "id"] = 101
    with pytest.raises(InputError, match=r"`id` is not unique: \[101\]"):
        load(_csv(tmp_path, frame), **LONLAT, id_column="id")
    frame.loc[6, "id"] = np.nan  # where, and what to do
    with pytest.raises(InputError, match=r"id column `id` has 1 missing value\(s\) at (data )?rows "
                                         r"\[6\] .*; fix them, or drop"):
        load(_csv(tmp_path, frame), **LONLAT, id_column="id")


def test_an_existing_record_column_needs_naming(tmp_path, load):
    path = _csv(tmp_path, _frame().rename(columns={"id": "record"}))
    fix = r'`id_column = "record"`' if load.route == "file" else r'`id="record"`'
    with pytest.raises(InputError, match=rf'already has a column "record": (set|pass) {fix}'):
        load(path, **LONLAT)


@pytest.mark.parametrize("target", ["EPSG:3857", 3857, "EPSG:4326", "EPSG:2249"])
def test_bad_target_crs(tmp_path, load, target):
    path = _csv(tmp_path, _frame())
    with pytest.raises(InputError, match=r"`target_crs`.*(Web Mercator|geographic|not metre)"):
        load(path, **LONLAT, target_crs=target)


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
    with pytest.raises(InputError, match=r"the GeoDataFrame holds \['Polygon'\] geometries; "
                                         r"only Point"):
        check_points_frame(gdf)
    gdf.loc[3, "geometry"] = None
    with pytest.raises(InputError, match=r"1 record\(s\) have a missing or empty geometry at "
                                         r"rows \[3\] \(0-based positions\); drop them first"):
        check_points_frame(gdf)


def test_unsupported_suffix_and_xy_on_layer(tmp_path):
    path = tmp_path / "points.txt"
    path.write_text("a,b\n")
    with pytest.raises(InputError, match=r"suffix '.txt'; supported"):
        load_points(path)
    layer = tmp_path / "layer.gpkg"
    _projected().to_file(layer)
    with pytest.raises(InputError, match=r"`x`/`y`.*apply to CSV only"):
        load_points(layer, x="lon", y="lat")


def test_wide_span_warns(tmp_path, load):
    frame = _frame()
    frame["lon"] = np.linspace(-125.0, -115.0, len(frame))
    with pytest.warns(UserWarning, match=r"span 10.0° of longitude"):
        gdf = load(_csv(tmp_path, frame), **LONLAT)
    assert [w["code"] for w in gdf.attrs["warnings"]] == ["spans_utm_zones"]


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


# --- one door: a GeoDataFrame in memory gets what a file gets -------------------------------


def test_a_frame_in_memory_gets_what_its_geopackage_gets(tmp_path):
    frame = _frame()
    frame = pd.concat([frame, frame.iloc[[4]].assign(id=999)], ignore_index=True)  # a duplicate
    gdf = geopandas.GeoDataFrame(frame, geometry=geopandas.points_from_xy(frame.lon, frame.lat),
                                 crs="EPSG:4326")
    path = tmp_path / "same.gpkg"
    gdf.to_file(path)
    with pytest.warns(UserWarning, match=r"1 exact duplicate row\(s\) in same.gpkg"):
        by_file = load_points(path, id_column="id", numeric_columns=["price"])
    with pytest.warns(UserWarning, match=r"1 exact duplicate row\(s\) in the GeoDataFrame"):
        in_memory = check_points_frame(gdf, id_column="id", numeric_columns=["price"])
    assert in_memory.crs == by_file.crs and in_memory.crs.to_epsg() == 32610
    np.testing.assert_array_equal(coordinates_m(in_memory), coordinates_m(by_file))
    for key in ("source_crs", "n_read", "n_duplicates", "id_column", "coordinate_unit",
                "extent"):
        assert in_memory.attrs[key] == by_file.attrs[key], key
    assert [w["code"] for w in in_memory.attrs["warnings"]] == ["exact_duplicates"]
    assert [w["message"].replace("same.gpkg", "the GeoDataFrame").split(": kept")[0]
            for w in by_file.attrs["warnings"]] == \
        [w["message"].split(": kept")[0] for w in in_memory.attrs["warnings"]]
    assert in_memory.attrs["sha256"] is None and len(in_memory.attrs["frame_sha256"]) == 64
    assert gdf.crs.to_epsg() == 4326 and "record" not in gdf  # the input is never modified


def test_a_frame_in_a_metric_crs_stays_in_it():
    gdf = _projected(crs="EPSG:3310")  # California Albers, metres
    gdf = gdf.set_geometry(geopandas.points_from_xy(-150_000.0 + 37.5 * np.arange(12),
                                                    20_000.0 + 11.25 * np.arange(12)))
    gdf = gdf.set_crs("EPSG:3310", allow_override=True)
    out = check_points_frame(gdf, id_column="id", target_crs="utm")
    assert out.crs.to_epsg() == 3310
    np.testing.assert_array_equal(coordinates_m(out), coordinates_m(gdf))
    assert out.attrs["coordinate_unit"]["name"] == "metre"
    assert out.attrs["extent"]["n_distinct"] == 12 and out.attrs["warnings"] == []


# --- duplicates ------------------------------------------------------------------------------


def test_duplicate_rows_warn_and_drop(tmp_path, load):
    frame = _frame()
    copies = frame.iloc[[2, 2, 5]].assign(id=[900, 901, 902])  # new ids, same everything else
    path = _csv(tmp_path, pd.concat([frame, copies]))
    with pytest.warns(UserWarning, match="3 exact duplicate row"):
        kept = load(path, **LONLAT, id_column="id")
    assert len(kept) == 15 and kept.attrs["n_duplicates"] == 3
    assert [w["code"] for w in kept.attrs["warnings"]] == ["exact_duplicates"]
    if load.route == "frame":  # no `drop_duplicates` for data in memory: drop them first
        return
    with pytest.warns(UserWarning, match="dropped"):
        dropped = load_points(path, **LONLAT, id_column="id", drop_duplicates=True)
    assert len(dropped) == 12
    assert dropped["id"].tolist() == frame["id"].tolist()
    assert list(dropped.index) == list(range(12))


def test_coincident_points_with_different_values_do_not_warn(tmp_path, load):
    frame = _frame()
    frame.loc[1, ["lon", "lat"]] = frame.loc[0, ["lon", "lat"]].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gdf = load(_csv(tmp_path, frame), **LONLAT, id_column="id")
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


def test_query_cannot_run_code(tmp_path):
    """pandas resolves `@name` in the caller's scope: `@os.system(...)` ran a shell command."""
    path = _csv(tmp_path, _frame())
    marker = tmp_path / "ran"
    for query in (f"@os.system('touch {marker}') == 0 or beds == 1",
                  "beds.__class__ == beds.__class__"):
        with pytest.raises(InputError, match=r"`query` = .* refers to something other than the "
                                             r"columns \(`@variable` or `__`\)"):
            load_points(path, **LONLAT, query=query)
    assert not marker.exists()
    assert len(load_points(path, **LONLAT, query="beds >= 1", min_records=1)) == 12
