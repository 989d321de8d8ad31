"""Implicate draws: spread over the posterior, formula, determinism."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from synthgeo.inference.result import require_convergence
from synthgeo.synthesis.implicates import draw_implicates, implicate_draw_index
from synthgeo.testing import fake_fit


def _fake_fit(n_chain=2, n_draw=50, n_site=3, nugget=1e-12):
    return fake_fit(n_chain, n_draw, n_site, nugget=nugget)


def test_draw_index_spread_over_chains():
    idx = implicate_draw_index(2, 500, 100)
    assert len(idx) == 100 and idx[0] == 0 and idx[-1] == 999
    assert (idx < 500).sum() == 50
    with pytest.raises(ValueError, match="n_implicates"):
        implicate_draw_index(2, 10, 21)


def test_implicates_follow_the_formula():
    fit = _fake_fit()
    X = np.array([[1, 0.5], [1, -1], [1, 2], [1, 0]])
    ds = draw_implicates(fit, X, n_implicates=10, record_id=np.array([7, 8, 9, 10]),
                         random_seed=1)
    assert ds["y_synthetic"].dims == ("implicate", "record")
    post = fit.idata.posterior
    c, d = ds["source_chain"].values, ds["source_draw"].values
    beta, w = post["beta"].values[c, d], post["w"].values[c, d]
    want = beta @ X.T + (w * [1, 0, 1])[:, [0, 1, 1, 2]]
    np.testing.assert_allclose(ds["y_synthetic"].values, want, atol=1e-4)
    # records 1 and 2 sit at the smoothed site: no spatial effect at all
    np.testing.assert_allclose(ds["y_synthetic"].values[:, 1], (beta @ X.T)[:, 1], atol=1e-4)
    np.testing.assert_array_equal(ds["record"].values, [7, 8, 9, 10])


def test_same_seed_same_implicates():
    fit = _fake_fit(nugget=0.5)
    X = np.ones((4, 2))
    a = draw_implicates(fit, X, n_implicates=20, random_seed=3)
    b = draw_implicates(fit, X, n_implicates=20, random_seed=3)
    c = draw_implicates(fit, X, n_implicates=20, random_seed=4)
    xr.testing.assert_identical(a, b)
    assert not np.allclose(a["y_synthetic"], c["y_synthetic"])


def test_convergence_gate():
    fit = _fake_fit()
    # random draws: 100 per chain, iid -> ESS ~ 100 > 2 x 100? no: 2 chains x 50 draws = 100
    assert not fit.convergence.passed
    assert any("ess" in p for p in fit.convergence.problems)
    from synthgeo import ConvergenceError

    with pytest.raises(ConvergenceError, match="nothing was written to release/"):
        require_convergence({"restricted": fit}, "stop")
    with pytest.warns(UserWarning, match="convergence problems"):
        require_convergence({"restricted": fit}, "warn")


def test_implicates_do_not_depend_on_blocks_and_use_their_own_seeds():
    """Implicate ℓ is a function of its draw and its own seed: blocks do not change it."""
    fit = _fake_fit(nugget=0.5)
    X = np.column_stack([np.ones(4), np.arange(4.0)])
    a = draw_implicates(fit, X, n_implicates=20, random_seed=3, chunk=1)
    b = draw_implicates(fit, X, n_implicates=20, random_seed=3, chunk=7)
    xr.testing.assert_identical(a, b)
    # the noise of implicate ℓ is default_rng(SeedSequence(3).spawn(20)[ℓ]), sd sqrt(0.5)
    post = fit.idata.posterior
    c, d = a["source_chain"].values, a["source_draw"].values
    mean = post["beta"].values[c, d] @ X.T + (post["w"].values[c, d] * [1, 0, 1])[:, [0, 1, 1, 2]]
    for ell, child in enumerate(np.random.SeedSequence(3).spawn(20)):
        z = np.random.default_rng(child).standard_normal(4)
        np.testing.assert_allclose(a["y_synthetic"].values[ell], mean[ell] + z * np.sqrt(0.5),
                                   rtol=0, atol=1e-12)
