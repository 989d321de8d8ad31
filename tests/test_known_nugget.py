"""A known part of the nugget (input noise's y* = y + e): the grid posterior against brute force."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.integrate import quad
from scipy.spatial.distance import cdist
from scipy.special import logit

from synthgeo.inference.covariance import ExactCovariance
from synthgeo.inference.grid import conjugate_prior, fit_gp_grid
from synthgeo.inference.grid_posterior import GridModel, evaluate_cells, to_natural
from synthgeo.inference.known_nugget import draw_sigma2, log_prior_mean
from synthgeo.model.kernels import make_sites
from synthgeo.model.restricted_gp import default_priors
from synthgeo.testing import simulate_gp

A_MIN, A_MAX, WIDTH = 1e-4 / (1 - 1e-4), 999.0, 0.999 - 1e-4


def _tilted(a, b, c, alpha_star):
    """σ² ↦ InverseGamma(a, b) density times y's prior on α = α* − c/σ² (brute force)."""
    def f(s2):
        al = alpha_star - c / s2
        prior = alpha_star / (1 + al) ** 2 / WIDTH if A_MIN <= al <= A_MAX else 0.0
        return stats.invgamma.pdf(s2, a, scale=b) * prior
    return f, c / (alpha_star - A_MIN)


@pytest.mark.parametrize("a, b, c, alpha_star", [
    (20.0, 10.0, 0.3, 1.5), (5.0, 2.0, 0.3, 0.2), (300.0, 100.0, 0.5, 1.5),
    (3.0, 1.0, 1.0, 50.0), (80.0, 30.0, 0.05, 0.02)])
def test_the_cells_prior_term_is_the_integral_over_sigma2(a, b, c, alpha_star):
    """log E[p(v* | σ²)] equals adaptive quadrature of the tilted σ² density (rel 1e-7)."""
    f, lower = _tilted(a, b, c, alpha_star)
    brute = quad(f, lower, np.inf, limit=500, epsabs=0)[0]
    got = log_prior_mean(np.array([alpha_star]), a, np.array([b]), c, alpha_min=A_MIN,
                         alpha_max=A_MAX, nu_width=WIDTH)[0]
    assert np.exp(got) == pytest.approx(brute, rel=1e-7)


def test_a_cell_no_sigma2_can_reach_is_impossible():
    """α* below α_min: y's nugget ratio would be negative for every σ² → −inf."""
    got = log_prior_mean(np.array([A_MIN / 2]), 10.0, np.array([3.0]), 0.2, alpha_min=A_MIN,
                         alpha_max=A_MAX, nu_width=WIDTH)
    assert got[0] == -np.inf
    with pytest.raises(ValueError, match="no prior mass"):
        draw_sigma2(np.array([A_MIN / 2]), 10.0, np.array([3.0]), 0.2, alpha_min=A_MIN,
                    alpha_max=A_MAX, rng=np.random.default_rng(0))


def test_sigma2_draws_follow_the_tilted_density():
    """Kolmogorov–Smirnov against the brute-force CDF of the tilted InverseGamma."""
    a, b, c, alpha_star = 12.0, 6.0, 0.4, 0.9
    f, lower = _tilted(a, b, c, alpha_star)
    total = quad(f, lower, np.inf, limit=500)[0]
    draws = draw_sigma2(np.full(4000, alpha_star), a, np.full(4000, b), c, alpha_min=A_MIN,
                        alpha_max=A_MAX, rng=np.random.default_rng(3))
    assert np.all(alpha_star - c / draws >= A_MIN)
    grid = np.quantile(draws, np.linspace(0.02, 0.98, 25))
    cdf = np.array([quad(f, lower, x, limit=500)[0] / total for x in grid])
    emp = np.searchsorted(np.sort(draws), grid, side="right") / draws.size
    assert np.max(np.abs(emp - cdf)) < 1.63 / np.sqrt(draws.size)  # KS at 1 %


def _model(c):
    sim = simulate_gp(25, random_seed=4, nugget=0.5)
    sites = make_sites(sim["coords_m"])
    y = sim["y"] + np.random.default_rng(8).normal(0, np.sqrt(c), sim["y"].size)
    priors = default_priors(y, sim["X"], sites)
    model = GridModel(backend=ExactCovariance(y, sim["X"], sites, np.ones(sites.n_sites)),
                      prior=conjugate_prior(priors, 2), n=y.size, known_nugget=c)
    return model, y, sim["X"], sites


def test_the_log_density_is_y_models_plus_the_known_nugget_by_brute_force():
    """At a cell (u, v*): ∫ N(y*; Xμ, σ²(XVXᵀ + R + αI) + κ²I) IG(σ²) p(α) dσ², α = α* − κ²/σ².

    Written in y's own parametrisation (α, σ², β integrated numerically over σ², in closed form
    over β), independent of the conjugate algebra at y*'s α*.
    """
    c = 0.3
    model, y, X, sites = _model(c)
    pr = model.prior
    R0 = cdist(sites.coords_m, sites.coords_m)[np.ix_(sites.site_index, sites.site_index)]
    points = np.array([[np.log(300.0), logit(0.6)], [np.log(900.0), logit(0.35)],
                       [np.log(150.0), logit(0.8)]])
    got = evaluate_cells(model, points).log_target
    for (u, v), want_log in zip(points, got):
        _, alpha_star, phi_km = (float(t[0]) for t in to_natural(np.array([[u, v]])))
        R = np.exp(-phi_km * R0 / 1000.0)

        def integrand(s2, R=R, alpha_star=alpha_star):
            al = alpha_star - c / s2
            if not A_MIN <= al <= A_MAX:
                return 0.0
            cov = s2 * (X @ pr.V @ X.T + R + al * np.eye(y.size)) + c * np.eye(y.size)
            lik = stats.multivariate_normal(X @ pr.beta_mean, cov).pdf(y)
            prior_a = alpha_star / (1 + al) ** 2 / WIDTH  # dν/dα · dα*/dv*, ν uniform
            return lik * prior_a * stats.invgamma.pdf(s2, pr.sigma2_shape, scale=pr.sigma2_scale)

        lower = c / (alpha_star - A_MIN)
        brute = quad(integrand, lower, np.inf, limit=400, epsrel=1e-10)[0]
        log_range_prior = u - np.log(pr.range_max_m - pr.range_min_m)
        assert want_log == pytest.approx(np.log(brute) + log_range_prior, abs=1e-6)


def test_a_fit_with_a_known_nugget_keeps_ys_nugget_positive_and_says_so():
    """Every draw's τ² = nugget − κ² ≥ α_min σ² (no floor needed); the engine records κ²."""
    c = 0.3
    _, y, X, sites = _model(c)
    fit = fit_gp_grid(y, X, sites, priors=default_priors(y, X, sites), coef_names=["a", "b"],
                      random_seed=1, known_nugget=c)
    post = fit.idata.posterior
    tau2 = post["nugget"].values - c
    assert np.all(tau2 >= A_MIN * post["sigma2"].values * (1 - 1e-9))
    assert fit.engine["known_nugget"] == c
    with pytest.raises(ValueError, match="known_nugget"):
        GridModel(backend=None, prior=None, n=3, known_nugget=-1.0)
