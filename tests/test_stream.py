"""One synthesis, every route: in memory, streamed to Zarr, on a cluster: the same bytes."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from synthgeo.config import SamplingConfig
from synthgeo.inference.grid import fit_gp_grid
from synthgeo.inference.grid_posterior import GridSettings
from synthgeo.model.restricted_gp import default_priors
from synthgeo.model.smoothing import Smoothing
from synthgeo.risk.within_eps import within_eps_risk
from synthgeo.synthesis.implicates import (ImplicateDraws, draw_implicates, implicate_blocks,
                                           implicate_seeds)
from synthgeo.pipeline.stream import stream_release

CFG = SamplingConfig(sampler="grid", chains=2, draws=50, seed=3, on_convergence_failure="warn")
FAST = GridSettings(n_coarse=6, n_fine=6, max_stages=2)


def _problem(n=300, S=120, L=24, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.standard_normal(n)])
    site_index = rng.integers(0, S, n)
    scale = np.ones(S)
    scale[:5] = 0.0
    w = rng.normal(0, 0.3, (L, S))
    draws = ImplicateDraws(beta=rng.normal([11.0, 0.2], 0.05, (L, 2)),
                           nugget=rng.uniform(0.01, 0.05, L), effect=w * scale)
    y = X @ [11.0, 0.2] + rng.normal(0, 0.3, n)
    return draws, X, y, site_index, w, scale


def _blocks(draws, X, idx, seed, chunk, scheduler=None):
    return np.vstack([b for _, b in implicate_blocks(draws, X, idx, seed=seed, chunk=chunk,
                                                     scheduler=scheduler)])


def test_streamed_risk_equals_in_memory_risk(tmp_path):
    draws, X, y, idx, w, d = _problem()
    res = stream_release(draws, X, y, idx, path=tmp_path / "a.zarr", seed=5, chunk=7,
                         eps=(5000.0, 20000.0), p=(0.05, 0.1))
    ysyn = xr.open_zarr(res.path, consolidated=False)["y_synthetic"].load()
    assert ysyn.dims == ("implicate", "record") and ysyn.shape == (24, 300)
    # the law: mean part is exactly X beta + D w at the site, noise has sd sqrt(nugget)
    mean = draws.beta @ X.T + (w * d)[:, idx]
    z = (ysyn.values - mean) / np.sqrt(draws.nugget)[:, None]
    assert abs(z.mean()) < 0.05 and abs(z.std() - 1) < 0.05
    mem = within_eps_risk(ysyn, y, eps=[5000.0, 20000.0], p=[0.05, 0.1], transform="exp")
    for var in ("risk_abs", "risk_rel", "attack_abs", "attack_rel"):  # exactly, not nearly
        np.testing.assert_array_equal(res.risk.per_record[var].values,
                                      mem.per_record[var].values)
    np.testing.assert_array_equal(ysyn.values, _blocks(draws, X, idx, 5, 24))
    # the seed is a key: the store keeps only its hash (issue 11)
    from synthgeo._seed import seed_sha256

    attrs = xr.open_zarr(res.path, consolidated=False).attrs
    assert "seed" not in attrs and attrs["seed_sha256"] == seed_sha256(5)


def test_noise_of_implicate_l_is_its_own_spawned_seed():
    """Implicate ℓ's error is default_rng(SeedSequence(seed).spawn(L)[ℓ]) · sqrt(τ²_ℓ)."""
    draws, X, y, idx, w, d = _problem(L=6)
    got = _blocks(draws, X, idx, 11, 4)
    children = np.random.SeedSequence(11).spawn(6)
    for ell, child in enumerate(children):
        z = np.random.default_rng(child).standard_normal(X.shape[0])
        want = X @ draws.beta[ell] + draws.effect[ell][idx] + z * np.sqrt(draws.nugget[ell])
        np.testing.assert_allclose(got[ell], want, rtol=0, atol=1e-12)


def test_files_do_not_depend_on_chunking(tmp_path):
    draws, X, y, idx, w, d = _problem()
    a = _blocks(draws, X, idx, 9, 3)
    b = _blocks(draws, X, idx, 9, 24)
    np.testing.assert_array_equal(a, b)
    c = _blocks(draws, X, idx, 10, 3)
    assert not np.allclose(a, c)
    s1 = stream_release(draws, X, y, idx, path=tmp_path / "1.zarr", seed=9, chunk=1)
    s2 = stream_release(draws, X, y, idx, path=tmp_path / "2.zarr", seed=9, chunk=10)
    np.testing.assert_array_equal(
        xr.open_zarr(s1.path, consolidated=False)["y_synthetic"].values,
        xr.open_zarr(s2.path, consolidated=False)["y_synthetic"].values)


def test_seeds_are_spawned_children_and_do_not_consume_the_root():
    root = np.random.SeedSequence(42)
    a, b = implicate_seeds(root, 5), implicate_seeds(root, 5)
    want = np.random.SeedSequence(42).spawn(5)
    for x, y_, w_ in zip(a, b, want):
        np.testing.assert_array_equal(x.generate_state(4), w_.generate_state(4))
        np.testing.assert_array_equal(y_.generate_state(4), w_.generate_state(4))
    assert root.n_children_spawned == 0
    # the first implicates do not depend on how many there are
    np.testing.assert_array_equal(implicate_seeds(42, 3)[2].generate_state(2),
                                  implicate_seeds(42, 9)[2].generate_state(2))


def test_refuses_to_overwrite(tmp_path):
    draws, X, y, idx, w, d = _problem()
    (tmp_path / "x.zarr").mkdir()
    with pytest.raises(FileExistsError, match="nothing is overwritten"):
        stream_release(draws, X, y, idx, path=tmp_path / "x.zarr", seed=1)


def test_draws_must_agree_on_the_number_of_implicates():
    with pytest.raises(ValueError, match=r"one row per implicate, got shapes \(3, 2\), \(2,\)"):
        ImplicateDraws(beta=np.zeros((3, 2)), nugget=np.ones(2), effect=np.zeros((3, 4)))
    with pytest.raises(ValueError, match="`nugget` .* must be >= 0"):
        ImplicateDraws(beta=np.zeros((2, 2)), nugget=[1.0, -1.0], effect=np.zeros((2, 4)))


@pytest.fixture(scope="module")
def kriged_fit(small_gp):
    a = np.zeros(small_gp["sites"].n_sites)
    a[[3, 17]] = 1.0
    priors = default_priors(small_gp["y"], small_gp["X"], small_gp["sites"])
    return fit_gp_grid(small_gp["y"], small_gp["X"], small_gp["sites"], priors=priors,
                       coef_names=["Intercept", "x1"], scale=Smoothing(a=a, gamma=np.inf),
                       config=CFG, gp="exact", settings=FAST, random_seed=5)


@pytest.mark.parametrize("at_risk_effect", ["zero", "kriged"])
def test_stream_equals_in_memory_synthesis_from_a_fit(tmp_path, small_gp, kriged_fit,
                                                      at_risk_effect):
    """The streamed route now has ``at_risk_effect = "kriged"``, with the same bytes."""
    fit, X, y = kriged_fit, small_gp["X"], small_gp["y"]
    seed = np.random.SeedSequence(77)
    mem = draw_implicates(fit, X, n_implicates=20, random_seed=seed,
                          at_risk_effect=at_risk_effect, chunk=3)
    draws = ImplicateDraws.from_fit(fit, 20, at_risk_effect=at_risk_effect)
    res = stream_release(draws, X, y, small_gp["sites"].site_index, path=tmp_path / "k.zarr",
                         seed=seed, chunk=7)
    disk = xr.open_zarr(res.path, consolidated=False)["y_synthetic"].values
    np.testing.assert_array_equal(disk, mem["y_synthetic"].values)
    risk = within_eps_risk(mem["y_synthetic"], y)
    np.testing.assert_array_equal(res.risk.per_record["risk_rel"].values,
                                  risk.per_record["risk_rel"].values)


def test_kriged_stream_differs_from_zero_only_at_the_at_risk_sites(small_gp, kriged_fit):
    idx = small_gp["sites"].site_index
    z = ImplicateDraws.from_fit(kriged_fit, 20, at_risk_effect="zero")
    k = ImplicateDraws.from_fit(kriged_fit, 20, at_risk_effect="kriged")
    a, b = _blocks(z, small_gp["X"], idx, 1, 5), _blocks(k, small_gp["X"], idx, 1, 5)
    at = np.isin(idx, [3, 17])
    np.testing.assert_array_equal(a[:, ~at], b[:, ~at])
    assert np.all(np.abs(a[:, at] - b[:, at]) > 0)


def test_per_implicate_scale_is_applied_row_by_row():
    """gamma = "auto": D varies by draw; row ℓ of the effect is w^(ℓ) · d(α_ℓ)."""
    import dataclasses

    from synthgeo.testing import fake_fit

    fit = dataclasses.replace(fake_fit(nugget=0.5, scale=(1.0, 1.0, 1.0)),
                              smoothing=Smoothing(a=np.array([0.0, 1.0, 0.0]), gamma="auto"))
    draws = ImplicateDraws.from_fit(fit, 20)
    flat = np.unique(np.round(np.linspace(0, 99, 20)).astype(int))
    post = fit.idata.posterior
    alpha = (post["nugget"] / post["sigma2"]).values.ravel()[flat]
    D = np.stack([fit.smoothing.scale(float(a)) for a in alpha])
    assert np.ptp(D[:, 1]) > 0.1 and np.all(D[:, [0, 2]] == 1.0)  # D really varies by draw
    np.testing.assert_allclose(draws.effect, fit.effects(flat) * D, rtol=0, atol=1e-12)


@pytest.mark.slow
def test_same_result_on_a_local_distributed_cluster(tmp_path):
    distributed = pytest.importorskip("distributed")
    draws, X, y, idx, w, d = _problem()
    local = stream_release(draws, X, y, idx, path=tmp_path / "l.zarr", seed=3, chunk=5)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        remote = stream_release(draws, X, y, idx, path=tmp_path / "r.zarr", seed=3,
                                chunk=5, scheduler=cluster.scheduler_address)
    np.testing.assert_array_equal(local.risk.per_record["risk_rel"].values,
                                  remote.risk.per_record["risk_rel"].values)
    np.testing.assert_array_equal(
        xr.open_zarr(local.path, consolidated=False)["y_synthetic"].values,
        xr.open_zarr(remote.path, consolidated=False)["y_synthetic"].values)
