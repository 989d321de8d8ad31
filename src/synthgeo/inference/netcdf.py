"""Posterior groups written as an InferenceData netCDF file, without importing ArviZ.

ArviZ's ``InferenceData.to_netcdf`` (ArviZ 0.23, ``arviz/data/inference_data.py``) writes each
non-empty group with xarray, in its schema's group order, as the netCDF group ``//<name>``
(``base_group`` "/" joined to the name), engine h5netcdf, zlib on every numeric variable, the
warm-up groups last.
:func:`write_inference_netcdf` makes the same calls in the same order, so the file is the same
byte for byte (tests/test_netcdf.py compares the two) and ``arviz.from_netcdf`` reads it; it
spares the ~1.5 s ArviZ takes to import (issue 27: ``synthgeo draw`` in 5 s).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import xarray as xr

__all__ = ["GROUP_ORDER", "write_inference_netcdf"]

#: ArviZ's InferenceData schema order (``SUPPORTED_GROUPS``, then ``SUPPORTED_GROUPS_WARMUP``).
GROUP_ORDER = (
    "posterior", "posterior_predictive", "predictions", "log_likelihood", "log_prior",
    "sample_stats", "prior", "prior_predictive", "sample_stats_prior", "observed_data",
    "constant_data", "predictions_constant_data", "unconstrained_posterior",
    "unconstrained_prior", "warmup_posterior", "warmup_posterior_predictive",
    "warmup_predictions", "warmup_sample_stats", "warmup_log_likelihood", "warmup_log_prior",
)


def _compressible(dtype: np.dtype) -> bool:
    """ArviZ's rule: zlib on booleans, integers, floats, complex and byte strings."""
    if dtype.kind == "V":
        return all(_compressible(item) for item, _ in dtype.fields.values())
    return dtype.kind in {"b", "i", "u", "f", "c", "S"}


def write_inference_netcdf(path: str | os.PathLike, groups: Mapping[str, xr.Dataset]) -> Path:
    """Write InferenceData groups to ``path`` as ``arviz.InferenceData(**groups).to_netcdf``.

    Parameters
    ----------
    path : path
        The file (overwritten).
    groups : dict of str to xarray.Dataset
        The groups (``posterior``, ``sample_stats``, ...); a group with no data variable is
        left out, as ArviZ leaves it out.

    Returns
    -------
    Path

    Raises
    ------
    TypeError
        If a group is not an xarray Dataset.

    Examples
    --------
    >>> import tempfile
    >>> post = xr.Dataset({"mu": (("chain", "draw"), np.zeros((1, 3)))})
    >>> f = write_inference_netcdf(Path(tempfile.mkdtemp()) / "fit.nc", {"posterior": post})
    >>> xr.open_dataset(f, group="posterior", engine="h5netcdf")["mu"].shape
    (1, 3)
    """
    path = Path(path)
    bad = [name for name, ds in groups.items() if not isinstance(ds, xr.Dataset)]
    if bad:
        raise TypeError(f"`groups` must map names to xarray Datasets (not: {bad})")
    # ArviZ's order: the schema's groups, then any other, the warm-up ones ("warmup_...") last
    known = [g for g in GROUP_ORDER if g in groups] + [g for g in groups if g not in GROUP_ORDER]
    order = ([g for g in known if not g.startswith("warmup_")]
             + [g for g in known if g.startswith("warmup_")])
    mode = "w"
    for name in order:
        data = groups[name]
        if not data:  # ArviZ keeps no empty group
            continue
        encoding = {var: {"zlib": True} for var, values in data.variables.items()
                    if _compressible(values.dtype)}
        _write_group(data, path, mode=mode, group=f"//{name}", encoding=encoding)
        mode = "a"
    return path


def _write_group(data: xr.Dataset, path: Path, *, mode: str, group: str,
                 encoding: dict) -> None:
    """``data.to_netcdf(path, mode, group, engine="h5netcdf", encoding)``, through its store.

    ``Dataset.to_netcdf`` opens xarray's h5netcdf store, takes the group's child store and
    dumps the dataset into it; before that it asks dask for its scheduler (to choose a write
    lock), which imports dask.distributed (~0.2 s) for in-memory data that no scheduler
    touches. The same three steps with HDF5's lock write the same bytes (tests/test_netcdf.py);
    where this xarray lacks one of them, ``to_netcdf`` is called.
    """
    try:
        from xarray.backends import H5NetCDFStore
        from xarray.backends.locks import HDF5_LOCK

        store = H5NetCDFStore.open(str(path), mode=mode, lock=HDF5_LOCK)
        child = store.get_child_store(group)
    except (ImportError, AttributeError, TypeError):
        data.to_netcdf(str(path), mode=mode, group=group, engine="h5netcdf", encoding=encoding)
        return
    try:
        data.dump_to_store(child, encoding=encoding)
    finally:
        child.close()
