"""synthgeo.inference.netcdf: ArviZ's InferenceData file, byte for byte, without ArviZ."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import xarray as xr

from synthgeo.inference.netcdf import write_inference_netcdf
from synthgeo.testing import fake_fit


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_fit_file_is_arvizs_byte_for_byte(tmp_path):
    az = pytest.importorskip("arviz")
    fit = fake_fit(n_draw=20)
    groups = dict(reversed(list(fit.groups.items())))  # ArviZ's order, not the dict's
    groups["custom"] = xr.Dataset({"flag": ("i", np.array([True, False]))})
    groups["warmup_posterior"] = fit.posterior.isel(draw=slice(0, 3))
    groups["empty"] = xr.Dataset()
    ours = write_inference_netcdf(tmp_path / "ours.nc", groups)
    az.InferenceData(**groups).to_netcdf(str(tmp_path / "arviz.nc"), engine="h5netcdf")
    assert _sha(ours) == _sha(tmp_path / "arviz.nc")
    back = az.from_netcdf(str(ours))
    assert set(back.groups()) == set(groups) - {"empty"}
    xr.testing.assert_identical(back.posterior, fit.posterior)


def test_gpfit_to_netcdf_writes_the_groups(tmp_path):
    fit = fake_fit(n_draw=10)
    fit.to_netcdf(tmp_path / "fit.nc")
    with xr.open_dataset(tmp_path / "fit.nc", group="posterior", engine="h5netcdf") as ds:
        xr.testing.assert_allclose(ds.load(), fit.posterior)


def test_a_group_that_is_not_a_dataset_is_refused(tmp_path):
    with pytest.raises(TypeError, match="groups"):
        write_inference_netcdf(tmp_path / "x.nc", {"posterior": np.zeros(3)})
    assert not (tmp_path / "x.nc").exists()


def test_the_store_path_and_to_netcdf_write_the_same_bytes(tmp_path, monkeypatch):
    """Where xarray lacks the store's steps, ``to_netcdf`` writes the file: the same bytes."""
    from xarray.backends import locks

    groups = {"posterior": fake_fit(n_draw=10).posterior,
              "sample_stats": xr.Dataset({"used": (("chain", "draw"), np.eye(2, 10, dtype=bool))})}
    ours = write_inference_netcdf(tmp_path / "store.nc", groups)
    monkeypatch.delattr(locks, "HDF5_LOCK")  # the store's steps unavailable: to_netcdf
    plain = write_inference_netcdf(tmp_path / "plain.nc", groups)
    assert _sha(ours) == _sha(plain)


def test_writing_imports_no_dask_distributed(tmp_path):
    """``to_netcdf`` would import dask.distributed (~0.2 s) to choose a lock: not here."""
    import subprocess
    import sys

    code = ("import sys, numpy as np, xarray as xr; "
            "from synthgeo.inference.netcdf import write_inference_netcdf; "
            "write_inference_netcdf(%r, {'posterior': xr.Dataset({'a': (('chain', 'draw'), "
            "np.zeros((1, 3)))})}); print('distributed' in sys.modules)"
            % str(tmp_path / "x.nc"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True)
    assert out.stdout.strip() == "False"
