"""Versions of synthgeo and its main dependencies (cheap: no heavy imports)."""

from __future__ import annotations

import platform
from importlib import metadata

__all__ = ["package_versions"]

_PACKAGES = ("synthgeo", "numpy", "scipy", "pandas", "xarray", "pymc", "pytensor", "nutpie",
             "numba", "arviz", "geopandas", "pyproj", "shapely", "statsmodels", "pyarrow",
             "h5netcdf", "matplotlib", "tqdm", "jsonschema")


def package_versions() -> dict[str, str]:
    """Installed versions of synthgeo and its main dependencies (plus Python)."""
    out = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out
