"""Fixes of the hostile tester's findings against the masking work (issue 23, F1-F5, low)."""

from __future__ import annotations

import warnings

import geopandas
import numpy as np
import pytest
import shapely

from synthgeo._errors import InputError, SpecError
from synthgeo.masking import NearestHouseholdAttacker, mask_to_k
from synthgeo.masking.areal import household_partition
from synthgeo.masking.bayes import MethodAwareAttacker, _tied, mask_law
from synthgeo.masking.sites import check_site_sizes
from synthgeo.masking.verify import HouseholdIndex

CRS = "EPSG:27700"


def _gs(xy):
    return geopandas.GeoSeries(geopandas.points_from_xy(*np.asarray(xy, float).T), crs=CRS)


# --- F1: tied coordinates are never split across a line; counts are those of locate() -------


def test_tied_households_stay_on_one_side_of_every_line():
    # 4 addresses on a line, 3 households at each: the old split counted 2 per area "by rank"
    # while locate() put them 0, 3, 3, 0
    xy = np.column_stack([np.repeat([0.0, 1, 2, 3], 3), np.zeros(12)])
    p = household_partition(xy, 2)
    located = np.bincount(p.locate(xy), minlength=p.n_areas)
    assert located.tolist() == p.households.tolist() == [3, 3, 3, 3]


@pytest.mark.parametrize("k", [2, 3, 5, 8])
def test_rounded_layer_every_located_area_holds_k(k):
    rng = np.random.default_rng(k)
    xy = np.round(rng.normal(0, 300, (600, 2)), -2)  # 100 m rounding: many shared coordinates
    w = rng.integers(1, 3, len(xy)).astype(float)
    p = household_partition(xy, k, weights=w)
    area = p.locate(xy)
    assert (area >= 0).all()
    counted = np.bincount(area, weights=w, minlength=p.n_areas)
    np.testing.assert_array_equal(counted, p.households)
    assert counted.min() >= k


def test_all_households_at_one_address_make_one_area():
    xy = np.zeros((7, 2))
    p = household_partition(xy, 2)
    assert p.n_areas == 1 and p.households.tolist() == [7.0]


# --- F4: households outside the region do not count ------------------------------------------


def test_households_outside_the_region_do_not_count():
    region = shapely.box(-1, -1, 1.5, 1)
    inside = [[0, 0], [0.5, 0], [1, 0]]
    outside = [[2, 0], [3, 0], [4, 0]]
    p = household_partition(np.array(inside + outside, float), 2, region=region)
    assert p.households.sum() == 3 and p.households.min() >= 2
    # one household inside, three outside: the attacker knows the case is the inside one
    with pytest.raises(InputError, match="the study region holds 1 households, fewer than k = 2"):
        mask_to_k(_gs([[0, 0]]), _gs([[0, 0], [2, 0], [3, 0], [4, 0]]), k=2, method="areal",
                  region=region, random_seed=0)


def test_areal_mask_with_region_counts_area_and_region():
    rng = np.random.default_rng(1)
    hh = rng.uniform(0, 1000, (400, 2))
    region = shapely.box(0, 0, 500, 1000)
    cases = hh[hh[:, 0] < 480][:20]
    m = mask_to_k(_gs(cases), _gs(hh), k=10, method="areal", region=region, random_seed=3)
    p = household_partition(hh, 10, extent=tuple(m.verification["extent"]), region=region)
    inreg = hh[:, 0] <= 500
    area_of = p.locate(hh)
    published = p.locate(np.column_stack([m.masked.geometry.x, m.masked.geometry.y]))
    n = np.array([np.sum((area_of == a) & inreg) for a in published])
    assert n.min() >= 10
    np.testing.assert_array_equal(m.verified_k, n)


# --- F5: an unmoved case (infinite own score) ties only with infinite scores -----------------


def test_infinite_own_score_ties_only_with_infinite():
    s = np.array([np.inf, 3.0, 0.0, 1.0])
    o = np.array([np.inf, np.inf, np.inf, 1.0 + 1e-12])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _tied(s, o).tolist() == [True, False, False, True]


def test_aware_attacker_at_least_naive_on_tied_data_at_k2():
    # cases at addresses shared by 2-3 households: r_2 = 0, the donut does not move them
    rng = np.random.default_rng(0)
    addr = rng.uniform(0, 2000, (60, 2)).round(-1)
    hh = np.repeat(addr, rng.integers(2, 4, len(addr)), axis=0)
    cases = addr[:30]
    law = mask_law("donut", HouseholdIndex(hh), 2)
    with pytest.warns(UserWarning, match="at their exact location"):
        runs = [mask_to_k(_gs(cases), _gs(hh), k=2, random_seed=s) for s in range(5)]
    masks = np.stack([np.column_stack([m.masked.geometry.x, m.masked.geometry.y]) for m in runs])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        aware = MethodAwareAttacker(known_share=1).success(cases, masks, law=law, random_seed=1)
    naive = NearestHouseholdAttacker(known_share=1).success(cases, masks, random_seed=1)
    assert aware.mean() >= naive.mean() - 1e-12
    assert aware.mean() == pytest.approx(1.0)


# --- low: refused parameters -----------------------------------------------------------------


def test_k_below_2_and_zero_site_records_are_refused():
    hh = _gs([[0, 0], [1, 0], [2, 0]])
    with pytest.raises(SpecError, match="`k` = 1 must be at least 2.*protects nothing"):
        mask_to_k(_gs([[0, 0]]), hh, k=1)
    with pytest.raises(SpecError, match=r"`max_site_records` = 0 must be an integer >= 1"):
        mask_to_k(_gs([[0, 0]]), hh, k=2, max_site_records=0)


def test_site_error_names_plain_ids():
    with pytest.raises(InputError, match=r"the site of record 7\)") as err:
        check_site_sizes(np.array([3]), 2, np.array([7], dtype=np.int64), np.array([0]))
    assert "np.int64" not in str(err.value)


# --- F2/F3/low: the command line --------------------------------------------------------------

_INPUTS = ["synthgeo:chorley_ribble_cancer.csv", "--households",
           "synthgeo:chorley_ribble_cancer.csv", "--x", "x_km", "--y", "y_km", "--crs",
           "EPSG:27700", "--coord-unit-m", "1000", "--id-col", "id", "--cases-query",
           "cancer == 'larynx'", "--households-query", "cancer == 'lung'", "--region",
           "synthgeo:chorley_ribble_window.csv", "--n-attacks", "5"]


def test_mask_cli_reuse_refuses_another_method_or_k_and_notes_the_partition(tmp_path, capsys):
    import json

    from synthgeo.cli.main import main

    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["mask", *_INPUTS, "--k", "5", "--method", "areal", "--seed", "81462390571",
                 "--out", str(a)]) == 0
    out = capsys.readouterr().out
    assert "warning: mask these cases once" in out
    assert "points share their coordinates with another" in out
    public = json.loads((a / "release" / "masking.json").read_text())
    assert "median" not in public["method"] and "mask these cases once" in public["composition"]
    assert len(public["partition"]["root_extent_m"]) == 4
    assert "distinct coordinates" in public["partition"]["rule"]
    side = json.loads((a / "mask.json").read_text())
    assert side["household_layer"] == {"points": 978, "distinct_locations": 683,
                                       "points_sharing_a_location": 489}
    assert side["verification"]["min_households_in_area"] >= 5
    for extra in (["--k", "20", "--method", "areal"], ["--k", "5", "--method", "donut"]):
        assert main(["mask", *_INPUTS, *extra, "--reuse", str(a), "--out", str(b)]) == 1
        err = capsys.readouterr().err
        assert f"--reuse {a} holds a mask by method areal at k = 5 but this one is by" in err
        assert not b.exists()
    assert main(["mask", *_INPUTS, "--k", "5", "--max-site-records", "0", "--out",
                 str(b)]) == 1
    assert "`max_site_records` = 0 must be an integer >= 1" in capsys.readouterr().err
    assert main(["mask", *_INPUTS, "--k", "1", "--out", str(b)]) == 1
    assert "`k` = 1 must be at least 2" in capsys.readouterr().err
