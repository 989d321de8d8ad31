"""Tests for synthgeo.utility.reiter: Reiter (2003) combining rules, CI overlap, OLS comparison."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats

from synthgeo.utility.reiter import (
    CombinedEstimate,
    ci_overlap,
    combine_reiter,
    compare_to_confidential,
    fit_ols,
    reiter_ols,
)

# m = 3 synthetic datasets, k = 2 coefficients
Q = np.array([[1.0, 10.0], [2.0, 12.0], [3.0, 14.0]])
U = np.array([[0.5, 1.0], [0.7, 1.0], [0.6, 1.3]])


def test_combine_reiter_by_hand():
    est = combine_reiter(Q, U, names=["b0", "b1"])
    assert isinstance(est, CombinedEstimate) and est.m == 3 and est.names == ("b0", "b1")
    # q_bar = (1+2+3)/3, (10+12+14)/3
    np.testing.assert_allclose(est.q_bar, [2.0, 12.0])
    # b_m = ((1-2)^2 + 0 + (3-2)^2)/2 = 1 ; ((10-12)^2 + 0 + (14-12)^2)/2 = 4
    np.testing.assert_allclose(est.b_m, [1.0, 4.0])
    # u_bar = (0.5+0.7+0.6)/3 = 0.6 ; (1+1+1.3)/3 = 1.1
    np.testing.assert_allclose(est.u_bar, [0.6, 1.1])
    # T_p = u_bar + b_m/m = 0.6 + 1/3 ; 1.1 + 4/3
    np.testing.assert_allclose(est.T_p, [0.6 + 1 / 3, 1.1 + 4 / 3])
    # nu_p = (m-1)(1 + u_bar/(b_m/m))^2 = 2 (1 + 1.8)^2 = 15.68 ; 2 (1 + 0.825)^2 = 6.66125
    np.testing.assert_allclose(est.df, [15.68, 6.66125])
    half = np.array([stats.t.ppf(0.975, 15.68), stats.t.ppf(0.975, 6.66125)]) * np.sqrt(
        [0.6 + 1 / 3, 1.1 + 4 / 3]
    )
    np.testing.assert_allclose(est.lower, [2.0, 12.0] - half)
    np.testing.assert_allclose(est.upper, [2.0, 12.0] + half)
    df = est.to_dataframe()
    assert df.index.name == "term" and list(df.index) == ["b0", "b1"]
    assert df.loc["b1", "se"] == pytest.approx(np.sqrt(1.1 + 4 / 3))


def test_T_p_is_not_rubins_rule():
    est = combine_reiter(Q, U)
    # Rubin: u_bar + (1 + 1/m) b_m; Reiter: u_bar + b_m/m. Their difference is b_m itself.
    t_rubin = est.u_bar + (1 + 1 / 3) * est.b_m
    np.testing.assert_allclose(est.T_p - est.u_bar, est.b_m / 3)
    np.testing.assert_allclose(t_rubin - est.T_p, est.b_m)  # [1, 4]
    assert np.all(t_rubin > est.T_p)


def test_zero_between_variance_uses_normal_quantile_without_warnings():
    q = np.array([[1.5, -2.0]] * 4)
    u = np.array([[0.04, 0.25], [0.04, 0.25], [0.09, 0.16], [0.09, 0.16]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = combine_reiter(q, u)
    assert np.all(est.b_m == 0) and np.all(np.isinf(est.df))
    u_bar = np.array([0.065, 0.205])
    np.testing.assert_allclose(est.T_p, u_bar)
    z = 1.959963984540054
    np.testing.assert_allclose(est.lower, [1.5, -2.0] - z * np.sqrt(u_bar))
    np.testing.assert_allclose(est.upper, [1.5, -2.0] + z * np.sqrt(u_bar))


def test_vector_form_equals_scalar_calls():
    est = combine_reiter(Q, U, alpha=0.1)
    for j in range(2):
        one = combine_reiter(Q[:, j], U[:, j], alpha=0.1)
        for field in ("q_bar", "b_m", "u_bar", "T_p", "df", "lower", "upper"):
            np.testing.assert_allclose(getattr(one, field), getattr(est, field)[[j]])


def test_dataframe_input_names_and_1d():
    est = combine_reiter(pd.DataFrame(Q, columns=["a", "b"]), U)
    assert est.names == ("a", "b")
    assert combine_reiter([1.0, 2.0], [0.1, 0.1]).names == ("q0",)


@pytest.mark.parametrize(
    ("q", "u", "match"),
    [
        ([[1.0, 2.0]], [[0.1, 0.1]], "needs m >= 2"),
        ([1.0], [0.1], "needs m >= 2"),
        (Q, -U, "`u` holds variances and must be >= 0"),
        ([1.0, np.nan], [0.1, 0.1], "`q` contains NaN"),
        ([1.0, 2.0], [0.1, np.nan], "`u` contains NaN"),
        (Q, U[:, :1], "must have one shape"),
    ],
)
def test_combine_reiter_rejects(q, u, match):
    with pytest.raises(ValueError, match=match):
        combine_reiter(q, u)


def test_combine_reiter_rejects_bad_alpha_and_names():
    with pytest.raises(ValueError, match="`alpha` must be a number in"):
        combine_reiter(Q, U, alpha=1.5)
    with pytest.raises(ValueError, match="`names` must have k=2"):
        combine_reiter(Q, U, names=["x"])


def test_ci_overlap_by_hand():
    assert ci_overlap([0.0], [1.0], [0.0], [1.0]) == pytest.approx([1.0])
    # disjoint: orig [0, 1], syn [2, 4]: U_o - L_o = 1 - 2 = -1 -> (-1/1 + -1/2)/2
    assert ci_overlap([0.0], [1.0], [2.0], [4.0]) == pytest.approx([-0.75])
    # nested: orig [0, 4], syn [1, 2]: overlap 1 -> (1/4 + 1/1)/2
    assert ci_overlap([0.0], [4.0], [1.0], [2.0]) == pytest.approx([0.625])
    # partial, vectorised: orig [0, 2], syn [1, 4]: overlap 1 -> (1/2 + 1/3)/2
    out = ci_overlap([0.0, 0.0], [2.0, 1.0], [1.0, 0.0], [4.0, 1.0])
    np.testing.assert_allclose(out, [5 / 12, 1.0])
    with pytest.raises(ValueError, match="upper"):
        ci_overlap([1.0], [0.0], [0.0], [1.0])


@pytest.fixture(scope="module")
def regression_data():
    rng = np.random.default_rng(20180301)
    n = 40
    frame = pd.DataFrame({"sqft": rng.uniform(0.5, 3.0, n), "age": rng.uniform(0, 50, n)})
    truth = 11.0 + 0.3 * frame["sqft"].to_numpy() - 0.01 * frame["age"].to_numpy()
    truth = truth + rng.normal(0, 0.2, n)
    noise = rng.normal(0, 0.1, (5, n))
    return frame, truth, noise


FORMULA = "log_price ~ sqft + age"


def test_reiter_ols_equal_implicates_reproduce_confidential_fit(regression_data):
    frame, truth, _ = regression_data
    syn = xr.DataArray(np.tile(truth, (3, 1)), dims=("implicate", "record"))
    est = reiter_ols(FORMULA, syn, frame, response="log_price")
    conf = fit_ols(FORMULA, frame.assign(log_price=truth))
    assert est.names == ("Intercept", "sqft", "age")
    np.testing.assert_allclose(est.q_bar, conf.params.to_numpy(), rtol=1e-12)
    np.testing.assert_array_equal(est.b_m, 0.0)
    np.testing.assert_allclose(est.u_bar, conf.bse.to_numpy() ** 2, rtol=1e-12)
    assert np.all(np.isinf(est.df))
    assert "log_price" not in frame.columns  # frame untouched


def test_reiter_ols_matches_lstsq(regression_data):
    frame, truth, noise = regression_data
    ys = truth + noise  # (5, n)
    syn = xr.DataArray(ys.T, dims=("record", "implicate"))  # transposed on purpose
    est = reiter_ols(FORMULA, syn, frame, response="log_price")
    X = np.column_stack([np.ones(len(frame)), frame["sqft"], frame["age"]])
    coefs = np.array([np.linalg.lstsq(X, y, rcond=None)[0] for y in ys])
    np.testing.assert_allclose(est.q_bar, coefs.mean(axis=0), rtol=1e-10)
    np.testing.assert_allclose(est.b_m, coefs.var(axis=0, ddof=1), rtol=1e-8)
    xtx_inv = np.linalg.inv(X.T @ X)
    s2 = [np.sum((y - X @ c) ** 2) / (len(y) - 3) for y, c in zip(ys, coefs)]
    np.testing.assert_allclose(est.u_bar, np.mean(s2) * np.diag(xtx_inv), rtol=1e-8)


def test_reiter_ols_rejects_bad_frame(regression_data):
    frame, truth, _ = regression_data
    syn = xr.DataArray(np.tile(truth, (3, 1)), dims=("implicate", "record"))
    with pytest.raises(ValueError, match="`frame` must have one row per record"):
        reiter_ols(FORMULA, syn, frame.iloc[:10], response="log_price")
    with pytest.raises(TypeError, match="`synthetic` must be an xarray.DataArray"):
        reiter_ols(FORMULA, syn.values, frame, response="log_price")


def test_compare_to_confidential(regression_data):
    frame, truth, noise = regression_data
    models = {
        "exact": xr.DataArray(np.tile(truth, (4, 1)), dims=("implicate", "record")),
        "shifted": xr.DataArray(np.tile(truth + 0.5, (4, 1)), dims=("implicate", "record")),
        "noisy": xr.DataArray(truth + noise, dims=("implicate", "record")),
    }
    out = compare_to_confidential(FORMULA, models, frame, response="log_price", truth=truth)
    assert list(out.columns) == [
        "model", "term", "estimate", "se", "lower", "upper", "df", "b_m", "u_bar",
        "ci_overlap", "std_diff",
    ]
    assert len(out) == 4 * 3
    assert list(out["model"].unique()) == ["confidential", "exact", "shifted", "noisy"]
    rows = out.set_index(["model", "term"])
    conf = fit_ols(FORMULA, frame.assign(log_price=truth))
    assert rows.loc[("confidential", "sqft"), "se"] == pytest.approx(conf.bse["sqft"])
    assert rows.loc[("confidential", "sqft"), "df"] == len(frame) - 3
    assert rows.xs("confidential")["ci_overlap"].isna().all()
    np.testing.assert_allclose(rows.xs("exact")["std_diff"], 0.0, atol=1e-8)
    # a constant shift of the response moves only the intercept, by exactly 0.5
    shifted = rows.xs("shifted")
    assert shifted.loc["Intercept", "std_diff"] == pytest.approx(0.5 / conf.bse["Intercept"])
    np.testing.assert_allclose(shifted.loc[["sqft", "age"], "std_diff"], 0.0, atol=1e-8)
    # exact: same centre, width z*se vs t_{37}*se -> nested, J = (w_syn/w_orig + 1)/2
    z, t = stats.norm.ppf(0.975), stats.t.ppf(0.975, len(frame) - 3)
    np.testing.assert_allclose(rows.xs("exact")["ci_overlap"], (z / t + 1) / 2, rtol=1e-8)
    noisy = rows.xs("noisy")
    assert np.all(noisy["b_m"] > 0) and np.all(np.isfinite(noisy["df"]))
    with pytest.raises(ValueError, match="reserved name 'confidential'"):
        compare_to_confidential(
            FORMULA, {"confidential": models["exact"]}, frame, response="log_price", truth=truth
        )
    with pytest.raises(ValueError, match=r"`truth` must have shape \(40,\)"):
        compare_to_confidential(FORMULA, models, frame, response="log_price", truth=truth[:5])


def test_reiter_ols_parses_the_formula_once_and_equals_a_fit_per_implicate(regression_data):
    """Left side = the response: one design matrix for all implicates, same numbers as fit_ols."""
    frame, truth, noise = regression_data
    frame = frame.copy()
    frame.iloc[3, frame.columns.get_loc("age")] = np.nan  # a dropped row stays dropped
    ys = truth + noise
    syn = xr.DataArray(ys, dims=("implicate", "record"))
    est = reiter_ols(FORMULA, syn, frame, response="log_price")
    fits = [fit_ols(FORMULA, frame.assign(log_price=v)) for v in ys]
    assert fits[0].nobs == len(frame) - 1
    q = np.array([f.params.to_numpy() for f in fits])
    u = np.array([(f.bse**2).to_numpy() for f in fits])
    ref = combine_reiter(q, u, names=list(fits[0].params.index))
    assert est.names == ref.names
    np.testing.assert_allclose(est.q_bar, ref.q_bar, rtol=1e-12)
    np.testing.assert_allclose(est.T_p, ref.T_p, rtol=1e-12)
