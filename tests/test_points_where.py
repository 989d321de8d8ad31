"""Where the points are: the declared study area and the land/sea test (issue 23, item 5).

Two faulty files pass every rule about what is *possible* for their CRS and land in the sea:
(a) a km file read with ``coord_unit_m = 100`` under EPSG:27700 (British National Grid) lands
south-west of Land's End; (b) lat/lon swapped in columns named x/y under EPSG:4326 moves
Lancashire / north-east England into the Indian Ocean. Both are refused by the one input pass
(:func:`synthgeo.io.checks.check_points`), with and without a study area, and by every command
that reads points; the real files (Sacramento, Lucas, Minneapolis, Chorley), coastal ones
included, still pass.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import geopandas
import numpy as np
import pandas as pd
import pyproj
import pytest
import shapely

from synthgeo import InputError, SpecError
from synthgeo.cli.main import main
from synthgeo.config import load_spec
from synthgeo.config.data import DataConfig
from synthgeo.io.points import load_points
from synthgeo.io.read import check_points_frame
from synthgeo.io.where import MAX_SEA_SHARE, on_land, study_area

SHARED = Path("/work/shared/data")
CHORLEY = SHARED / "chorley_ribble_cancer.csv"
pytestmark = pytest.mark.skipif(not CHORLEY.is_file(), reason="shared data not present")

#: A lon/lat box around the Chorley and South Ribble study area (degrees).
BOX = [-3.2, 53.5, -2.3, 54.0]
#: Town centres of north-east England, lon/lat (public places, not records).
NE_ENGLAND = [(-1.6178, 54.9783), (-1.3829, 54.9069), (-1.5747, 54.7761), (-1.2350, 54.5742),
              (-1.5500, 54.5236), (-1.4400, 55.0177), (-1.5200, 55.1300), (-1.1900, 54.6900),
              (-1.6900, 54.8600), (-1.7600, 54.9700), (-1.4800, 54.9300), (-1.2100, 54.6200)]

SEA = r"lie over the sea .*unit factor .*swapped x/y"
OUTSIDE = r"lie outside the study area .*unit factor .*swapped x/y"


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Chorley's rows at 100 m repeat exactly
        yield


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """Write the two faulty files and their correct readings."""
    d = tmp_path_factory.mktemp("where")
    chorley = pd.read_csv(CHORLEY)
    km = chorley.rename(columns={"x_km": "x", "y_km": "y"})[["id", "x", "y", "cancer"]]
    km.to_csv(d / "km.csv", index=False)  # in km, column names that do not say so
    swapped = pd.DataFrame({"id": chorley["id"], "x": chorley["lat_derived"],
                            "y": chorley["lon_derived"], "cancer": chorley["cancer"]})
    swapped.to_csv(d / "swapped.csv", index=False)  # x holds the latitude
    ne = np.array(NE_ENGLAND)
    pd.DataFrame({"id": range(len(ne)), "x": ne[:, 1], "y": ne[:, 0]}).to_csv(
        d / "ne_swapped.csv", index=False)
    pd.DataFrame({"id": range(len(ne)), "x": ne[:, 0], "y": ne[:, 1]}).to_csv(
        d / "ne.csv", index=False)
    area = geopandas.GeoDataFrame(geometry=[shapely.box(340_000, 400_000, 370_000, 440_000)],
                                  crs="EPSG:27700")
    area.to_file(d / "area.geojson", driver="GeoJSON")
    return {"dir": d, "km": d / "km.csv", "swapped": d / "swapped.csv",
            "ne_swapped": d / "ne_swapped.csv", "ne": d / "ne.csv",
            "area": d / "area.geojson"}


def _km(path, factor, **kw):
    return load_points(path, x="x", y="y", crs="EPSG:27700", coord_unit_m=factor,
                       id_column="id", **kw)


def _deg(path, **kw):
    return load_points(path, x="x", y="y", crs="EPSG:4326", id_column="id", min_records=5, **kw)


# --- the io pass ------------------------------------------------------------------------------

def test_km_file_with_factor_100_lands_in_the_sea_and_is_refused(files):
    with pytest.raises(InputError, match=r"^1,036 of 1,036 points \(100%\) in km.csv " + SEA):
        _km(files["km"], 100)
    with pytest.raises(InputError, match=r"^1,036 of 1,036 points in km.csv " + OUTSIDE):
        _km(files["km"], 100, study_area=BOX)
    with pytest.raises(InputError, match=OUTSIDE):  # a polygon file in another CRS
        _km(files["km"], 100, study_area=files["area"])
    good = _km(files["km"], 1000, study_area=BOX)
    assert good.attrs["land"] == {"n_points": 1036, "n_at_sea": 0}
    assert len(_km(files["km"], 1000, study_area=files["area"])) == 1036


@pytest.mark.parametrize("name", ["swapped", "ne_swapped"])
def test_swapped_lat_lon_in_x_y_columns_is_refused(files, name):
    with pytest.raises(InputError, match=SEA):
        _deg(files[name])
    with pytest.raises(InputError, match=OUTSIDE):
        _deg(files[name], study_area=[-2.5, 54.3, -1.0, 55.3] if name == "ne_swapped" else BOX)


def test_the_right_reading_passes_and_offshore_records_can_be_accepted(files):
    assert _deg(files["ne"], study_area="-2.5,54.3,-1.0,55.3").attrs["land"]["n_at_sea"] == 0
    out = _km(files["km"], 100, accept_offshore=True)
    assert [w["code"] for w in out.attrs["warnings"]].count("offshore") == 1
    # accepting offshore records does not lift a declared study area
    with pytest.raises(InputError, match=OUTSIDE):
        _km(files["km"], 100, accept_offshore=True, study_area=BOX)


def test_a_land_outcome_is_reused_for_the_same_bytes_only(files, monkeypatch):
    """``synthgeo draw`` rereads its release's file: the same bytes skip the land mask."""
    from synthgeo.io import where
    from synthgeo.io.provenance import file_sha256

    tested = _km(files["km"], 100, accept_offshore=True)
    kept = tuple(w for w in tested.attrs["warnings"] if w["code"] == "offshore")

    def no_mask():
        raise AssertionError("the land mask was loaded")

    where._land_mask.cache_clear()
    monkeypatch.setattr(where, "_land_mask", no_mask)
    same = where.LandChecked(sha256=file_sha256(files["km"]), notes=kept)
    again = _km(files["km"], 100, accept_offshore=True, land_checked=same)
    assert again.attrs["warnings"] == tested.attrs["warnings"]  # the offshore note, in place
    assert again.attrs["land"] == {"n_points": 1036, "n_at_sea": None}
    assert again.drop(columns="geometry").equals(tested.drop(columns="geometry"))
    other = where.LandChecked(sha256=file_sha256(files["ne"]), notes=kept)
    with pytest.raises(AssertionError, match="land mask was loaded"):  # other bytes: tested
        _km(files["km"], 100, accept_offshore=True, land_checked=other)


def test_a_frame_in_memory_gets_the_same_checks(files):
    df = pd.read_csv(files["swapped"])
    gdf = geopandas.GeoDataFrame(df, geometry=geopandas.points_from_xy(df.x, df.y),
                                 crs="EPSG:4326")
    with pytest.raises(InputError, match=r"in the GeoDataFrame lie over the sea .*"
                                         r"accept_offshore=True"):
        check_points_frame(gdf)
    with pytest.raises(InputError, match=r"in the GeoDataFrame lie outside the study area"):
        check_points_frame(gdf, study_area=BOX)


def test_the_threshold_is_more_than_half(files):
    """Half the points at sea passes; one more than half is refused (hand-built)."""
    land = [(-2.70, 53.70), (-2.60, 53.75), (-2.65, 53.72), (-2.68, 53.69)]
    sea = [(-6.0, 49.8), (-6.1, 49.7), (-6.2, 49.9), (-6.05, 49.75), (-6.15, 49.85)]
    assert on_land(*np.array(land + sea).T).tolist() == [True] * 4 + [False] * 5
    assert MAX_SEA_SHARE == 0.5

    def frame(points):
        xy = np.array(points)
        return geopandas.GeoDataFrame(geometry=geopandas.points_from_xy(xy[:, 0], xy[:, 1]),
                                      crs="EPSG:4326")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert check_points_frame(frame(land + sea[:4]), min_records=1,
                                  accept_small_extent=True).attrs["land"]["n_at_sea"] == 4
        with pytest.raises(InputError, match=r"^5 of 9 points \(56%\)"):
            check_points_frame(frame(land + sea), min_records=1, accept_small_extent=True)


@pytest.mark.parametrize("name, kwargs", [
    ("sacramento_home_sales.csv", dict(x="lon", y="lat", crs="EPSG:4326")),
    ("lucas_oh_house_sales.csv", dict(x="x_m", y="y_m", crs="EPSG:2834")),
    ("minneapolis_police_stops_2017.csv", dict(x="lon", y="lat", crs="EPSG:4326")),
    ("chorley_ribble_cancer.csv", dict(x="x_km", y="y_km", crs="EPSG:27700",
                                       coord_unit_m=1000)),
])
def test_the_real_files_pass_coastal_ones_included(name, kwargs):
    gdf = load_points(SHARED / name, **kwargs)
    assert gdf.attrs["land"] == {"n_points": len(gdf), "n_at_sea": 0}


# --- the declared study area ------------------------------------------------------------------

def test_study_area_forms_and_refusals(files, tmp_path):
    assert study_area(None) is None
    assert study_area(BOX).polygon.bounds == tuple(BOX)
    assert study_area(" -3.2, 53.5 ,-2.3,54 ").polygon.bounds == tuple(BOX)
    assert study_area("area.geojson", relative_to=files["dir"]).label == \
        "polygon file area.geojson"
    with pytest.raises(InputError, match=r"west < east"):
        study_area([-2.3, 53.5, -3.2, 54.0])
    with pytest.raises(InputError, match=r"four numbers"):
        study_area([1, 2, "x", 4])
    with pytest.raises(InputError, match=r"country codes are not supported"):
        study_area("GB")
    with pytest.raises(InputError, match=r"does not exist"):
        study_area(tmp_path / "nope.geojson")
    geopandas.GeoDataFrame(geometry=[shapely.Point(0, 0)], crs="EPSG:4326").to_file(
        tmp_path / "pt.geojson", driver="GeoJSON")
    with pytest.raises(InputError, match=r"must hold polygons"):
        study_area(tmp_path / "pt.geojson")


def test_spec_keys(files, tmp_path):
    with pytest.raises(SpecError, match=r"study_area"):
        DataConfig(response="r", study_area=[1, 2, 3])
    with pytest.raises(SpecError, match=r"accept_offshore"):
        DataConfig(response="r", accept_offshore="yes")
    spec = tmp_path / "s.toml"
    spec.write_text(f'[data]\npath = "{files["km"]}"\nresponse = "x"\n'
                    'study_area = "area.geojson"\n', encoding="utf-8")
    assert load_spec(spec).study_area() == str(tmp_path / "area.geojson")


def test_records_in_memory_through_the_api(files):
    """synthesize's spec carries both keys to the data preparation, which refuses the frame."""
    from synthgeo.api import spec_for_points
    from synthgeo.pipeline import prepare_data

    df = pd.read_csv(files["swapped"]).assign(r=lambda d: np.sin(d["id"]))
    gdf = geopandas.GeoDataFrame(df, geometry=geopandas.points_from_xy(df.x, df.y),
                                 crs="EPSG:4326")
    spec = spec_for_points(gdf, response="r", id="id", study_area=tuple(BOX))
    assert spec.data.study_area == BOX and spec.data.accept_offshore is False
    with pytest.raises(InputError, match=OUTSIDE):
        prepare_data(spec, points=gdf)
    with pytest.raises(InputError, match=SEA):
        prepare_data(spec_for_points(gdf, response="r", id="id"), points=gdf)
    spec = spec_for_points(gdf, response="r", id="id", accept_offshore=True)
    assert prepare_data(spec, points=gdf).gdf.attrs["land"]["n_at_sea"] == len(gdf)


# --- every command ----------------------------------------------------------------------------

def _cli(capsys, *argv) -> tuple[int, str]:
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    return rc, capsys.readouterr().err


def _refused(rc: int, err: str, match: str) -> None:
    assert rc != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("synthgeo: error: "), err
    assert re.search(match, lines[0]), lines[0]


CASES = {"km": ["--x", "x", "--y", "y", "--crs", "EPSG:27700", "--coord-unit-m", "100"],
         "swapped": ["--x", "x", "--y", "y", "--crs", "EPSG:4326"]}


@pytest.mark.parametrize("case", ["km", "swapped"])
@pytest.mark.parametrize("area", [None, BOX])
@pytest.mark.parametrize("command", ["kanon", "outliers", "mask", "choose-k"])
def test_point_commands_refuse(files, capsys, tmp_path, case, area, command):
    path = files[case]
    extra = {"kanon": ["--radius-m", "500"], "outliers": ["--k", "5", "--r-max-m", "5000"],
             "mask": ["--households", path, "--k", "5"], "choose-k": ["--households", path,
                                                          "--attacker-only"]}[command]
    where = ["--study-area=" + ",".join(map(str, area))] if area else []
    rc, err = _cli(capsys, command, path, *CASES[case], *extra, *where,
                   "--out", tmp_path / "out")
    _refused(rc, err, OUTSIDE if area else SEA)
    assert not (tmp_path / "out").exists()


def _spec(files, tmp_path, case, extra=""):
    crs, unit = ("EPSG:27700", "coord_unit_m = 100\n") if case == "km" else ("EPSG:4326", "")
    spec = tmp_path / "spec.toml"
    spec.write_text(f'[data]\npath = "{files[case]}"\nx = "x"\ny = "y"\ncrs = "{crs}"\n'
                    f'id = "id"\nresponse = "id"\n{unit}{extra}\n[sampling]\nchains = 2\n'
                    'draws = 10\ntune = 10\n[synthesis]\nn_implicates = 10\n', encoding="utf-8")
    return spec


@pytest.mark.parametrize("case", ["km", "swapped"])
@pytest.mark.parametrize("how", ["none", "spec", "option"])
@pytest.mark.parametrize("command", ["validate", "run"])
def test_spec_commands_refuse(files, capsys, tmp_path, case, how, command):
    box = json.dumps(BOX)
    spec = _spec(files, tmp_path, case, f"study_area = {box}" if how == "spec" else "")
    argv = [command, spec] + (["--study-area=" + ",".join(map(str, BOX))] if how == "option"
                              else [])
    out = tmp_path / "out"
    rc, err = _cli(capsys, *argv, *(["--out", out] if command == "run" else []))
    _refused(rc, err, SEA if how == "none" else OUTSIDE)
    assert not out.exists()


def test_accept_offshore_option_reaches_the_io_pass(files, capsys, tmp_path):
    """--accept-offshore lifts the land/sea refusal (the file then fails later, not at sea)."""
    rc, err = _cli(capsys, "kanon", files["km"], *CASES["km"], "--radius-m", "500",
                   "--accept-offshore")
    assert "over the sea" not in err
    spec = _spec(files, tmp_path, "km")
    rc, err = _cli(capsys, "validate", spec, "--accept-offshore")
    assert "over the sea" not in err


def test_projected_study_area_of_a_transform():
    """The box is compared in lon/lat: a point on BNG inside Chorley is inside it."""
    lon, lat = pyproj.Transformer.from_crs("EPSG:27700", "EPSG:4326", always_xy=True).transform(
        353200.0, 428000.0)
    assert shapely.intersects_xy(study_area(BOX).polygon, lon, lat)
