"""The leave-out posterior of the baseline attacker (``[risk] loo_posterior``, issue 25)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from scipy.stats import multivariate_normal, norm

import synthgeo as sg
from synthgeo._errors import SpecError
from synthgeo.config import bundled_spec_path, load_spec
from synthgeo.risk.loo import block_log_density
from synthgeo.risk.loo_posterior import resample_rows, reweight_leave_out
from synthgeo.risk.predictive import Predictive


def test_block_log_density_is_the_brute_force_conditional():
    rng = np.random.default_rng(1)
    xy = rng.uniform(0, 1000, size=(7, 2))
    K = np.exp(-cdist(xy, xy) / 400.0) + 0.3 * np.eye(7)
    r = rng.multivariate_normal(np.zeros(7), 2.5 * K, size=3).T  # (7, 3): three draws
    blocks = np.array([0, 0, 1, 2, 2, 2, 3])
    scale = np.array([2.5, 1.0, 4.0])
    got = block_log_density(r, np.linalg.inv(K), blocks, scale=scale)
    for b in np.unique(blocks):
        B, O = np.flatnonzero(blocks == b), np.flatnonzero(blocks != b)
        KBO = K[np.ix_(B, O)] @ np.linalg.inv(K[np.ix_(O, O)])
        cov = K[np.ix_(B, B)] - KBO @ K[np.ix_(O, B)]
        for k in range(3):
            want = multivariate_normal(KBO @ r[O, k], scale[k] * cov).logpdf(r[B, k])
            np.testing.assert_allclose(got[B, k], want, rtol=1e-9)


def test_resample_rows_counts_follow_the_weights():
    rng = np.random.default_rng(2)
    w = rng.dirichlet(np.full(40, 0.5), size=25).T  # (L=40, n=25)
    rows = resample_rows(np.log(w + 1e-300))
    for i in range(25):
        counts = np.bincount(rows[:, i], minlength=40)
        assert np.all(np.abs(counts - 40 * w[:, i]) < 1.0 + 1e-9)  # systematic resampling
        assert np.all(np.diff(rows[:, i]) >= 0)


def test_reweighting_recovers_the_exact_leave_out_posterior():
    """Conjugate normal mean: p(mu | y_-i) is known, the full posterior leans towards y_i."""
    rng = np.random.default_rng(3)
    n, prior_var = 20, 100.0
    y = rng.normal(0.0, 1.0, n)
    y[0] = 8.0  # an outlier: the full posterior is pulled towards its value
    post_var = 1.0 / (1.0 / prior_var + n)
    mu = rng.normal(post_var * y.sum(), np.sqrt(post_var), size=4000)
    base = Predictive(mean=np.repeat(mu[:, None], n, 1), sd=np.ones((mu.size, n)))
    lp = norm.logpdf(y[None, :], mu[:, None], 1.0)  # p(y_i | y_-i, mu) = N(mu, 1)
    moved = reweight_leave_out(base, lp)
    loo_var = 1.0 / (1.0 / prior_var + n - 1)
    exact = loo_var * (y.sum() - y)  # E[mu | y_-i]
    got = moved.predictive.mean.mean(axis=0)
    np.testing.assert_allclose(got, exact, atol=0.03)  # MC: ESS of the outlier ~10³
    assert base.mean.mean(axis=0)[0] - exact[0] > 0.3  # the full posterior's is far off
    s = moved.summary()
    assert s["n_records"] == n and s["records_k_above_limit"] == 0
    assert "8.0" not in repr(moved)


def test_reweighting_refuses_bad_densities():
    base = Predictive(mean=np.zeros((5, 2)), sd=np.ones((5, 2)))
    with pytest.raises(ValueError, match="shape"):
        reweight_leave_out(base, np.zeros((4, 2)))
    with pytest.raises(ValueError, match="non-finite"):
        reweight_leave_out(base, np.full((5, 2), np.nan))


def test_spec_key_validated():
    spec = load_spec(bundled_spec_path())
    assert spec.loo_posterior == "reweighted"
    assert spec.replace("risk", loo_posterior="full").loo_posterior == "full"
    with pytest.raises(SpecError, match="loo_posterior"):
        spec.replace("risk", loo_posterior="leave_out")


@pytest.fixture(scope="module")
def cross_fit_runs():
    spec = (load_spec(bundled_spec_path())
            .replace("sampling", draws=300, on_convergence_failure="warn")
            .replace("synthesis", n_implicates=20, predictive="cross_fit",
                     cross_fit_calibration="none"))
    with pytest.warns(UserWarning):
        full = sg.run(spec.replace("risk", loo_posterior="full")).result
    with pytest.warns(UserWarning):
        moved = sg.run(spec).result
    return full, moved


def test_cross_fit_risk_is_no_longer_zero_by_construction(cross_fit_runs):
    """Under the full posterior the raw cross-fit's a_i is 0; the leave-out posterior sees θ."""
    full, moved = cross_fit_runs
    assert moved.spec.loo_posterior == "reweighted"
    for res, zero in ((full, True), (moved, False)):
        a = res.risk_scores.summary.record_attributable("restricted", "rel:0.1", "share")
        assert np.all(a == 0) if zero else (np.any(a != 0) and a.max() < 0.1)
    assert full.risk_scores.loo_posterior is None
    s = moved.risk_scores.loo_posterior
    assert s["n_records"] == 140 and s["n_draws"] == 20 and s["smallest_ess"] > 1


@pytest.mark.parametrize("kind", ["normal", "student_t", "ties", "cauchy", "short"])
def test_psis_by_rows_is_arviz_psislw_bit_for_bit(kind, monkeypatch):
    """risk.psis.psislw_rows gives ArviZ's psislw, record by record, the same numbers."""
    import warnings

    import arviz as az

    from synthgeo.risk import psis
    from synthgeo.risk.psis import psislw_rows

    monkeypatch.setattr(psis, "CHUNK_ROWS", 7)  # records fitted in chunks: no difference

    rng = np.random.default_rng(11)
    raw = {"normal": rng.normal(0, 0.5, (300, 100)), "student_t": rng.standard_t(3, (300, 100)),
           "ties": np.round(rng.normal(0, 1, (300, 100)), 1),
           "cauchy": rng.standard_cauchy((300, 100)) * 5,  # rows ArviZ's fit trims: its own loop
           "short": rng.standard_t(2, (50, 12))}[kind]  # tails of <= 4 draws: k = inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lw_az, k_az = az.psislw(raw.copy())
        lw, k = psislw_rows(raw)
    np.testing.assert_array_equal(lw, np.asarray(lw_az))
    np.testing.assert_array_equal(k, np.asarray(k_az))


def test_reweighting_in_place_gives_the_same_doubles_and_no_second_pair_of_arrays():
    from synthgeo.risk.predictive import Predictive

    rng = np.random.default_rng(5)
    L, n = 40, 9
    mean, sd = rng.standard_normal((L, n)), rng.uniform(0.5, 2.0, (L, n))
    lp = rng.standard_normal((L, n)) * 3
    fresh = reweight_leave_out(Predictive(mean=mean.copy(), sd=sd.copy()), lp)
    own = Predictive(mean=mean.copy(), sd=sd.copy())
    moved = reweight_leave_out(own, lp, overwrite=True)
    assert moved.predictive.mean is own.mean and moved.predictive.sd is own.sd
    assert moved.predictive.mean.tobytes() == fresh.predictive.mean.tobytes()
    assert moved.predictive.sd.tobytes() == fresh.predictive.sd.tobytes()
    assert np.array_equal(moved.rows, fresh.rows) and moved.rows.dtype == np.int16
    with pytest.raises(ValueError, match="writeable"):
        ro = Predictive(mean=np.broadcast_to(mean[:1], (L, n)), sd=sd)
        reweight_leave_out(ro, lp, overwrite=True)
