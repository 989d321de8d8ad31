"""Reading masking inputs: one metric CRS, km units, regions from vertices or layers."""

from __future__ import annotations

from pathlib import Path

import geopandas
import numpy as np
import pandas as pd
import pyproj
import pytest
import shapely

import synthgeo
from synthgeo._errors import InputError
from synthgeo.masking.inputs import load_masking_inputs, read_region

DATA = Path(synthgeo.__file__).parent / "data"
CHORLEY = DATA / "chorley_ribble_cancer.csv"
WINDOW = DATA / "chorley_ribble_window.csv"
BNG = pyproj.CRS.from_epsg(27700)
KM = dict(x="x_km", y="y_km", crs="EPSG:27700", coord_unit_m=1000)


def test_chorley_inputs_stay_on_the_national_grid():
    inp = load_masking_inputs(CHORLEY, households_path=CHORLEY, id_column="id",
                              cases_query="cancer == 'larynx'",
                              households_query="cancer == 'lung'", region_path=WINDOW, **KM)
    assert inp.crs.equals(BNG) and len(inp.cases) == 58 and len(inp.households) == 978
    assert inp.point_m((354.5, 413.6)) == (354_500.0, 413_600.0)
    assert inp.region.area == pytest.approx(315.16e6, rel=1e-3)  # km² → m²
    assert shapely.contains_xy(inp.region, inp.cases.geometry.x, inp.cases.geometry.y).all()
    prov = inp.provenance
    assert prov["cases"]["n_sharing_a_location"] == 2 and prov["region"]["sha256"]
    assert prov["coordinates"]["crs_used"] == "OSGB36 / British National Grid"


def test_geographic_input_goes_to_utm_and_source_point_follows(tmp_path):
    raw = pd.read_csv(CHORLEY)
    path = tmp_path / "lonlat.csv"
    raw.drop(columns=["x_km", "y_km"]).to_csv(path, index=False)
    inp = load_masking_inputs(path, households_path=path, x="lon_derived", y="lat_derived",
                              crs="EPSG:4326", cases_query="cancer == 'larynx'",
                              households_query="cancer == 'lung'")
    assert inp.crs.to_epsg() == 32630  # UTM 30N
    # the incinerator, given in lon/lat, lands where the BNG coordinates put it
    lon, lat = pyproj.Transformer.from_crs(BNG, 4326, always_xy=True).transform(354_500, 413_600)
    sx, sy = inp.point_m((lon, lat))
    d_utm = np.hypot(inp.cases.geometry.x - sx, inp.cases.geometry.y - sy) / 1000
    larynx = raw[raw.cancer == "larynx"]
    # UTM and BNG distances agree to within the map projections' scale difference (< 0.1%)
    np.testing.assert_allclose(d_utm, larynx["dist_incinerator_km"], rtol=2e-3, atol=2e-3)


def test_households_in_another_crs_refused(tmp_path):
    raw = pd.read_csv(CHORLEY)
    hh = tmp_path / "hh.gpkg"
    lung = raw[raw.cancer == "lung"]
    geopandas.GeoDataFrame(lung[["id"]], crs=4326, geometry=geopandas.points_from_xy(
        lung.lon_derived, lung.lat_derived)).to_file(hh)
    with pytest.raises(InputError, match=r"cases are in 'OSGB36 / British National Grid' but "
                                         r"the households in 'WGS 84'"):
        load_masking_inputs(CHORLEY, households_path=hh, cases_query="cancer == 'larynx'", **KM)


def test_weight_column(tmp_path):
    path = tmp_path / "gq.csv"
    # on the British National Grid (its origin, 0/0, is in the sea: refused as km-as-metres)
    pd.DataFrame({"x": [350_000, 350_100, 350_200, 355_000.0], "y": [410_000.0] * 4,
                  "people": [1, 40, 2, 1],
                  "kind": ["case", "hh", "hh", "hh"]}).to_csv(path, index=False)
    inp = load_masking_inputs(path, households_path=path, x="x", y="y", crs="EPSG:27700",
                              cases_query="kind == 'case'", households_query="kind == 'hh'",
                              weight_column="people")
    assert inp.weights.tolist() == [40.0, 2.0, 1.0]
    assert inp.provenance["households"]["total_weight"] == 43.0


def test_region_rings_even_odd(tmp_path):
    path = tmp_path / "ring.csv"
    outer = [(0, 0), (10, 0), (10, 10), (0, 10)]
    hole = [(4, 4), (4, 6), (6, 6), (6, 4)]  # orientation does not matter
    island = [(20, 0), (22, 0), (22, 2)]
    rows = [(r, x, y) for r, ring in enumerate([outer, hole, island], 1) for x, y in ring]
    pd.DataFrame(rows, columns=["ring", "x_km", "y_km"]).to_csv(path, index=False)
    geom = read_region(path, crs=BNG, x="x_km", y="y_km", coord_unit_m=1000)
    assert geom.area == pytest.approx((100 - 4 + 2) * 1e6)
    assert not geom.contains(shapely.Point(5000, 5000)) and geom.contains(shapely.Point(1000, 1000))


def test_region_refusals(tmp_path):
    bowtie = tmp_path / "bowtie.csv"
    pd.DataFrame({"x": [0, 1, 1, 0], "y": [0, 1, 0, 1]}).to_csv(bowtie, index=False)
    with pytest.raises(InputError, match="not a valid polygon .*Self-intersection"):
        read_region(bowtie, crs=BNG, x="x", y="y")
    with pytest.raises(InputError, match="needs the vertex columns"):
        read_region(bowtie, crs=BNG, x="lon", y="y")
    two = tmp_path / "two.csv"
    pd.DataFrame({"ring": [1, 1, 2, 2, 2], "x": [0, 1, 0, 1, 1], "y": [0, 0, 0, 0, 1]}).to_csv(
        two, index=False)
    with pytest.raises(InputError, match="ring 1 .* has 2 vertices"):
        read_region(two, crs=BNG, x="x", y="y")
    layer = tmp_path / "region.gpkg"
    geopandas.GeoSeries([shapely.box(0, 0, 1, 1)], crs=4326).to_file(layer)
    with pytest.raises(InputError, match="region region.gpkg is in 'WGS 84' but the cases"):
        read_region(layer, crs=BNG)
    ok = tmp_path / "ok.gpkg"
    geopandas.GeoSeries([shapely.box(0, 0, 1, 1), shapely.box(1, 0, 2, 1)], crs=BNG).to_file(ok)
    assert read_region(ok, crs=BNG).area == pytest.approx(2.0)
