"""Read the files of a masking job: cases, households (or population counts), study region.

All layers go through :func:`synthgeo.io.points.load_points` and end in one metric CRS: the input's
own CRS when it is projected in metres (e.g. the British National Grid), else the UTM zone of
the cases. Coordinates given on the command line (the source point) and the region are read in
the cases file's CRS and unit and converted the same way.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path
from typing import Any

import geopandas
import numpy as np
import pandas as pd
import pyproj
import shapely
from shapely.geometry.base import BaseGeometry

from synthgeo._errors import InputError
from synthgeo.io.paths import not_a_file
from synthgeo.io.points import load_points, metric_problem
from synthgeo.io.provenance import file_sha256
from synthgeo.io.units import coordinate_unit
from synthgeo.masking._validate import check_region

__all__ = ["MaskingInputs", "load_masking_inputs", "read_region"]


@dataclass(frozen=True, kw_only=True)
class MaskingInputs:
    """The layers of a masking job, in one metric CRS.

    Attributes
    ----------
    cases : geopandas.GeoDataFrame
        True case locations (confidential), ``attrs["id_column"]`` set.
    households : geopandas.GeoDataFrame
        Household points, same CRS.
    weights : ndarray of shape (n_points,) or None
        Households per point when a weight column was given.
    region : shapely geometry or None
        Study region in the same CRS.
    source_crs : pyproj.CRS
        CRS of the input files.
    coord_unit_m : float
        Factor turning the CSV inputs' x/y values (and coordinates given with them, the source
        point and a CSV region) into the unit of `source_crs` (1000 for kilometres on the
        British National Grid; 1 when the CRS's own unit applies).
    unit : dict
        How the x/y values were read (see :class:`synthgeo.io.units.CoordinateUnit`).
    provenance : dict
        Paths, sha256, queries, counts, CRS: for the JSON records.
    """

    cases: geopandas.GeoDataFrame
    households: geopandas.GeoDataFrame
    weights: np.ndarray | None = field(repr=False)
    region: BaseGeometry | None = field(repr=False)
    source_crs: pyproj.CRS
    coord_unit_m: float
    provenance: dict[str, Any] = field(repr=False)
    unit: dict[str, Any] = field(default_factory=dict)

    @property
    def crs(self) -> pyproj.CRS:
        """The metric CRS all layers are in."""
        return pyproj.CRS.from_user_input(self.cases.crs)

    def point_m(self, xy: tuple[float, float]) -> tuple[float, float]:
        """Convert a point given in the cases file's CRS and unit to metres in :attr:`crs`.

        Parameters
        ----------
        xy : tuple of float
            (x, y) as written in the cases file (e.g. km on the British National Grid when
            ``coord_unit_m`` is 1000; longitude, latitude for a geographic CRS).

        Returns
        -------
        tuple of float
            (x, y) in metres in :attr:`crs`.
        """
        x, y = (float(v) * self.coord_unit_m for v in xy)
        if self.source_crs.equals(self.crs, ignore_axis_order=True):
            return x, y
        t = pyproj.Transformer.from_crs(self.source_crs, self.crs, always_xy=True)
        tx, ty = t.transform(x, y)
        return float(tx), float(ty)


def _load(path: Path, **kwargs: Any) -> geopandas.GeoDataFrame:
    """:func:`load_points` without its duplicate-row warning.

    Rows at one location are distinct cases or households here (an apartment block, or
    coordinates rounded to 100 m), never copies to drop; the count is kept in ``attrs``.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*exact duplicate row", category=UserWarning)
        return load_points(path, **kwargs)


def _working(gdf: geopandas.GeoDataFrame) -> geopandas.GeoDataFrame:
    """Move a layer loaded in UTM back to its source CRS when that is already metric."""
    src = pyproj.CRS.from_wkt(gdf.attrs["source_crs"])
    if metric_problem(src) is None and not src.equals(gdf.crs, ignore_axis_order=True):
        attrs = dict(gdf.attrs)
        gdf = gdf.to_crs(src)
        gdf.attrs.update(attrs)
    return gdf


def read_region(path: str | os.PathLike, *, crs: pyproj.CRS, x: str | None = None,
                y: str | None = None, coord_unit_m: float = 1.0,
                ring_column: str = "ring", sep: str = ",", decimal: str = ".",
                encoding: str = "utf-8", thousands: str | None = None) -> BaseGeometry:
    """Read a study-region polygon in `crs` from a vertex CSV or a polygon layer.

    Parameters
    ----------
    path : str or os.PathLike
        CSV of vertices (columns `x`, `y`, optionally `ring_column`; rows in boundary order), or
        a GeoPackage/GeoJSON/shapefile/GeoParquet of polygons (their union is the region).
    crs : pyproj.CRS
        CRS of the CSV's coordinates; a layer must carry this same CRS.
    x, y : str, optional
        CSV vertex columns.
    coord_unit_m : float, default=1.0
        Factor turning the CSV's values into the unit of `crs` (1000 for km on a metre CRS).
    ring_column : str, default="ring"
        CSV column numbering the rings; each ring is closed automatically. Several rings are
        combined by the even-odd rule (a ring inside another is a hole), so ring orientation
        does not matter.
    sep, decimal, encoding : str, default=",", ".", "utf-8"
        How the CSV is written (as for the points, see :func:`synthgeo.io.points.load_points`).
    thousands : str, optional
        The CSV's thousands separator (as for the points).

    Returns
    -------
    shapely.Polygon or shapely.MultiPolygon
        In `crs`, coordinates scaled to metres.

    Raises
    ------
    InputError
        Missing file or columns; NaN coordinates; a ring with fewer than 3 vertices; no CRS or
        another CRS than `crs` on a layer; an invalid or empty polygon.
    """
    path = Path(path)
    if (why := not_a_file(path)) is not None:
        raise InputError(f"region file {path!s} {why}; give the polygon file itself")
    if path.suffix.lower() == ".csv":
        try:
            frame = pd.read_csv(path, sep=sep, decimal=decimal, encoding=encoding,
                                thousands=thousands)
        except UnicodeDecodeError as exc:
            raise InputError(f"region CSV {path.name} is not {encoding} text: set `encoding` "
                             "(--encoding)") from exc
        missing = [c for c in (x, y) if c is None or c not in frame.columns]
        if missing:
            raise InputError(f"region CSV {path.name} needs the vertex columns x={x!r}, y={y!r}; "
                             f"it has {list(frame.columns)}")
        xy = frame[[x, y]].apply(pd.to_numeric, errors="coerce").to_numpy(float)
        if not np.isfinite(xy).all():
            raise InputError(f"region CSV {path.name} has missing or non-numeric vertex "
                             "coordinates")
        xy = xy * float(coord_unit_m)
        rings = (frame[ring_column].to_numpy() if ring_column in frame.columns
                 else np.zeros(len(frame)))
        polys = []
        for ring in pd.unique(rings).tolist():
            pts = xy[rings == ring]
            if len(pts) < 3:
                raise InputError(f"region ring {ring!r} in {path.name} has {len(pts)} vertices; "
                                 "a ring needs at least 3")
            poly = shapely.Polygon(pts)
            if not poly.is_valid:
                raise InputError(f"region ring {ring!r} in {path.name} is not a valid polygon "
                                 f"({shapely.is_valid_reason(poly)}); fix the vertex order")
            polys.append(poly)
        geom = reduce(lambda a, b: a.symmetric_difference(b), polys)
    else:
        try:
            layer = (geopandas.read_parquet(path) if path.suffix.lower() in {".parquet",
                                                                            ".geoparquet"}
                     else geopandas.read_file(path))
        except Exception as exc:  # many reader error types
            raise InputError(f"could not read region {path.name}: {exc}") from exc
        if layer.crs is None:
            raise InputError(f"region {path.name} has no CRS; set the CRS it is in")
        file_crs = pyproj.CRS.from_user_input(layer.crs)
        if not file_crs.equals(crs, ignore_axis_order=True):
            raise InputError(f"region {path.name} is in {file_crs.name!r} but the cases in "
                             f"{crs.name!r}; give the region in the cases' CRS")
        geom = shapely.union_all(np.asarray(layer.geometry.values))
    checked = check_region(geom, crs)
    assert checked is not None
    return checked


def load_masking_inputs(
    cases_path: str | os.PathLike,
    *,
    households_path: str | os.PathLike,
    x: str | None = None,
    y: str | None = None,
    crs: str | int | None = None,
    coord_unit_m: float | None = None,
    sep: str = ",",
    decimal: str = ".",
    encoding: str = "utf-8",
    thousands: str | None = None,
    accept_small_extent: bool = False,
    study_area=None,
    accept_offshore: bool = False,
    cases_query: str | None = None,
    households_query: str | None = None,
    id_column: str | None = None,
    weight_column: str | None = None,
    region_path: str | os.PathLike | None = None,
    region_x: str | None = None,
    region_y: str | None = None,
    region_ring_column: str = "ring",
) -> MaskingInputs:
    """Load cases, households and the study region into one metric CRS.

    Parameters
    ----------
    cases_path, households_path : str or os.PathLike
        Point files (CSV with `x`/`y` + `crs`, or a layer); may be the same file told apart by
        the queries (Chorley: larynx cases, lung cases as households).
    x, y, crs, coord_unit_m, sep, decimal, encoding, thousands, accept_small_extent
        As in :func:`synthgeo.io.points.load_points` (CSV only; `coord_unit_m` = 1000 for km,
        default the CRS's unit).
    study_area, accept_offshore
        As in :func:`synthgeo.io.points.load_points`, for the cases and the households.
    cases_query, households_query : str, optional
        :meth:`pandas.DataFrame.query` filters, e.g. ``"cancer == 'larynx'"``.
    id_column : str, optional
        Case id column (unique); default row numbers in ``record``.
    weight_column : str, optional
        Households (or people) per household point, e.g. for group quarters.
    region_path : str or os.PathLike, optional
        Study region (see :func:`read_region`), in the cases' CRS and unit.
    region_x, region_y : str, optional
        Vertex columns of a region CSV; default `x`, `y`.
    region_ring_column : str, default="ring"
        Ring column of a region CSV.

    Returns
    -------
    MaskingInputs

    Raises
    ------
    InputError
        Any problem :func:`~synthgeo.io.points.load_points` refuses (no CRS, NaN, text, ...), the
        two files in different CRSs, or a bad region.
    """
    cases_path, households_path = Path(cases_path), Path(households_path)
    given = None if crs is None else pyproj.CRS.from_user_input(crs)
    direct = given is not None and metric_problem(given) is None
    target: Any = given if direct else "utm"
    csv_options = {"x": x, "y": y, "crs": crs, "coord_unit_m": coord_unit_m, "sep": sep,
                   "decimal": decimal, "encoding": encoding, "thousands": thousands}
    # the cases get every option (load_points refuses CSV options on a layer); the households,
    # when they are a layer, carry their own CRS and unit
    cases = _working(_load(cases_path, query=cases_query, id_column=id_column,
                           target_crs=target, min_records=1,
                           accept_small_extent=accept_small_extent, study_area=study_area,
                           accept_offshore=accept_offshore, **csv_options))
    source_crs = pyproj.CRS.from_wkt(cases.attrs["source_crs"])
    scale = coordinate_unit(source_crs, coord_unit_m).scale_to_crs
    work = pyproj.CRS.from_user_input(cases.crs)
    same_file = households_path.resolve() == cases_path.resolve()
    households = _load(
        households_path, query=households_query, target_crs=work,
        id_column=id_column if same_file else None,
        numeric_columns=[weight_column] if weight_column else (), min_records=1,
        accept_small_extent=accept_small_extent, study_area=study_area,
        accept_offshore=accept_offshore,
        **(csv_options if households_path.suffix.lower() == ".csv" else {}))
    hsrc = pyproj.CRS.from_wkt(households.attrs["source_crs"])
    if not hsrc.equals(source_crs, ignore_axis_order=True):
        raise InputError(f"the cases are in {source_crs.name!r} but the households in "
                         f"{hsrc.name!r}; give both in the same CRS")
    weights = households[weight_column].to_numpy(float) if weight_column else None
    region = None
    if region_path is not None:
        region_src = read_region(region_path, crs=source_crs, x=region_x or x,
                                 y=region_y or y, coord_unit_m=scale, sep=sep,
                                 decimal=decimal, encoding=encoding, thousands=thousands,
                                 ring_column=region_ring_column)
        region = region_src if source_crs.equals(work, ignore_axis_order=True) else \
            geopandas.GeoSeries([region_src], crs=source_crs).to_crs(work).iloc[0]
    prov = {
        "cases": {"path": str(cases_path), "sha256": cases.attrs["sha256"],
                  "query": cases_query, "id_column": cases.attrs["id_column"],
                  "n_read": cases.attrs["n_read"], "n_cases": len(cases),
                  "n_sharing_a_location": int(cases.geometry.duplicated(keep=False).sum())},
        "households": {"path": str(households_path), "sha256": households.attrs["sha256"],
                       "query": households_query, "n_points": len(households),
                       "weight_column": weight_column,
                       "total_weight": float(weights.sum()) if weights is not None
                       else float(len(households))},
        "region": None if region_path is None else {
            "path": str(region_path), "sha256": file_sha256(region_path),
            "area_m2": float(region.area)},
        "coordinates": {"x": x, "y": y, "crs": None if crs is None else str(crs),
                        "coord_unit_m": scale, "unit": cases.attrs["coordinate_unit"],
                        "source_crs": source_crs.name,
                        "crs_used": work.name, "crs_used_wkt": work.to_wkt()},
    }
    return MaskingInputs(cases=cases, households=households, weights=weights, region=region,
                         source_crs=source_crs, coord_unit_m=scale,
                         provenance=prov, unit=cases.attrs["coordinate_unit"])
