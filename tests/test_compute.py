"""Dispatch to a cluster (`map_batches`), the same release by every route, the release writer."""

from __future__ import annotations

import dataclasses
import operator

import numpy as np
import pytest

from synthgeo._errors import SpecError
from synthgeo.compute import check_scheduler_address, map_batches
from synthgeo.risk.within_eps import RiskTally, within_eps_risk


def _scaled_sum(batch, *, weights):
    if batch == "boom":
        raise RuntimeError("batch failed: boom")
    return float(np.dot(batch, weights))


def test_map_batches_locally_keeps_order_and_passes_shared_arguments():
    got = list(map_batches(_scaled_sum, [[1, 0], [0, 1], [2, 2]],
                           shared={"weights": np.array([10.0, 1.0])}))
    assert got == [10.0, 1.0, 22.0]
    assert list(map_batches(operator.neg, [])) == []
    with pytest.raises(RuntimeError, match="batch failed: boom"):
        list(map_batches(_scaled_sum, [[1, 1], "boom"], shared={"weights": [1, 1]}))


def test_map_batches_is_lazy_in_its_batches():
    made = []

    def batches():
        for k in range(5):
            made.append(k)
            yield k

    it = map_batches(operator.neg, batches())
    assert next(it) == 0 and made == [0]


@pytest.mark.parametrize("bad", ["localhost:8786", "http://h:1", "tcp://", "tcp://a b", 5])
def test_scheduler_address_is_checked(bad):
    with pytest.raises(ValueError, match=r"`scheduler` must be the address of a dask"):
        check_scheduler_address(bad)


def test_cli_refuses_a_malformed_scheduler(tmp_path, capsys):
    from synthgeo.cli.main import main

    assert main(["run", "--scheduler", "8786", "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "`--scheduler 8786` is invalid" in err and "tcp://10.0.0.5:8786" in err
    assert not (tmp_path / "o").exists()


def test_risk_tally_in_blocks_equals_the_formula():
    """Counts per record over any grouping of implicates = the within-ε shares by hand."""
    rng = np.random.default_rng(4)
    truth = np.log(rng.uniform(5e4, 5e5, 40))
    syn = truth + rng.normal(0, 0.1, (13, 40))
    tally = RiskTally(truth, eps=(5_000.0, 20_000.0), p=(0.05,))
    for lo, hi in ((0, 1), (1, 8), (8, 13)):
        tally.add(syn[lo:hi])
    got = tally.result().per_record
    dist = np.abs(np.exp(syn) - np.exp(truth))
    np.testing.assert_array_equal(got["risk_abs"].values[:, 1], (dist <= 20_000).sum(0) / 13)
    np.testing.assert_array_equal(got["risk_rel"].values[:, 0],
                                  (dist <= 0.05 * np.exp(truth)).sum(0) / 13)
    avg = np.abs(np.exp(syn.mean(0)) - np.exp(truth))
    np.testing.assert_array_equal(got["attack_abs"].values[:, 0], avg <= 5_000)
    import xarray as xr

    mem = within_eps_risk(xr.DataArray(syn, dims=("implicate", "record")), truth,
                          eps=(5_000.0, 20_000.0), p=(0.05,))
    xr.testing.assert_equal(mem.per_record.drop_attrs(), got.drop_attrs())
    with pytest.raises(ValueError, match=r"a block must have shape \(k, 40\)"):
        tally.add(np.zeros((2, 39)))
    with pytest.raises(ValueError, match="no implicates were added"):
        RiskTally(truth).result()


# --- the release writer: implicate by implicate, geometry encoded once -------------------------


@pytest.fixture(scope="module")
def fake_release():
    from synthgeo.testing import fake_release_result

    return fake_release_result(n_implicates=6)


def test_written_implicates_equal_the_long_frames(fake_release, tmp_path):
    import geopandas
    import geopandas.testing
    import pyarrow.parquet as pq

    from synthgeo.release.writer import release_frames, write_release

    out = write_release(fake_release, tmp_path / "out")
    frames = release_frames(fake_release)
    for name, path in (("restricted", out / "release/implicates.parquet"),
                       ("unrestricted", out / "confidential/implicates_unrestricted.parquet")):
        got = geopandas.read_parquet(path)
        geopandas.testing.assert_geodataframe_equal(got, frames[name])
        assert pq.ParquetFile(path).metadata.num_row_groups == 6  # one per implicate
    n = fake_release.data.n_records
    long = frames["restricted"]
    assert (long["implicate"].to_numpy() == np.repeat(np.arange(1, 7), n)).all()
    # released rows: the records in a random order under release pseudonyms 1..n
    from synthgeo._seed import run_seed
    from synthgeo.release.records import released_records

    rows = released_records(fake_release.spec, fake_release.data, fake_release.locations,
                            run_seed(fake_release)).rows
    assert sorted(rows) == list(range(n)) and (long["id"].to_numpy()[:n] == np.arange(1, n + 1)).all()
    ys = fake_release.implicates["restricted"]["y_synthetic"].values[:, rows]
    np.testing.assert_array_equal(long["log_price"].to_numpy(), ys.ravel())
    import pandas as pd

    third = pd.read_csv(out / "release/csv/implicate_003.csv")
    np.testing.assert_array_equal(third["log_price"].to_numpy(), ys[2])
    assert "implicate" not in third.columns and "geometry" not in third.columns


# --- a cluster: the same files ---------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as c:
        yield c


@pytest.mark.slow
def test_map_batches_on_a_cluster_keeps_order_and_raises(cluster):
    batches = [[k, 1] for k in range(23)]
    w = np.array([2.0, 0.5])
    local = list(map_batches(_scaled_sum, batches, shared={"weights": w}))
    remote = list(map_batches(_scaled_sum, batches, shared={"weights": w},
                              scheduler=cluster.scheduler_address, max_in_flight=3))
    assert remote == local
    with pytest.raises(RuntimeError, match="batch failed: boom"):
        list(map_batches(_scaled_sum, [[1, 1], "boom", [2, 2]], shared={"weights": [1, 1]},
                         scheduler=cluster.scheduler_address))


@pytest.mark.slow
def test_release_on_a_local_cluster_equals_the_local_release(cluster, fake_release, tmp_path):
    """[compute] scheduler: identical release/ files (the implicates made on 2 workers)."""
    from synthgeo.release.writer import write_release
    from synthgeo.testing import fake_release_result

    spec = fake_release.spec.replace("compute", scheduler=cluster.scheduler_address)
    remote = fake_release_result(spec, n_implicates=6)
    assert remote.spec.compute.scheduler == cluster.scheduler_address
    a = write_release(fake_release, tmp_path / "local")
    b = write_release(remote, tmp_path / "cluster")
    files = sorted(p.relative_to(a) for p in (a / "release").rglob("*") if p.is_file())
    assert len(files) == 6 + 2  # 6 CSVs, the parquet, the README
    for rel in files:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    np.testing.assert_array_equal(
        fake_release.risk["restricted"].per_record["risk_rel"].values,
        remote.risk["restricted"].per_record["risk_rel"].values)
    with pytest.raises(SpecError, match=r"`\[compute\] scheduler` must be"):
        dataclasses.replace(spec.compute, scheduler="nowhere")


@pytest.mark.slow
def test_grid_cells_on_a_cluster_give_the_local_posterior(cluster):
    """Issue 13 item 6: the grid's cell evaluations as tasks: the same draws, bit for bit."""
    from synthgeo.compute import batch_mapper
    from synthgeo.config import SamplingConfig
    from synthgeo.inference.grid import fit_gp_grid
    from synthgeo.model.kernels import make_sites
    from synthgeo.model.restricted_gp import default_priors
    from synthgeo.testing import simulate_gp

    sim = simulate_gp(n=60, random_seed=4)
    sites = make_sites(sim["coords_m"])
    pri = default_priors(sim["y"], sim["X"], sites)
    kw = dict(priors=pri, coef_names=["a", "b"], gp="exact",
              config=SamplingConfig(draws=100, seed=2))
    local = fit_gp_grid(sim["y"], sim["X"], sites, **kw)
    import distributed

    with distributed.Client(cluster) as client, distributed.get_task_stream(client) as ts:
        remote = fit_gp_grid(sim["y"], sim["X"], sites,
                             map_batches=batch_mapper(cluster.scheduler_address), **kw)
    assert sum("_one_thread_call" in str(t["key"]) for t in ts.data) >= 2  # ran as tasks
    for v in ("sigma2", "nugget", "range", "beta"):
        np.testing.assert_array_equal(local.idata.posterior[v].values,
                                      remote.idata.posterior[v].values, err_msg=v)
    assert local.engine["grid_cells"] == remote.engine["grid_cells"]
    np.testing.assert_array_equal(local.effects([0, 7]), remote.effects([0, 7]))
    # the large-N route (Laplace start, grid in Hessian-standardised coordinates), threshold
    # lowered: the same draws on the cluster, and the model's data scattered once (the mode
    # search's log density; the tilted grid's points are moved to the axes before mapping)
    from synthgeo.inference.grid_posterior import GridSettings

    sim = simulate_gp(n=300, random_seed=4)
    sites = make_sites(sim["coords_m"])
    kw.update(priors=default_priors(sim["y"], sim["X"], sites), gp="nngp",
              settings=GridSettings(laplace_start_min_records=50))
    local = fit_gp_grid(sim["y"], sim["X"], sites, **kw)
    mapper = batch_mapper(cluster.scheduler_address)
    remote = fit_gp_grid(sim["y"], sim["X"], sites, map_batches=mapper, **kw)
    assert local.grid.quadrature.frame is not None
    assert local.engine["grid_laplace_start"]["grid"] == "tilted"
    for v in ("sigma2", "nugget", "range", "beta"):
        np.testing.assert_array_equal(local.idata.posterior[v].values,
                                      remote.idata.posterior[v].values, err_msg=v)
    assert len(mapper._scattered) == 2  # log target (search and grid), cells (the draws)
