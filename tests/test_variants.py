"""Variants of differential smoothing: γ limits, γ = "auto" per cell, continuous a, kriging."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from synthgeo._errors import SpecError
from synthgeo.config import ModelConfig, SamplingConfig
from synthgeo.model.at_risk import continuous_weights, find_at_risk, kth_neighbour_distance
from synthgeo.inference.grid import fit_gp_grid
from synthgeo.inference.conditionals import draw_effects_exact
from synthgeo.inference.grid_posterior import ExactCovariance, GridSettings, NNGPCovariance
from synthgeo.model.kernels import make_sites
from synthgeo.model.kriging import kriged_effects
from synthgeo.inference.nngp_effects import NNGPEffects
from synthgeo.model.restricted_gp import default_priors
from synthgeo.model.smoothing import Smoothing, smoothing_scale
from synthgeo.synthesis.implicates import draw_implicates

CFG = SamplingConfig(sampler="grid", chains=2, draws=50, seed=3, on_convergence_failure="warn")
FAST = GridSettings(n_coarse=6, n_fine=6, max_stages=2)


def _fit(sim, scale, seed=5, gp="exact"):
    priors = default_priors(sim["y"], sim["X"], sim["sites"])
    return fit_gp_grid(sim["y"], sim["X"], sim["sites"], priors=priors,
                       coef_names=["Intercept", "x1"], scale=scale, config=CFG, gp=gp,
                       settings=FAST, random_seed=seed)


def _a(n_sites):
    a = np.zeros(n_sites)
    a[[3, 17]] = 1.0
    return a


# --- the two limits --------------------------------------------------------------------------

def test_gamma_inf_equals_binary_restricted_model(small_gp):
    """γ = ∞ through Smoothing is the paper's restricted model: d = 0 exactly at a > 0."""
    a = _a(small_gp["sites"].n_sites)
    sm = Smoothing(a=a, gamma=np.inf)
    np.testing.assert_array_equal(sm.scale(), np.where(a > 0, 0.0, 1.0))
    f_sm = _fit(small_gp, sm)
    f_bin = _fit(small_gp, np.where(a > 0, 0.0, 1.0))
    for v in ("sigma2", "nugget", "range", "beta"):
        np.testing.assert_array_equal(f_sm.idata.posterior[v].values,
                                      f_bin.idata.posterior[v].values)
    np.testing.assert_array_equal(f_sm.effects(np.arange(10)), f_bin.effects(np.arange(10)))


def test_gamma_zero_equals_unrestricted_model(small_gp):
    a = _a(small_gp["sites"].n_sites)
    np.testing.assert_array_equal(Smoothing(a=a, gamma=0.0).scale(), np.ones_like(a))
    f0, fu = _fit(small_gp, Smoothing(a=a, gamma=0.0)), _fit(small_gp, None)
    for v in ("sigma2", "nugget", "range", "beta"):
        np.testing.assert_array_equal(f0.idata.posterior[v].values, fu.idata.posterior[v].values)


def test_finite_gamma_scale_formula():
    a = np.array([0.0, 0.25, 1.0])
    np.testing.assert_allclose(smoothing_scale(a, 3.0), [1.0, 1 / np.sqrt(1.75), 0.5])


# --- gamma = "auto": D depends on the grid cell's alpha --------------------------------------

def test_auto_gamma_rebuilds_K_per_cell(small_gp):
    """Exact backend with γ = "auto" at α equals a hand-built K with γ = 1/α − 1."""
    sites, y, X = small_gp["sites"], small_gp["y"], small_gp["X"]
    a = _a(sites.n_sites) * 0.8
    be = ExactCovariance(y, X, sites, Smoothing(a=a, gamma="auto"))
    for alpha in (0.02, 0.5, 2.0):
        gamma = max(0.0, 1 / alpha - 1)
        d = (1 + gamma * a) ** -0.5
        idx = sites.site_index
        K = (np.outer(d, d) * np.exp(-4.0 * sites.distance_km()))[np.ix_(idx, idx)]
        K += alpha * np.eye(len(y))
        st = be.stats(4.0, alpha)
        assert st.logdet == pytest.approx(np.linalg.slogdet(K)[1], rel=1e-10)
        np.testing.assert_allclose(st.XtKy, X.T @ np.linalg.solve(K, y), rtol=1e-8)
        # the nugget-equals-spatial-variance property at a = 1 (σ² ≥ τ²)
        if alpha < 1:
            assert Smoothing(a=np.ones(1), gamma="auto").scale(alpha)[0] ** 2 == \
                pytest.approx(alpha)


def test_auto_gamma_nngp_backend_matches_fixed_scale(small_gp):
    sites, y, X = small_gp["sites"], small_gp["y"], small_gp["X"]
    a = _a(sites.n_sites)
    alpha = 0.1
    auto = NNGPCovariance(y, X, sites, Smoothing(a=a, gamma="auto"), n_neighbors=8)
    fixed = NNGPCovariance(y, X, sites, smoothing_scale(a, 1 / alpha - 1), n_neighbors=8)
    s1, s2 = auto.stats(3.0, alpha), fixed.stats(3.0, alpha)
    assert s1.logdet == pytest.approx(s2.logdet, rel=1e-12)
    np.testing.assert_allclose(s1.XtKX, s2.XtKX, rtol=1e-12)


def test_auto_gamma_effect_draws_use_each_draws_alpha(small_gp):
    sites, y, X = small_gp["sites"], small_gp["y"], small_gp["X"]
    a = _a(sites.n_sites)
    draws = {"sigma2": np.array([2.0, 3.0]), "alpha": np.array([0.05, 0.05]),
             "phi_km": np.array([5.0, 5.0]), "beta": np.array([[1.0, 0.5], [1.1, 0.4]]),
             "cell": np.array([0, 0])}
    w_auto = draw_effects_exact(draws, y, X, sites, scale=Smoothing(a=a, gamma="auto"),
                                random_seed=1)
    w_fix = draw_effects_exact(draws, y, X, sites, scale=smoothing_scale(a, 19.0),
                               random_seed=1)
    np.testing.assert_allclose(w_auto, w_fix)
    n_auto = NNGPEffects(y, X, sites, Smoothing(a=a, gamma="auto"), n_neighbors=8)
    n_fix = NNGPEffects(y, X, sites, smoothing_scale(a, 19.0), n_neighbors=8)
    np.testing.assert_allclose(n_auto.draw(draws, np.random.default_rng(2)),
                               n_fix.draw(draws, np.random.default_rng(2)), rtol=1e-10)


def test_auto_gamma_fit_scales_follow_the_posterior(small_gp):
    a = _a(small_gp["sites"].n_sites)
    fit = _fit(small_gp, Smoothing(a=a, gamma="auto"))
    post = fit.idata.posterior
    alpha = (post["nugget"] / post["sigma2"]).values.ravel()
    d = fit.scales(np.arange(6))
    for j in range(6):
        np.testing.assert_allclose(d[j], smoothing_scale(a, max(0.0, 1 / alpha[j] - 1)))
    ds = draw_implicates(fit, small_gp["X"], n_implicates=10, random_seed=0)
    assert np.all(np.isfinite(ds["y_synthetic"].values))


# --- continuous weights ----------------------------------------------------------------------

def test_continuous_a_is_monotone_in_nearest_neighbour_distance():
    # records on a line with growing gaps: the nearest-neighbour distance grows along it
    x = np.cumsum([0, 10, 20, 40, 80, 160, 320, 640])
    xy = np.column_stack([x, np.zeros_like(x)]).astype(float)
    sites = make_sites(xy)
    phi, rho0 = 1 / 100.0, 0.2  # M = -log(0.2) * 100 = 161 m
    a_site, a_rec = continuous_weights(xy, sites.site_index, phi, rho0)
    d_nn = kth_neighbour_distance(xy)
    np.testing.assert_allclose(d_nn, [10, 10, 20, 40, 80, 160, 320, 640])
    want = 1 - np.minimum(1, np.exp(-phi * d_nn) / rho0)
    np.testing.assert_allclose(a_rec, want)
    order = np.argsort(d_nn, kind="stable")
    assert np.all(np.diff(a_rec[order]) >= 0)
    # a > 0 exactly where the binary rule flags the record
    M = -np.log(rho0) / phi
    np.testing.assert_array_equal(a_rec > 0, find_at_risk(xy, sites.site_index, M).at_risk)
    assert a_rec[-1] == pytest.approx(1 - np.exp(-6.4) / 0.2)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_kth_neighbour_distance_matches_brute_force(k):
    rng = np.random.default_rng(k)
    xy = rng.uniform(0, 100, (40, 2))
    xy[5] = xy[6]
    subject = rng.integers(0, 25, 40)
    for subj in (None, subject):
        d = cdist(xy, xy)
        s = np.arange(40) if subj is None else subj
        d[s[:, None] == s[None, :]] = np.inf
        np.testing.assert_allclose(kth_neighbour_distance(xy, k, subject=subj),
                                   np.sort(d, axis=1)[:, k - 2])


def test_spec_refuses_continuous_with_infinite_gamma():
    with pytest.raises(SpecError, match=r'at_risk_weight = "continuous"` needs a finite'):
        ModelConfig(at_risk_weight="continuous", gamma="inf")
    with pytest.raises(SpecError, match="needs a finite"):
        ModelConfig(at_risk_weight="continuous", gamma=float("inf"))
    ModelConfig(at_risk_weight="continuous", gamma="auto")
    ModelConfig(at_risk_weight="continuous", gamma=4.0)


def test_spec_refuses_kriged_with_finite_gamma_and_auto_with_nuts(tmp_path):
    with pytest.raises(SpecError, match=r'at_risk_effect = "kriged"` replaces'):
        ModelConfig(at_risk_effect="kriged", gamma=2.0)
    ModelConfig(at_risk_effect="kriged", gamma="inf")
    with pytest.raises(SpecError, match=r"`\[model\] at_risk_weight` must be one of"):
        ModelConfig(at_risk_weight="graded")
    from synthgeo.config import DataConfig, ReleaseSpec

    with pytest.raises(SpecError, match=r'gamma = "auto"`.*needs `\[sampling\] sampler = "grid"'):
        ReleaseSpec(data=DataConfig(path="x.csv", response="y"),
                    model=ModelConfig(gamma="auto"), sampling=SamplingConfig(sampler="nutpie"))


# --- kriged at-risk effect -------------------------------------------------------------------

def test_kriged_effects_match_simple_kriging_formula():
    rng = np.random.default_rng(0)
    xy = rng.uniform(0, 1000, (30, 2))
    inactive = np.zeros(30, bool)
    inactive[[2, 9]] = True
    w = rng.standard_normal((3, 30))
    phi = np.array([0.004, 0.004, 0.01])
    got = kriged_effects(w, phi, xy, inactive)
    act, ina = ~inactive, inactive
    for j in range(3):
        R = np.exp(-phi[j] * cdist(xy, xy))
        want = R[np.ix_(ina, act)] @ np.linalg.solve(R[np.ix_(act, act)], w[j, act])
        np.testing.assert_allclose(got[j, ina], want, rtol=1e-6)
        np.testing.assert_array_equal(got[j, act], w[j, act])
    # with every active site as a neighbour, the NNGP form is the exact one
    np.testing.assert_allclose(kriged_effects(w, phi, xy, inactive, n_neighbors=28), got,
                               rtol=1e-6)


def test_kriged_synthesis_puts_the_neighbourhood_level_at_the_at_risk_site(small_gp):
    a = _a(small_gp["sites"].n_sites)
    fit = _fit(small_gp, Smoothing(a=a, gamma=np.inf))
    zero = draw_implicates(fit, small_gp["X"], n_implicates=20, random_seed=4)
    krig = draw_implicates(fit, small_gp["X"], n_implicates=20, random_seed=4,
                           at_risk_effect="kriged")
    at = np.flatnonzero(a[small_gp["sites"].site_index] > 0)
    other = np.setdiff1d(np.arange(len(a)), at)
    np.testing.assert_array_equal(zero["y_synthetic"].values[:, other],
                                  krig["y_synthetic"].values[:, other])
    post = fit.idata.posterior
    flat = np.unique(np.round(np.linspace(0, 99, 20)).astype(int))
    ci, di = np.divmod(flat, post.sizes["draw"])
    w = fit.effects(flat)
    coords = small_gp["sites"].coords_m
    want = kriged_effects(w, post["phi"].values[ci, di], coords, a > 0)
    diff = krig["y_synthetic"].values[:, at] - zero["y_synthetic"].values[:, at]
    np.testing.assert_allclose(diff, want[:, small_gp["sites"].site_index[at]], rtol=1e-10)


def test_auto_gamma_with_no_site_at_risk_is_unrestricted(small_gp):
    a = np.zeros(small_gp["sites"].n_sites)
    sm = Smoothing(a=a, gamma="auto")
    np.testing.assert_array_equal(sm.scale(), np.ones_like(a))
    f_auto, f_u = _fit(small_gp, sm), _fit(small_gp, None)
    np.testing.assert_array_equal(f_auto.idata.posterior["beta"].values,
                                  f_u.idata.posterior["beta"].values)
    with pytest.raises(ValueError, match="`alpha`.*is needed"):
        Smoothing(a=np.ones(3), gamma="auto").scale()


def test_posterior_summary_reports_gamma_auto(small_gp):
    from synthgeo.studies.compare import posterior_summary

    a = _a(small_gp["sites"].n_sites)
    fit = _fit(small_gp, Smoothing(a=a, gamma="auto"))
    tab = posterior_summary({"restricted": fit}).set_index("parameter")
    post = fit.idata.posterior
    want = np.maximum(0, (post["sigma2"] / post["nugget"]).values.ravel() - 1).mean()
    assert tab.loc["gamma_auto", "mean"] == pytest.approx(want)
    assert "gamma_auto" not in posterior_summary({"u": _fit(small_gp, None)})["parameter"].values


def test_krige_by_nearest_sources_is_the_same_in_threads():
    """Distinct φ values kriged in 2 threads: the same array as one after another."""
    from synthgeo.model.kriging import krige

    rng = np.random.default_rng(11)
    src, tgt = rng.uniform(0, 5, (200, 2)), rng.uniform(0, 5, (80, 2))
    values = rng.normal(size=(7, 200))
    phi = np.array([0.5, 0.9, 0.5, 1.3, 2.0, 0.9, 3.1])
    one = krige(src, values, phi, tgt, n_neighbors=12)
    assert np.array_equal(krige(src, values, phi, tgt, n_neighbors=12, n_threads=2), one)
