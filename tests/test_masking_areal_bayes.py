"""Areal mask, the method-aware (Bayes) attacker, co-located records (issue 23)."""

from __future__ import annotations

import geopandas
import numpy as np
import pytest
import shapely

from synthgeo._errors import InputError, SpecError
from synthgeo.masking import ExcessNearSource, NearestHouseholdAttacker, choose_k, mask_to_k
from synthgeo.masking.areal import household_partition
from synthgeo.masking.bayes import ArealLaw, DonutLaw, MethodAwareAttacker, mask_law
from synthgeo.masking.donut import INNER_RATIO, _draw_donut, _kth_distance
from synthgeo.masking.sites import site_index
from synthgeo.masking.verify import HouseholdIndex, verified_k
from synthgeo.testing import clustered_points

CRS = "EPSG:27700"


def _gs(xy):
    return geopandas.GeoSeries(geopandas.points_from_xy(*np.asarray(xy, float).T), crs=CRS)


# --- the partition ---------------------------------------------------------------------------


def test_partition_areas_hold_k_to_2k_households_and_tile_the_extent():
    hh = clustered_points(5_000, random_seed=3)
    p = household_partition(hh, 20)
    assert p.households.min() >= 20 and p.households.max() < 40
    # every household is in exactly one area, and the counts agree with the areas' contents
    area = p.locate(hh)
    assert (area >= 0).all()
    assert np.array_equal(np.bincount(area, minlength=p.n_areas), p.households)
    # the areas tile the root rectangle: their areas sum to it and none overlap
    boxes = p.polygons()
    root = shapely.box(*p._root)
    assert shapely.union_all(boxes).area == pytest.approx(root.area, rel=1e-9)
    assert sum(b.area for b in boxes) == pytest.approx(root.area, rel=1e-9)
    # closed rectangles hold at least the households assigned to them (exact count)
    closed = [int(shapely.contains_xy(b.buffer(1e-9), hh[:, 0], hh[:, 1]).sum()) for b in boxes]
    assert (np.array(closed) >= 20).all()


def test_partition_with_weights_counts_households():
    hh = np.column_stack([np.arange(10.0), np.zeros(10)])
    p = household_partition(hh, 6, weights=np.full(10, 3.0))  # 30 households
    assert p.households.min() >= 6 and p.households.sum() == 30


# --- the method-aware attacker on hand-made layouts ------------------------------------------


def test_areal_mask_holds_the_household_attacker_to_one_over_k():
    hh = clustered_points(3_000, random_seed=5)
    rng = np.random.default_rng(6)
    cases = hh[rng.choice(len(hh), 150, replace=False)]
    for k in (5, 20):
        m = mask_to_k(_gs(cases), _gs(hh), k=k, method="areal", random_seed=7)
        assert m.method == "areal" and (m.verified_k >= k).all()
        law = mask_law("areal", HouseholdIndex(hh), k,
                       extent=tuple(m.verification["extent"]))
        masked = np.column_stack([m.masked.geometry.x, m.masked.geometry.y])[None]
        s = MethodAwareAttacker(prior="households").success(cases, masked, law=law)
        assert s[0] <= 1 / k + 1e-12
        # exactly the mean of 1 / (households in the case's area)
        assert s[0] == pytest.approx(np.mean(1 / m.verified_k))


def test_bayes_attacker_beats_the_ratio_attacker_on_the_donut():
    # the "ratio" attacker (distance / r_k closest to 0.79) is a crude use of the law;
    # the Bayes attacker, knowing the same cases, must do at least as well
    hh = clustered_points(4_000, random_seed=8)
    rng = np.random.default_rng(9)
    cases = hh[rng.choice(len(hh), 200, replace=False)]
    k = 20
    r = _kth_distance(cases, hh, np.array([k]), None)[:, 0]
    masked, _, _ = _draw_donut(cases, r, 30, np.random.default_rng(10))
    att = MethodAwareAttacker()
    law = DonutLaw(HouseholdIndex(hh), k, verified=False, inner=INNER_RATIO)
    bayes = att.success(cases, masked, law=law, random_seed=1).mean()
    naive = NearestHouseholdAttacker().success(cases, masked, random_seed=1).mean()
    known = np.argsort(np.random.default_rng(1).random((30, 200)), axis=1)[:, :att.n_known(200)]
    ratio = []
    for j in range(30):
        kk = known[j]
        d = np.linalg.norm(masked[j, kk][:, None] - cases[kk][None], axis=-1)
        ratio.append(np.mean(np.abs(d / r[kk][None] - 0.79).argmin(axis=1) == np.arange(len(kk))))
    assert bayes >= np.mean(ratio) - 0.01 and bayes > naive


def test_verified_donut_law_scores_only_points_passing_verification():
    hh = np.array([[x, y] for x in range(0, 1000, 50) for y in range(0, 1000, 50)], float)
    law = DonutLaw(HouseholdIndex(hh), 10, verified=True, inner=INNER_RATIO, n_draws=50)
    h = np.array([[500.0, 500.0]])
    r = law.r_k(h)
    acc = law.acceptance(h, r)
    assert acc.shape == (1, 6) and acc[0, 0] > 0
    # a point inside the annulus scores > 0 only if its verified k from h reaches 10
    for ang in np.linspace(0, 2 * np.pi, 12, endpoint=False):
        m = h + 0.75 * r[0] * np.array([[np.cos(ang), np.sin(ang)]])
        s = law.scores(m, h, r, acc)[0]
        assert (s > 0) == (verified_k(h, m, hh)[0] >= 10)


def test_attacker_rejects_bad_parameters():
    with pytest.raises(SpecError, match="`prior` must be one of"):
        MethodAwareAttacker(prior="everyone")
    with pytest.raises(SpecError, match="`known_share` must be a share"):
        MethodAwareAttacker(known_share=0)
    with pytest.raises(SpecError, match="`method` must be 'donut' or 'areal'"):
        mask_to_k(_gs([[0, 0]]), _gs([[1, 1], [2, 2]]), k=2, method="voronoi")


def test_areal_law_ties_every_household_of_an_area():
    hh = np.column_stack([np.arange(8.0), np.zeros(8)])
    law = ArealLaw(HouseholdIndex(hh), household_partition(hh, 2))
    # known cases at households 0, 1 (one area) and 6: a point in the first area is a coin flip
    att = MethodAwareAttacker(known_share=1.0)
    s = att.success(hh[[0, 1, 6]], np.array([[[0.7, 0.0], [0.2, 0.0], [6.5, 0.0]]]), law=law)
    assert s.tolist() == [pytest.approx((0.5 + 0.5 + 1.0) / 3)]


# --- the donut cannot meet a target that the areal mask meets ---------------------------------


@pytest.fixture(scope="module")
def dense_cases():
    # every household is a case (a common condition, or a layer of all patients): the attacker
    # knowing 30 % of them has many known candidates in every area
    hh = clustered_points(2_000, random_seed=21)
    rng = np.random.default_rng(22)
    cases = hh[rng.choice(len(hh), 1_000, replace=False)]
    return _gs(cases), _gs(hh)


def test_donut_fails_a_target_that_the_areal_mask_meets(dense_cases):
    cases, hh = dense_cases
    res = choose_k(cases, hh, utility=None, k_grid=(50, 100), n_replicates=6, random_seed=3,
                   max_attacker_success=0.12, progressbar=False, households_masks=2)
    t = res.table.set_index(["method", "k"])
    assert not t.loc["donut", "meets_attacker_target"].any()
    assert t.loc["areal", "meets_attacker_target"].any()
    assert res.chosen_method == "areal" and "areal mask" in res.finding
    # the stronger attacker against the donut is the method-aware one
    assert (t.loc["donut", "attacker_success_aware"]
            > t.loc["donut", "attacker_success_naive"]).all()
    # the household-prior attacker is held to 1/k by the areal mask
    assert (t.loc["areal", "attacker_success_aware_households"]
            <= 1 / t.loc["areal"].index.to_numpy() + 1e-12).all()


# --- co-located records -----------------------------------------------------------------------


def test_site_index_groups_exact_duplicates_in_order():
    first, inv, cnt = site_index(np.array([[1.0, 1], [0, 0], [1, 1], [0, 0], [2, 2]]))
    assert first.tolist() == [0, 1, 4] and inv.tolist() == [0, 1, 0, 1, 2]
    assert cnt.tolist() == [2, 2, 1]


@pytest.mark.parametrize("method", ["donut", "areal"])
def test_centroid_of_a_sites_masks_is_no_closer_than_a_single_mask(method):
    hh = clustered_points(3_000, random_seed=31)
    site = hh[17]
    others = hh[np.random.default_rng(32).choice(len(hh), 60, replace=False)]
    cases = np.vstack([np.repeat(site[None], 140, axis=0), others])
    m = mask_to_k(_gs(cases), _gs(hh), k=10, method=method, random_seed=33,
                  max_site_records=None)
    xy = np.column_stack([m.masked.geometry.x, m.masked.geometry.y])
    site_masks = xy[:140]
    centroid = site_masks.mean(axis=0)
    single = np.linalg.norm(site_masks[0] - site)
    assert np.linalg.norm(centroid - site) >= single - 1e-9
    # one published point for the whole site: nothing to average
    assert len(np.unique(site_masks, axis=0)) == 1
    # the other cases are masked independently of the site's draw
    assert len(np.unique(xy[140:], axis=0)) == 60


def test_a_stack_beyond_the_threshold_is_refused():
    hh = clustered_points(1_000, random_seed=41)
    cases = np.vstack([np.repeat(hh[[3]], 11, axis=0), hh[[5, 6]]])
    with pytest.raises(InputError, match=r"1 site\(s\) hold more than max_site_records = 10 "
                                         r"records.*largest 11.*aggregated count"):
        mask_to_k(_gs(cases), _gs(hh), k=5, random_seed=1)
    # at the threshold the stack is published at one point and reported
    m = mask_to_k(_gs(cases[1:]), _gs(hh), k=5, random_seed=1)
    assert m.largest_site == 10
    with pytest.raises(InputError, match="max_site_records"):
        choose_k(_gs(cases), _gs(hh), utility=None, k_grid=(5,), n_replicates=2,
                 progressbar=False)


def test_independent_masks_of_a_site_would_average_out():
    # why the shared draw: 140 independent donut masks average to within a few r_k / 10
    hh = clustered_points(3_000, random_seed=31)
    site = hh[17]
    r = _kth_distance(site[None], hh, np.array([10]), None)[0, 0]
    masked, _, _ = _draw_donut(np.repeat(site[None], 140, axis=0), np.full(140, r), 1,
                               np.random.default_rng(5))
    assert np.linalg.norm(masked[0].mean(axis=0) - site) < 0.25 * r
