"""Streaming synthesis and risk: equal to the in-memory route, chunking-free, distributed."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from synthgeo.risk.within_eps import within_eps_risk
from synthgeo.synthesis.stream import PosteriorDraws, implicates_dask, stream_release


def _problem(n=300, S=120, L=24, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.standard_normal(n)])
    site_index = rng.integers(0, S, n)
    scale = np.ones(S)
    scale[:5] = 0.0
    draws = PosteriorDraws(beta=rng.normal([11.0, 0.2], 0.05, (L, 2)),
                           nugget=rng.uniform(0.01, 0.05, L), w=rng.normal(0, 0.3, (L, S)))
    y = X @ [11.0, 0.2] + rng.normal(0, 0.3, n)
    return draws, X, y, site_index, scale


def test_streamed_risk_equals_in_memory_risk(tmp_path):
    draws, X, y, idx, d = _problem()
    res = stream_release(draws, X, y, idx, d, path=tmp_path / "a.zarr", seed=5, chunk=7,
                         eps=(5000.0, 20000.0), p=(0.05, 0.1))
    ysyn = xr.open_zarr(res.path, consolidated=False)["y_synthetic"].load()
    assert ysyn.dims == ("implicate", "record") and ysyn.shape == (24, 300)
    # the law: mean part is exactly X beta + D w at the site, noise has sd sqrt(nugget)
    mean = draws.beta @ X.T + (draws.w * d)[:, idx]
    z = (ysyn.values - mean) / np.sqrt(draws.nugget)[:, None]
    assert abs(z.mean()) < 0.05 and abs(z.std() - 1) < 0.05
    mem = within_eps_risk(ysyn, y, eps=[5000.0, 20000.0], p=[0.05, 0.1], transform="exp")
    np.testing.assert_allclose(res.risk_abs, mem.per_record["risk_abs"].values)
    np.testing.assert_allclose(res.risk_rel, mem.per_record["risk_rel"].values)
    np.testing.assert_allclose(res.implicate_mean, ysyn.values.mean(0))
    # the seed is a key: the store keeps only its hash (issue 11)
    from synthgeo._seed import seed_sha256

    attrs = xr.open_zarr(res.path, consolidated=False).attrs
    assert "seed" not in attrs and attrs["seed_sha256"] == seed_sha256(5)


def test_files_do_not_depend_on_chunking(tmp_path):
    draws, X, y, idx, d = _problem()
    a = implicates_dask(draws, X, idx, d, seed=9, chunk=3).compute()
    b = implicates_dask(draws, X, idx, d, seed=9, chunk=24).compute()
    np.testing.assert_array_equal(a, b)
    c = implicates_dask(draws, X, idx, d, seed=10, chunk=3).compute()
    assert not np.allclose(a, c)


def test_refuses_to_overwrite(tmp_path):
    draws, X, y, idx, d = _problem()
    (tmp_path / "x.zarr").mkdir()
    with pytest.raises(FileExistsError, match="nothing is overwritten"):
        stream_release(draws, X, y, idx, d, path=tmp_path / "x.zarr", seed=1)


@pytest.mark.slow
def test_same_result_on_a_local_distributed_cluster(tmp_path):
    distributed = pytest.importorskip("distributed")
    draws, X, y, idx, d = _problem()
    local = stream_release(draws, X, y, idx, d, path=tmp_path / "l.zarr", seed=3, chunk=5)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        remote = stream_release(draws, X, y, idx, d, path=tmp_path / "r.zarr", seed=3,
                                chunk=5, scheduler=cluster.scheduler_address)
    np.testing.assert_array_equal(local.risk_rel, remote.risk_rel)
    np.testing.assert_array_equal(xr.open_zarr(local.path, consolidated=False)["y_synthetic"].values,
                                  xr.open_zarr(remote.path, consolidated=False)["y_synthetic"].values)


def test_per_implicate_scale_is_applied_row_by_row():
    """gamma = "auto": D varies by draw; row l of an (L, S) scale multiplies w^(l)."""
    draws, X, y, idx, d = _problem()
    rng = np.random.default_rng(3)
    D = rng.uniform(0.2, 1.0, (24, d.size))
    a = implicates_dask(draws, X, idx, D, seed=9, chunk=5).compute()
    b = implicates_dask(draws, X, idx, np.ones(d.size), seed=9, chunk=5).compute()
    np.testing.assert_allclose(a - b, (draws.w * (D - 1.0))[:, idx], atol=1e-12)
