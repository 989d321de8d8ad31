"""Read a points file into a validated GeoDataFrame in a projected CRS measured in metres.

:func:`load_points` is the door every input goes through: it reads CSV, GeoPackage, shapefile,
GeoJSON or GeoParquet, filters rows, checks the columns the release needs and projects the points
to a local metric CRS. A layer without a CRS is refused (EPSG:4326 is never assumed) and Web
Mercator is never used: at latitude φ it reads a true distance d as d / cos φ.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import geopandas
import numpy as np
import pandas as pd
import pyproj

from synthgeo._errors import InputError
from synthgeo.io.provenance import file_sha256

__all__ = ["load_points", "check_projected", "coordinates_m"]

logger = logging.getLogger(__name__)

_VECTOR_SUFFIXES = {".gpkg", ".shp", ".geojson"}
_PARQUET_SUFFIXES = {".parquet", ".geoparquet"}
_SUFFIXES = sorted({".csv"} | _VECTOR_SUFFIXES | _PARQUET_SUFFIXES)
_METRE = {"metre", "meter"}
_WEB_MERCATOR_EPSG = {3857, 3785, 900913, 102100, 102113}
_N_SHOW = 5  # how many offending ids an error message lists


def _metric_problem(crs: pyproj.CRS) -> str | None:
    """Return why `crs` cannot be used for distances in metres, or None when it can."""
    op = crs.coordinate_operation
    text = f"{crs.name} {op.method_name if op else ''}".lower().replace("-", " ")
    if "pseudo mercator" in text or crs.to_epsg() in _WEB_MERCATOR_EPSG:
        return ("is Web Mercator, whose unit is a metre only at the equator: at latitude φ a "
                "true distance d reads as d / cos φ (x1.29 at 39°N), so radii and k are wrong")
    if crs.is_geographic:
        return "is geographic (degrees); distances need a projected CRS in metres"
    if not crs.is_projected:
        return "is not a projected CRS; distances need a projected CRS in metres"
    unit = crs.axis_info[0].unit_name if crs.axis_info else None
    if unit not in _METRE:
        return f"has axis unit {unit!r}, not metre"
    return None


def _parse_crs(value: Any, name: str) -> pyproj.CRS:
    try:
        return pyproj.CRS.from_user_input(value)
    except pyproj.exceptions.CRSError as exc:
        msg = f'`{name}` = {value!r} is not a CRS ({exc}); give a code such as "EPSG:32610"'
        raise InputError(msg) from exc


def _describe(crs: pyproj.CRS) -> str:
    epsg = crs.to_epsg()
    return f"{crs.name} (EPSG:{epsg})" if epsg else repr(crs.name)


def _where(frame: pd.DataFrame, mask: Any, id_column: str | None) -> str:
    """Name the first offending records: by id, or by 0-based data row in the file."""
    rows = frame.index[np.asarray(mask, dtype=bool)]
    more = ", ..." if len(rows) > _N_SHOW else ""
    if id_column is not None:
        return f"`{id_column}` {frame.loc[rows[:_N_SHOW], id_column].tolist()}{more}"
    return f"data rows {rows[:_N_SHOW].tolist()}{more} (0-based, header excluded)"


def _check_columns(frame: pd.DataFrame, columns: list[str], path: Path) -> None:
    missing = [c for c in dict.fromkeys(columns) if c not in frame.columns]
    if missing:
        raise InputError(f"column(s) {missing} not found in {path.name}; available columns: "
                         f"{[str(c) for c in frame.columns]} (names are case-sensitive)")


def _as_numbers(frame: pd.DataFrame, column: str, id_column: str | None, what: str) -> np.ndarray:
    """Return `column` as finite float64, or raise naming the offending rows."""
    series = frame[column]
    values = pd.to_numeric(series, errors="coerce")
    text = values.isna() & series.notna()
    if text.any():
        raise InputError(f"{what} column `{column}` holds text that is not a number: "
                         f"{series[text].head(_N_SHOW).tolist()!r} at "
                         f"{_where(frame, text, id_column)}; clean these values in the input file")
    array = values.to_numpy(dtype="float64", na_value=np.nan)
    for bad, kind in ((np.isnan(array), "missing (NaN)"), (np.isinf(array), "infinite")):
        if bad.any():
            raise InputError(f"{what} column `{column}` has {int(bad.sum())} {kind} value(s) at "
                             f"{_where(frame, bad, id_column)}; fix them, or drop via `query`")
    return array


def _read(path: Path, x: str | None, y: str | None, crs: Any) -> tuple[pd.DataFrame, pyproj.CRS]:
    suffix = path.suffix.lower()
    given = None if crs is None else _parse_crs(crs, "crs")
    if suffix == ".csv":
        if x is None or y is None:
            raise InputError(f"a CSV input needs `x` and `y` column names, got x={x!r}, y={y!r}")
        if given is None:
            raise InputError(f"the CSV {path.name} has no CRS: set `crs` in the spec (or "
                             "`--crs` on the command line) to the CRS of its `x`/`y` columns, "
                             'e.g. "EPSG:4326" for longitude/latitude')
        try:
            return pd.read_csv(path), given
        except (ValueError, UnicodeDecodeError) as exc:
            raise InputError(f"could not read the CSV {path.name}: {exc}") from exc
    if suffix not in _VECTOR_SUFFIXES | _PARQUET_SUFFIXES:
        raise InputError(f"input file {path.name} has suffix {suffix!r}; supported: {_SUFFIXES}")
    if x is not None or y is not None:
        raise InputError(f"`x`/`y` ({x!r}, {y!r}) apply to CSV only; {path.name} has a geometry")
    try:
        parquet = suffix in _PARQUET_SUFFIXES
        gdf = geopandas.read_parquet(path) if parquet else geopandas.read_file(path)
    except Exception as exc:  # the readers raise many types (pyogrio, pyarrow, ValueError)
        raise InputError(f"could not read {path.name} as a spatial layer: {exc}") from exc
    if gdf.crs is None:
        if given is None:
            raise InputError(f"{path.name} has no CRS and `crs` is not set: set `crs` in the "
                             "spec (or `--crs`) to the CRS the coordinates are in (EPSG:4326 "
                             "is never assumed)")
        return gdf.set_crs(given), given
    file_crs = pyproj.CRS.from_user_input(gdf.crs)
    if given is not None and not file_crs.equals(given, ignore_axis_order=True):
        raise InputError(f"`crs` = {crs!r} ({_describe(given)}) conflicts with the CRS stored in "
                         f"{path.name}: {_describe(file_crs)}; remove `crs` from the spec")
    return gdf, file_crs


def load_points(
    path: str | os.PathLike,
    *,
    x: str | None = None,
    y: str | None = None,
    crs: str | int | None = None,
    numeric_columns: Sequence[str] = (),
    required_columns: Sequence[str] = (),
    id_column: str | None = None,
    query: str | None = None,
    target_crs: str | int = "utm",
    drop_duplicates: bool = False,
    min_records: int = 10,
    coord_unit_m: float = 1.0,
) -> geopandas.GeoDataFrame:
    """Read a points file, validate it and project it to a CRS in metres.

    Parameters
    ----------
    path : str or os.PathLike
        Input file: ``.csv``, ``.gpkg``, ``.shp``, ``.geojson``, ``.parquet`` or ``.geoparquet``.
        It is only read.
    x, y : str, optional
        CSV only: names of the x (longitude/easting) and y (latitude/northing) columns.
    crs : str or int, optional
        CRS of the coordinates when the file stores none (always required for CSV), e.g.
        ``"EPSG:4326"``. For a file with its own CRS it must agree with it.
    numeric_columns : sequence of str, default=()
        Columns that must exist, be numeric and hold no NaN or infinite values.
    required_columns : sequence of str, default=()
        Columns that must exist (any dtype).
    id_column : str, optional
        Record id column; must exist and hold unique, non-missing values. When None a column
        ``"record"`` with ids 0..N-1 is created.
    query : str, optional
        :meth:`pandas.DataFrame.query` expression applied after reading and before the checks,
        e.g. ``"beds == 2"``.
    target_crs : str or int, default="utm"
        ``"utm"`` uses :meth:`geopandas.GeoDataFrame.estimate_utm_crs` of the data (with a
        warning when it spans more than one zone); ``"local"`` does the same within one zone
        and otherwise uses an azimuthal equidistant projection centred on the data (spec:
        anonymity.md, "Distances and CRS"); otherwise any projected CRS whose axis unit is the
        metre (never Web Mercator).
    drop_duplicates : bool, default=False
        Drop exact duplicate rows (same location and all columns but the id equal), keeping the
        first. They are reported with a warning either way.
    min_records : int, default=10
        Fewest records allowed after `query` and duplicate removal.
    coord_unit_m : float, default=1.0
        CSV only: metres per unit of the `x`/`y` columns, for a file that stores the
        coordinates of a metre-based projected `crs` in another unit. The columns are multiplied
        by it before `crs` is applied, e.g. ``1000`` for a file in kilometres on the British
        National Grid (``crs="EPSG:27700"``). The input columns themselves are kept unscaled.

    Returns
    -------
    geopandas.GeoDataFrame
        One Point per record in `target_crs` (coordinates in metres), index 0..N-1, all input
        columns kept plus the id column. ``attrs`` holds ``"source_crs"`` (WKT of the input CRS),
        ``"sha256"`` (hex digest of the file bytes; the ``.shp`` for a shapefile), ``"n_read"``
        (rows before `query`), ``"n_duplicates"`` (exact duplicate rows found) and
        ``"id_column"``.

    Raises
    ------
    InputError
        Missing file or column; text, NaN or inf in coordinates or `numeric_columns`; lon/lat
        out of range; missing or conflicting CRS; non-point geometry; duplicate ids; bad `query`;
        fewer than `min_records` records; `target_crs` geographic, Web Mercator or not metres;
        `coord_unit_m` not a positive number, or other than 1 for a non-CSV file or a geographic
        or non-metre `crs`.

    Warns
    -----
    UserWarning
        When exact duplicate rows are found, or when geographic data span more than one UTM
        zone (distances at the edges of the zone are then less accurate).
    """
    column_args = {"numeric_columns": numeric_columns, "required_columns": required_columns}
    for name, cols in column_args.items():
        if isinstance(cols, str):
            raise TypeError(f"`{name}` must be a list of column names, got the string {cols!r}")
    if isinstance(min_records, bool) or not isinstance(min_records, int) or min_records < 1:
        raise InputError(f"`min_records` must be a positive integer, got {min_records!r}")
    if (isinstance(coord_unit_m, bool) or not isinstance(coord_unit_m, int | float)
            or not np.isfinite(coord_unit_m) or coord_unit_m <= 0):
        raise InputError(f"`coord_unit_m` must be a positive number of metres per coordinate "
                         f"unit (1000 for kilometres), got {coord_unit_m!r}")
    target = None
    local = isinstance(target_crs, str) and target_crs.lower() == "local"
    if not (isinstance(target_crs, str) and target_crs.lower() in ("utm", "local")):
        target = _parse_crs(target_crs, "target_crs")
        if problem := _metric_problem(target):
            msg = f'`target_crs` = {target_crs!r} {problem}; use "utm" or a local metric CRS'
            raise InputError(msg)

    path = Path(path)
    if not path.is_file():
        raise InputError(f"input file {path!s} does not exist")
    digest = file_sha256(path)
    frame, source_crs = _read(path, x, y, crs)
    is_csv = not isinstance(frame, geopandas.GeoDataFrame)
    if coord_unit_m != 1:
        if not is_csv:
            raise InputError(f"`coord_unit_m` = {coord_unit_m!r} applies to CSV x/y columns only; "
                             f"{path.name} has a geometry whose CRS defines its unit")
        if problem := _metric_problem(source_crs):
            raise InputError(f"`coord_unit_m` = {coord_unit_m!r} rescales coordinates to metres, "
                             f"but `crs` {_describe(source_crs)} {problem}; give a projected "
                             "`crs` in metres")
    n_read = len(frame)
    logger.info("read %d rows from %s", n_read, path)

    if query is not None:
        try:
            frame = frame.query(query)
        except Exception as exc:  # pandas raises many types for a bad expression
            raise InputError(f"`query` = {query!r} failed: {type(exc).__name__}: {exc}") from exc
        logger.info("query %r kept %d of %d rows", query, len(frame), n_read)

    extra = [c for c in (id_column, x, y) if c is not None]
    _check_columns(frame, [*extra, *required_columns, *numeric_columns], path)
    if id_column is None and "record" in frame.columns:
        raise InputError(f'{path.name} already has a column "record": set `id_column = "record"` '
                         "if it is the record id, or rename it")
    if id_column is not None:
        ids = frame[id_column]
        if ids.isna().any():
            raise InputError(f"id column `{id_column}` has {int(ids.isna().sum())} missing values")
        if (repeated := ids.duplicated(keep=False)).any():
            shown = ids[repeated].unique()[:_N_SHOW].tolist()
            raise InputError(f"id column `{id_column}` is not unique: {shown} appear twice or more")

    if is_csv:
        xy = np.column_stack([_as_numbers(frame, c, id_column, "coordinate") for c in extra[-2:]])
        if coord_unit_m != 1:
            xy = xy * float(coord_unit_m)
    else:
        geom = frame.geometry
        if (bad := geom.isna() | geom.is_empty).any():
            raise InputError(f"{int(bad.sum())} record(s) have a missing or empty geometry at "
                             f"{_where(frame, bad, id_column)}; drop them or fix the file")
        if (kinds := set(geom.geom_type)) != {"Point"}:
            raise InputError(f"{path.name} holds {sorted(kinds)} geometries; only Point is "
                             "accepted (explode MultiPoints, or take centroids deliberately)")
        xy = np.column_stack([geom.x.to_numpy(float), geom.y.to_numpy(float)])
        if (inf := ~np.isfinite(xy).all(axis=1)).any():
            raise InputError(f"non-finite coordinates at {_where(frame, inf, id_column)}")
    if source_crs.is_geographic:
        for axis, name, limit in ((0, "longitude", 180.0), (1, "latitude", 90.0)):
            out = np.abs(xy[:, axis]) > limit
            if out.any():
                label = f"column `{(x, y)[axis]}`" if is_csv else "geometry"
                raise InputError(
                    f"{name} ({label}) outside [-{limit:g}, {limit:g}] in {_describe(source_crs)}: "
                    f"{xy[out, axis][:_N_SHOW].tolist()} at {_where(frame, out, id_column)}; "
                    "check that `x`/`y` are not swapped and that `crs` is right"
                )
    for column in numeric_columns:
        values = _as_numbers(frame, column, id_column, "numeric")
        if not pd.api.types.is_numeric_dtype(frame[column]):  # keep int columns int
            frame[column] = values

    geometry_name = None if is_csv else frame.geometry.name
    key = frame.drop(columns=[c for c in (id_column, geometry_name) if c is not None])
    key = key.assign(__x=xy[:, 0], __y=xy[:, 1])
    try:
        duplicated = key.duplicated(keep="first").to_numpy()
    except TypeError:  # unhashable cell values (lists): compare their text
        duplicated = key.astype(str).duplicated(keep="first").to_numpy()
    n_duplicates = int(duplicated.sum())
    if n_duplicates:
        action = "dropped" if drop_duplicates else "kept; set `drop_duplicates = true` to drop them"
        msg = (f"{n_duplicates} exact duplicate row(s) in {path.name} (same location and values "
               f"as an earlier row, e.g. {_where(frame, duplicated, id_column)}): {action}")
        warnings.warn(msg, UserWarning, stacklevel=2)

    gdf = frame
    if is_csv:
        points = geopandas.points_from_xy(xy[:, 0], xy[:, 1], crs=source_crs)
        gdf = geopandas.GeoDataFrame(frame, geometry=points, crs=source_crs)
    if drop_duplicates and n_duplicates:
        gdf = gdf.loc[~duplicated]
        xy = xy[~duplicated]
    if len(gdf) < min_records:
        raise InputError(f"only {len(gdf)} record(s) left after `query` = {query!r} and duplicate "
                         f"removal (read {n_read}); `min_records` = {min_records} are needed")
    gdf = gdf.reset_index(drop=True)
    if id_column is None:
        id_column = "record"
        gdf.insert(0, id_column, np.arange(len(gdf)))

    try:
        if target is None and local:
            target = _local_crs(gdf)
        if target is None:
            target = pyproj.CRS.from_user_input(gdf.estimate_utm_crs())
            if source_crs.is_geographic and (span := float(np.ptp(xy[:, 0]))) > 6.0:
                msg = (f"the points span {span:.1f}° of longitude, more than one UTM zone, so "
                       f"{_describe(target)} distorts distances far from its zone; consider an "
                       "azimuthal equidistant `target_crs` centred on the data "
                       "(+proj=aeqd +units=m)")
                warnings.warn(msg, UserWarning, stacklevel=2)
        gdf = gdf.to_crs(target)
    except (RuntimeError, pyproj.exceptions.ProjError) as exc:
        raise InputError(f"cannot project the points from {_describe(source_crs)} to a metric "
                         f"CRS ({exc}); give the 2-D CRS of the coordinates (e.g. EPSG:4326 for "
                         "lon/lat degrees, or a projected CRS in metres)") from exc
    _warn_implausible(gdf, xy, source_crs)
    logger.info("projected %d points to %s", len(gdf), _describe(target))
    gdf.attrs.update(source_crs=source_crs.to_wkt(), sha256=digest, n_read=n_read,
                     n_duplicates=n_duplicates, id_column=id_column)
    return gdf


def _warn_implausible(gdf: geopandas.GeoDataFrame, xy: np.ndarray, source_crs) -> None:
    """Warn when coordinates and CRS look mismatched (degrees labelled as a metre CRS)."""
    out = np.column_stack([gdf.geometry.x.to_numpy(), gdf.geometry.y.to_numpy()])
    if len(out) < 2 or not np.isfinite(out).all():
        return
    extent = float(np.hypot(*np.ptp(out, axis=0)))
    distinct = len(np.unique(out, axis=0)) > 1
    looks_like_degrees = (not source_crs.is_geographic and np.all(np.abs(xy[:, 0]) <= 180)
                          and np.all(np.abs(xy[:, 1]) <= 90))
    if distinct and (extent < 1.0 or looks_like_degrees):
        warnings.warn(
            f"the {len(out)} points span only {extent:.3g} m after projection from "
            f"{_describe(source_crs)}, and their coordinates lie within ±180/±90: are they "
            "lon/lat degrees labelled with a metre CRS? Distances (and every k) would be wrong"
            if looks_like_degrees else
            f"the {len(out)} distinct points span only {extent:.3g} m: check the CRS given for "
            "the coordinates", UserWarning, stacklevel=3)


def _local_crs(gdf: geopandas.GeoDataFrame) -> pyproj.CRS:
    """Return the UTM zone of the data, or an azimuthal equidistant CRS centred on it.

    The equidistant projection is used when the data span more than 6° of longitude (one UTM
    zone), measured across the antimeridian when that is shorter.
    """
    lonlat = gdf.geometry.to_crs(4326)
    lon, lat = lonlat.x.to_numpy(), lonlat.y.to_numpy()
    if float(np.ptp(lon)) > 180.0:  # e.g. the Pacific: measure in [0, 360)
        lon = np.mod(lon, 360.0)
    if float(np.ptp(lon)) <= 6.0:
        return pyproj.CRS.from_user_input(gdf.estimate_utm_crs())
    lon0 = (float(lon.min()) + float(lon.max())) / 2
    lon0 = lon0 - 360.0 if lon0 > 180.0 else lon0
    lat0 = (float(lat.min()) + float(lat.max())) / 2
    return pyproj.CRS.from_proj4(f"+proj=aeqd +lat_0={lat0:.6f} +lon_0={lon0:.6f} "
                                 "+datum=WGS84 +units=m +no_defs")


def check_projected(gdf: geopandas.GeoDataFrame | geopandas.GeoSeries) -> pyproj.CRS:
    """Check that `gdf` is in a projected CRS whose unit is the metre.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame or geopandas.GeoSeries
        Layer about to be used for distances.

    Returns
    -------
    pyproj.CRS
        The CRS of `gdf`.

    Raises
    ------
    TypeError
        If `gdf` is not a GeoDataFrame or GeoSeries.
    InputError
        If the CRS is missing, geographic, Web Mercator or not in metres.
    """
    if not isinstance(gdf, geopandas.GeoDataFrame | geopandas.GeoSeries):
        raise TypeError(f"expected a GeoDataFrame or GeoSeries, got {type(gdf).__name__}")
    if gdf.crs is None:
        raise InputError("the layer has no CRS, so distances are meaningless; set the CRS the "
                         "coordinates are in with `gdf.set_crs(...)` (never assume EPSG:4326)")
    crs = pyproj.CRS.from_user_input(gdf.crs)
    if problem := _metric_problem(crs):
        raise InputError(f"the layer's CRS {_describe(crs)} {problem}; project it first, e.g. "
                         "`gdf.to_crs(gdf.estimate_utm_crs())`")
    return crs


def coordinates_m(gdf: geopandas.GeoDataFrame | geopandas.GeoSeries) -> np.ndarray:
    """Return the point coordinates in metres.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame or geopandas.GeoSeries
        Points in a projected CRS in metres (see :func:`check_projected`).

    Returns
    -------
    ndarray of shape (n_records, 2)
        float64 easting ``x`` and northing ``y`` in metres, in row order.

    Raises
    ------
    TypeError
        If `gdf` is not a GeoDataFrame or GeoSeries.
    InputError
        If the CRS is unusable (see :func:`check_projected`) or a geometry is not a Point.
    """
    check_projected(gdf)
    geom = gdf.geometry if isinstance(gdf, geopandas.GeoDataFrame) else gdf
    bad = geom.isna().to_numpy() | geom.is_empty.to_numpy() | (geom.geom_type != "Point").to_numpy()
    if bad.any():
        raise InputError(f"{int(bad.sum())} geometries are not non-empty Points, e.g. at index "
                         f"{geom.index[bad][:_N_SHOW].tolist()}")
    return np.column_stack([geom.x.to_numpy(dtype="float64"), geom.y.to_numpy(dtype="float64")])
