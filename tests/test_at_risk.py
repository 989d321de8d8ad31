"""The at-risk rule on layouts checkable by hand."""

from __future__ import annotations

import numpy as np
import pytest

from synthgeo.model.at_risk import find_at_risk, neighbour_counts
from synthgeo.model.kernels import M_FROM_RHO0, make_sites

# 3 x 3 lattice with 100 m spacing, plus an isolated record 1 km away and a coincident pair
# far from everything
LATTICE = np.array([[x, y] for x in (0, 100, 200) for y in (0, 100, 200)], float)
ISOLATED = np.array([[1200.0, 0.0]])
PAIR = np.array([[5000.0, 5000.0], [5000.0, 5000.0]])
COORDS = np.vstack([LATTICE, ISOLATED, PAIR])


def _run(coords, M, **kw):
    sites = make_sites(coords)
    return find_at_risk(coords, sites.site_index, M, **kw), sites


def test_lattice_counts_by_hand():
    # within 100 m (inclusive): corner 2, edge 3, centre 4
    n = neighbour_counts(LATTICE, 100.0)
    np.testing.assert_array_equal(n, [2, 3, 2, 3, 4, 3, 2, 3, 2])
    # just below the spacing nobody has a neighbour
    assert neighbour_counts(LATTICE, 99.999).sum() == 0
    # diagonal 141.42 m
    np.testing.assert_array_equal(neighbour_counts(LATTICE, 150.0), [3, 5, 3, 5, 8, 5, 3, 5, 3])


def test_paper_rule_isolated_and_coincident():
    res, sites = _run(COORDS, 150.0)
    # the isolated record is at risk; the coincident pair are each other's neighbours (distance
    # 0, different subjects) so they are not
    np.testing.assert_array_equal(res.at_risk, [False] * 9 + [True, False, False])
    assert res.n_at_risk == 1
    assert sites.n_sites == 11 and res.site_at_risk.sum() == 1


def test_same_subject_is_not_a_neighbour():
    subject = np.array(list("abcdefghi") + ["j", "k", "k"])  # the pair is one person twice
    res, _ = _run(COORDS, 150.0, subject=subject)
    np.testing.assert_array_equal(res.at_risk[-3:], [True, True, True])
    assert res.n_neighbours[-1] == 0


def test_k_anonymity_form():
    # k = 4: fewer than 3 neighbours within 100 m -> the four corners (2 each) are at risk
    res, _ = _run(LATTICE, 100.0, k=4)
    np.testing.assert_array_equal(res.at_risk, [True, False, True, False, False, False, True,
                                                False, True])


def test_boundary_is_inclusive():
    coords = np.array([[0.0, 0.0], [250.0, 0.0]] + [[5000.0 + i, 0.0] for i in range(3)])
    res, _ = _run(coords, 250.0)
    assert not res.at_risk[:2].any()
    res, _ = _run(coords, 249.99)
    assert res.at_risk[:2].all()


def test_M_from_rho0():
    phi = 12.7e-3  # 1/m
    assert M_FROM_RHO0(phi, 0.2) == pytest.approx(-np.log(0.2) / phi)
    assert M_FROM_RHO0(phi, 0.2) == pytest.approx(126.73, abs=0.01)  # paper: ~0.13 units


def test_bad_arguments():
    with pytest.raises(ValueError, match="`k` must be an integer >= 2"):
        find_at_risk(LATTICE, np.arange(9), 100.0, k=1)
    with pytest.raises(ValueError, match="`radius_m`"):
        neighbour_counts(LATTICE, -1.0)
