"""``[model] at_risk_nugget = "marginal"``: σ² + τ² for at-risk records (issue 11 item 5)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from synthgeo._errors import SpecError
from synthgeo.config import ModelConfig, bundled_spec_path, load_spec
from synthgeo.inference.covariance import ExactCovariance, NNGPCovariance
from synthgeo.model.kernels import exponential_correlation, make_sites
from synthgeo.model.smoothing import Smoothing
from synthgeo.pipeline import run_release
from synthgeo.pipeline.risk_stage import release_predictive_of
from synthgeo.synthesis.implicates import implicate_predictive
from synthgeo.testing import fake_fitter, fake_spec


def test_marginal_is_refused_outside_binary_weights_and_infinite_gamma():
    assert ModelConfig(at_risk_nugget="marginal").at_risk_nugget == "marginal"
    for kw in ({"gamma": 3.0}, {"gamma": "auto"},
               {"gamma": 1.0, "at_risk_weight": "continuous"},
               {"at_risk_effect": "kriged"}):
        with pytest.raises(SpecError, match=r'`\[model\] at_risk_nugget = "marginal"` needs '
                                            r'binary weights and gamma = "inf"') as exc:
            ModelConfig(at_risk_nugget="marginal", **kw)
        assert "\n" not in str(exc.value)
    with pytest.raises(SpecError, match=r"`\[model\] at_risk_nugget` must be"):
        ModelConfig(at_risk_nugget="own")
    spec = load_spec(bundled_spec_path())
    with pytest.raises(SpecError, match=r'at_risk_nugget = "marginal"` needs `\[sampling\] '
                                        r'sampler = "grid"'):
        spec.replace("sampling", sampler="nutpie").replace("model", at_risk_nugget="marginal")
    with pytest.raises(ValueError, match="binary weights and gamma = inf"):
        Smoothing(a=np.array([0.5, 0.0]), gamma=np.inf, at_risk_nugget="marginal")


def _toy():
    xy = np.array([[0.0, 0.0], [120.0, 0.0], [0.0, 90.0], [400.0, 300.0], [400.0, 300.0],
                   [900.0, 50.0]])
    sites = make_sites(xy)
    rng = np.random.default_rng(1)
    X = np.column_stack([np.ones(6), rng.standard_normal(6)])
    return sites, X, rng.standard_normal(6)


def test_exact_covariance_adds_sigma2_on_the_diagonal_of_at_risk_rows():
    sites, X, y = _toy()
    a = np.zeros(sites.n_sites)
    a[sites.site_index[3]] = 1.0  # the site of records 3 and 4
    sm = Smoothing(a=a, gamma=np.inf, at_risk_nugget="marginal")
    extra = sm.extra_variance(sites.site_index)
    assert extra.tolist() == [0, 0, 0, 1, 1, 0]
    phi_km, alpha = 3.0, 0.2
    d = sm.scale()[sites.site_index]
    K = (exponential_correlation(sites.distance_km(), phi_km)[np.ix_(sites.site_index,
                                                                     sites.site_index)]
         * np.outer(d, d) + np.diag(alpha + extra))
    st = ExactCovariance(y, X, sites, sm.scale(), extra=extra).stats(phi_km, alpha)
    Ki = np.linalg.inv(K)
    assert st.logdet == pytest.approx(np.linalg.slogdet(K)[1])
    np.testing.assert_allclose(st.XtKX, X.T @ Ki @ X)
    assert st.ytKy == pytest.approx(y @ Ki @ y)
    # the at-risk rows are independent of the rest, with variance (1 + alpha) sigma2
    assert K[3, 3] == pytest.approx(1.0 + alpha) and K[3, 4] == 0.0 and K[3, 0] == 0.0
    # the NNGP with every earlier point as neighbour is exact, extra included
    nn = NNGPCovariance(y, X, sites, sm.scale(), n_neighbors=5, extra=extra).stats(phi_km,
                                                                                  alpha)
    assert nn.logdet == pytest.approx(st.logdet)
    np.testing.assert_allclose(nn.XtKX, st.XtKX)
    assert nn.ytKy == pytest.approx(st.ytKy)
    with pytest.raises(ValueError, match="only at records with d = 0"):
        NNGPCovariance(y, X, sites, sm.scale(), extra=np.ones(6))


def test_marginal_synthesis_gives_at_risk_records_sigma2_plus_tau2():
    spec = fake_spec(load_spec(bundled_spec_path()), n_draws=100, n_implicates=20)
    spec = spec.replace("model", at_risk_nugget="marginal")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = run_release(spec, fitter=fake_fitter(n_draws=100))
    fit = res.fits["restricted"]
    assert fit.engine["at_risk_nugget"] == "marginal"
    assert "at_risk_nugget" not in res.fits["unrestricted"].engine
    flat, mean, sd = implicate_predictive(fit, res.data.X, n_implicates=20)
    post = fit.idata.posterior
    ci, di = np.divmod(flat, post.sizes["draw"])
    tau2, sigma2 = post["nugget"].values[ci, di], post["sigma2"].values[ci, di]
    at = res.at_risk.at_risk
    assert at.any() and (~at).any()
    np.testing.assert_allclose(sd[:, at], np.sqrt(sigma2 + tau2)[:, None] * np.ones((1, at.sum())))
    np.testing.assert_allclose(sd[:, ~at], np.sqrt(tau2)[:, None] * np.ones((1, (~at).sum())))
    np.testing.assert_allclose(mean[:, at], post["beta"].values[ci, di] @ res.data.X[at].T)
    # the implicates are draws from that predictive: standardised residuals ~ N(0, 1)
    z = (res.implicates["restricted"]["y_synthetic"].values - mean) / sd
    assert abs(z[:, at].std() - 1.0) < 0.2 and abs(z.mean()) < 0.1
    # the risk predictive follows the same variance
    pred = release_predictive_of(res.implicates["restricted"])
    np.testing.assert_allclose(pred.sd, sd)


def test_shared_synthesis_is_unchanged_by_the_refactor():
    spec = fake_spec(load_spec(bundled_spec_path()), n_draws=100, n_implicates=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = run_release(spec, fitter=fake_fitter(n_draws=100))
    fit = res.fits["restricted"]
    flat, mean, sd = implicate_predictive(fit, res.data.X, n_implicates=10)
    post = fit.idata.posterior
    ci, di = np.divmod(flat, post.sizes["draw"])
    d = fit.scales(flat)
    idx = fit.idata.constant_data["site_index"].values
    expect = post["beta"].values[ci, di] @ res.data.X.T + (fit.effects(flat) * d)[:, idx]
    np.testing.assert_allclose(mean, expect)
    np.testing.assert_allclose(sd, np.sqrt(post["nugget"].values[ci, di])[:, None]
                               * np.ones_like(sd))
    # same seed, same implicates: implicate l is mean + sd * N(0, 1) from its own seed, the
    # stream both models' implicates take (streams[2]: common random numbers)
    from synthgeo.synthesis.implicates import implicate_seeds

    seeds = np.random.SeedSequence(spec.sampling.seed).spawn(4)
    z = np.stack([np.random.default_rng(c).standard_normal(mean.shape[1])
                  for c in implicate_seeds(seeds[2], mean.shape[0])])
    np.testing.assert_allclose(res.implicates["restricted"]["y_synthetic"].values,
                               mean + sd * z)


@pytest.mark.parametrize("name", ["synthgeo.model.smoothing", "synthgeo.synthesis.implicates",
                                  "synthgeo.pipeline.at_risk_rule", "synthgeo.pipeline.previous"])
def test_examples_run(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name),
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0, name
