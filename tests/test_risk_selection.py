"""At-risk records by risk, unbiased histogram records, and the neighbour check."""

from __future__ import annotations

import numpy as np
import pytest

from synthgeo.risk.neighbours import neighbour_check
from synthgeo.risk.selection import HISTOGRAM_RULE, choose_at_risk, histogram_records


def test_choose_at_risk_rules():
    spatial = np.array([True, False, False, False])
    a = np.array([[0.0, 0.15, 0.05, 0.0], [0.0, 0.0, 0.0, 0.3]])  # two targets
    kw = dict(attributable=a, record_threshold=np.array([0.1, 0.2]))
    assert choose_at_risk("spatial", spatial).at_risk.tolist() == [True, False, False, False]
    assert choose_at_risk("risk", spatial, **kw).at_risk.tolist() == [False, True, False, True]
    both = choose_at_risk("both", spatial, **kw)
    assert both.at_risk.tolist() == [True, True, False, True] and both.n_at_risk == 3
    assert list(both.to_dataframe().columns) == ["at_risk", "spatial", "by_risk"]
    # a threshold is exceeded strictly
    assert not choose_at_risk("risk", spatial, attributable=a[0],
                              record_threshold=0.15).by_risk.any()
    with pytest.raises(ValueError, match='at_risk = "risk" needs `attributable`'):
        choose_at_risk("risk", spatial)
    with pytest.raises(ValueError, match="`rule` must be one of"):
        choose_at_risk("all", spatial)
    with pytest.raises(ValueError, match="one threshold per row"):
        choose_at_risk("risk", spatial, attributable=a, record_threshold=0.1)


def test_histogram_rule_shows_no_fall_between_identical_models():
    # Two identical models: the same Rao-Blackwellised risk for every record, realised shares
    # drawn independently (L = 100). Picking records by the unrestricted *share* (the old rule)
    # selects records whose unrestricted share came out high by chance, so the restricted
    # share of those records is lower: a "fall" between identical models.
    rng = np.random.default_rng(2024)
    n, L, shown = 20_000, 100, 200
    rb = rng.beta(2, 8, n)
    share_u, share_r = rng.binomial(L, rb) / L, rng.binomial(L, rb) / L
    old = np.argsort(-share_u, kind="stable")[:shown]
    diff = share_u - share_r
    old_fall = diff[old].mean()
    se = diff[old].std(ddof=1) / np.sqrt(shown)  # ~0.005
    assert old_fall > 0.02 and old_fall > 5 * se
    sel = histogram_records(np.zeros(n, bool), rb, rb, shown)
    new_fall = diff[sel.records].mean()
    assert abs(new_fall) < 3 * diff[sel.records].std(ddof=1) / np.sqrt(shown)
    assert sel.rule == HISTOGRAM_RULE and "larger of the two models" in sel.rule


def test_histogram_records_at_risk_first():
    at_risk = np.array([False, False, True, False, True])
    u = np.array([0.9, 0.1, 0.0, 0.5, 0.2])
    r = np.array([0.1, 0.8, 0.1, 0.4, 0.0])
    sel = histogram_records(at_risk, u, r, 4)
    assert sel.records.tolist() == [4, 2, 0, 1]  # at-risk by key .2, .1; then .9, .8
    assert sel.at_risk.tolist() == [True, True, False, False]
    np.testing.assert_allclose(sel.key, [0.2, 0.1, 0.9, 0.8])
    assert sel.to_dataframe().shape == (4, 3)
    with pytest.raises(ValueError, match="positive number of records"):
        histogram_records(at_risk, u, r, 0)


def test_neighbour_check_flags_a_constructed_neighbour():
    # an isolated at-risk record A at (0, 0); its neighbour B 50 m away loses protection when
    # A's effect is removed (risk .10 -> .45); C, 3 km away, moves by noise (+.01); D falls;
    # the at-risk record itself falls.
    xy = np.array([[0.0, 0.0], [30.0, 40.0], [3000.0, 0.0], [0.0, 2000.0]])
    at_risk = np.array([True, False, False, False])
    u = np.array([0.90, 0.10, 0.20, 0.30])
    r = np.array([0.15, 0.45, 0.21, 0.10])
    chk = neighbour_check(xy, at_risk, u, r, min_rise=0.05)
    assert chk.table["record"].tolist() == [1]
    row = chk.table.iloc[0]
    assert row["rise"] == pytest.approx(0.35) and row["distance_m"] == pytest.approx(50.0)
    assert not row["at_risk"]
    everything = neighbour_check(xy, at_risk, u, r)
    assert everything.table["record"].tolist() == [1, 2]  # largest rise first
    assert everything.table["distance_m"].tolist() == pytest.approx([50.0, 3000.0])
    assert everything.summary() == {"n_records": 4, "n_rose": 2, "n_rose_any": 2,
                                    "largest_rise": pytest.approx(0.35),
                                    "median_distance_m": pytest.approx(1525.0)}


def test_neighbour_check_distance_excludes_the_record_itself():
    xy = np.array([[0.0, 0.0], [100.0, 0.0], [0.0, 0.0]])
    at_risk = np.array([True, True, False])
    chk = neighbour_check(xy, at_risk, np.zeros(3), np.array([0.2, 0.1, 0.3]))
    d = dict(zip(chk.table["record"], chk.table["distance_m"]))
    assert d == {2: 0.0, 0: 100.0, 1: 100.0}  # record 2 shares A's site: distance 0
    alone = neighbour_check(xy[:1], np.array([True]), np.zeros(1), np.ones(1))
    assert alone.table["distance_m"].tolist() == [np.inf]
    none = neighbour_check(xy, np.zeros(3, bool), np.zeros(3), np.ones(3))
    assert np.isinf(none.table["distance_m"]).all()
    with pytest.raises(ValueError, match="need coords"):
        neighbour_check(xy, np.zeros(3), np.zeros(3), np.ones(3))
