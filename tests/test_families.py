"""Families (bernoulli, poisson), their priors and the sparse / dense factor (issue 15)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats
from scipy.integrate import quad
from scipy.special import expit

from synthgeo._errors import SpecError
from synthgeo.inference.factor import NotPositiveDefiniteError, SPDFactor
from synthgeo.model.families import Bernoulli, Poisson, get_family
from synthgeo.model.glmm_priors import GLMMPriors

RNG = np.random.default_rng(20)
ETA = RNG.normal(0.0, 2.0, 200)


def _fd(f, x, h=1e-5):
    return (f(x + h) - f(x - h)) / (2 * h)


def test_bernoulli_loglik_matches_scipy():
    y = (RNG.random(200) < 0.4).astype(float)
    got = Bernoulli().loglik(y, ETA)
    np.testing.assert_allclose(got, stats.bernoulli.logpmf(y, expit(ETA)), rtol=1e-10)
    # stable far out in the tails, where 1 − expit(η) underflows
    assert Bernoulli().loglik(np.array([0.0]), np.array([800.0]))[0] == pytest.approx(-800.0)


def test_poisson_loglik_with_exposure_matches_scipy():
    expo = RNG.uniform(0.2, 5.0, 200)
    y = RNG.poisson(expo * np.exp(ETA / 2)).astype(float)
    got = Poisson().loglik(y, ETA / 2, np.log(expo))
    np.testing.assert_allclose(got, stats.poisson.logpmf(y, expo * np.exp(ETA / 2)),
                               rtol=1e-10)


@pytest.mark.parametrize("fam", [Bernoulli(), Poisson()])
def test_derivatives_are_those_of_the_scipy_log_pmf(fam):
    y = (RNG.random(200) < 0.5).astype(float) if fam.name == "bernoulli" else \
        RNG.poisson(3.0, 200).astype(float)
    off = 0.0 if fam.name == "bernoulli" else np.log(RNG.uniform(0.5, 2.0, 200))
    if fam.name == "bernoulli":
        def logpmf(e):
            return stats.bernoulli.logpmf(y, expit(e))
    else:
        def logpmf(e):
            return stats.poisson.logpmf(y, np.exp(e + off))
    eta = ETA / 2
    g, h = fam.derivatives(y, eta, off)
    np.testing.assert_allclose(g, _fd(logpmf, eta), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(h, _fd(lambda e: fam.derivatives(y, e, off)[0], eta),
                               rtol=1e-5, atol=1e-7)
    assert np.all(h < 0)  # log-concave: Newton's method is safe


def test_hand_worked_values():
    # y = 1, η = 0: log ½; derivative ½, second derivative −¼
    g, h = Bernoulli().derivatives(np.array([1.0]), np.array([0.0]))
    assert (g[0], h[0]) == (0.5, -0.25)
    # y = 2, μ = E e^η = 2 · e^0 = 2: log p = 2 log 2 − 2 − log 2 = log 2 − 2
    ll = Poisson().loglik(np.array([2.0]), np.array([0.0]), np.log(2.0))
    assert ll[0] == pytest.approx(np.log(2.0) - 2.0)


def test_bad_responses_are_refused_with_the_fix():
    with pytest.raises(ValueError, match="bernoulli responses must be 0 or 1; name the event"):
        Bernoulli().check([0, 1, 2])
    with pytest.raises(ValueError, match="`exposure` applies to the poisson family only"):
        Bernoulli().check([0, 1], exposure=[1.0, 1.0])
    with pytest.raises(ValueError, match="non-negative whole numbers"):
        Poisson().check([0, 1.5])
    with pytest.raises(ValueError, match="non-negative whole numbers"):
        Poisson().check([0, -1])
    with pytest.raises(ValueError, match="`exposure` must be positive"):
        Poisson().check([0, 1], exposure=[1.0, 0.0])
    with pytest.raises(ValueError, match="`y` holds NaN"):
        Poisson().check([0, np.nan])
    with pytest.raises(ValueError, match="gaussian uses the conjugate grid"):
        get_family("gaussian")


def test_sampling_is_seeded_and_has_the_right_mean():
    eta = np.full(20_000, 0.7)
    a = Bernoulli().sample(eta, np.random.default_rng(3))
    b = Bernoulli().sample(eta, np.random.default_rng(3))
    assert np.array_equal(a, b) and a.dtype == np.int8
    assert a.mean() == pytest.approx(expit(0.7), abs=0.01)
    c = Poisson().sample(eta, np.random.default_rng(3), offset=np.log(2.0))
    assert c.dtype == np.int64 and c.mean() == pytest.approx(2 * np.exp(0.7), rel=0.02)


def test_priors_integrate_to_one_on_their_axes():
    pri = GLMMPriors(range_min_m=50.0, range_max_m=5000.0, sigma_upper=1.5, sigma_alpha=0.1)
    # logit_range axis
    tot, _ = quad(lambda t: np.exp(pri.log_density(np.array([[t, 0.0]]))[0]), -40, 40)
    tot_v, _ = quad(lambda v: np.exp(pri.log_density(np.array([[0.0, v]]))[0]), -60, 20)
    # the two axes are independent: ∫∫ = (∫ over t at v=0)·(∫ over v at t=0)/p(0, 0)
    p00 = np.exp(pri.log_density(np.array([[0.0, 0.0]]))[0])
    assert tot * tot_v / p00 == pytest.approx(1.0, rel=1e-6)
    # P(σ > sigma_upper) = sigma_alpha on the log-variance axis
    tail, _ = quad(lambda v: np.exp(pri.log_density(np.array([[0.0, v]]))[0]) / tot_v,
                   2 * np.log(1.5), 20)
    assert tail == pytest.approx(0.1, rel=1e-6)
    assert pri.range_m(pri.axis_from_range_m(1234.0)) == pytest.approx(1234.0)


@pytest.mark.parametrize(("kw", "msg"), [
    ({"range_min_m": 10.0, "range_max_m": 5.0}, "0 < `range_min_m` < `range_max_m`"),
    ({"sigma_upper": 0.0}, "prior `sigma_upper` must be a positive number"),
    ({"tau_alpha": 1.0}, r"prior `tau_alpha` must lie in \(0, 1\)"),
])
def test_bad_priors_are_refused(kw, msg):
    args = {"range_min_m": 1.0, "range_max_m": 2.0} | kw
    with pytest.raises(SpecError, match=msg):
        GLMMPriors(**args)


def test_sparse_and_dense_factor_agree():
    A = sp.random(60, 60, density=0.05, random_state=1)
    Q = (A @ A.T + sp.identity(60) * 0.5).tocsc()
    Qd = Q.toarray()
    fs, fd = SPDFactor(Q), SPDFactor(Qd)
    b = RNG.standard_normal((60, 3))
    assert fs.logdet == pytest.approx(np.linalg.slogdet(Qd)[1], rel=1e-10)
    assert fd.logdet == pytest.approx(fs.logdet, rel=1e-10)
    np.testing.assert_allclose(fs.solve(b), np.linalg.solve(Qd, b), rtol=1e-8)
    np.testing.assert_allclose(fd.solve(b), np.linalg.solve(Qd, b), rtol=1e-8)
    with pytest.raises(NotPositiveDefiniteError, match="not positive definite"):
        SPDFactor(sp.csc_matrix(-Qd))
    with pytest.raises(NotPositiveDefiniteError, match="not positive definite"):
        SPDFactor(-Qd)
