"""Attacker model (against brute force, ties, no mask) and the excess-near-a-source test."""

from __future__ import annotations

import geopandas
import numpy as np
import pytest

from synthgeo._errors import SpecError
from synthgeo.masking import ExcessNearSource, FunctionUtility, NearestHouseholdAttacker

CRS = "EPSG:27700"


def lattice(n_side: int, spacing_m: float) -> np.ndarray:
    g = np.arange(n_side) * spacing_m
    return np.column_stack([a.ravel() for a in np.meshgrid(g, g)]) + [400_000, 300_000]


def brute_force_success(true_xy, masked, known) -> np.ndarray:
    out = []
    for r in range(masked.shape[0]):
        k = known[r]
        d = np.hypot(*(masked[r, k][:, None, :] - true_xy[k][None, :, :]).transpose(2, 0, 1))
        order = np.sort(d, axis=1)
        hit = (d.argmin(axis=1) == np.arange(len(k))) & (order[:, 1] > order[:, 0])
        out.append(hit.mean())
    return np.array(out)


def test_no_mask_on_distinct_sites_is_full_success():
    xy = lattice(6, 1000.0)  # 36 distinct sites
    masked = np.broadcast_to(xy, (50, *xy.shape))
    success = NearestHouseholdAttacker(known_share=0.3).success(xy, masked, random_seed=1)
    np.testing.assert_array_equal(success, np.ones(50))


def test_matches_brute_force_with_the_same_known_sets():
    rng = np.random.default_rng(3)
    xy = rng.uniform(0, 3000, (60, 2))
    masked = xy + rng.normal(0, 300, (40, 60, 2))
    attacker = NearestHouseholdAttacker(known_share=0.25)
    got = attacker.success(xy, masked, random_seed=9)
    # the same known sets: the attacker draws them first from its generator
    n_known = attacker.n_known(60)
    assert n_known == 15
    known = np.argsort(np.random.default_rng(9).random((40, 60)), axis=1)[:, :n_known]
    np.testing.assert_allclose(got, brute_force_success(xy, masked, known))
    assert 0 < got.mean() < 1


def test_ties_count_as_failures():
    xy = lattice(3, 500.0)
    xy[1] = xy[0]  # two cases in one household location
    masked = np.broadcast_to(xy, (5, 9, 2))
    success = NearestHouseholdAttacker(known_share=1.0).success(xy, masked, random_seed=0)
    np.testing.assert_allclose(success, 7 / 9)


def test_known_count_and_baseline():
    a = NearestHouseholdAttacker()
    assert [a.n_known(n) for n in (1, 3, 14, 58, 100)] == [1, 1, 4, 17, 30]
    assert a.baseline(58) == pytest.approx(1 / 17)
    assert NearestHouseholdAttacker(known_share=0.3).success(
        np.zeros((1, 2)), np.zeros((1, 1, 2)), random_seed=0).tolist() == [1.0]
    for bad in (0, 1.5, -0.1, True):
        with pytest.raises(SpecError, match="known_share"):
            NearestHouseholdAttacker(known_share=bad)
    with pytest.raises(ValueError, match="expected true_xy_m of shape"):
        a.success(np.zeros((3, 2)), np.zeros((2, 4, 2)))


def _gs(xy):
    xy = np.asarray(xy, dtype=float)
    return geopandas.GeoSeries(geopandas.points_from_xy(xy[:, 0], xy[:, 1]), crs=CRS)


def test_excess_near_source_by_hand():
    # 100 households, 10 of them within R = 1000 m of the source (one exactly at R)
    rng = np.random.default_rng(0)
    far = rng.uniform(5000, 9000, (90, 2))
    near = np.column_stack([np.linspace(0, 900, 10), np.zeros(10)])
    near[-1] = [1000.0, 0.0]
    test = ExcessNearSource.from_households(_gs(np.vstack([near, far])), source_xy_m=(0, 0),
                                            radius_m=1000)
    assert test.household_share == pytest.approx(0.1)
    cases = np.vstack([np.zeros((4, 2)), [[0, 1000]], rng.uniform(5000, 9000, (15, 2))])
    assert test.expected(20) == pytest.approx(2.0)
    assert test.observed(cases).tolist() == [5]  # the case at exactly R counts
    assert test.passes(cases).tolist() == [True]  # 5 >= 2 × 2 and 5 >= 3
    moved = cases.copy()
    moved[:2] += 3000  # 3 left: 3 < 4 = 2 × expected
    assert test.passes(np.stack([cases, moved])).tolist() == [True, False]
    # min_count: 2 cases when 0.1 expected is a big ratio but too few cases
    few = np.vstack([np.zeros((2, 2)), rng.uniform(5000, 9000, (18, 2))])
    assert test.passes(few).tolist() == [False]
    d = test.to_dict()
    assert d["radius_m"] == 1000 and d["min_ratio"] == 2 and d["min_count"] == 3


def test_excess_weighted_share_and_validation():
    hh = _gs([[0, 0], [5000, 0]])
    test = ExcessNearSource.from_households(hh, source_xy_m=(0, 0), radius_m=10,
                                            weights=np.array([1.0, 3.0]))
    assert test.household_share == pytest.approx(0.25)
    with pytest.raises(SpecError, match="`radius_m` must be a positive number"):
        ExcessNearSource(source_xy_m=(0, 0), radius_m=0, household_share=0.1)
    with pytest.raises(SpecError, match="source_xy_m"):
        ExcessNearSource(source_xy_m=(0, np.nan), radius_m=5, household_share=0.1)
    with pytest.raises(SpecError, match="household_share"):
        ExcessNearSource(source_xy_m=(0, 0), radius_m=5, household_share=1.5)


def test_function_utility_checks_its_answer():
    ok = FunctionUtility(func=lambda xy: xy[..., 0].mean(axis=1) > 0, name="east",
                         params={"axis": "x"})
    xy = np.ones((3, 5, 2))
    assert ok.passes(xy).tolist() == [True] * 3
    assert ok.to_dict() == {"name": "east", "axis": "x"}
    bad = FunctionUtility(func=lambda xy: 1.0, name="scalar")
    with pytest.raises(ValueError, match="must return a bool array of shape"):
        bad.passes(xy)
