"""Issue 12, items 1–3: units, CRS plausibility and column integrity, at the door.

Every refusal is checked twice: through ``load_points`` (the message names the column, the CRS
unit and the option) and through a command with ``--out`` (one error line, no output folder).
Every refusal that applies to data handed over in memory is checked a third time, on the same
records as a GeoDataFrame (the ``load`` fixture's ``frame`` route: ``check_points_frame``, whose
messages name "the GeoDataFrame" and what to change in it).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import geopandas
import numpy as np
import pandas as pd
import pyproj
import pytest
from conftest import frame_like_csv

import synthgeo
from synthgeo import SpecError
from synthgeo._errors import InputError
from synthgeo.cli.main import main
from synthgeo.config import load_spec
from synthgeo.io.origin import Origin
from synthgeo.io.plausibility import check_extent
from synthgeo.io.points import coordinates_m, load_points
from synthgeo.io.read import check_points_frame, read_points
from synthgeo.locations import measure_spatial_k

CHORLEY = Path(synthgeo.__file__).parent / "data" / "chorley_ribble_cancer.csv"
SACRAMENTO = Path(synthgeo.__file__).parent / "data" / "sacramento_home_sales.csv"
BNG = "EPSG:27700"


def _csv(tmp_path: Path, frame: pd.DataFrame, name: str = "p.csv", **kw) -> Path:
    path = tmp_path / name
    frame.to_csv(path, index=False, **kw)
    return path


def _utm10(lon, lat) -> tuple[np.ndarray, np.ndarray]:
    t = pyproj.Transformer.from_crs(4326, 32610, always_xy=True)
    return t.transform(np.asarray(lon, float), np.asarray(lat, float))


def _refused_by_kanon(tmp_path, capsys, path: Path, *args: str) -> str:
    """Run ``kanon --out`` on `path`; assert exit 1, one error line, no output folder."""
    out = tmp_path / "out"
    rc = main(["kanon", str(path), *args, "--radius-m", "100", "--out", str(out)])
    err = capsys.readouterr().err
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("synthgeo: warning")]
    assert rc == 1 and len(lines) == 1 and lines[0].startswith("synthgeo: error:"), err
    assert not out.exists()
    return lines[0]


# --- item 1: units ---------------------------------------------------------------------------


def test_km_columns_under_a_metre_crs_need_the_unit_option(tmp_path, capsys):
    with pytest.raises(InputError, match=r"column `x_km` states kilometres \(1000 m per unit\), "
                       r"but the coordinates would be read in metre units .*EPSG:27700.*"
                       r"set `coord_unit_m`.*--coord-unit-m\) to 1000"):
        load_points(CHORLEY, x="x_km", y="y_km", crs=BNG)
    err = _refused_by_kanon(tmp_path, capsys, CHORLEY, "--x", "x_km", "--y", "y_km", "--crs",
                            BNG)
    assert "`x_km` states kilometres" in err


def test_km_columns_beside_a_metre_geometry_in_memory_are_refused():
    # the same records handed over in memory: a geometry built from the km columns as metres
    gdf = frame_like_csv(CHORLEY, x="x_km", y="y_km", crs=BNG)
    with pytest.raises(InputError, match=r"column `x_km` states kilometres \(1000 m per unit\), "
                       r"but the GeoDataFrame's geometry holds it in metre units \(1 m per "
                       r"unit\) of OSGB36 / British National Grid \(EPSG:27700\); build the "
                       r"geometry from `x_km` x 1000"):
        check_points_frame(gdf, x="x_km", y="y_km", id_column="id")
    # built in metres, the km columns agree with the geometry (x_km x 1000 = x): accepted
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Chorley's exact duplicate rows
        ok = check_points_frame(frame_like_csv(CHORLEY, x="x_km", y="y_km", crs=BNG,
                                               coord_unit_m=1000),
                                x="x_km", y="y_km", id_column="id")
    assert ok.crs.to_epsg() == 27700  # already metric: kept, not reprojected to UTM
    assert ok.attrs["path"] is None
    # the unit of the x/y columns (what a published location is written back in)
    assert ok.attrs["coordinate_unit"] == {"metres_per_unit": 1000.0, "name": "kilometre",
                                           "source": "geometry", "scale_to_crs": 1000.0}


def test_km_with_the_option_gives_spatial_k_equal_to_a_brute_force_count_in_metres(load):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Chorley's exact duplicate rows
        gdf = load(CHORLEY, x="x_km", y="y_km", crs=BNG, coord_unit_m=1000,
                   target_crs=BNG, id_column="id")
    assert gdf.attrs["coordinate_unit"]["metres_per_unit"] == 1000.0
    raw = pd.read_csv(CHORLEY)[["x_km", "y_km"]].to_numpy() * 1000.0
    np.testing.assert_allclose(coordinates_m(gdf), raw)
    res = measure_spatial_k(gdf, 500.0, k=5, k_max=None)
    d = np.hypot(raw[:, None, 0] - raw[None, :, 0], raw[:, None, 1] - raw[None, :, 1])
    brute = (d <= 500.0 + 1e-9).sum(axis=1)
    np.testing.assert_array_equal(res.spatial_k, brute)
    assert 0 < res.below_k.mean() < 1  # not the all-clear of km read as metres


def test_a_km_frame_changed_after_read_points_keeps_the_files_crs_and_unit():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Chorley's exact duplicate rows
        pts = read_points(CHORLEY, x="x_km", y="y_km", crs=BNG, coord_unit_m=1000, id="id")
    assert pts.crs.to_epsg() == 32630  # projected to UTM 30N by read_points
    changed = pts[pts["cancer"] == "lung"]
    with pytest.warns(UserWarning, match=r"exact duplicate row\(s\) in the GeoDataFrame"):
        out = check_points_frame(changed, x="x_km", y="y_km")  # x_km x 1000: the BNG geometry
    assert out.crs.to_epsg() == 32630 and out.attrs["path"] is None
    assert out.attrs["coordinate_unit"] == pts.attrs["coordinate_unit"]  # the x/y columns' unit
    assert pyproj.CRS.from_wkt(out.attrs["source_crs"]).to_epsg() == 27700
    np.testing.assert_array_equal(coordinates_m(out), coordinates_m(changed))
    assert out.attrs["extent"]["n_distinct"] == len(np.unique(coordinates_m(changed), axis=0))


@pytest.mark.parametrize("col, crs, unit, match, in_memory", [
    ("x_100m", BNG, 1000, r"`x_100m` states units of 100 m \(100 m per unit\).*set by "
                          r"`coord_unit_m`.*to 100",
     r"`x_100m` states units of 100 m \(100 m per unit\), but the GeoDataFrame's geometry "
     r"holds it in kilometre units \(1000 m per unit\) of OSGB36.*from `x_100m` x 100 "),
    ("east_ft", "EPSG:26910", None, r"`east_ft` states feet .* read in metre units",
     r"`east_ft` states feet .* geometry holds it in metre units"),
    ("x_m", "EPSG:4326", None, r"`x_m` states metres, but `crs` WGS 84 \(EPSG:4326\) is "
                               r"geographic",
     r"`x_m` states metres, but the GeoDataFrame's CRS WGS 84 \(EPSG:4326\) is geographic"),
    ("lon", "EPSG:32610", None, r"`lon` names a latitude/longitude in degrees, but `crs` .*"
                                r"EPSG:32610\) is projected",
     r"`lon` names a latitude/longitude in degrees, but the GeoDataFrame's CRS .*"
     r"EPSG:32610\) is projected .*gdf.set_crs\(\"EPSG:4326\""),
])
def test_a_column_name_contradicting_the_unit_is_refused(tmp_path, capsys, load, col, crs, unit,
                                                         match, in_memory):
    frame = pd.DataFrame({col: 500_000.0 + 10 * np.arange(12), "north": 4_200_000.0})
    path = _csv(tmp_path, frame)
    with pytest.raises(InputError, match=match if load.route == "file" else in_memory):
        load(path, x=col, y="north", crs=crs, coord_unit_m=unit)
    args = ["--x", col, "--y", "north", "--crs", crs]
    if load.route == "file":  # the command line reads files
        _refused_by_kanon(tmp_path, capsys, path, *args,
                          *(["--coord-unit-m", str(unit)] if unit else []))


def test_feet_columns_under_a_feet_crs_pass_and_read_in_metres(tmp_path, load):
    # California zone 3 (US survey feet): the CRS's unit applies, the name agrees
    frame = pd.DataFrame({"x_ft": 6_000_000.0 + 100 * np.arange(12),
                          "y_ft": 2_100_000.0 + 50 * np.arange(12)})
    gdf = load(_csv(tmp_path, frame), x="x_ft", y="y_ft", crs="EPSG:2227")
    xy = coordinates_m(gdf)
    step = np.hypot(*(xy[1] - xy[0]))
    assert step == pytest.approx(np.hypot(100, 50) * 1200 / 3937, rel=1e-3)  # feet → metres


def test_the_option_is_refused_with_a_geographic_crs_and_on_a_layer(tmp_path):
    with pytest.raises(InputError, match=r"`coord_unit_m` = 1000 .* is geographic"):
        load_points(SACRAMENTO, x="lon", y="lat", crs="EPSG:4326", coord_unit_m=1000)


# --- item 2: plausibility --------------------------------------------------------------------


def test_degrees_labelled_utm_are_refused(tmp_path, capsys, load):
    frame = pd.read_csv(SACRAMENTO).rename(columns={"lon": "x", "lat": "y"})
    path = _csv(tmp_path, frame)
    given, fix = ("column `x`", "coord_unit_m") if load.route == "file" else \
        ("geometry", "check the GeoDataFrame's CRS")
    with pytest.raises(InputError, match=rf"x \({given}\) of 932 of 932 points, at .* is "
                       rf"outside the projected bounds of WGS 84 / UTM zone 10N.*impossible "
                       rf"value.*{fix}") as err:
        load(path, x="x", y="y", crs="EPSG:32610")
    assert "-121." not in str(err.value)  # coordinates are confidential
    if load.route == "file":  # the command line reads files
        _refused_by_kanon(tmp_path, capsys, path, "--x", "x", "--y", "y", "--crs", "EPSG:32610")


def test_impossible_projected_values_are_refused(tmp_path, capsys, load):
    x, y = _utm10(-121.5 + 0.01 * np.arange(12), 38.5 + 0.005 * np.arange(12))
    frame = pd.DataFrame({"id": range(12), "x": x, "y": y})
    frame.loc[5, "x"] = 1e12
    path = _csv(tmp_path, frame)
    given = "column `x`" if load.route == "file" else "geometry"
    with pytest.raises(InputError, match=rf"x \({given}\) of 1 of 12 points, at `id` \[5\], "
                                         r"is outside the projected bounds"):
        load(path, x="x", y="y", crs="EPSG:32610", id_column="id")
    if load.route == "file":  # the command line reads files
        _refused_by_kanon(tmp_path, capsys, path, "--x", "x", "--y", "y", "--crs", "EPSG:32610")


def test_data_crossing_a_utm_zone_edge_pass(tmp_path, load):
    # UTM 10N covers 126°W–120°W; these run 0.5° into zone 11, within the 1° buffer
    lon = np.linspace(-121.0, -119.5, 60)
    x, y = _utm10(lon, 38.5 + 0.01 * np.sin(np.arange(60)))
    gdf = load(_csv(tmp_path, pd.DataFrame({"x": x, "y": y})), x="x", y="y",
               crs="EPSG:32610", target_crs="EPSG:32610")
    assert len(gdf) == 60 and gdf.attrs["warnings"] == []


def test_points_outside_the_area_of_use_are_refused(tmp_path, capsys, load):
    # in British National Grid metres, but east of the North Sea: inside the grid's projected
    # box, outside its area of use (9°W–2°E) widened by 1°
    t = pyproj.Transformer.from_crs(4326, BNG, always_xy=True)
    lon = np.r_[np.full(11, -2.0), 3.8]
    x, y = t.transform(lon, np.r_[np.linspace(53, 54, 11), 61.5])
    path = _csv(tmp_path, pd.DataFrame({"id": range(12), "e": x, "n": y}))
    with pytest.raises(InputError, match=r"1 of 12 points lie outside the area of use of OSGB36 "
                       r"/ British National Grid \(EPSG:27700\) .* at `id` \[11\]: are the "
                       r"coordinates in another CRS") as err:
        load(path, x="e", y="n", crs=BNG, id_column="id")
    assert "3.8" not in str(err.value) and "61.5" not in str(err.value)
    if load.route == "file":  # the command line reads files
        _refused_by_kanon(tmp_path, capsys, path, "--x", "e", "--y", "n", "--crs", BNG)


def test_km_read_as_metres_is_a_small_extent(tmp_path, capsys, load):
    frame = pd.read_csv(CHORLEY).rename(columns={"x_km": "east", "y_km": "north"})
    path = _csv(tmp_path, frame)
    # the origin rule fires first: every point within 10 km of BNG's origin, in the sea
    match = (r"all 1,036 points lie within 10 km of the origin \(0, 0\) of OSGB36 / British "
             r"National Grid \(EPSG:27700\) \(read in metre "
             r"units, the unit of OSGB36.*at lon -7.556, lat 49.77, lies off the CRS's area of "
             r"use.*Kilometres need `coord_unit_m = 1000`.*accept_small_extent = true")
    if load.route == "frame":
        match = (r"all 1,036 points lie within 10 km of the origin .*Kilometres need the "
                 r"geometry built in metres.*pass `accept_small_extent=True`")
    with pytest.raises(InputError, match=match):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # Chorley's exact duplicate rows
            load(path, x="east", y="north", crs=BNG)
    if load.route == "file":  # the command line reads files
        _refused_by_kanon(tmp_path, capsys, path, "--x", "east", "--y", "north", "--crs", BNG)


def test_small_extent_rules_and_the_escape(tmp_path, load):
    base = np.array([350_000.0, 410_000.0])
    grid = base + 10.0 * np.stack(np.meshgrid(np.arange(8), np.arange(8)), -1).reshape(-1, 2)
    small = _csv(tmp_path, pd.DataFrame(grid, columns=["e", "n"]), "small.csv")  # 64 in 99 m
    with pytest.raises(InputError, match=r"64 distinct locations\) span only 99 m"):
        load(small, x="e", y="n", crs=BNG, target_crs=BNG)
    with pytest.warns(UserWarning, match="accepted by `accept_small_extent`"):
        gdf = load(small, x="e", y="n", crs=BNG, accept_small_extent=True)
    assert [w["code"] for w in gdf.attrs["warnings"]] == ["small_extent"]
    # 30 pairs 0.5 m apart, the pairs 500 m apart: wide, but a median spacing of 0.5 m
    pairs = np.repeat(base + 500.0 * np.c_[np.arange(30), np.zeros(30)], 2, axis=0)
    pairs[1::2, 0] += 0.5
    close = _csv(tmp_path, pd.DataFrame(pairs, columns=["e", "n"]), "close.csv")
    with pytest.raises(InputError, match=r"median spacing 0.5 m"):
        load(close, x="e", y="n", crs=BNG)
    # 10-49 locations: under 100 m refused (49 in 92 m) ...
    few = _csv(tmp_path, pd.DataFrame(grid[:49], columns=["e", "n"]), "few.csv")
    with pytest.raises(InputError, match=r"49 distinct locations\) span only 9\d.\d m .*under "
                                         r"100 m across"):
        load(few, x="e", y="n", crs=BNG)
    # ... 10 locations 12 m apart in a row (108 m) pass (fewer than 10 records are refused
    # anyway: `min_records`)
    row = base + 12.0 * np.c_[np.arange(10), np.zeros(10)]
    assert len(load(_csv(tmp_path, pd.DataFrame(row, columns=["e", "n"]), "row.csv"),
                    x="e", y="n", crs=BNG)) == 10


def test_forty_cases_in_km_read_as_metres_are_refused(tmp_path, capsys, load):
    """Break-it finding: 40 Chorley cases (fewer than 50 locations) in km under EPSG:27700 passed
    as metres, and the location verdict said PASS."""
    cases = pd.read_csv(CHORLEY).query("cancer == 'larynx'").head(40)
    frame = cases.rename(columns={"x_km": "x", "y_km": "y"})[["id", "x", "y"]]
    path = _csv(tmp_path, frame, "cases.csv")
    with pytest.raises(InputError, match=r"all 40 points lie within 10 km of the origin"):
        load(path, x="x", y="y", crs=BNG, id_column="id")
    # with the origin rule waived, the small-extent rule still refuses them (19.6 m across)
    with pytest.raises(InputError, match=r"the 40 points \(39 distinct locations\) span only "
                                         r"(19.6|20) m .*under 100 m across"):
        check_extent(frame[["x", "y"]].to_numpy(float), unit_words="metre",
                     accept_small_extent=False, origin=Origin.memory())
    if load.route == "file":  # the command line reads files
        _refused_by_kanon(tmp_path, capsys, path, "--x", "x", "--y", "y", "--crs", BNG)
    ok = load(path, x="x", y="y", crs=BNG, id_column="id", coord_unit_m=1000)
    assert len(ok) == 40


# --- item 3: column integrity ----------------------------------------------------------------


def test_repeated_headers_are_refused_by_name(tmp_path, capsys):
    path = tmp_path / "dup.csv"
    path.write_text("lon,lat,beds,beds\n" + "".join(
        f"{-121.5 + 0.01 * i},{38.5 + 0.01 * i},2,3\n" for i in range(12)), encoding="utf-8")
    with pytest.raises(InputError, match=r"dup.csv has repeated column name\(s\) \['beds'\]"):
        load_points(path, x="lon", y="lat", crs="EPSG:4326")
    _refused_by_kanon(tmp_path, capsys, path, "--x", "lon", "--y", "lat", "--crs", "EPSG:4326")


def test_repeated_column_names_in_memory_are_refused_by_name():
    rows = [[-121.5 + 0.01 * i, 38.5 + 0.01 * i, 2, 3] for i in range(12)]
    frame = pd.DataFrame(rows, columns=["lon", "lat", "beds", "beds"])
    gdf = geopandas.GeoDataFrame(frame, geometry=geopandas.points_from_xy(frame.lon, frame.lat),
                                 crs="EPSG:4326")
    with pytest.raises(InputError, match=r"the GeoDataFrame has repeated column name\(s\) "
                                         r"\['beds'\]"):
        check_points_frame(gdf)


def _semicolon(tmp_path) -> Path:
    path = tmp_path / "semi.csv"
    rows = "".join(f"{i};{-121.5 + 0.01 * i:.4f};{38.5 + 0.01 * i:.4f};{1000 + i},5\n"
                   .replace(".", ",") for i in range(12))
    path.write_text("id;lon;lat;price\n" + rows, encoding="utf-8")
    return path


def test_separator_and_decimal_comma(tmp_path, capsys):
    path = _semicolon(tmp_path)
    with pytest.raises(InputError, match=r"header of semi.csv has no ',' but 3 ';': the file "
                                         r"reads as one column; set `sep` .* to ';' \(with "
                                         r'decimal commas also decimal = ","\)'):
        load_points(path, x="lon", y="lat", crs="EPSG:4326")
    with pytest.raises(InputError, match=r"coordinate column `lon` holds text .*no value is shown.*look "
                                         r'like decimal commas: set `decimal`.*to ","'):
        load_points(path, x="lon", y="lat", crs="EPSG:4326", sep=";")
    gdf = load_points(path, x="lon", y="lat", crs="EPSG:4326", sep=";", decimal=",",
                      numeric_columns=["price"], id_column="id")
    assert gdf["price"].iloc[1] == pytest.approx(1001.5) and gdf["lon"].iloc[2] == -121.48
    _refused_by_kanon(tmp_path, capsys, path, "--x", "lon", "--y", "lat", "--crs", "EPSG:4326")
    assert main(["kanon", str(path), "--x", "lon", "--y", "lat", "--crs", "EPSG:4326", "--sep",
                 ";", "--decimal", ",", "--radius-m", "100"]) == 0


def _dot_grouped(tmp_path) -> Path:
    path = tmp_path / "grouped.csv"
    rows = "".join(f"{i};{-121.5 + 0.01 * i:.4f};{38.5 + 0.01 * i:.4f}".replace(".", ",")
                   + f";{1 + i % 3}.{200 + i:03d}\n" for i in range(12))
    path.write_text("id;lon;lat;price\n" + rows, encoding="utf-8")
    return path


def test_dot_grouped_thousands_under_decimal_comma(tmp_path, capsys):
    """Break-it finding: under decimal = "," a price written 1.234 was read as 1.234."""
    path = _dot_grouped(tmp_path)
    with pytest.raises(InputError, match=r"column `price` of grouped.csv holds numbers written "
                                         r'like 1.234 .*set `thousands = "."` \(\[data\] '
                                         r"thousands, or --thousands\)"):
        load_points(path, x="lon", y="lat", crs="EPSG:4326", sep=";", decimal=",",
                    numeric_columns=["price"], id_column="id")
    gdf = load_points(path, x="lon", y="lat", crs="EPSG:4326", sep=";", decimal=",",
                      thousands=".", numeric_columns=["price"], id_column="id")
    assert gdf["price"].iloc[0] == 1200 and gdf["price"].iloc[1] == 2201
    assert gdf["lon"].iloc[2] == pytest.approx(-121.48)  # decimal commas still read
    pts = read_points(path, x="lon", y="lat", crs="EPSG:4326", sep=";", decimal=",",
                      thousands=".", id="id")
    assert pts.attrs["read_options"]["thousands"] == "."
    line = _refused_by_kanon(tmp_path, capsys, path, "--x", "lon", "--y", "lat", "--crs",
                             "EPSG:4326", "--sep", ";", "--decimal", ",")
    assert "thousands" in line and "1200" not in line
    assert main(["kanon", str(path), "--x", "lon", "--y", "lat", "--crs", "EPSG:4326", "--sep",
                 ";", "--decimal", ",", "--thousands", ".", "--radius-m", "100"]) == 0
    with pytest.raises(InputError, match="`thousands`"):
        load_points(path, x="lon", y="lat", crs="EPSG:4326", sep=";", decimal=",",
                    thousands=",")


def test_dot_grouped_with_decimal_places_under_decimal_comma(tmp_path):
    """Final break-it trial 2026-12-07: "1.250,00" beside "750,00" (decimal commas, thousands
    grouped by ".") escaped the guard, was read as text and released as categories."""
    path = tmp_path / "places.csv"
    rows = "".join(f"{i};{-121.5 + 0.01 * i:.4f};{38.5 + 0.01 * i:.4f}".replace(".", ",")
                   + (";750,00\n" if i % 2 else f";1.{250 + i:03d},00\n") for i in range(12))
    path.write_text("id;lon;lat;sqft\n" + rows, encoding="utf-8")
    with pytest.raises(InputError, match=r"column `sqft` of places.csv holds numbers written "
                                         r'like 1.234 .*set `thousands = "."`'):
        load_points(path, x="lon", y="lat", crs="EPSG:4326", sep=";", decimal=",",
                    numeric_columns=["sqft"], id_column="id")
    gdf = load_points(path, x="lon", y="lat", crs="EPSG:4326", sep=";", decimal=",",
                      thousands=".", numeric_columns=["sqft"], id_column="id")
    assert gdf["sqft"].iloc[0] == 1250 and gdf["sqft"].iloc[1] == 750


def test_one_decimal_comma_beside_dot_grouped_values_names_the_grouping(tmp_path):
    """Break-it trial 2026-12-08: 836 and 1.167 ("."-grouped) with one 852,5 got the hint for
    decimal commas alone, which would read 1.167 (1,167) as 1.167."""
    sizes = ["836", "1.167", "852,5"] + [f"1.{100 + i:03d}" if i % 2 else f"{700 + i}"
                                         for i in range(9)]
    coords = [(f"{-121.5 + 0.01 * i:.4f}", f"{38.5 + 0.01 * i:.4f}") for i in range(12)]
    path = tmp_path / "sizes.csv"  # decimal commas: refused before, by the file's guard
    path.write_text("id;lon;lat;sqft\n" + "".join(
        f"{i};{x};{y};{v}\n".replace(".", ",", 2) for i, ((x, y), v)
        in enumerate(zip(coords, sizes))), encoding="utf-8")
    with pytest.raises(InputError, match=r'column `sqft` of sizes.csv holds numbers written '
                                         r'like 1.234 .*set `thousands = "."`'):
        load_points(path, x="lon", y="lat", crs="EPSG:4326", sep=";", decimal=",",
                    numeric_columns=["sqft"], id_column="id")
    point = tmp_path / "point.csv"  # the default decimal point: 852,5 is the only text
    point.write_text("id;lon;lat;sqft\n" + "".join(
        f"{i};{x};{y};{v}\n" for i, ((x, y), v) in enumerate(zip(coords, sizes))),
        encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_points(point, x="lon", y="lat", crs="EPSG:4326", sep=";",
                    numeric_columns=["sqft"], id_column="id")
    msg = str(err.value)
    assert 'grouped by "."' in msg and '`thousands = "."` and `decimal = ","`' in msg, msg
    assert "look like decimal commas" not in msg and "852" not in msg
    frame = pd.DataFrame({"id": range(12), "lon": [float(x) for x, _ in coords],
                          "lat": [float(y) for _, y in coords], "sqft": sizes})
    gdf = geopandas.GeoDataFrame(frame, crs="EPSG:4326",
                                 geometry=geopandas.points_from_xy(frame.lon, frame.lat))
    with pytest.raises(InputError) as err:  # in memory: not the comma-to-point replace
        check_points_frame(gdf, id_column="id", numeric_columns=["sqft"])
    msg = str(err.value)
    assert 'grouped by "."' in msg and 'str.replace(".", "")' in msg, msg
    assert "look like decimal commas" not in msg
    mixed = frame.assign(sqft=["8.5", "1.167", "852,5"] + sizes[3:])  # "8.5": not grouped
    gdf = geopandas.GeoDataFrame(mixed, crs="EPSG:4326", geometry=gdf.geometry)
    with pytest.raises(InputError, match="look like decimal commas"):
        check_points_frame(gdf, id_column="id", numeric_columns=["sqft"])


def test_dot_grouped_beside_whole_numbers_under_decimal_comma(tmp_path):
    """Break-it trial 2026-12-07: exports group only numbers of 1,000 or more, so a column with
    836 beside 1.167 passed the guard and half the sizes were released 1,000 times too small."""
    path = tmp_path / "mixed.csv"
    rows = "".join(f"{i};{-121.5 + 0.01 * i:.4f};{38.5 + 0.01 * i:.4f}".replace(".", ",")
                   + (f";{800 + i}\n" if i % 2 else f";1.{100 + i:03d}\n") for i in range(12))
    path.write_text("id;lon;lat;sqft\n" + rows, encoding="utf-8")
    with pytest.raises(InputError, match=r"column `sqft` of mixed.csv holds numbers written "
                                         r'like 1.234 .*set `thousands = "."`'):
        load_points(path, x="lon", y="lat", crs="EPSG:4326", sep=";", decimal=",",
                    numeric_columns=["sqft"], id_column="id")
    gdf = load_points(path, x="lon", y="lat", crs="EPSG:4326", sep=";", decimal=",",
                      thousands=".", numeric_columns=["sqft"], id_column="id")
    assert gdf["sqft"].iloc[0] == 1100 and gdf["sqft"].iloc[1] == 801
    # a whole-number column with no grouped value, and decimal commas, are not refused
    plain = tmp_path / "plain.csv"
    plain.write_text("id;lon;lat;sqft\n" + "".join(
        f"{i};{-121.5 + 0.01 * i:.4f};{38.5 + 0.01 * i:.4f}".replace(".", ",") + f";{800 + i}\n"
        for i in range(12)), encoding="utf-8")
    assert load_points(plain, x="lon", y="lat", crs="EPSG:4326", sep=";", decimal=",",
                       numeric_columns=["sqft"], id_column="id")["sqft"].iloc[3] == 803


def test_thousands_separators_name_both_readings(tmp_path):
    """Break-it finding: "1,200" was called a decimal comma, and that fix would read 1.2."""
    path = tmp_path / "th.csv"
    path.write_text("lon,lat,price\n" + "".join(
        f'{-121.5 + 0.01 * i},{38.5 + 0.01 * i},"1,2{i:02d}"\n' for i in range(12)),
        encoding="utf-8")
    with pytest.raises(InputError, match=r"column `price` holds text .*in 12 record\(s\).*look like "
                                         r"thousands separators .*would read 1,200 as 1.2"):
        load_points(path, x="lon", y="lat", crs="EPSG:4326", numeric_columns=["price"])


def test_ids_keep_their_leading_zeros(tmp_path):
    """Break-it finding: ids 007 were read as 7 (the released id no longer the agency's)."""
    rows = "".join(f"{i:03d},{-121.5 + 0.01 * i},{38.5 + 0.01 * i}\n" for i in range(12))
    path = tmp_path / "ids.csv"
    path.write_text("id,lon,lat\n" + rows, encoding="utf-8")
    gdf = load_points(path, x="lon", y="lat", crs="EPSG:4326", id_column="id")
    assert gdf["id"].tolist()[:3] == ["000", "001", "002"]
    plain = tmp_path / "plain.csv"  # ids that read back unchanged stay numbers
    plain.write_text("id,lon,lat\n" + "".join(f"{i + 1},{-121.5 + 0.01 * i},{38.5 + 0.01 * i}\n"
                                              for i in range(12)), encoding="utf-8")
    ids = load_points(plain, x="lon", y="lat", crs="EPSG:4326", id_column="id")["id"]
    assert ids.dtype.kind == "i" and ids.iloc[0] == 1


def test_decimal_comma_text_in_memory_names_the_conversion(tmp_path):
    # the same file read by pandas with the right separator but not the decimal mark: the
    # coordinates made into a geometry, the price left as text
    frame = pd.read_csv(_semicolon(tmp_path), sep=";", dtype=str)
    lon, lat = (frame[c].str.replace(",", ".").astype(float) for c in ("lon", "lat"))
    gdf = geopandas.GeoDataFrame(frame, geometry=geopandas.points_from_xy(lon, lat),
                                 crs="EPSG:4326")
    with pytest.raises(InputError, match=r"numeric column `price` holds text .*at "
                                         r"`id` \['0', '1'.*look like decimal commas: convert "
                                         r"the column to numbers first"):
        check_points_frame(gdf, numeric_columns=["price"], id_column="id")


def test_encoding_is_named(tmp_path, capsys):
    path = tmp_path / "latin.csv"
    rows = "".join(f"{-121.5 + 0.01 * i},{38.5 + 0.01 * i},Vallée\n" for i in range(12))
    path.write_bytes(("lon,lat,town\n" + rows).encode("latin-1"))
    with pytest.raises(InputError, match=r"latin.csv is not utf-8 text \(byte 0xe9 at position "
                                         r"\d+\): set `encoding` \(\[data\] encoding, or "
                                         r"--encoding\)"):
        load_points(path, x="lon", y="lat", crs="EPSG:4326")
    gdf = load_points(path, x="lon", y="lat", crs="EPSG:4326", encoding="latin-1")
    assert gdf["town"].iloc[0] == "Vallée"
    _refused_by_kanon(tmp_path, capsys, path, "--x", "lon", "--y", "lat", "--crs", "EPSG:4326")


def test_csv_options_are_validated_and_refused_on_layers(tmp_path):
    with pytest.raises(InputError, match=r"`sep` must be one character"):
        load_points(SACRAMENTO, x="lon", y="lat", crs="EPSG:4326", sep=";;")
    with pytest.raises(InputError, match=r"`encoding` = 'klingon' is not a text encoding"):
        load_points(SACRAMENTO, x="lon", y="lat", crs="EPSG:4326", encoding="klingon")


# --- the spec and `run` ----------------------------------------------------------------------

SPEC = """\
[data]
path = "{path}"
x = "{x}"
y = "{y}"
crs = "EPSG:27700"
id = "id"
response = "dist_incinerator_km"
back_transform = "identity"
covariates = []
accept_repeated_records = true  # Chorley: 296 of 1,036 cases repeat another (100 m grid)
{extra}
"""


@pytest.mark.parametrize("line, match", [
    ("coord_unit_m = 0", r"`\[data\] coord_unit_m` must be a positive number"),
    ('sep = ";;"', r"`\[data\] sep` must be one character"),
    ('decimal = ","', r"`\[data\] decimal` must be different from `sep`"),
    ('thousands = ".."', r"`\[data\] thousands` must be one character other than `sep`"),
    ('thousands = ","', r"`\[data\] thousands` must be one character other than `sep`"),
    ('encoding = "nope"', r"`\[data\] encoding` must be a text encoding"),
    ('accept_small_extent = "yes"', r"`\[data\] accept_small_extent` must be true or false"),
])
def test_spec_keys_are_validated(tmp_path, line, match):
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.format(path=CHORLEY, x="x_km", y="y_km", extra=line), encoding="utf-8")
    with pytest.raises(SpecError, match=match):
        load_spec(spec)


def test_run_refuses_km_as_metres_and_writes_nothing(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.format(path=CHORLEY, x="x_km", y="y_km", extra=""), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["run", str(spec), "--out", str(out), "--quiet"]) == 1
    assert "`x_km` states kilometres" in capsys.readouterr().err and not out.exists()
    assert main(["validate", str(spec)]) == 1
    capsys.readouterr()
    # the option on the command line overrides the spec (here: fills it in)
    assert main(["validate", str(spec), "--coord-unit-m", "1000"]) == 0
    assert "1036 records" in capsys.readouterr().out


def test_regional_km_and_few_sites_near_the_crs_origin_are_refused(tmp_path, capsys, load):
    """Break-it findings: 45 points in km across north-west England (120 km read as 120 m, over
    the 100 m floor), and 120 records at 9 km sites, passed as metres with a location PASS."""
    rng = np.random.default_rng(1)
    regional = pd.DataFrame({"id": range(45), "x": rng.uniform(300, 420, 45),
                             "y": rng.uniform(380, 500, 45)})
    sites = rng.uniform([353.2, 428.0], [355.6, 428.4], (9, 2))
    few = pd.DataFrame({"id": range(120), "x": np.repeat(sites[:, 0], 14)[:120],
                        "y": np.repeat(sites[:, 1], 14)[:120]})
    for frame, name in ((regional, "reg.csv"), (few, "few.csv")):
        path = _csv(tmp_path, frame, name)
        with pytest.raises(InputError, match=r"within 10 km of the origin \(0, 0\) of OSGB36"):
            load(path, x="x", y="y", crs=BNG, id_column="id")
        if load.route == "file":
            _refused_by_kanon(tmp_path, capsys, path, "--x", "x", "--y", "y", "--crs", BNG)
        ok = load(path, x="x", y="y", crs=BNG, id_column="id", coord_unit_m=1000)
        assert len(ok) == len(frame)
    # the override goes on, with a coded warning (km read as metres lie in the sea next to
    # the origin, off the Scillies: offshore accepted too, docs/locations.md)
    with pytest.warns(UserWarning, match="accepted by `accept_small_extent`"):
        kept = load(_csv(tmp_path, regional, "reg2.csv"), x="x", y="y", crs=BNG,
                    id_column="id", accept_small_extent=True, accept_offshore=True)
    assert "near_crs_origin" in [w["code"] for w in kept.attrs["warnings"]]


def test_an_origin_inside_the_area_of_use_is_no_sign_of_a_unit_error(tmp_path, load):
    """California Albers (EPSG:3310) puts (0, 0) in central California: real points there pass."""
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"id": range(30), "x": rng.uniform(-3000, 3000, 30),
                          "y": rng.uniform(-3000, 3000, 30)})
    assert len(load(_csv(tmp_path, frame, "ca.csv"), x="x", y="y", crs="EPSG:3310",
                    id_column="id")) == 30


def test_the_extent_refusal_names_the_rule_that_fired():
    """Break-it finding: a median-spacing refusal said 'span only 5.54e+05 m ... small'."""
    pairs = np.repeat(np.c_[np.arange(30) * 20_000.0, np.zeros(30)], 2, axis=0) + 400_000.0
    pairs[1::2, 0] += 0.5
    with pytest.raises(InputError, match=r"implausibly close for 60 locations \(a median under "
                                         r"1 m from the nearest other, the smallest spacing"):
        check_extent(pairs, unit_words="metre", accept_small_extent=False,
                     origin=Origin.memory())


def test_close_points_are_not_called_a_small_extent(tmp_path):
    """Break-it 2026-12-07: pairs 0.11 m apart across 580 km were refused as a "small extent".
    The refusal stands (most locations with a twin under 1 m: copies shifted a little, or a
    scale error), but says what it measured: the extent that passed, the spacing, the bound,
    and the options for a scale error or for real locations."""
    pairs = np.repeat(np.c_[np.arange(30) * 20_000.0, np.zeros(30)], 2, axis=0) + 400_000.0
    pairs[1::2, 0] += 0.11
    with pytest.raises(InputError) as info:
        check_extent(pairs, unit_words="metre units", accept_small_extent=False,
                     origin=Origin.file("pts.csv"))
    msg = str(info.value)
    assert "span 580,000 m (bounding-box diagonal, at least the 1,000 m the check accepts)" in msg
    assert "median spacing 0.11 m from the nearest other distinct location" in msg
    assert "span only" not in msg and "e+" not in msg
    assert "`coord_unit_m`" in msg and "`accept_small_extent = true`" in msg
    # a small extent still says the extent and the smallest accepted
    grid = 10.0 * np.stack(np.meshgrid(np.arange(8), np.arange(8)), -1).reshape(-1, 2)
    with pytest.raises(InputError, match=r"span only 99 m .*under 1,000 m across, the smallest "
                                         r"diagonal the check accepts\)\. Is the unit right\? "
                                         r"Kilometres need `coord_unit_m = 1000`"):
        check_extent(grid, unit_words="metre units", accept_small_extent=False,
                     origin=Origin.file("pts.csv"))


def test_rows_longer_than_the_header_are_refused(tmp_path):
    """Break-it finding: unquoted decimal commas in a comma-separated file became an index and
    the message blamed swapped x/y."""
    path = tmp_path / "dec.csv"
    path.write_text("id,lon,lat\n" + "".join(f"{i},-121,{i},38,5\n" for i in range(12)),
                    encoding="utf-8")
    with pytest.raises(InputError, match=r"rows of dec.csv have more fields than its header "
                                         r"\(3 columns\).*decimal commas"):
        load_points(path, x="lon", y="lat", crs="EPSG:4326")


def test_the_diagnostics_on_a_km_frame_in_memory_refuse_it():
    """Break-it finding: sg.spatial_k / sg.outlier_policy on Chorley km under EPSG:27700 built
    in memory gave median k at its cap and 0 % below k (1,036 records; 817 below k in metres)."""
    d = pd.read_csv(CHORLEY)
    g = geopandas.GeoDataFrame(d, geometry=geopandas.points_from_xy(d.x_km, d.y_km), crs=BNG)
    with pytest.raises(InputError, match=r"within 10 km of the origin .*Build the geometry in "
                                         r"metres .*check_points_frame"):
        synthgeo.spatial_k(g, radius_m=100)
    with pytest.raises(InputError, match=r"within 10 km of the origin"):
        synthgeo.outlier_policy(g, synthgeo.OutlierPolicy(k=5, r_max_m=2000))
    metres = g.set_geometry(geopandas.points_from_xy(d.x_km * 1000, d.y_km * 1000), crs=BNG)
    assert (synthgeo.spatial_k(metres, radius_m=100).spatial_k < 5).sum() > 0


def test_one_record_in_metres_does_not_hide_a_file_in_km(tmp_path, capsys):
    """Break-it finding: 200 points in km over Great Britain plus one in metres passed kanon
    (median k 8 where every true k is 1): the stray record lifted the largest |x| past 10 km."""
    rng = np.random.default_rng(3)
    km = rng.uniform([100, 50], [650, 1200], (200, 2))
    frame = pd.DataFrame({"id": range(201), "X": np.r_[km[:, 0], 354_000.0],
                          "Y": np.r_[km[:, 1], 428_000.0]})
    path = _csv(tmp_path, frame, "mix.csv")
    with pytest.raises(InputError, match=r"200 of 201 points \(the rest far from it: mixed "
                                         r"units\?\) lie within 10 km of the origin"):
        load_points(path, x="X", y="Y", crs=BNG, id_column="id")
    _refused_by_kanon(tmp_path, capsys, path, "--x", "X", "--y", "Y", "--crs", BNG)


def test_lonlat_points_at_zero_zero_are_refused(tmp_path):
    """Break-it: failed geocodes at (0°, 0°) were accepted in lon/lat (refused in metres)."""
    path = tmp_path / "null.csv"
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"id": np.arange(1, 41), "lon": rng.uniform(-121.5, -121.3, 40),
                          "lat": rng.uniform(38.5, 38.7, 40)})
    frame.loc[[3, 7], ["lon", "lat"]] = 0.0
    frame.to_csv(path, index=False)
    with pytest.raises(InputError, match=r"^2 point\(s\) at longitude 0, latitude 0 .* at `id` "
                                         r"\[4, 8\]; geocode them or leave them out"):
        load_points(path, x="lon", y="lat", crs="EPSG:4326", id_column="id")


def test_web_mercator_points_at_zero_zero_are_refused_too(tmp_path):
    """Break-it: EPSG:3857's area of use is the world, so 0/0 passed every bounds check."""
    path = tmp_path / "m.csv"
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"id": np.arange(1, 31), "x": rng.uniform(-200e3, -100e3, 30),
                          "y": rng.uniform(600e3, 700e3, 30)})
    frame.loc[4, ["x", "y"]] = 0.0
    frame.to_csv(path, index=False)
    with pytest.raises(InputError, match=r"^1 point\(s\) at longitude 0, latitude 0 .*`id` \[5\]"):
        load_points(path, x="x", y="y", crs="EPSG:3857", id_column="id")
