"""Risk-weighted pseudo-likelihood (``[model] at_risk_weight = "pseudo_likelihood"``).

The weights' formula, the heteroscedastic-nugget likelihood with its kept normalising factor
against a brute-force integral over (β, w, σ²), α = 1 reproducing the unrestricted fit exactly
(exact and NNGP), the NNGP with full conditioning sets against the exact GP, the Lipschitz
bound on a fixture, the spec's refusals, and one whole run (slow).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import integrate
from scipy.special import expit, gammaln

from synthgeo._errors import SpecError
from synthgeo.config import SamplingConfig, bundled_spec_path, load_spec
from synthgeo.config.risk import RiskTarget
from synthgeo.inference.conditionals import draw_effects_exact
from synthgeo.inference.covariance import ExactCovariance, NNGPCovariance
from synthgeo.inference.grid import conjugate_prior, fit_gp_grid
from synthgeo.inference.grid_posterior import GridModel, GridSettings, evaluate_cells
from synthgeo.inference.nngp_effects import NNGPEffects
from synthgeo.model.kernels import exponential_correlation, make_sites
from synthgeo.model.pseudo_likelihood import ALPHA_FLOOR, lipschitz_bound, pseudo_weights
from synthgeo.model.restricted_gp import default_priors
from synthgeo.model.smoothing import Smoothing

CFG = SamplingConfig(sampler="grid", chains=2, draws=50, seed=3, on_convergence_failure="warn")
FAST = GridSettings(n_coarse=6, n_fine=6, max_stages=2)


# --- the weights -------------------------------------------------------------------------------

def test_weights_formula():
    """α_i = max(1 − r̃_i, floor), r̃ normalised by the largest positive a per measure, max over."""
    a = np.array([[0.20, 0.10, -0.05, 0.00],
                  [0.01, 0.04, 0.00, 0.02]])
    w = pseudo_weights(a)
    # measure 1: r = [1, 0.5, 0, 0]; measure 2: r = [0.25, 1, 0, 0.5]; max: [1, 1, 0, 0.5]
    np.testing.assert_allclose(w, [ALPHA_FLOOR, ALPHA_FLOOR, 1.0, 0.5])
    assert np.all(pseudo_weights(np.array([-0.1, 0.0, -0.3])) == 1.0)  # no positive risk
    np.testing.assert_allclose(pseudo_weights(np.array([0.4, 0.1]), floor=0.2), [0.2, 0.75])
    with pytest.raises(ValueError, match="floor"):
        pseudo_weights(np.array([0.1]), floor=0.0)
    with pytest.raises(ValueError, match="finite"):
        pseudo_weights(np.array([np.nan]))


# --- the likelihood: hand-worked against brute force ------------------------------------------

def _brute_log_marginal(y, X, R, alpha_i, nug_ratio, prior):
    """log ∫ Π_i N(y_i; x_iβ + w_i, τ²)^{α_i} N(w; 0, σ²R) N(β; μ, σ²V) IG(σ²) d(β, w, σ²).

    Joint Gaussian integral over z = (β, w) in the latent form (no heteroscedastic nugget,
    no factor moved anywhere), then a 1-d quadrature over log σ², τ² = nug_ratio σ².
    """
    n, p = X.shape
    Z = np.hstack([X, np.eye(n)])  # mean of y_i: Z_i z
    V, mu = prior.V, np.asarray(prior.beta_mean, float)
    a0, b0 = prior.sigma2_shape, prior.sigma2_scale
    Rinv, Vinv = np.linalg.inv(R), np.linalg.inv(V)

    def log_inner(s2):
        t2 = nug_ratio * s2
        W = np.diag(alpha_i) / t2
        P0 = np.zeros((p + n, p + n))  # prior precision of z
        P0[:p, :p], P0[p:, p:] = Vinv / s2, Rinv / s2
        A = P0 + Z.T @ W @ Z
        b = Z.T @ W @ y + np.r_[Vinv @ mu / s2, np.zeros(n)]
        c = (-0.5 * np.sum(alpha_i * np.log(2 * np.pi * t2)) - 0.5 * y @ W @ y
             - 0.5 * mu @ Vinv @ mu / s2
             - 0.5 * (np.linalg.slogdet(2 * np.pi * s2 * V)[1]
                      + np.linalg.slogdet(2 * np.pi * s2 * R)[1]))
        return (c + 0.5 * b @ np.linalg.solve(A, b) + 0.5 * (p + n) * np.log(2 * np.pi)
                - 0.5 * np.linalg.slogdet(A)[1])

    def log_ig(s2):
        return a0 * np.log(b0) - gammaln(a0) - (a0 + 1) * np.log(s2) - b0 / s2

    u = np.linspace(np.log(1e-3), np.log(1e2), 4001)  # log σ²
    f = np.array([log_inner(np.exp(v)) + log_ig(np.exp(v)) + v for v in u])
    top = f.max()
    return top + np.log(integrate.simpson(np.exp(f - top), x=u))


def test_heteroscedastic_nugget_likelihood_equals_brute_force():
    """The grid's pseudo-marginal (nugget τ²/α_i, N_eff, kept factor) = the weighted integral."""
    rng = np.random.default_rng(4)
    coords = rng.uniform(0, 1000, (6, 2))
    sites = make_sites(coords)
    X = np.column_stack([np.ones(6), rng.normal(size=6)])
    y = 1.0 + 0.5 * X[:, 1] + rng.normal(0, 0.7, 6)
    alpha_i = np.array([1.0, 0.3, 1.0, 0.05, 0.8, 1.0])
    priors = default_priors(y, X, sites)
    prior = conjugate_prior(priors, 2)
    point = np.array([[np.log(600.0), np.log(0.4 / 0.6)]])  # range 600 m, nugget share 0.4
    model = GridModel(backend=ExactCovariance(y, X, sites, np.ones(6),
                                              nugget_weight=1.0 / alpha_i),
                      prior=prior, n=6, likelihood_weight=alpha_i)
    got = evaluate_cells(model, point).log_marginal[0]
    nu = expit(point[0, 1])
    R = exponential_correlation(sites.distance_km(), 3.0 / 0.6)
    want = _brute_log_marginal(y, X, R, alpha_i, nu / (1 - nu), prior)
    assert got == pytest.approx(want, abs=2e-5)
    # dropping the factor (the heteroscedastic model's own posterior) is a different density
    plain = GridModel(backend=model.backend, prior=prior, n=6)
    assert abs(evaluate_cells(plain, point).log_marginal[0] - want) > 0.1


# --- α = 1 is the unrestricted fit -------------------------------------------------------------

def _fit(sim, scale, gp="exact"):
    priors = default_priors(sim["y"], sim["X"], sim["sites"])
    return fit_gp_grid(sim["y"], sim["X"], sim["sites"], priors=priors,
                       coef_names=["Intercept", "x1"], scale=scale, config=CFG, gp=gp,
                       settings=FAST, random_seed=5)


@pytest.mark.parametrize("gp", ["exact", "nngp"])
def test_weight_one_everywhere_reproduces_unrestricted_fit(small_gp, gp):
    n, S = small_gp["y"].size, small_gp["sites"].n_sites
    ones = Smoothing(a=np.zeros(S), gamma=0.0, likelihood_weight=np.ones(n))
    f1, fu = _fit(small_gp, ones, gp), _fit(small_gp, None, gp)
    for v in ("sigma2", "nugget", "range", "beta"):
        np.testing.assert_array_equal(f1.idata.posterior[v].values,
                                      fu.idata.posterior[v].values)
    np.testing.assert_array_equal(f1.effects(np.arange(6)), fu.effects(np.arange(6)))


def test_weights_move_the_fit(small_gp):
    """A down-weighted record pulls its site's effect less: the control that the test can fail."""
    n, S = small_gp["y"].size, small_gp["sites"].n_sites
    w = np.ones(n)
    w[5] = ALPHA_FLOOR
    draws = {"sigma2": np.array([1.0]), "alpha": np.array([0.1]), "phi_km": np.array([3.0]),
             "beta": np.zeros((1, 2))}
    args = (draws, small_gp["y"], small_gp["X"], small_gp["sites"])
    site = small_gp["sites"].site_index[5]
    wu = draw_effects_exact(*args, scale=np.ones(S), random_seed=[1])
    ww = draw_effects_exact(*args, scale=np.ones(S), random_seed=[1], nugget_weight=1.0 / w)
    # in the full weight the site's effect follows its record; down-weighted, its neighbours
    assert abs(wu[0, site] - ww[0, site]) > 0.05


def test_nngp_with_full_conditioning_sets_equals_exact(small_gp):
    """Vecchia with every earlier point as neighbour is exact: the weighted K's products agree."""
    y, X, sites = small_gp["y"], small_gp["X"], small_gp["sites"]
    n = y.size
    omega = 1.0 / np.linspace(0.05, 1.0, n)
    ex = ExactCovariance(y, X, sites, np.ones(sites.n_sites), nugget_weight=omega)
    nn = NNGPCovariance(y, X, sites, np.ones(sites.n_sites), n_neighbors=n - 1,
                        nugget_weight=omega)
    for phi_km, alpha in ((2.0, 0.3), (6.0, 0.05)):
        a, b = ex.stats(phi_km, alpha), nn.stats(phi_km, alpha)
        assert b.logdet == pytest.approx(a.logdet, rel=1e-8)
        np.testing.assert_allclose(b.XtKX, a.XtKX, rtol=1e-7)
        np.testing.assert_allclose(b.XtKy, a.XtKy, rtol=1e-7)
        assert b.ytKy == pytest.approx(a.ytKy, rel=1e-7)
        # and a weight of 1 is not a weight of omega (the products move)
        plain = NNGPCovariance(y, X, sites, np.ones(sites.n_sites), n_neighbors=n - 1)
        assert abs(plain.stats(phi_km, alpha).logdet - b.logdet) > 1.0


def test_nngp_effects_weighted_mean_matches_exact(small_gp):
    """The NNGP effect draw's weighted site sums: mean over many draws near the exact one's."""
    y, X, sites = small_gp["y"], small_gp["X"], small_gp["sites"]
    n, S = y.size, sites.n_sites
    omega = np.ones(n)
    omega[[2, 7, 11]] = 1.0 / 0.1
    k = 400
    draws = {"sigma2": np.full(k, 1.0), "alpha": np.full(k, 0.2), "phi_km": np.full(k, 3.0),
             "beta": np.zeros((k, 2)), "cell": np.zeros(k, int)}
    nn = NNGPEffects(y, X, sites, np.ones(S), n_neighbors=n - 1, solver="splu",
                     nugget_weight=omega).draw(draws, 1)
    ex = draw_effects_exact(draws, y, X, sites, scale=np.ones(S), random_seed=2,
                            nugget_weight=omega)
    se = np.sqrt(ex.var(axis=0) / k + nn.var(axis=0) / k)
    assert np.all(np.abs(nn.mean(axis=0) - ex.mean(axis=0)) < 5 * se)
    np.testing.assert_allclose(nn.var(axis=0), ex.var(axis=0), rtol=0.35)


# --- the bound --------------------------------------------------------------------------------

def test_lipschitz_bound_on_a_fixture():
    """Δ_α = max over draws and records of α_i |log N(y_i; mean, sd²)|, by hand."""
    y = np.array([0.0, 2.0, -1.0])
    mean = np.array([[0.0, 0.0, 0.0], [0.5, 2.0, 1.0]])
    sd = np.array([[1.0, 1.0, 1.0], [0.5, 0.5, 2.0]])
    w = np.array([1.0, 0.25, 0.5])
    c = 0.5 * np.log(2 * np.pi)
    # draw 1: |log p| = c, c + 2, c + 0.5; draw 2: c + log 0.5... computed per cell
    logp = np.array([[-c, -c - 2.0, -c - 0.5],
                     [-c - np.log(0.5) - 0.5, -c - np.log(0.5), -c - np.log(2.0) - 0.5]])
    want = np.max(w * np.abs(logp))
    b = lipschitz_bound(y, mean, sd, w)
    assert b["delta"] == pytest.approx(want) and b["epsilon"] == pytest.approx(2 * want)
    assert b["n_draws"] == 2
    assert lipschitz_bound(y, mean, sd)["delta"] == pytest.approx(np.max(np.abs(logp)))


# --- the spec --------------------------------------------------------------------------------

def _spec(**model):
    spec = load_spec(bundled_spec_path())
    spec = spec.replace("risk", targets=[RiskTarget(measure="rel:0.1", record_threshold=0.1)])
    return spec.replace("model", **model)


def test_spec_refusals():
    ok = _spec(at_risk="both", at_risk_weight="pseudo_likelihood")
    assert ok.model.at_risk_weight == "pseudo_likelihood"
    for model, match in (({"at_risk_weight": "pseudo_likelihood"}, "at_risk = \"risk\""),
                         ({"at_risk": "risk", "at_risk_weight": "pseudo_likelihood",
                           "gamma": 1.0}, "gamma = 1.0"),
                         ({"at_risk": "risk", "at_risk_weight": "pseudo_likelihood",
                           "at_risk_effect": "kriged"}, "at_risk_effect")):
        with pytest.raises(SpecError, match=match) as err:
            _spec(**model)
        assert "\n" not in str(err.value)
    with pytest.raises(SpecError, match="sampler"):
        ok.replace("sampling", sampler="nutpie")
    with pytest.raises(SpecError, match="cross_fit"):
        ok.replace("synthesis", predictive="cross_fit")


@pytest.mark.slow
def test_pseudo_likelihood_release_record():
    """A whole run: release.json carries the weights' aggregates and the bound, schema-valid."""
    from synthgeo.pipeline import run_release
    from synthgeo.release.schema import validate_release_record
    from synthgeo.release.writer import release_record

    spec = _spec(at_risk="both", at_risk_weight="pseudo_likelihood").replace(
        "synthesis", n_implicates=20).replace("risk", on_risk_failure="warn")
    res = run_release(spec)
    rec = json.loads(json.dumps(release_record(res, seconds={"total": 1.0})))
    validate_release_record(rec)
    pl = rec["synthesis"]["pseudo_likelihood"]
    assert pl["n_draws"] == 20 and 0 < pl["alpha_min"] <= pl["alpha_mean"] <= 1
    assert pl["epsilon"] == pytest.approx(2 * pl["delta_alpha"])
    assert pl["delta_alpha"] <= pl["delta_unweighted"]
    assert pl["n_eff"] < res.data.n_records  # some record was down-weighted
    assert rec["spec"]["model"]["at_risk_weight"] == "pseudo_likelihood"
