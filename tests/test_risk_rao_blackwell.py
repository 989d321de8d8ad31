"""Rao-Blackwellised risk = the expectation of the realised share (Monte Carlo check)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from synthgeo.risk.measure import Measure, measures_from
from synthgeo.risk.predictive import Predictive, release_predictive
from synthgeo.risk.rao_blackwell import normal_interval_probability, rb_risk
from synthgeo.risk.within_eps import within_eps_risk


@pytest.mark.parametrize("key", ["rel:0.1", "abs:10000"])
def test_rb_risk_is_the_expected_realised_share(key):
    rng = np.random.default_rng(7)
    L, n, reps = 20, 60, 2000
    y = np.log(rng.uniform(60_000, 400_000, n))
    mean = y + rng.normal(0, 0.12, (L, n))  # each implicate's predictive mean
    sd = np.broadcast_to(rng.uniform(0.03, 0.2, (L, 1)), (L, n))
    pred = Predictive(mean=mean, sd=sd)
    m = Measure.parse(key)
    expect = rb_risk(pred, y, m)
    shares = np.empty((reps, n))
    for r in range(reps):  # fresh synthetic data sets from the same draws
        syn = mean + sd * rng.standard_normal((L, n))
        res = within_eps_risk(xr.DataArray(syn, dims=("implicate", "record")), y,
                              eps=m.tol if m.kind == "abs" else 1.0,
                              p=m.tol if m.kind == "rel" else 1.0)
        shares[r] = res.per_record[f"risk_{m.kind}"].values[:, 0]
    mc_mean, mc_se = shares.mean(axis=0), shares.std(axis=0, ddof=1) / np.sqrt(reps)
    z = (mc_mean - expect) / np.maximum(mc_se, 1e-12)
    assert np.abs(z).max() < 4.5  # 60 records: no record more than 4.5 standard errors off
    assert abs(z.mean()) < 4.5 / np.sqrt(n) * 1.5
    assert 0.1 < expect.mean() < 0.9  # a non-trivial case
    # one realised share is much noisier than the RB value (the point)
    assert shares[0].std() > 0 and np.abs(shares[0] - expect).max() > 0.1


def test_release_predictive_rb_equals_share_expectation_identity_scale():
    # by hand: N(0, 1) within 1 of 0 is 2 Phi(1) - 1 = .6827; N(2, 1): Phi(-1) - Phi(-3) = .1573
    X = np.ones((2, 1))
    pred = release_predictive(X, np.array([[0.0]]), np.array([[0.0, 2.0]]), np.array([1.0]))
    np.testing.assert_allclose(rb_risk(pred, np.zeros(2), Measure(kind="abs", tol=1.0),
                                       g="identity"), [0.682689, 0.157305], atol=1e-6)


def test_normal_interval_probability_edge_cases():
    assert normal_interval_probability(0.0, 1.0, -np.inf, np.inf) == 1.0
    assert normal_interval_probability(0.0, 0.0, 0.0, 0.0) == 1.0  # point mass on the edge
    assert normal_interval_probability(1.0, 0.0, -1.0, 0.5) == 0.0
    tail = normal_interval_probability(0.0, 1.0, 9.0, 10.0)
    assert 1e-19 < tail < 2e-19  # Phi(-9) - Phi(-10), not 1 - 1


def test_measure_parsing_and_errors():
    assert Measure.parse("abs:10000").label == "within $10,000"
    assert Measure.parse(" rel:0.05").key == "rel:0.05"
    assert [m.key for m in measures_from([5.0], [0.1, 0.1])] == ["abs:5", "rel:0.1"]
    with pytest.raises(ValueError, match='written "rel:<fraction>" or "abs:<amount>"'):
        Measure.parse("0.1")
    with pytest.raises(ValueError, match="is not a number"):
        Measure.parse("rel:ten")
    with pytest.raises(ValueError, match="kind must be one of"):
        Measure.parse("pct:10")
    with pytest.raises(ValueError, match="positive finite"):
        Measure(kind="rel", tol=-0.1)


def test_predictive_validation():
    with pytest.raises(ValueError, match=r"shape \(n_implicates, n_records\)"):
        Predictive(mean=np.zeros((2, 3)), sd=np.ones((3, 2)))
    with pytest.raises(ValueError, match="negative sd"):
        Predictive(mean=np.zeros((1, 1)), sd=-np.ones((1, 1)))
    with pytest.raises(ValueError, match="NaN or infinite"):
        Predictive(mean=np.full((1, 1), np.nan), sd=np.ones((1, 1)))
    with pytest.raises(ValueError, match=r"`truth` must have shape \(n_records,\) = \(2,\)"):
        rb_risk(Predictive(mean=np.zeros((1, 2)), sd=np.ones((1, 2))), np.zeros(3),
                Measure.parse("rel:0.1"))


def test_interval_probability_in_row_blocks_equals_both_branches_evaluated():
    """One Φ pair per element, in blocks of rows: the values of the two-branch formula."""
    from scipy.special import ndtr

    from synthgeo.risk.rao_blackwell import normal_interval_probability

    rng = np.random.default_rng(2)
    mean = rng.normal(0, 3, (21, 50))
    sd = np.abs(rng.normal(0, 1, (21, 50)))
    sd[0, :3] = 0.0
    lo = rng.normal(0, 3, 50)
    hi = lo + np.abs(rng.normal(0, 1, 50))
    lo[4] = -np.inf
    with np.errstate(divide="ignore", invalid="ignore"):
        zl, zh = (lo - mean) / sd, (hi - mean) / sd
        p = np.where(zl > 0, ndtr(-zl) - ndtr(-zh), ndtr(zh) - ndtr(zl))
    want = np.clip(np.where(sd > 0, p, ((lo <= mean) & (mean <= hi)).astype(float)), 0, 1)
    assert np.array_equal(normal_interval_probability(mean, sd, lo[None, :], hi[None, :]), want)
    assert np.array_equal(normal_interval_probability(mean, sd, lo, hi), want)
    assert np.array_equal(normal_interval_probability(mean[:, 7], sd[:, 7], lo[7], hi[7]),
                          want[:, 7])
