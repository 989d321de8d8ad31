"""The response's scale (synthgeo.model.transform): scoring on the log scale without overflow."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

from synthgeo.model.transform import (
    ResponseScale,
    log_abs_expm1,
    tolerance_bounds,
    within_tolerance,
)
from synthgeo.risk.within_eps import within_eps_risk

RNG = np.random.default_rng(11)
Y = np.log(RNG.uniform(20_000, 900_000, 400))  # log-dollars
YS = Y + RNG.normal(0, 0.15, (30, 400))


@pytest.mark.parametrize(("kind", "tol"), [("rel", 0.1), ("rel", 0.05), ("abs", 10_000.0),
                                           ("abs", 50_000.0)])
def test_log_scale_scoring_equals_dollar_scoring(kind, tol):
    dollars = np.abs(np.exp(YS) - np.exp(Y))
    expect = dollars <= (tol * np.exp(Y) if kind == "rel" else tol)
    got = within_tolerance(YS, Y, kind, tol)
    margin = np.abs(dollars - (tol * np.exp(Y) if kind == "rel" else tol))
    clear = margin > 1e-6 * np.exp(Y)  # away from the boundary, where rounding may differ
    assert clear.mean() > 0.99
    np.testing.assert_array_equal(got[clear], expect[clear])
    assert expect.mean() > 0.05  # the case is not trivial


@pytest.mark.parametrize(("kind", "tol", "g"), [("rel", 0.1, "exp"), ("abs", 10_000.0, "exp"),
                                                ("rel", 0.01, "identity"),
                                                ("abs", 0.1, "identity")])
def test_bounds_are_the_set_within_tolerance(kind, tol, g):
    y = Y[:50]
    lo, hi = tolerance_bounds(y, kind, tol, g)
    inside = (YS[:, :50] >= lo) & (YS[:, :50] <= hi)
    np.testing.assert_array_equal(inside, within_tolerance(YS[:, :50], y, kind, tol, g))
    assert 0.05 < inside.mean() < 0.95


def test_absolute_bounds_below_epsilon_are_open_below():
    lo, hi = tolerance_bounds(np.log([5_000.0, 20_000.0]), "abs", 10_000.0)
    assert lo[0] == -np.inf and np.exp(hi[0]) == pytest.approx(15_000.0)
    assert np.exp(lo[1]) == pytest.approx(10_000.0) and np.exp(hi[1]) == pytest.approx(30_000.0)
    lo, _ = tolerance_bounds(np.log(100.0), "rel", 1.5)
    assert lo == -np.inf


def test_log_abs_expm1_is_finite_where_expm1_overflows():
    d = np.array([-800.0, -1.0, 1e-300, 1.0, 800.0])
    np.testing.assert_allclose(log_abs_expm1(d)[[1, 3]], np.log(np.abs(np.expm1(d[[1, 3]]))))
    assert log_abs_expm1(800.0) == 800.0
    assert log_abs_expm1(-800.0) == 0.0  # |e^-800 - 1| = 1
    assert np.isfinite(log_abs_expm1(d)).all()
    assert log_abs_expm1(0.0) == -np.inf


def test_within_eps_risk_scores_values_above_the_exp_overflow():
    # synthetic log values near 715 (exp overflows above 709.78): the old code computed
    # inf - inf = nan and scored 0. Shifting by 700 log units must give the same relative risk,
    # and the same absolute risk with eps scaled by e^-700.
    truth = np.array([715.0, 712.0])
    syn = truth + np.array([[0.05, -0.02], [0.2, 0.5], [-0.08, 0.01], [0.0, 3.0], [0.09, 0.2]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning either
        high = within_eps_risk(xr.DataArray(syn, dims=("implicate", "record")), truth,
                               eps=1e305, p=0.1)
    low = within_eps_risk(xr.DataArray(syn - 700.0, dims=("implicate", "record")),
                          truth - 700.0, eps=1e305 * np.exp(-700.0), p=0.1)
    # by hand, relative: |expm1(d)| <= 0.1 for d in (.05, .2, -.08, 0, .09) -> 4/5; record 1:
    # d in (-.02, .5, .01, 3, .2) -> 2/5
    np.testing.assert_allclose(high.per_record["risk_rel"].values[:, 0], [0.8, 0.4])
    np.testing.assert_allclose(high.per_record["risk_rel"].values,
                               low.per_record["risk_rel"].values)
    np.testing.assert_allclose(high.per_record["risk_abs"].values,
                               low.per_record["risk_abs"].values)
    assert high.per_record["risk_abs"].values.max() > 0
    assert high.per_record["attack_rel"].values.tolist() == [[True], [False]]


def test_response_scale_log_transform():
    s = ResponseScale(transform="log")
    np.testing.assert_allclose(s.to_model([1.0, np.e]), [0.0, 1.0])
    np.testing.assert_allclose(s.to_released(s.to_model([150_000.0])), [150_000.0])
    assert s.g_name == "exp" and s.g_inv(np.exp(2.0)) == pytest.approx(2.0)
    with pytest.raises(ValueError, match=r"needs a positive `price`; 2 value\(s\)"):
        s.to_model([1.0, 0.0, -3.0], name="price")
    with pytest.raises(ValueError, match="exceed the float range"):
        s.to_released([710.0])
    plain = ResponseScale()
    assert plain.to_model([3.0]).tolist() == [3.0] and plain.to_released([3.0]).tolist() == [3.0]
    assert ResponseScale(back_transform="identity").g([2.0]).tolist() == [2.0]
    assert bool(s.within(np.log(105.0), np.log(100.0), "rel", 0.1))


def test_response_scale_refuses_contradictions():
    with pytest.raises(ValueError, match="are exclusive"):
        ResponseScale(transform="log", back_transform="identity")
    with pytest.raises(ValueError, match="`transform` must be one of"):
        ResponseScale(transform="sqrt")
    with pytest.raises(ValueError, match="`back_transform` must be one of"):
        ResponseScale(back_transform="log")
    with pytest.raises(ValueError, match="`kind` must be one of"):
        within_tolerance(1.0, 1.0, "ratio", 0.1)
    with pytest.raises(ValueError, match="must be a positive finite number"):
        tolerance_bounds(1.0, "abs", 0.0)
