"""The collapsed PyMC model's log density and the exact (β, w) conditionals."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from scipy.spatial.distance import cdist
from scipy.stats import multivariate_normal

from synthgeo.inference.conditionals import _draw_one
from synthgeo.model.kernels import make_sites
from synthgeo.model.restricted_gp import GPPriors, build_model, default_priors, smoothing_scale


def _marginal_cov(sim, sites, d, sigma2, nugget, phi_km, beta_sd):
    dist = cdist(sites.coords_m, sites.coords_m) / 1000.0
    K = sigma2 * np.outer(d, d) * np.exp(-phi_km * dist)
    idx = sites.site_index
    X = sim["X"]
    return K[np.ix_(idx, idx)] + nugget * np.eye(len(idx)) + beta_sd**2 * X @ X.T


@pytest.mark.parametrize("parametrization", ["natural", "ridge"])
@pytest.mark.parametrize("restricted", [False, True])
def test_collapsed_loglik_equals_dense_mvn(small_gp, parametrization, restricted):
    """The potential equals log MVN(y; Xμ_β, Σ + X V_β Xᵀ) computed densely with SciPy."""
    sim, sites = small_gp, small_gp["sites"]
    d = np.ones(sites.n_sites)
    if restricted:
        d[[3, 7]] = 0.0
    pri = GPPriors(beta_sd=5.0, sigma2_scale=1.0, nugget_sd_scale=1.0, range_min_m=10.0,
                   range_max_m=2000.0)
    model = build_model(sim["y"], sim["X"], sites, scale=d, priors=pri,
                        parametrization=parametrization)
    sigma2, nugget, range_km = 3.0, 0.2, 0.4
    loglik = [p for p in model.potentials if p.name == "loglik_marginal"]
    (expr,) = model.replace_rvs_by_values(loglik)
    pot = model.compile_fn(expr, inputs=model.value_vars, point_fn=False,
                           on_unused_input="ignore")
    if parametrization == "natural":
        point = {"nugget_sd_log__": 0.5 * np.log(nugget), "sigma2_log__": np.log(sigma2),
                 "range_km_interval__": _logit((range_km - 0.01) / (2.0 - 0.01))}
    else:
        v = np.log(range_km)
        lo, hi = np.log(0.01), np.log(2.0)
        point = {"nugget_sd_log__": 0.5 * np.log(nugget), "log_range_km_interval__":
                 _logit((v - lo) / (hi - lo)), "log_sigma2_per_range": np.log(sigma2) - v}
    got = pot(**point)
    cov = _marginal_cov(sim, sites, d, sigma2, nugget, 3.0 / range_km, 5.0)
    want = multivariate_normal(np.zeros(len(sim["y"])), cov).logpdf(sim["y"])
    assert got == pytest.approx(want, rel=1e-9, abs=1e-7)


def _logit(u):
    return np.log(u) - np.log1p(-u)


def test_ridge_prior_matches_natural_prior(small_gp):
    """With its Jacobian terms the ridge parametrization is the same posterior on (σ², range).

    Each model's log density is mapped back to the (σ², τ², range) scale; the two must then differ
    by a constant (the normalising constants of the two uniform priors) at any point.
    """
    sim, sites = small_gp, small_gp["sites"]
    pri = default_priors(sim["y"], sim["X"], sites)
    lp_nat = build_model(sim["y"], sim["X"], sites, priors=pri,
                         parametrization="natural").compile_logp(jacobian=True)
    lp_rid = build_model(sim["y"], sim["X"], sites, priors=pri,
                         parametrization="ridge").compile_logp(jacobian=True)
    lo, hi = pri.range_min_m / 1000, pri.range_max_m / 1000
    lv, hv = np.log(lo), np.log(hi)

    def on_natural_scale(s2, r, t2):
        b = _logit((r - lo) / (hi - lo))
        lp = lp_nat({"nugget_sd_log__": 0.5 * np.log(t2), "sigma2_log__": np.log(s2),
                     "range_km_interval__": b})
        return lp - np.log(s2) - np.log((r - lo) * (hi - r) / (hi - lo)) - np.log(t2)

    def on_ridge_scale(s2, r, t2):
        v = np.log(r)
        lp = lp_rid({"nugget_sd_log__": 0.5 * np.log(t2), "log_sigma2_per_range": np.log(s2) - v,
                     "log_range_km_interval__": _logit((v - lv) / (hv - lv))})
        # |∂(σ², r)/∂(u, v)| = σ² r ; dv/dc = (v − lv)(hv − v)/(hv − lv)
        return (lp - np.log(s2) - np.log(r) - np.log((v - lv) * (hv - v) / (hv - lv))
                - np.log(t2))

    pts = [(0.7, lo + (hi - lo) / 3, 0.1), (2.5, lo + (hi - lo) / 7, 0.4),
           (0.1, hi * 0.9, 0.05)]
    diffs = [on_natural_scale(*p) - on_ridge_scale(*p) for p in pts]
    assert np.ptp(diffs) < 1e-8
    assert diffs[0] == pytest.approx(np.log(hv - lv) - np.log(hi - lo), rel=1e-9)


def test_smoothing_scale():
    a = np.array([0.0, 1.0, 0.5])
    np.testing.assert_allclose(smoothing_scale(a, np.inf), [1, 0, 0])
    np.testing.assert_allclose(smoothing_scale(a, 0.0), [1, 1, 1])
    np.testing.assert_allclose(smoothing_scale(a, 3.0), [1, 0.5, 1 / np.sqrt(2.5)])
    with pytest.raises(ValueError, match="gamma"):
        smoothing_scale(a, -1.0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        smoothing_scale(np.array([2.0]), 1.0)


def test_make_sites_groups_coincident_records():
    coords = np.array([[0, 0], [5, 5], [0, 0], [9, 1], [5, 5]], float)
    s = make_sites(coords)
    assert s.n_sites == 3
    np.testing.assert_array_equal(s.site_index, [0, 1, 0, 2, 1])
    np.testing.assert_array_equal(s.coords_m[s.site_index], coords)


def _analytic_conditional(sim, sites, d, beta, sigma2, nugget, phi_km):
    """w | β, θ, y from the precision form Q = (σ²R)⁻¹ + D AᵀA D/τ² (spec: model.md)."""
    dist = cdist(sites.coords_m, sites.coords_m) / 1000.0
    R = np.exp(-phi_km * dist)
    A = np.zeros((len(sites.site_index), sites.n_sites))
    A[np.arange(len(sites.site_index)), sites.site_index] = 1.0
    D = np.diag(d)
    Q = np.linalg.inv(sigma2 * R) + D @ A.T @ A @ D / nugget
    cov = np.linalg.inv(Q)
    mean = cov @ D @ A.T @ (sim["y"] - sim["X"] @ beta) / nugget
    return mean, cov


@pytest.mark.parametrize("restricted", [False, True])
def test_w_draws_match_full_conditional(small_gp, restricted):
    """Matheron-rule draws of w have the precision-form conditional's mean and covariance."""
    sim, sites = small_gp, small_gp["sites"]
    d = np.ones(sites.n_sites)
    if restricted:
        d[[0, 5]] = 0.0
    pri = GPPriors(beta_sd=1e-6, beta_mean=0.7, sigma2_scale=1, nugget_sd_scale=1,
                   range_min_m=10, range_max_m=2000)  # β pinned at 0.7 by its prior
    sigma2, nugget, phi_km = 2.0, 0.3, 4.0
    rng = np.random.default_rng(0)
    dist = sites.distance_km()
    draws = np.array([
        _draw_one(rng, sim["y"], sim["X"], dist, sites.site_index, d, sigma2, nugget, phi_km,
                  pri)[1] for _ in range(4000)
    ])
    mean, cov = _analytic_conditional(sim, sites, d, np.full(2, 0.7), sigma2, nugget, phi_km)
    se = np.sqrt(np.diag(cov) / len(draws))
    assert np.all(np.abs(draws.mean(0) - mean) < 5 * se)
    np.testing.assert_allclose(draws.var(0), np.diag(cov), rtol=0.15)


def test_beta_draws_match_gls_posterior(small_gp):
    """β | θ, y is N(C(V⁻¹μ + XᵀΣ⁻¹y), C), C = (V⁻¹ + XᵀΣ⁻¹X)⁻¹."""
    sim, sites = small_gp, small_gp["sites"]
    d = np.ones(sites.n_sites)
    pri = GPPriors(beta_sd=10.0, sigma2_scale=1, nugget_sd_scale=1, range_min_m=10,
                   range_max_m=2000)
    sigma2, nugget, phi_km = 2.0, 0.3, 4.0
    Sigma = _marginal_cov(sim, sites, d, sigma2, nugget, phi_km, 0.0)
    Si = np.linalg.inv(Sigma)
    C = np.linalg.inv(np.eye(2) / 100 + sim["X"].T @ Si @ sim["X"])
    m = C @ (sim["X"].T @ Si @ sim["y"])
    rng = np.random.default_rng(1)
    dist = sites.distance_km()
    b = np.array([_draw_one(rng, sim["y"], sim["X"], dist, sites.site_index, d, sigma2,
                            nugget, phi_km, pri)[0] for _ in range(3000)])
    assert np.all(np.abs(b.mean(0) - m) < 5 * np.sqrt(np.diag(C) / len(b)))
    np.testing.assert_allclose(np.cov(b.T), C, rtol=0.15, atol=0.02 * np.abs(C).max())


def test_model_refuses_unknown_parametrization(small_gp):
    sim, sites = small_gp, small_gp["sites"]
    pri = default_priors(sim["y"], sim["X"], sites)
    with pytest.raises(ValueError, match="parametrization"):
        build_model(sim["y"], sim["X"], sites, priors=pri, parametrization="bogus")
    assert isinstance(build_model(sim["y"], sim["X"], sites, priors=pri), pm.Model)
