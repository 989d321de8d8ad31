"""The KD-tree neighbour machinery against brute-force O(N²) counts (property-based).

Coordinates are integers in metres (exact in float64), so a pair exactly at the radius is exactly
at it for both the tree and the brute force: the inclusive boundary is tested, not blurred.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from synthgeo import InputError, SpecError
from synthgeo.locations import neighbours
from synthgeo.locations.nearest import nearest_other_subjects
from synthgeo.locations.neighbours import other_subject_record_counts, radius_counts

PYTHAGOREAN = [(0, 0), (3, 4), (4, 3), (0, 5), (5, 0), (-3, 4), (3, -4), (-4, -3), (6, 8),
               (8, 6), (0, 10), (-6, 8), (5, 12), (12, 5), (8, 15), (20, 21)]


@st.composite
def layouts(draw):
    """Integer points with duplicates, pairs exactly at the radius, groups and subjects."""
    n = draw(st.integers(1, 60))
    extent = draw(st.sampled_from([5, 50, 500, 5000]))
    pts = [list(draw(st.tuples(st.integers(0, extent), st.integers(0, extent))))
           for _ in range(n)]
    unit = draw(st.sampled_from([1, 2, 5, 10, 25]))
    radius = unit * draw(st.sampled_from([5, 10, 13, 17, 25, 29]))  # hypotenuses above
    extra = draw(st.integers(0, 30))
    for _ in range(extra):
        base = pts[draw(st.integers(0, len(pts) - 1))]
        kind = draw(st.sampled_from(["dup", "at_radius", "near"]))
        if kind == "dup":
            pts.append(list(base))
        elif kind == "at_radius":
            dx, dy = draw(st.sampled_from(PYTHAGOREAN))
            h = int(round(np.hypot(dx, dy)))
            if h and radius % h == 0:
                f = radius // h
                pts.append([base[0] + dx * f, base[1] + dy * f])  # exactly at the radius
            else:
                pts.append([base[0] + radius, base[1]])
        else:
            pts.append([base[0] + draw(st.integers(-3, 3)), base[1] + draw(st.integers(-3, 3))])
    xy = np.asarray(pts, dtype=float)
    m = len(xy)
    groups = np.asarray(draw(st.lists(st.integers(0, 2), min_size=m, max_size=m)))
    subject = np.asarray(draw(st.lists(st.integers(0, max(1, m // 2)), min_size=m, max_size=m)))
    k_max = draw(st.integers(1, 12))
    return xy, float(radius), groups, subject, k_max


def _within(xy, r):
    d2 = ((xy[:, None, :] - xy[None, :, :]) ** 2).sum(-1)
    return d2 <= r * r  # exact: integer coordinates


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layouts())
def test_radius_counts_equal_brute_force(layout):
    xy, r, groups, subject, k_max = layout
    within = _within(xy, r)
    same = groups[:, None] == groups[None, :]
    records = within.sum(1)
    grouped = (within & same).sum(1)
    for budget in (0, 10_000_000):  # per-record route (grid bound + ball counts), pair listing
        with mock.patch.object(neighbours, "_PAIR_BUDGET", budget):
            np.testing.assert_array_equal(radius_counts(xy, r), records)
            np.testing.assert_array_equal(radius_counts(xy, r, k_max=k_max),
                                          np.minimum(records, k_max))
            np.testing.assert_array_equal(radius_counts(xy, r, groups=groups), grouped)
            np.testing.assert_array_equal(radius_counts(xy, r, groups=groups, k_max=k_max),
                                          np.minimum(grouped, k_max))
    subjects = np.array([len(set(subject[within[i] & same[i]])) for i in range(len(xy))])
    np.testing.assert_array_equal(radius_counts(xy, r, groups=groups, subject=subject), subjects)
    np.testing.assert_array_equal(
        radius_counts(xy, r, groups=groups, subject=subject, k_max=k_max),
        np.minimum(subjects, k_max))
    # grouping and subject deduplication never raise k
    assert np.all(grouped <= records) and np.all(subjects <= grouped)
    other = np.array([(within[i] & (subject != subject[i])).sum() for i in range(len(xy))])
    np.testing.assert_array_equal(other_subject_record_counts(xy, r, subject=subject), other)


@settings(max_examples=60, deadline=None)
@given(layouts(), st.integers(1, 5))
def test_nearest_other_subjects_equal_brute_force(layout, need):
    xy, _, groups, subject, _ = layout
    d = np.sqrt(((xy[:, None, :] - xy[None, :, :]) ** 2).sum(-1))
    dist, idx = nearest_other_subjects(xy, need, subject=subject, groups=groups)
    for i in range(len(xy)):
        best: dict[int, float] = {}
        for j in range(len(xy)):
            if subject[j] != subject[i] and groups[j] == groups[i]:
                best[subject[j]] = min(best.get(subject[j], np.inf), d[i, j])
        want = sorted(best.values())[:need]
        want += [np.inf] * (need - len(want))
        np.testing.assert_allclose(dist[i], want)
        found = idx[i] >= 0
        np.testing.assert_allclose(d[i, idx[i][found]], dist[i][found])
        assert np.all(subject[idx[i][found]] != subject[i])


@pytest.mark.parametrize("pair_budget", [0, 10_000_000])
def test_every_counting_route_is_exact_below_the_cap(monkeypatch, pair_budget):
    # 2,000 points in a 60 m square (every count >= 100) plus a sparse ring. Budget 0 forces
    # the per-record route, where the grid lower bound settles the core and the tree the ring;
    # the default lists the pairs. Both must agree with brute force.
    monkeypatch.setattr(neighbours, "_PAIR_BUDGET", pair_budget)
    calls = []
    real = neighbours._grid_lower_bound
    monkeypatch.setattr(neighbours, "_grid_lower_bound",
                        lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(3)
    core = rng.integers(0, 60, size=(2000, 2))
    ring = rng.integers(-3000, 3000, size=(400, 2))
    xy = np.vstack([core, ring]).astype(float)
    within = _within(xy, 100.0)
    got = radius_counts(xy, 100.0, k_max=100)
    np.testing.assert_array_equal(got, np.minimum(within.sum(1), 100))
    assert (got[:2000] == 100).all() and (got[2000:] < 100).mean() > 0.9
    assert bool(calls) == (pair_budget == 0)
    np.testing.assert_array_equal(radius_counts(xy, 100.0), within.sum(1))


def test_duplicates_count_themselves_and_each_other():
    xy = np.array([[0.0, 0.0]] * 3 + [[100.0, 0.0], [100.1, 0.0]])
    np.testing.assert_array_equal(radius_counts(xy, 100.0), [4, 4, 4, 5, 2])
    np.testing.assert_array_equal(radius_counts(xy, 0.0), [3, 3, 3, 1, 1])
    # one subject at the three duplicates: one person, counted once
    np.testing.assert_array_equal(radius_counts(xy, 100.0, subject=[7, 7, 7, 8, 9]),
                                  [2, 2, 2, 3, 2])


def test_time_axis_is_one_dimensional():
    t = np.array([0.0, 60.0, 120.0, 3600.0])
    np.testing.assert_array_equal(radius_counts(t, 60.0), [2, 3, 2, 1])
    dist, _ = nearest_other_subjects(t, 2)
    np.testing.assert_allclose(dist[:, 1], [120.0, 60.0, 120.0, 3540.0])


def test_bad_arguments():
    with pytest.raises(SpecError, match="`radius_m` must be a finite distance"):
        radius_counts(np.zeros((2, 2)), -1.0)
    with pytest.raises(SpecError, match="`k_max` must be a positive integer"):
        radius_counts(np.zeros((2, 2)), 1.0, k_max=0)
    with pytest.raises(InputError, match="non-finite values at rows \\[1\\]"):
        radius_counts(np.array([[0.0, 0.0], [np.nan, 1.0]]), 1.0)
    with pytest.raises(InputError, match="`groups` must have one label per record"):
        radius_counts(np.zeros((3, 2)), 1.0, groups=[1, 2])
    with pytest.raises(SpecError, match="`n_neighbours` must be a positive integer"):
        nearest_other_subjects(np.zeros((3, 2)), 0)


def test_nearest_other_subject_when_every_record_coincides():
    """Found by hypothesis: all records at one point (extent 0) with groups gave inf, not 0."""
    d, i = nearest_other_subjects(np.zeros((3, 2)), 1, subject=np.array([0, 1, 2]),
                                  groups=np.array([0, 0, 1]))
    assert d[:, 0].tolist() == [0.0, 0.0, np.inf] and i[:, 0].tolist() == [1, 0, -1]
