"""Spatial k on layouts checkable by hand: lattice, groups, subjects, cap, summary, offenders."""

from __future__ import annotations

import geopandas
import numpy as np
import pandas as pd
import pytest

from synthgeo import InputError, SpecError
from synthgeo.locations import measure_spatial_k
from synthgeo.locations.spatial_k import quantile_count

# 3 x 3 lattice, 100 m spacing, ids 0..8 row by row (x fastest)
LATTICE = np.array([[x, y] for y in (0, 100, 200) for x in (0, 100, 200)], float)


#: A local metre CRS centred on the test points (no area of use): coordinates near (0, 0) are
#: real there (in UTM 15N they would lie off the zone and be refused as km read as metres).
LOCAL = "+proj=aeqd +lat_0=45 +lon_0=-93 +units=m +datum=WGS84"


def layer(xy, **cols):
    xy = np.asarray(xy, float)
    return geopandas.GeoDataFrame(cols, geometry=geopandas.points_from_xy(xy[:, 0], xy[:, 1]),
                                  crs=LOCAL)


def test_lattice_by_hand_itself_included_and_inclusive():
    res = measure_spatial_k(layer(LATTICE), 100.0, k=4)
    # corner: itself + 2; edge: itself + 3; centre: itself + 4 (neighbours at exactly 100 m)
    np.testing.assert_array_equal(res.spatial_k, [3, 4, 3, 4, 5, 4, 3, 4, 3])
    np.testing.assert_array_equal(measure_spatial_k(layer(LATTICE), 99.9, k=2).spatial_k,
                                  np.ones(9))
    s = res.summary()
    assert (s["n_records"], s["min"], s["p05"], s["median"]) == (9, 3, 3, 4)
    assert (s["n_below_k"], s["share_below_k"]) == (4, pytest.approx(4 / 9))
    assert s["n_k_equals_1"] == 0 and s["n_at_cap"] == 0


def test_grouping_lowers_k():
    sex = np.array(list("FMFMFMFMF"))  # a checkerboard
    grouped = measure_spatial_k(layer(LATTICE, sex=sex), 100.0, k=2, group_by="sex")
    plain = measure_spatial_k(layer(LATTICE, sex=sex), 100.0, k=2)
    # on a checkerboard no orthogonal neighbour shares the value: everyone alone
    np.testing.assert_array_equal(grouped.spatial_k, np.ones(9))
    assert (grouped.spatial_k <= plain.spatial_k).all()
    diag = measure_spatial_k(layer(LATTICE, sex=sex), 150.0, k=2, group_by=["sex"])
    # within 150 m the diagonals count: F centre has 4 F diagonals, F corners 1, M edges 2
    np.testing.assert_array_equal(diag.spatial_k, [2, 3, 2, 3, 5, 3, 2, 3, 2])
    bg = diag.by_group().set_index("group")
    assert bg.loc["F", "n_records"] == 5 and bg.loc["M", "n_records"] == 4
    assert bg.loc["F", "min"] == "2" and bg.loc["M", "median"] == "3"


def test_missing_group_values_form_their_own_group():
    race = pd.Series(["a", None, None, "a"], dtype=object)
    res = measure_spatial_k(layer([[0, 0]] * 4, race=race), 10.0, k=2, group_by="race")
    np.testing.assert_array_equal(res.spatial_k, [2, 2, 2, 2])
    assert set(res.group) == {"a", "<missing>"}


def test_subject_deduplication_counts_a_person_once():
    xy = [[0, 0], [0, 0], [0, 0], [50, 0], [5000, 0]]
    res = measure_spatial_k(layer(xy, pid=["p", "p", "p", "q", "r"]), 100.0, k=2, subject="pid")
    np.testing.assert_array_equal(res.spatial_k, [2, 2, 2, 2, 1])
    assert res.summary()["n_subjects"] == 3
    with pytest.raises(InputError, match="subject column `pid` has 1 missing"):
        measure_spatial_k(layer(xy, pid=["p", None, "p", "q", "r"]), 100.0, subject="pid")


def test_cap_reads_at_least_and_histogram_bins():
    rng = np.random.default_rng(0)
    xy = np.vstack([rng.uniform(0, 10, (30, 2)), [[1000, 1000]], [[2000, 2000]] * 3])
    res = measure_spatial_k(layer(xy), 50.0, k=3, k_max=10)
    assert (res.spatial_k[:30] == 10).all() and res.at_cap[:30].all()
    assert res.spatial_k[30] == 1 and (res.spatial_k[31:] == 3).all()
    s = res.summary()
    assert s["median"] == 10 and s["median_at_cap"] and not s["min_at_cap"]
    hist = res.histogram()
    assert hist["label"].tolist() == ["1", "2", "3", "4", "5–9", "≥10"]
    assert hist["n_records"].tolist() == [1, 0, 3, 0, 0, 30]
    assert hist["n_records"].sum() == len(xy)
    dist = res.distribution()
    assert dist["label"].tolist() == ["1", "3", "≥10"]
    assert dist["cumulative_share"].iloc[-1] == pytest.approx(1.0)


def test_worst_offenders_lowest_k_then_most_isolated():
    xy = [[0, 0], [10, 0], [20, 0], [3000, 0], [6000, 500], [9000, 0], [9060, 80]]
    res = measure_spatial_k(layer(xy, rid=list("abcdefg")), 100.0, k=3, id_column="rid")
    np.testing.assert_array_equal(res.spatial_k, [3, 3, 3, 1, 1, 2, 2])
    worst = res.worst_offenders(4, crs="EPSG:4326")
    # k = 1 first, the one farther from anyone first (e: 3041 m from d; d: 3000 m from c)
    assert worst["rid"].tolist() == ["e", "d", "f", "g"]
    assert worst["nearest_other_m"].iloc[0] == pytest.approx(np.hypot(3000, 500))
    assert worst["nearest_other_m"].iloc[2] == pytest.approx(100.0)
    assert worst["x_m"].iloc[1] == 3000
    assert {"x", "y"} <= set(worst.columns) and worst["y"].between(-90, 90).all()


def test_quantiles_are_observed_values():
    assert quantile_count(np.array([1, 2, 3, 4]), 0.5) == 2
    assert quantile_count(np.arange(1, 101), 0.05) == 5
    assert quantile_count(np.array([7]), 0.05) == 7


def test_bad_parameters():
    gdf = layer(LATTICE)
    with pytest.raises(SpecError, match="`k` must be an integer >= 2"):
        measure_spatial_k(gdf, 100.0, k=1)
    with pytest.raises(SpecError, match="`k_max` must be an integer >= `k` = 5"):
        measure_spatial_k(gdf, 100.0, k=5, k_max=4)
    with pytest.raises(SpecError, match="`radius_m`"):
        measure_spatial_k(gdf, -5.0)
    with pytest.raises(InputError, match=r"`group_by` column\(s\) \['race'\] not found"):
        measure_spatial_k(gdf, 100.0, group_by="race")
    with pytest.raises(TypeError, match="must be a GeoDataFrame"):
        measure_spatial_k(LATTICE, 100.0)
