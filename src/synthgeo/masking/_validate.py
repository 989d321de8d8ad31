"""Validation at the door of the masking API: layers → coordinates in metres, k, weights, region.

Every public function of :mod:`synthgeo.masking` calls these once and then works on plain
NumPy arrays in metres.
"""

from __future__ import annotations

import numbers
from typing import Any

import geopandas
import numpy as np
import pyproj
import shapely
from shapely.geometry.base import BaseGeometry

from synthgeo._errors import InputError, SpecError
from synthgeo.io.points import check_projected, coordinates_m

__all__: list[str] = []

_N_SHOW = 5


def record_ids(gdf: geopandas.GeoDataFrame | geopandas.GeoSeries) -> np.ndarray:
    """Ids of the records: the column named in ``attrs["id_column"]`` when present, else index."""
    column = gdf.attrs.get("id_column") if isinstance(gdf, geopandas.GeoDataFrame) else None
    if column is not None and column in gdf.columns:
        return gdf[column].to_numpy()
    return gdf.index.to_numpy()


def _describe(crs: pyproj.CRS) -> str:
    epsg = crs.to_epsg()
    return f"{crs.name} (EPSG:{epsg})" if epsg else repr(crs.name)


def layer_xy(gdf: Any, name: str) -> tuple[np.ndarray, pyproj.CRS]:
    """Return the (n, 2) coordinates in metres and the CRS of a point layer named `name`."""
    if not isinstance(gdf, geopandas.GeoDataFrame | geopandas.GeoSeries):
        raise TypeError(f"`{name}` must be a GeoDataFrame or GeoSeries of points in a projected "
                        f"CRS in metres, got {type(gdf).__name__}")
    if len(gdf) == 0:
        raise InputError(f"`{name}` is empty")
    try:
        crs = check_projected(gdf)
        xy = coordinates_m(gdf)
    except InputError as exc:
        raise InputError(f"`{name}`: {exc}") from exc
    bad = ~np.isfinite(xy).all(axis=1)
    if bad.any():
        ids = record_ids(gdf)[bad][:_N_SHOW].tolist()
        raise InputError(f"`{name}` has {int(bad.sum())} point(s) with missing (NaN) or "
                         f"infinite coordinates, ids {ids}; drop or fix them first")
    return xy, crs


def same_crs(a: pyproj.CRS, b: pyproj.CRS, name_a: str, name_b: str) -> None:
    """Raise when two layers are in different CRSs (distances between them would be wrong)."""
    if not a.equals(b, ignore_axis_order=True):
        raise InputError(f"`{name_a}` is in {_describe(a)} but `{name_b}` is in {_describe(b)}; "
                         "project both to the same CRS first, e.g. "
                         f"`{name_b}.to_crs({name_a}.crs)`")


def check_k(k: Any, total_weight: float, name: str = "k", minimum: int = 1) -> int:
    """Return `k` as int after checking `minimum` <= k <= the household total.

    Masks take ``minimum=2``: k = 1 hides a case among itself only (no protection, and an
    areal area of one household publishes it), so there is no reason to release one.
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"`{name}` must be an integer number of households, got {k!r}")
    k = int(k)
    if k < minimum:
        why = ("" if minimum == 1 else
               ": k = 1 hides a case among itself only, which protects nothing")
        raise SpecError(f"`{name}` = {k} must be at least {minimum} (the number of households a "
                        f"case is hidden among){why}")
    if k > total_weight + 1e-9:
        raise SpecError(f"`{name}` = {k} exceeds the {total_weight:g} households in the "
                        "household layer; lower k or supply a fuller household layer")
    return k


def check_weights(weights: Any, households: Any, n: int) -> np.ndarray | None:
    """Check population weights per household point: None, a column name or shape (n,)."""
    if weights is None:
        return None
    if isinstance(weights, str):
        if not isinstance(households, geopandas.GeoDataFrame) or weights not in households:
            raise InputError(f"`weights` = {weights!r} is not a column of `households`")
        values = households[weights]
        label = f"column `{weights}`"
    else:
        values = weights
        label = "`weights`"
    try:
        w = np.asarray(values, dtype="float64")
    except (TypeError, ValueError) as exc:
        raise InputError(f"{label} must be numeric households per point: {exc}") from exc
    if w.shape != (n,):
        raise InputError(f"{label} has shape {w.shape}; expected ({n},), one per household point")
    if not np.isfinite(w).all():
        raise InputError(f"{label} has {int((~np.isfinite(w)).sum())} missing (NaN) or infinite "
                         "value(s); give every household point a count")
    if (w < 0).any():
        raise InputError(f"{label} has {int((w < 0).sum())} negative value(s); counts of "
                         "households (or people) per point must be >= 0")
    if w.sum() <= 0:
        raise InputError(f"{label} sums to 0: no households to hide cases among")
    return w


def check_region(region: Any, crs: pyproj.CRS) -> BaseGeometry | None:
    """Return the study region as one prepared polygonal geometry in `crs`, or None."""
    if region is None:
        return None
    if isinstance(region, geopandas.GeoDataFrame | geopandas.GeoSeries):
        if region.crs is None:
            raise InputError("`region` has no CRS; set the CRS its coordinates are in")
        same_crs(crs, pyproj.CRS.from_user_input(region.crs), "cases", "region")
        geom = shapely.union_all(np.asarray(region.geometry.values))
    elif isinstance(region, BaseGeometry):
        geom = region
    else:
        raise TypeError(f"`region` must be a shapely Polygon/MultiPolygon or a GeoSeries, got "
                        f"{type(region).__name__}")
    if geom is None or geom.is_empty or geom.geom_type not in {"Polygon", "MultiPolygon"}:
        kind = "empty" if geom is None or geom.is_empty else geom.geom_type
        raise InputError(f"`region` must be a non-empty Polygon or MultiPolygon, got {kind}")
    if not geom.is_valid:
        raise InputError(f"`region` is not a valid polygon ({shapely.is_valid_reason(geom)}); "
                         "repair it, e.g. with `shapely.make_valid`")
    if geom.area <= 0:
        raise InputError("`region` has zero area")
    shapely.prepare(geom)
    return geom


def inside(region: BaseGeometry, xy: np.ndarray) -> np.ndarray:
    """Boolean array: which points of `xy` (shape (..., 2)) lie in `region` (boundary included)."""
    return shapely.intersects_xy(region, xy[..., 0], xy[..., 1])


def check_cases_in_region(region: BaseGeometry | None, xy: np.ndarray, ids: np.ndarray) -> None:
    """Refuse cases whose true location is outside the study region (wrong CRS or units?)."""
    if region is None:
        return
    out = ~inside(region, xy)
    if out.any():
        raise InputError(f"{int(out.sum())} case(s) lie outside the study region, ids "
                         f"{ids[out][:_N_SHOW].tolist()}; check that the region and the cases "
                         "share a CRS and unit, or enlarge the region")


def resolve_seed(random_seed: Any) -> int:
    """Turn `random_seed` (int, Generator or None) into the non-negative int that is recorded.

    None draws fresh entropy from the operating system; a Generator gives one integer.
    """
    if random_seed is None:
        return int(np.random.SeedSequence().entropy) % (2**63)
    if isinstance(random_seed, np.random.Generator):
        return int(random_seed.integers(2**63))
    if isinstance(random_seed, bool) or not isinstance(random_seed, numbers.Integral):
        raise TypeError(f"`random_seed` must be an int, a numpy Generator or None, got "
                        f"{random_seed!r}")
    if random_seed < 0:
        raise SpecError(f"`random_seed` = {random_seed} must be >= 0")
    return int(random_seed)
