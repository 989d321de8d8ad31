"""The grid quadrature (issue 13): boundary weights, continuous draws, exact conditionals."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.spatial.distance import cdist
from scipy.special import expit

from synthgeo.config import SamplingConfig
from synthgeo.inference.covariance import ExactCovariance
from synthgeo.inference.grid import conjugate_prior, fit_gp_grid
from synthgeo.inference.grid_posterior import GridModel, grid_posterior, to_natural
from synthgeo.inference.importance import importance_resample
from synthgeo.inference.quadrature import Axis, QuadratureSettings, integrate
from synthgeo.model.kernels import make_sites
from synthgeo.model.restricted_gp import default_priors
from synthgeo.testing import simulate_gp

LATTICE = QuadratureSettings(rule="lattice", n_coarse=14, n_fine=18)  # the old rule and layout


# --- boundary weights on 1-D toy posteriors with known integrals -----------------------------


def test_midpoint_rule_integrates_exponential_to_the_bound():
    """∫₀² e^{−x} dx = 1 − e^{−2}; median of the truncated exponential −log(1 − (1 − e^{−2})/2)."""
    q = integrate(lambda x: -x[:, 0], [Axis(name="x", lower=0.0, upper=2.0)])
    assert np.exp(q.log_integral) == pytest.approx(1 - np.exp(-2.0), rel=1e-4)
    assert q.quantile("x", 0.5) == pytest.approx(-np.log(1 - (1 - np.exp(-2.0)) / 2), abs=1e-3)
    assert np.all(q.nodes[0] > 0.0) and np.all(q.nodes[0] < 2.0)  # no node on a bound


def test_mass_piled_at_a_bound_gets_its_right_share():
    """p(x) ∝ e^{4x} on [0, 1]: P(x > 0.95) = (e⁴ − e^{3.8}) / (e⁴ − 1) = 0.1834.

    The old lattice rule gave the node on the bound a full cell's weight, not half of one,
    and overstated the mass at the bound (here: 0.26 for the last node's share).
    """
    want = (np.exp(4) - np.exp(3.8)) / (np.exp(4) - 1)
    axis = [Axis(name="x", lower=0.0, upper=1.0)]
    new = integrate(lambda x: 4 * x[:, 0], axis)
    cdf = np.concatenate([[0.0], np.cumsum(new.fine_mass)])
    got = 1 - np.interp(0.95, new.fine_edges[0], cdf)
    assert got == pytest.approx(want, abs=1e-3)
    assert np.exp(new.log_integral) == pytest.approx((np.exp(4) - 1) / 4, rel=1e-4)
    old = integrate(lambda x: 4 * x[:, 0], axis, settings=LATTICE)
    last = old.weights[-1]  # the bound node's share under the old rule
    h = 1.0 / (len(old.nodes[0]) - 1)
    exact_half_cell = (np.exp(4) - np.exp(4 * (1 - h / 2))) / (np.exp(4) - 1)
    assert last > 1.7 * exact_half_cell  # the old rule: about twice the right share
    assert np.exp(old.log_integral) > 1.1 * (np.exp(4) - 1) / 4


def test_three_axes_and_a_start_box():
    """A 3-D Gaussian: log ∫ = (3/2) log 2π; a start box off the mass is widened to it."""
    axes = [Axis(name=n, lower=-10, upper=10) for n in "abc"]
    s = QuadratureSettings(n_coarse=8, n_fine=10)
    q = integrate(lambda p: -0.5 * (p**2).sum(axis=1), axes, settings=s)
    assert q.log_integral == pytest.approx(1.5 * np.log(2 * np.pi), abs=1e-3)
    np.testing.assert_allclose(q.quantile("b", [0.025, 0.975]), [-1.96, 1.96], atol=0.02)
    off = integrate(lambda p: -0.5 * ((p - 1.0) ** 2).sum(axis=1), axes[:2], settings=s,
                    start=np.array([[-8.0, -5.0], [-8.0, -5.0]]))
    assert off.quantile(0, 0.5) == pytest.approx(1.0, abs=0.01)
    assert off.edge_mass <= s.max_edge_mass and not off.problems


def test_quadrature_refuses_bad_input():
    with pytest.raises(ValueError, match="1 to 3 axes"):
        integrate(lambda p: p[:, 0], [Axis(name=n, lower=0, upper=1) for n in "abcd"])
    with pytest.raises(ValueError, match="axis `x` needs finite lower < upper"):
        Axis(name="x", lower=1.0, upper=1.0)
    with pytest.raises(ValueError, match="must overlap the prior box"):
        integrate(lambda p: p[:, 0], [Axis(name="x", lower=0, upper=1)],
                  start=np.array([[1.5, 2.0]]))
    with pytest.raises(ValueError, match="not finite at any grid node"):
        integrate(lambda p: np.full(len(p), -np.inf), [Axis(name="x", lower=0, upper=1)])


def test_importance_resampling_ess_and_counts():
    rng = np.random.default_rng(0)
    log_w = np.log([1.0, 1.0, 2.0, 0.0 + 1e-300])
    idx, s = importance_resample(log_w, np.zeros(4), 8, rng)
    assert s.ess == pytest.approx(16 / 6)  # (Σw)² / Σw² for w ∝ (1, 1, 2, 0)
    assert np.bincount(idx, minlength=4).tolist() == [2, 2, 4, 0]  # systematic: exact shares


# --- the GP grid: continuous draws, conditionals exact at the drawn (range, nugget) ----------


@pytest.fixture(scope="module")
def gp_fit():
    sim = simulate_gp(80, random_seed=4)
    sites = make_sites(sim["coords_m"])
    priors = default_priors(sim["y"], sim["X"], sites)
    fit = fit_gp_grid(sim["y"], sim["X"], sites, priors=priors, coef_names=["a", "b"],
                      gp="exact", config=SamplingConfig(draws=200, seed=5))
    return sim, sites, priors, fit


def test_draws_are_continuous_not_grid_nodes(gp_fit):
    _, _, _, fit = gp_fit
    rng_m = fit.idata.posterior["range"].values.ravel()
    # 400 draws ≤ theta_draws = 500: 400 points proposed, resampled systematically (a point
    # of large weight may be kept twice)
    assert np.unique(rng_m).size >= 0.95 * 400
    nodes = np.exp(fit.grid.quadrature.nodes[0])
    assert not np.isin(np.round(rng_m, 6), np.round(nodes, 6)).any()
    e = fit.engine
    assert e["theta_points"] == 400 and e["importance_ess"] > 0.9 * 400
    assert e["distinct_theta_draws"] == np.unique(rng_m).size


def test_conditionals_are_exact_at_the_drawn_point(gp_fit):
    """σ², β of each draw come from N-IG conditionals computed at that draw's own (φ, α)."""
    sim, sites, priors, fit = gp_fit
    y, X = sim["y"], sim["X"]
    model = GridModel(backend=ExactCovariance(y, X, sites, np.ones(sites.n_sites)),
                      prior=conjugate_prior(priors, 2), n=y.size)
    post = grid_posterior(model)
    draws = post.draw(300, np.random.default_rng(9))
    cells = draws.cells
    V = model.prior.V
    for i in (0, 17, 123):  # hand-built K at the continuous point, dense algebra
        range_m, alpha, phi_km = (float(v[0]) for v in to_natural(cells.points[i]))
        K = np.exp(-phi_km * cdist(sites.coords_m, sites.coords_m) / 1000.0)
        K = K[np.ix_(sites.site_index, sites.site_index)] + alpha * np.eye(y.size)
        Ki = np.linalg.inv(K)
        M = np.linalg.inv(V) + X.T @ Ki @ X
        m = np.linalg.solve(M, np.linalg.inv(V) @ model.prior.beta_mean + X.T @ Ki @ y)
        Q = y @ Ki @ y + model.prior.beta_mean @ np.linalg.solve(V, model.prior.beta_mean) \
            - m @ M @ m
        np.testing.assert_allclose(cells.m[i], m, rtol=1e-8)
        np.testing.assert_allclose(cells.M_inv[i], np.linalg.inv(M), rtol=1e-8)
        assert cells.b_post[i] == pytest.approx(model.prior.sigma2_scale + Q / 2, rel=1e-9)
    # σ² | y, θ ~ IG(a + N/2, b_post(θ)): b_post(θ_j)/σ²_j ~ Gamma(a + N/2) over the draws
    g = cells.b_post[draws.theta_index] / draws.sigma2
    assert stats.kstest(g, stats.gamma(cells.a_post).cdf).pvalue > 1e-3
    # β | σ², θ ~ N(m(θ), σ² M⁻¹(θ)): standardised with each draw's own point
    L = np.linalg.cholesky(cells.M_inv[draws.theta_index])
    z = np.linalg.solve(L, (draws.beta - cells.m[draws.theta_index])[..., None])[..., 0]
    z /= np.sqrt(draws.sigma2)[:, None]
    assert stats.kstest(z.ravel(), "norm").pvalue > 1e-3


def test_effects_use_each_draws_own_point(gp_fit):
    """w for a draw equals the exact conditional draw at that draw's continuous (φ, α, β)."""
    from synthgeo._seed import keyed_seeds
    from synthgeo.inference.conditionals import draw_effects_exact

    sim, sites, _, fit = gp_fit
    post = fit.idata.posterior
    flat = np.array([3, 250])
    w = fit.effects(flat)
    sel = {"sigma2": post["sigma2"].values.ravel()[flat],
           "alpha": (post["nugget"] / post["sigma2"]).values.ravel()[flat],
           "phi_km": post["phi"].values.ravel()[flat] * 1000.0,
           "beta": post["beta"].values.reshape(-1, 2)[flat]}
    seed = np.random.SeedSequence(5).spawn(2)[1]
    # each draw's normals from its own seed, keyed by its flattened index
    want = draw_effects_exact(sel, sim["y"], sim["X"], sites, scale=np.ones(sites.n_sites),
                              random_seed=keyed_seeds(seed, flat))
    np.testing.assert_allclose(w, want, rtol=1e-7)
    # a draw does not depend on which other draws are asked for with it (common random numbers)
    np.testing.assert_allclose(fit.effects(np.array([250, 7]))[0], w[1], rtol=1e-12)


def test_continuous_median_of_phi_is_not_a_node(gp_fit):
    _, _, _, fit = gp_fit
    med = fit.phi_quantiles((0.5,))[0]
    nodes = 3.0 / np.exp(fit.grid.quadrature.nodes[0])
    assert np.min(np.abs(nodes - med)) > 1e-9
    draws_med = np.median(fit.idata.posterior["phi"].values)
    assert med == pytest.approx(draws_med, rel=0.05)  # the draws agree up to Monte Carlo error
    share = fit.grid.quantiles("nugget_share", [0.25, 0.75])
    emp = np.quantile(expit(np.log((fit.idata.posterior["nugget"]
                                    / fit.idata.posterior["sigma2"]).values.ravel())),
                      [0.25, 0.75])
    np.testing.assert_allclose(share, emp, rtol=0.1)


def test_restricted_grid_fit_starts_on_the_unrestricted_final_box():
    """The pipeline's warm start: the last box, mapped back to the quadrature's axes."""
    from types import SimpleNamespace

    from synthgeo.config import bundled_spec_path, load_spec
    from synthgeo.pipeline.run import _warm_start

    spec = load_spec(bundled_spec_path())
    fit = SimpleNamespace(engine={"grid_stages": [
        {"range_m": [100.0, 9000.0], "nugget_share": [0.01, 0.9]},
        {"range_m": [400.0, 2000.0], "nugget_share": [0.2, 0.5]}]})
    start = _warm_start(spec, None, fit)["start"]
    np.testing.assert_allclose(start, [[np.log(400.0), np.log(2000.0)],
                                       [np.log(0.2 / 0.8), 0.0]], atol=1e-12)
    assert _warm_start(spec, lambda *a, **k: None, fit) == {}  # a custom fitter: nothing
    assert _warm_start(spec.replace("sampling", sampler="nutpie"), None, fit) == {}
    # large N (a Laplace start): its own Laplace start, the search begun at the fit's mode
    fit.engine["grid_laplace_start"] = {"mode": [7.5, -4.1], "sd": [0.03, 0.03],
                                        "evaluations": 60}
    out = _warm_start(spec, None, fit)
    assert set(out) == {"mode_start"}
    np.testing.assert_allclose(out["mode_start"], [7.5, -4.1])


def test_restricted_fit_reuses_the_unrestricted_posterior_when_no_site_is_at_risk():
    """No site at risk: D = I, the same model, so its grid posterior is reused as it is."""
    from types import SimpleNamespace

    from synthgeo.config import bundled_spec_path, load_spec
    from synthgeo.model.smoothing import Smoothing
    from synthgeo.pipeline.run import _warm_start

    spec = load_spec(bundled_spec_path())
    grid = object()
    fit = SimpleNamespace(grid=grid, engine={"grid_stages": [
        {"range_m": [400.0, 2000.0], "nugget_share": [0.2, 0.5]}]})
    for gamma in (np.inf, 2.0, "auto"):
        assert _warm_start(spec, None, fit, Smoothing(a=np.zeros(5), gamma=gamma)) == {
            "posterior": grid}
    # one site at risk: a different model, only the box is carried over
    kw = _warm_start(spec, None, fit, Smoothing(a=np.array([0.0, 1.0]), gamma=np.inf))
    assert set(kw) == {"start"}


def _nngp_model(n, seed):
    from synthgeo.inference.covariance import NNGPCovariance

    sim = simulate_gp(n, random_seed=seed, extent_m=3000.0, nugget=0.5)
    sites = make_sites(sim["coords_m"])
    priors = default_priors(sim["y"], sim["X"], sites)
    return GridModel(backend=NNGPCovariance(sim["y"], sim["X"], sites, np.ones(sites.n_sites)),
                     prior=conjugate_prior(priors, sim["X"].shape[1]), n=n), sim, sites, priors


def _sd(quad, j):
    marg = quad.fine_mass.sum(axis=1 - j)
    centre = 0.5 * (quad.fine_edges[j][1:] + quad.fine_edges[j][:-1])
    mean = marg @ centre
    return float(np.sqrt(marg @ (centre - mean) ** 2))


@pytest.mark.slow
def test_large_n_laplace_box_evaluates_fewer_points_and_agrees_with_the_prior_box():
    """The large-N path (Laplace first box) against the prior-box grid on 2,000 NNGP records."""
    from synthgeo.inference.grid_posterior import GridSettings

    model = _nngp_model(2000, 1)[0]
    full = grid_posterior(model, settings=GridSettings(laplace_start_min_records=None))
    fast = grid_posterior(model, settings=GridSettings(laplace_start_min_records=2000))
    assert not full.quadrature.laplace and fast.quadrature.laplace["evaluations"] > 0
    assert len(fast.quadrature.stages) == 1 and not fast.problems
    assert fast.quadrature.n_evaluations < 0.6 * full.quadrature.n_evaluations
    q = [0.025, 0.5, 0.975]
    for j in range(2):
        err = (fast.quadrature.quantile(j, q) - full.quadrature.quantile(j, q)) / _sd(
            full.quadrature, j)
        assert np.max(np.abs(err)) < 0.05, err


def test_laplace_box_is_the_mode_plus_minus_five_sd_and_below_the_threshold_unused():
    """A Gaussian log density: the box is mode ± 5 sd; small N keeps the prior box."""
    from synthgeo.inference.grid_posterior import GridSettings
    from synthgeo.inference.quadrature import laplace_box

    sd = np.array([0.1, 0.3])
    box, info = laplace_box(lambda p: -0.5 * (((p - [1.0, -1.0]) / sd) ** 2).sum(axis=1),
                            np.array([[-5.0, 5.0], [-5.0, 5.0]]))
    np.testing.assert_allclose(box, [[0.5, 1.5], [-2.5, 0.5]], atol=0.02)
    np.testing.assert_allclose(info["sd"], sd, rtol=1e-3)
    q = integrate(lambda p: -0.5 * (((p - [1.0, -1.0]) / sd) ** 2).sum(axis=1),
                  [Axis(name="a", lower=-5, upper=5), Axis(name="b", lower=-5, upper=5)],
                  start="laplace")
    assert q.stages[0]["n_per_axis"] == QuadratureSettings().n_laplace and not q.problems
    assert q.n_evaluations == q.laplace["evaluations"] + QuadratureSettings().n_laplace ** 2
    np.testing.assert_allclose(q.quantile(0, 0.5), 1.0, atol=1e-3)
    with pytest.raises(ValueError, match="'laplace'"):
        integrate(lambda p: -p[:, 0] ** 2, [Axis(name="a", lower=-1, upper=1)], start="mode")
    s = GridSettings()
    assert s.theta_points(2000, 25_000, "nngp") < s.theta_points(2000, 5_000, "nngp")
    with pytest.raises(ValueError, match="laplace_start_min_records"):
        GridSettings(laplace_start_min_records=0)


def test_local_threads_get_one_balanced_batch_each_and_results_do_not_change():
    from synthgeo.inference.quadrature import evaluate_points, thread_map

    seen = []

    def f(batch):
        seen.append(len(batch))
        return batch.sum(axis=1)

    pts = np.arange(200.0).reshape(100, 2)
    local = evaluate_points(f, pts, map_batches=thread_map(2))
    assert sorted(seen) == [50, 50]
    seen.clear()
    serial = evaluate_points(f, pts, batch_size=64, map_batches=lambda fn, bs: [fn(b) for b in bs])
    assert seen == [64, 36]
    np.testing.assert_array_equal(np.concatenate(local), np.concatenate(serial))


def test_exact_effect_draws_do_not_depend_on_threads(monkeypatch):
    """Every random number is drawn before the threads start: 1 or 2 threads, same effects."""
    from synthgeo.inference import conditionals
    from synthgeo.inference.quadrature import thread_map
    from synthgeo.model.kernels import make_sites

    rng = np.random.default_rng(3)
    n = 40
    sites = make_sites(rng.uniform(0, 2000, (n, 2)))
    X = np.column_stack([np.ones(n), rng.standard_normal(n)])
    y = X @ [1.0, 0.5] + rng.normal(0, 0.5, n)
    k = 6
    draws = {"sigma2": rng.uniform(0.5, 1.5, k), "alpha": rng.uniform(0.1, 1.0, k),
             "phi_km": rng.uniform(1, 5, k), "beta": rng.normal(size=(k, 2))}
    d = np.ones(sites.n_sites)
    d[4] = 0.0
    two = conditionals.draw_effects_exact(draws, y, X, sites, scale=d,
                                          random_seed=np.random.default_rng(9))
    monkeypatch.setattr(conditionals, "thread_map", lambda: thread_map(1))
    one = conditionals.draw_effects_exact(draws, y, X, sites, scale=d,
                                          random_seed=np.random.default_rng(9))
    np.testing.assert_array_equal(one, two)
    assert one.shape == (k, n) and np.all(one.std(axis=0) > 0)


def test_a_start_box_is_clipped_to_the_prior_box():
    """Another data set's final box (the suppressed baseline's prior is its own) is clipped."""
    axes = [Axis(name="x", lower=0.0, upper=1.0)]
    q = integrate(lambda p: -0.5 * ((p[:, 0] - 0.3) / 0.05) ** 2, axes,
                  start=np.array([[-1.0, 0.6]]))
    assert q.stages[0]["box"] == [[0.0, 0.6]] and not q.problems


def test_grid_fit_checks_are_the_grids_own_and_its_draws_importance_ess(gp_fit):
    """No Markov chain: R-hat undefined (NaN), every parameter's ESS the importance ESS."""
    from synthgeo.inference.result import grid_convergence

    _, _, _, fit = gp_fit
    conv = fit.convergence
    ess = fit.engine["importance_ess"]
    assert conv.passed and conv.problems == []
    assert np.isnan(conv.max_r_hat) and conv.table["r_hat"].isna().all()
    assert conv.min_ess_bulk == conv.min_ess_tail == pytest.approx(ess)
    assert list(conv.table.index) == ["sigma2", "nugget", "range"]
    # a grid that did not resolve the posterior fails, and says why
    conv = grid_convergence(fit.posterior, {**fit.engine, "importance_ess": 0.3 * ess,
                                            "grid_problems": ["grid too coarse: ..."]})
    assert not conv.passed
    assert conv.problems[0] == "grid too coarse: ..."
    assert "importance ESS" in conv.problems[1] and "did not resolve" in conv.problems[1]


def test_a_grid_fit_does_not_import_arviz_until_its_inferencedata_is_asked_for():
    """ArviZ costs ~1.5 s to import (numba compilation): the grid route needs none of it."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from synthgeo.config import SamplingConfig\n"
        "from synthgeo.inference.grid import fit_gp_grid\n"
        "from synthgeo.model.kernels import make_sites\n"
        "from synthgeo.model.restricted_gp import default_priors\n"
        "from synthgeo.testing import simulate_gp\n"
        "sim = simulate_gp(40, random_seed=1)\n"
        "sites = make_sites(sim['coords_m'])\n"
        "fit = fit_gp_grid(sim['y'], sim['X'], sites, coef_names=['a', 'b'], gp='exact',\n"
        "                  priors=default_priors(sim['y'], sim['X'], sites),\n"
        "                  config=SamplingConfig(draws=100, seed=1))\n"
        "w = fit.effects([0, 1]); d = fit.describe()\n"
        "print('arviz' in sys.modules)\n"
        "print(type(fit.idata).__name__, 'arviz' in sys.modules)\n"
        "print(sorted(fit.idata.groups()) == sorted(fit.groups))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[:3] == ["False", "InferenceData True", "True"]


def test_laplace_start_on_a_tilted_ridge_is_one_grid_in_hessian_coordinates():
    """A correlated Gaussian (ρ = −0.95): one 14 × 14 grid in z, exact quantiles, log ∫."""
    from scipy import stats

    mean, sd, rho = np.array([7.5, -4.0]), np.array([0.03, 0.04]), -0.95
    cov = np.array([[sd[0] ** 2, rho * sd[0] * sd[1]], [rho * sd[0] * sd[1], sd[1] ** 2]])
    P = np.linalg.inv(cov)

    def f(p):
        r = p - mean
        return -0.5 * np.einsum("ni,ij,nj->n", r, P, r)

    axes = [Axis(name="u", lower=3.0, upper=11.0), Axis(name="v", lower=-9.0, upper=7.0)]
    q = integrate(f, axes, start="laplace")
    assert q.frame is not None and len(q.stages) == 1 and not q.problems
    assert q.n_evaluations == q.laplace["evaluations"] + QuadratureSettings().n_laplace ** 2
    assert q.laplace["correlation"] == pytest.approx(rho, abs=1e-3)
    assert q.laplace["evaluations"] < 60  # Newton on a quadratic: a couple of steps
    # the stage's box is the θ box holding the tilted one
    box = np.asarray(q.stages[0]["box"])
    assert np.all(box[:, 0] < mean) and np.all(box[:, 1] > mean)
    probs = [0.025, 0.5, 0.975]
    for j in range(2):
        want = stats.norm.ppf(probs, mean[j], sd[j])
        np.testing.assert_allclose(q.quantile(j, probs), want, atol=0.01 * sd[j])
    # log ∫ exp(f) dθ = log(2π √det Σ) on the axes' measure (|det C| added back)
    want = np.log(2 * np.pi * np.sqrt(np.linalg.det(cov)))
    assert q.log_integral == pytest.approx(want, abs=1e-3)
    # proposals: points on the axes, with a log density matching the normalised target
    pts, log_q = q.propose(4000, np.random.default_rng(0))
    assert np.all(np.abs(pts.mean(axis=0) - mean) < 0.1 * sd)
    np.testing.assert_allclose(np.corrcoef(pts.T)[0, 1], rho, atol=0.02)
    assert np.median(np.abs(log_q - (f(pts) - want))) < 0.05
    # the old layout stays available to the benchmark, and is worse on this ridge
    old = integrate(f, axes, start="laplace", settings=QuadratureSettings(laplace_frame=False))
    assert old.frame is None and old.stages[0]["max_cell_mass"] > q.stages[0]["max_cell_mass"]


def test_newton_mode_starts_where_it_is_told_and_refuses_nothing_on_a_flat_edge():
    """The search from a given start; a density increasing to the box edge ends on the edge."""
    from synthgeo.inference.quadrature import newton_mode

    box = np.array([[-5.0, 5.0], [-5.0, 5.0]])
    f = lambda p: -0.5 * (((p - [1.0, -1.0]) / [0.1, 0.3]) ** 2).sum(axis=1)  # noqa: E731
    mode, f0, H = newton_mode(f, box, start=np.array([0.9, -0.8]))
    np.testing.assert_allclose(mode, [1.0, -1.0], atol=1e-3)
    assert f0 == pytest.approx(0.0, abs=1e-4)
    ramp = lambda p: p[:, 0] - 0.5 * p[:, 1] ** 2  # noqa: E731
    mode, _, H = newton_mode(ramp, box)
    assert mode[0] > 4.9 and abs(mode[1]) < 1e-3
    assert np.linalg.eigvalsh(H).min() <= 1e-6  # no curvature along the ramp: not a mode


def test_a_tilted_grid_that_reaches_a_prior_bound_falls_back_to_the_axis_aligned_box():
    """600 NNGP records (threshold lowered): the nugget share's mass reaches its prior bound.

    The widened tilted box crossed the bound (59 of 196 cells at −∞, which the spline cannot
    follow: importance ESS 1 of 100 before the fallback); the axis-aligned Laplace box, whose
    edges can be prior bounds, resolves it.
    """
    from synthgeo.config import SamplingConfig
    from synthgeo.inference.grid import fit_gp_grid
    from synthgeo.inference.grid_posterior import GridSettings
    from synthgeo.model.kernels import make_sites
    from synthgeo.model.restricted_gp import default_priors
    from synthgeo.testing import simulate_gp

    sim = simulate_gp(n=600, random_seed=4)
    sites = make_sites(sim["coords_m"])
    fit = fit_gp_grid(sim["y"], sim["X"], sites, coef_names=["a", "b"], gp="nngp",
                      priors=default_priors(sim["y"], sim["X"], sites),
                      config=SamplingConfig(draws=100, seed=2),
                      settings=GridSettings(laplace_start_min_records=50))
    q = fit.grid.quadrature
    assert fit.engine["grid_laplace_start"]["grid"].startswith("axis-aligned: the tilted grid "
                                                               "reached a prior bound")
    assert q.frame is None and np.all(np.isfinite(q.log_density)) and not q.problems
    assert fit.engine["importance_ess"] > 90 and not fit.engine["grid_problems"]
    assert fit.engine["grid_evaluations"] > fit.engine["grid_laplace_start"]["evaluations"] + 196
