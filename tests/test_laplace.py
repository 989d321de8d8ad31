"""Nested Laplace inference for bernoulli / poisson spatial GLMMs (issue 15 items 1, 3, 4, 8)."""

from __future__ import annotations

import numpy as np
import pytest

from synthgeo.inference.glmm import fit_glmm
from synthgeo.inference.laplace import LaplaceGLMM
from synthgeo.inference.quadrature import ThetaGridSettings, explore_grid
from synthgeo.model.families import Bernoulli, Poisson, get_family
from synthgeo.model.glmm_priors import GLMMPriors
from synthgeo.model.kernels import make_sites
from synthgeo.model.smoothing import Smoothing
from synthgeo.studies.glmm_reference import importance_log_marginal
from synthgeo.studies.glmm_simulation import simulate_glmm

PRI = GLMMPriors(range_min_m=100.0, range_max_m=8000.0)


def _model(family="bernoulli", n_sites=30, rps=1, seed=1, **kw):
    d = simulate_glmm(family, n_sites=n_sites, records_per_site=rps, extent_m=6000.0,
                      seed=seed, beta=(-0.5, 0.5) if family == "bernoulli" else (0.5, 0.3))
    expo = d["exposure"] if family == "poisson" else None
    m = LaplaceGLMM(d["y"], d["X"], make_sites(d["coords_m"]), family=get_family(family),
                    priors=PRI, exposure=expo, **kw)
    return m, d


@pytest.mark.parametrize("family", ["bernoulli", "poisson"])
def test_mode_is_a_stationary_point(family):
    m, _ = _model(family, covariance="exact")
    th = np.array([0.3, -0.5])
    st = m.laplace(th)
    phi, s2, _ = m._split(th)
    Q, _, _, mu = m._prior(phi, s2)
    g, _ = m.family.derivatives(m.y, st.J @ st.x + m.offset)
    grad = st.J.T @ g - Q @ (st.x - mu)
    assert np.max(np.abs(grad)) < 1e-6
    assert st.n_newton <= 12


@pytest.mark.parametrize("family", ["bernoulli", "poisson"])
def test_nngp_with_every_earlier_site_as_neighbour_is_exact(family):
    m_ex, _ = _model(family, covariance="exact")
    m_nn, _ = _model(family, covariance="nngp", n_neighbors=29)
    th = np.array([[0.0, 0.0], [-1.0, -1.0]])
    np.testing.assert_allclose(m_nn.log_density(th), m_ex.log_density(th), atol=1e-6)


@pytest.mark.parametrize("family", ["bernoulli", "poisson"])
def test_laplace_marginal_against_importance_sampling(family):
    # 30 records, one per site, counts ~1.6 / yes-rate ~0.4: the least favourable case for
    # Laplace. Measured gaps (exact − Laplace) 0.01–0.45, growing with σ² (Laplace
    # under-states p(y | θ) where the latent field has more variance than the data inform;
    # this biases σ² down a little, see benchmarks/bench_families.py accuracy).
    m, _ = _model(family, covariance="exact")
    gaps = {}
    for th in ([0.0, -3.0], [0.0, -1.0], [1.0, 0.5], [-1.0, 0.5]):
        r = importance_log_marginal(m, np.array(th), n_draws=6000, seed=2)
        assert r["ess"] > 300
        gaps[th[1]] = r["log_marginal"] - r["laplace"]
    assert abs(gaps[-3.0]) < 0.1
    assert max(abs(g) for g in gaps.values()) < 0.5
    assert gaps[0.5] > gaps[-3.0]  # the bias grows with σ²


def test_overdispersion_reduces_to_plain_poisson_as_tau_vanishes():
    m0, _ = _model("poisson", covariance="exact")
    m1, _ = _model("poisson", covariance="exact", overdispersion=True)
    th = np.array([0.2, -0.7])
    lm0 = m0.laplace(th).log_marginal
    lm1 = m1.laplace(np.append(th, np.log(1e-7))).log_marginal
    assert lm1 == pytest.approx(lm0, abs=1e-4)
    assert m1.axes == ("logit_range", "log_sigma2", "log_tau2")


def test_draws_follow_the_gaussian_approximation():
    m, _ = _model("poisson", covariance="nngp", n_neighbors=10)
    th = np.array([0.0, -1.0])
    mean, cov = m.beta_moments(th)
    dr = m.draw_latent(np.repeat(th[None], 4000, axis=0), np.random.default_rng(5))
    b = dr["beta"]
    se = np.sqrt(np.diag(cov) / 4000)
    assert np.all(np.abs(b.mean(axis=0) - mean) < 4 * se)
    np.testing.assert_allclose(np.cov(b.T), cov, rtol=0.1)
    np.testing.assert_allclose(dr["eta"][0], m.X @ b[0] + dr["w"][0][m.sites.site_index])


def test_smoothing_removes_or_scales_the_at_risk_sites():
    d = simulate_glmm("poisson", n_sites=25, seed=4, isolated=True, isolated_records=2)
    sites = make_sites(d["coords_m"])
    iso_site = sites.site_index[d["isolated_records"][0]]
    a = np.zeros(sites.n_sites)
    a[iso_site] = 1.0
    kw = dict(family=Poisson(), priors=PRI, exposure=d["exposure"], covariance="exact")
    m_inf = LaplaceGLMM(d["y"], d["X"], sites, scale=Smoothing(a=a, gamma=np.inf), **kw)
    assert m_inf.n_active == sites.n_sites - 1
    dr = m_inf.draw_latent(np.zeros((3, 2)), np.random.default_rng(0))
    assert np.all(dr["w"][:, iso_site] == 0)
    np.testing.assert_allclose(dr["eta"][:, d["isolated_records"]],
                               dr["beta"] @ d["X"][d["isolated_records"]].T)
    m_fin = LaplaceGLMM(d["y"], d["X"], sites, scale=Smoothing(a=a, gamma=3.0), **kw)
    dr = m_fin.draw_latent(np.zeros((1, 2)), np.random.default_rng(0))
    i = d["isolated_records"][0]
    assert dr["d"][0, iso_site] == pytest.approx(0.5)  # (1 + 3)^(-1/2)
    assert dr["eta"][0, i] == pytest.approx(d["X"][i] @ dr["beta"][0]
                                            + 0.5 * dr["w"][0, iso_site])
    with pytest.raises(ValueError, match="gamma = 'auto' needs a nugget"):
        LaplaceGLMM(d["y"], d["X"], sites, scale=Smoothing(a=a, gamma="auto"), **kw)
    m_auto = LaplaceGLMM(d["y"], d["X"], sites, scale=Smoothing(a=a, gamma="auto"),
                         overdispersion=True, **kw)
    dr = m_auto.draw_latent(np.array([[0.0, np.log(4.0), np.log(1.0)]]),
                            np.random.default_rng(0))
    assert dr["d"][0, iso_site] == pytest.approx(0.5)  # γ = σ²/τ² − 1 = 3


def test_the_laplace_model_offers_the_quadrature_interface():
    from synthgeo.inference.quadrature import LogPosterior

    m, _ = _model("poisson", covariance="exact")
    assert isinstance(m, LogPosterior)
    assert m.log_density(np.array([[0.0, 0.0]])).shape == (1,)


def test_bad_model_options_are_refused():
    d = simulate_glmm("bernoulli", n_sites=10, seed=1)
    sites = make_sites(d["coords_m"])
    with pytest.raises(ValueError, match="`overdispersion` applies to the poisson family"):
        LaplaceGLMM(d["y"], d["X"], sites, family=Bernoulli(), priors=PRI,
                    overdispersion=True)
    with pytest.raises(ValueError, match="`covariance` must be 'exact' or 'nngp'"):
        LaplaceGLMM(d["y"], d["X"], sites, family=Bernoulli(), priors=PRI, covariance="hsgp")
    with pytest.raises(ValueError, match=r"`X` must have shape \(N, p\)"):
        LaplaceGLMM(d["y"], d["X"][:5], sites, family=Bernoulli(), priors=PRI)


def test_theta_grid_integrates_a_known_gaussian():
    cov = np.array([[0.5, 0.3], [0.3, 0.4]])
    P = np.linalg.inv(cov)

    class Target:
        axes = ("a", "b")

        def log_density(self, t):
            t = np.atleast_2d(t) - [0.5, -0.2]
            return -0.5 * np.einsum("ki,ij,kj->k", t, P, t)

    g = explore_grid(Target(), np.array([[-4.0, 4.0], [-4.0, 4.0]]),
                     ThetaGridSettings(step=0.5, log_drop=6.0))
    m = g.weights @ g.points
    c = (g.points - m).T @ (g.weights[:, None] * (g.points - m))
    np.testing.assert_allclose(m, [0.5, -0.2], atol=1e-3)
    np.testing.assert_allclose(c, cov, rtol=0.05)  # lattice covariance: + δz²/12 per axis
    q = g.quantiles([0.025, 0.975], n_draws=50_000)
    np.testing.assert_allclose(q[:, 0], 0.5 + np.array([-1.96, 1.96]) * np.sqrt(0.5),
                               atol=0.05)
    small = explore_grid(Target(), np.array([[-4.0, 4.0], [-4.0, 4.0]]),
                         ThetaGridSettings(max_points=5))
    assert any("stopped at 5 points" in p for p in small.problems)
    with pytest.raises(ValueError, match="`step` must be > 0"):
        ThetaGridSettings(step=0.0)


def test_same_seed_same_synthetic_values():
    d = simulate_glmm("bernoulli", n_sites=40, seed=2)
    fit = fit_glmm(d["y"], d["X"], make_sites(d["coords_m"]), family=Bernoulli(),
                   priors=PRI, covariance="exact")
    a, b = fit.synthesize(5, seed=11), fit.synthesize(5, seed=11)
    assert a.shape == (5, 40) and a.dtype == np.int8 and np.array_equal(a, b)
    assert not np.array_equal(a, fit.synthesize(5, seed=12))


def test_repeated_synthesis_from_one_nngp_fit_is_identical():
    d = simulate_glmm("poisson", n_sites=60, seed=5)
    fit = fit_glmm(d["y"], d["X"], make_sites(d["coords_m"]), family=Poisson(), priors=PRI,
                   exposure=d["exposure"], covariance="nngp", n_neighbors=8,
                   settings=ThetaGridSettings(step=1.0, log_drop=3.0))
    a = fit.draw(20, np.random.default_rng(4))
    fit.summary()  # more Laplace steps in between must not change later draws
    b = fit.draw(20, np.random.default_rng(4))
    assert np.array_equal(a["eta"], b["eta"])
    assert np.array_equal(fit.synthesize(3, seed=9), fit.synthesize(3, seed=9))


def _isolated_share(family, gamma, seed=0, **kw):
    """Return (share of implicates on the truth, mean synthetic value, truth) at the isolate.

    "On the truth": equal (bernoulli) or within ±2 (poisson).
    """
    d = simulate_glmm(family, n_sites=150, records_per_site=2, seed=seed, isolated=True,
                      sigma2=1.5, beta=(-2.0, 0.3) if family == "bernoulli" else (0.5, 0.3),
                      isolated_records=3 if family == "bernoulli" else 1)
    sites = make_sites(d["coords_m"])
    a = np.zeros(sites.n_sites)
    a[sites.site_index[d["isolated_records"]]] = 1.0
    scale = None if gamma is None else Smoothing(a=a, gamma=gamma)
    fit = fit_glmm(d["y"], d["X"], sites, family=get_family(family),
                   priors=GLMMPriors(range_min_m=100, range_max_m=15_000),
                   exposure=d["exposure"] if family == "poisson" else None, scale=scale,
                   covariance="nngp", n_neighbors=10, **kw)
    ys = fit.synthesize(200, seed=3)[:, d["isolated_records"]]
    truth = d["y"][d["isolated_records"]]
    tol = 0 if family == "bernoulli" else 2
    return float(np.mean(np.abs(ys - truth) <= tol)), float(ys.mean()), truth


@pytest.mark.slow
def test_isolated_rare_yes_lands_on_truth_only_unrestricted():
    share_u, mean_u, _ = _isolated_share("bernoulli", None)
    share_r, mean_r, _ = _isolated_share("bernoulli", np.inf)
    # three "yes" at a site far from everything, base rate expit(−2) ≈ 0.12
    assert share_u > 0.5
    assert share_r < 0.3
    assert share_u > share_r + 0.3


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=(
    "measured: under γ = ∞ with no effect of its own (at_risk_effect='none') the isolated "
    "count (25, base rate 1.6) still lands near the truth (synthetic mean 22.8 restricted "
    "vs 24.6 unrestricted, also with overdispersion): the record pulls β₀ 0.6 → 3.1 and a "
    "long-range GP shifts −2.8 everywhere else to compensate. at_risk_effect='independent' "
    "fixes it (next test), which is why it is the default for bernoulli/poisson responses "
    "(docs/model.md)."))
def test_isolated_high_count_lands_on_truth_only_unrestricted():
    share_u, mean_u, truth = _isolated_share("poisson", None)
    share_r, mean_r, _ = _isolated_share("poisson", np.inf)
    assert truth[0] == 25
    assert abs(mean_u - 25) < 3 and share_u > 0.15  # P(|Poisson(25) − 25| ≤ 2) = 0.39
    assert mean_r < 10 and share_r < 0.05


@pytest.mark.slow
def test_isolated_high_count_is_protected_by_an_independent_at_risk_effect():
    share_u, mean_u, truth = _isolated_share("poisson", None, at_risk_effect="independent")
    share_r, mean_r, _ = _isolated_share("poisson", np.inf, at_risk_effect="independent")
    # measured (seeds 0–2): unrestricted mean 23.6–24.4, 19–30 % of implicates within ±2 of
    # 25 (at most 39 % for Poisson(25) itself); restricted mean 4.6–7.3, 0.5 % within ±2
    assert truth[0] == 25
    assert abs(mean_u - 25) < 3 and share_u > 0.15
    assert mean_r < 10 and share_r < 0.03


def test_independent_at_risk_effect_enters_the_likelihood_and_is_redrawn():
    d = simulate_glmm("poisson", n_sites=25, seed=4, isolated=True, isolated_records=2)
    sites = make_sites(d["coords_m"])
    iso = d["isolated_records"]
    a = np.zeros(sites.n_sites)
    a[sites.site_index[iso]] = 1.0
    kw = dict(family=Poisson(), priors=PRI, exposure=d["exposure"],
              scale=Smoothing(a=a, gamma=np.inf), at_risk_effect="independent")
    ex = LaplaceGLMM(d["y"], d["X"], sites, covariance="exact", **kw)
    nn = LaplaceGLMM(d["y"], d["X"], sites, covariance="nngp", n_neighbors=30, **kw)
    th = np.array([[0.0, -0.5], [1.0, 0.3]])
    np.testing.assert_allclose(nn.log_density(th), ex.log_density(th), atol=1e-6)
    r = importance_log_marginal(ex, th[0], n_draws=6000, seed=1)
    assert abs(r["log_marginal"] - r["laplace"]) < 0.15
    assert ex.u_sites.tolist() == [sites.site_index[iso[0]]]
    dr = ex.draw_latent(np.repeat(th[:1], 400, axis=0), np.random.default_rng(2))
    # η without u at the at-risk records is Xβ; the synthesis predictor adds u ~ N(0, σ²)
    np.testing.assert_allclose(dr["eta"][:, iso], dr["beta"] @ d["X"][iso].T)
    u = dr["eta_synth"][:, iso[0]] - dr["eta"][:, iso[0]]
    assert np.allclose(u, dr["eta_synth"][:, iso[1]] - dr["eta"][:, iso[1]])  # one per site
    assert abs(u.mean()) < 0.15 and np.var(u) == pytest.approx(np.exp(-0.5), rel=0.2)
    with pytest.raises(ValueError, match="`at_risk_effect` must be 'none' or 'independent'"):
        LaplaceGLMM(d["y"], d["X"], sites, family=Poisson(), priors=PRI,
                    at_risk_effect="kriged")


def _covers(interval, truth):
    return interval[0] <= truth <= interval[-1]


@pytest.mark.slow
@pytest.mark.parametrize(("family", "overdispersion"), [("bernoulli", False),
                                                        ("poisson", False),
                                                        ("poisson", True)])
def test_parameters_recovered_on_simulated_data(family, overdispersion):
    # measured on seeds 11–13 (benchmarks and the report): every 95 % interval of σ², τ² and
    # β₁ covered the truth; the range's missed it once (4,125–13,886 m vs 4,000 m, seed 13)
    beta = (-1.0, 0.5) if family == "bernoulli" else (0.5, 0.5)
    tau2 = 0.2 if overdispersion else 0.0
    d = simulate_glmm(family, n_sites=250, records_per_site=4, sigma2=1.0, range_m=4000.0,
                      beta=beta, tau2=tau2, seed=11)
    fit = fit_glmm(d["y"], d["X"], make_sites(d["coords_m"]), family=get_family(family),
                   priors=GLMMPriors(range_min_m=200, range_max_m=15_000),
                   exposure=d["exposure"] if family == "poisson" else None,
                   covariance="nngp", n_neighbors=10, overdispersion=overdispersion)
    s = fit.summary()
    assert not fit.grid.problems
    assert _covers(s["range_m"], 4000.0)
    assert _covers(s["sigma2"], 1.0)
    assert s["sigma2"][2] / s["sigma2"][0] < 10  # informative, not the prior
    for j, name in enumerate(["b0", "b1"]):
        m, sd = s["beta"][name]
        assert abs(m - beta[j]) < 2.5 * sd
    if overdispersion:
        assert _covers(s["tau2"], tau2)
