"""The front door's points: :func:`read_points` from a file, :func:`check_points_frame` in memory.

Both give a GeoDataFrame in a projected CRS in metres whose ``attrs`` carry its provenance
(:data:`synthgeo.io.provenance.INPUT_KEYS`, ``source_crs``, ``id_column``) and, after
:func:`read_points`, the ``[data]`` keys it was read with (``read_options``). A frame that
still has the data :func:`read_points` returned (same :func:`~synthgeo.io.provenance.frame_sha256`)
keeps the file's path and hash; any change in memory drops them, so a record never names a file
the data no longer match.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

import geopandas
import numpy as np
import pandas as pd
import pyproj

from synthgeo._errors import InputError
from synthgeo.io import columns
from synthgeo.io import crs as crs_mod
from synthgeo.io import points as _points
from synthgeo.io.paths import PACKAGE_PREFIX, resolve_input
from synthgeo.io.provenance import frame_sha256
from synthgeo.io.units import coordinate_unit

__all__ = ["read_points", "check_points_frame", "read_options", "READ_KEYS"]

#: The ``[data]`` keys that say how a file is read (the others name the columns' roles).
READ_KEYS = ("path", "x", "y", "crs", "id", "query", "target_crs", "drop_duplicates",
             "coord_unit_m", "sep", "decimal", "encoding", "accept_small_extent")


def read_points(
    path: str | os.PathLike,
    *,
    x: str | None = None,
    y: str | None = None,
    crs: str | int | None = None,
    id: str | None = None,  # noqa: A002 - the `[data]` key's name
    query: str | None = None,
    target_crs: str | int = "utm",
    drop_duplicates: bool = False,
    coord_unit_m: float | None = None,
    sep: str = ",",
    decimal: str = ".",
    encoding: str = "utf-8",
    accept_small_extent: bool = False,
    numeric_columns: Sequence[str] = (),
    required_columns: Sequence[str] = (),
    **options: Any,
) -> geopandas.GeoDataFrame:
    """Read a points file into a GeoDataFrame in metres, with the keys of a spec's ``[data]``.

    A thin layer over :func:`synthgeo.io.points.load_points` that remembers how the file was
    read, so that :func:`synthgeo.synthesize` on the result writes the same release as
    :func:`synthgeo.run` on a spec with these ``[data]`` keys.

    Parameters
    ----------
    path : str or os.PathLike
        CSV, GeoPackage, shapefile, GeoJSON or GeoParquet; ``synthgeo:NAME`` for a file
        shipped in the package. Only read.
    x, y : str, optional
        CSV only: coordinate columns (longitude/easting, latitude/northing).
    crs : str or int, optional
        CRS of the coordinates (required for CSV, e.g. ``"EPSG:4326"``).
    id : str, optional
        Unique record id column (default: a column ``record`` = 0..N-1).
    query : str, optional
        :meth:`pandas.DataFrame.query` selecting records, e.g. ``"beds == 2"``.
    target_crs : str or int, default="utm"
        Projected CRS in metres for distances (``"utm"``, ``"local"`` or a CRS).
    drop_duplicates : bool, default=False
        Drop exact duplicate rows (they are reported with a warning either way).
    coord_unit_m : float, optional
        Metres per unit of the x/y columns (1000 for kilometres); default: the CRS's unit
        (docs/locations.md, "Units and plausibility").
    sep, decimal, encoding : str, default=",", ".", "utf-8"
        How a CSV is written (``";"`` and ``","`` for a European spreadsheet export).
    accept_small_extent : bool, default=False
        Go on, with a coded warning, when many distinct locations span an implausibly small
        extent (otherwise refused as a likely unit error).
    numeric_columns, required_columns : sequence of str, default=()
        Columns that must be finite numbers / exist (checked again by
        :func:`synthgeo.synthesize` for the roles it is given).
    **options
        Further :func:`~synthgeo.io.points.load_points` arguments (e.g. ``coord_unit_m``).

    Returns
    -------
    geopandas.GeoDataFrame
        Points in `target_crs` (metres), index 0..N-1, every input column kept plus the id.
        ``attrs``: ``path``, ``sha256`` (file bytes), ``n_read``, ``n_duplicates``, ``query``,
        ``frame_sha256`` (:func:`synthgeo.io.provenance.frame_sha256` of this frame),
        ``source_crs``, ``id_column`` and ``read_options`` (the ``[data]`` keys above).

    Raises
    ------
    synthgeo.InputError
        As :func:`synthgeo.io.points.load_points` (missing file or column, text or NaN in
        numbers, no CRS, a geographic or Web Mercator `target_crs`, ...).

    Examples
    --------
    >>> import warnings, synthgeo as sg
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # the file's one known duplicate sale
    ...     pts = sg.read_points("synthgeo:sacramento_home_sales.csv", x="lon", y="lat",
    ...                          crs="EPSG:4326", id="id", query="beds == 2")
    >>> len(pts), pts.crs.name, pts.attrs["n_read"]
    (140, 'WGS 84 / UTM zone 10N', 932)
    """
    file = resolve_input(path)
    gdf = _points.load_points(file, x=x, y=y, crs=crs, id_column=id, query=query,
                              target_crs=target_crs, drop_duplicates=drop_duplicates,
                              coord_unit_m=coord_unit_m, sep=sep, decimal=decimal,
                              encoding=encoding, accept_small_extent=accept_small_extent,
                              numeric_columns=list(numeric_columns),
                              required_columns=list(required_columns), **options)
    given = os.fspath(path)  # `synthgeo:NAME` kept as written; a relative path made absolute
    named = given if isinstance(given, str) and given.startswith(PACKAGE_PREFIX) else None
    read_options = {"path": named or os.fspath(file.absolute()), "x": x, "y": y, "crs": crs,
                    "id": id, "query": query, "target_crs": target_crs,
                    "drop_duplicates": drop_duplicates, "coord_unit_m": coord_unit_m,
                    "sep": sep, "decimal": decimal, "encoding": encoding,
                    "accept_small_extent": accept_small_extent, **options}
    gdf.attrs.update(path=os.fspath(file.absolute()), query=query, read_options=read_options)
    gdf.attrs["frame_sha256"] = frame_sha256(gdf)
    return gdf


def check_points_frame(
    points: geopandas.GeoDataFrame,
    *,
    numeric_columns: Sequence[str] = (),
    required_columns: Sequence[str] = (),
    id_column: str | None = None,
    target_crs: str | int = "utm",
    min_records: int = 10,
) -> geopandas.GeoDataFrame:
    """Check records handed over in memory and return a copy in metres with provenance.

    The checks of :func:`synthgeo.io.points.load_points` for a GeoDataFrame (columns, finite
    numbers, points, a CRS, unique ids, exact duplicates); a frame not in metres is projected
    to `target_crs`. The input is never modified.

    Parameters
    ----------
    points : geopandas.GeoDataFrame
        One Point per record, with a CRS.
    numeric_columns, required_columns : sequence of str, default=()
        Columns that must be finite numbers / must exist.
    id_column : str, optional
        Unique record id column; default ``attrs["id_column"]`` (set by
        :func:`read_points`), else a new column ``record`` = 0..N-1.
    target_crs : str or int, default="utm"
        Used only when the frame is not in metres (``"utm"``, ``"local"`` or a CRS).
    min_records : int, default=10

    Returns
    -------
    geopandas.GeoDataFrame
        Index 0..N-1; ``attrs`` as :func:`read_points` sets them. ``frame_sha256`` is the
        hash of `points` as given; ``path`` and ``sha256`` name the file only while `points`
        holds exactly the data :func:`read_points` returned, else they are None.

    Raises
    ------
    TypeError
        If `points` is not a GeoDataFrame.
    synthgeo.InputError
        No CRS; missing, non-point or non-finite geometries; a missing column; text, NaN or
        inf in a numeric column; missing or repeated ids; too few records.

    Warns
    -----
    UserWarning
        Exact duplicate rows (same location and values), counted in ``n_duplicates``.

    Examples
    --------
    >>> import geopandas
    >>> pts = geopandas.GeoDataFrame(
    ...     {"price": [1.0, 2.0, 3.0]},
    ...     geometry=geopandas.points_from_xy([-121.5, -121.4, -121.3], [38.5, 38.6, 38.7]),
    ...     crs="EPSG:4326")
    >>> out = check_points_frame(pts, numeric_columns=["price"], min_records=3)
    >>> out.crs.name, out.attrs["id_column"], out.attrs["path"]
    ('WGS 84 / UTM zone 10N', 'record', None)
    """
    if not isinstance(points, geopandas.GeoDataFrame):
        raise TypeError(
            f"`points` must be a geopandas.GeoDataFrame, got {type(points).__name__}; build one "
            "with geopandas.GeoDataFrame(df, geometry=geopandas.points_from_xy(df.lon, df.lat), "
            'crs="EPSG:4326"), or read a file with synthgeo.read_points')
    if points.crs is None:
        raise InputError("the GeoDataFrame has no CRS: set the CRS its coordinates are in with "
                         "`gdf.set_crs(...)` (EPSG:4326 is never assumed)")
    attrs = _provenance_attrs(points, frame_sha256(points))
    id_column = id_column or attrs.get("id_column")
    _check_columns(points, [*required_columns, *numeric_columns, id_column])
    gdf = points.copy()
    gdf.attrs = {}
    _check_geometry(gdf, id_column)
    for column in numeric_columns:
        values = columns.as_numbers(gdf, column, id_column, "numeric")
        if not pd.api.types.is_numeric_dtype(gdf[column]):
            gdf[column] = values
    if len(gdf) < min_records:
        raise InputError(f"only {len(gdf)} record(s) in the GeoDataFrame; `min_records` = "
                         f"{min_records} are needed")
    gdf = gdf.reset_index(drop=True)
    id_column = _check_ids(gdf, id_column)
    if attrs.get("n_duplicates") is None:
        attrs["n_duplicates"] = _count_duplicates(gdf, id_column)
    gdf = _to_metres(gdf, target_crs)
    gdf.attrs.update(attrs, id_column=id_column)
    return gdf


def read_options(points: geopandas.GeoDataFrame) -> dict[str, Any] | None:
    """Return the ``[data]`` keys `points` was read with, or None once its data have changed.

    Parameters
    ----------
    points : geopandas.GeoDataFrame

    Returns
    -------
    dict or None
        ``attrs["read_options"]`` of a frame from :func:`read_points` whose
        :func:`~synthgeo.io.provenance.frame_sha256` is still the one recorded there; None for
        a frame built in memory or changed since (rows filtered, values edited, reprojected).

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # the file's one known duplicate sale
    ...     pts = read_points("synthgeo:sacramento_home_sales.csv", x="lon", y="lat",
    ...                       crs="EPSG:4326", query="beds == 2")
    >>> read_options(pts)["query"]
    'beds == 2'
    >>> read_options(pts[pts["sqft_living"] > 1000]) is None
    True
    """
    opts = points.attrs.get("read_options")
    if opts is None or points.attrs.get("frame_sha256") != frame_sha256(points):
        return None
    return dict(opts)


def _provenance_attrs(points: geopandas.GeoDataFrame, digest: str) -> dict[str, Any]:
    """Provenance for `points`: the file's while the data are unchanged since read_points."""
    a = points.attrs
    source = a.get("source_crs") or pyproj.CRS.from_user_input(points.crs).to_wkt()
    unit = a.get("coordinate_unit") or coordinate_unit(pyproj.CRS.from_wkt(source), None).to_dict()
    out = {"path": None, "sha256": None, "n_read": len(points), "n_duplicates": None,
           "query": None, "frame_sha256": digest, "source_crs": source,
           "id_column": a.get("id_column"), "coordinate_unit": unit,
           "warnings": list(a.get("warnings", [])), "extent": None}
    if a.get("frame_sha256") == digest:  # exactly what read_points returned
        out.update({k: a.get(k) for k in ("path", "sha256", "n_read", "n_duplicates", "query",
                                          "extent")})
        out["read_options"] = a.get("read_options")
    return out


def _check_columns(points: geopandas.GeoDataFrame, columns: list[str | None]) -> None:
    missing = [c for c in dict.fromkeys(columns) if c is not None and c not in points.columns]
    if missing:
        raise InputError(f"column(s) {missing} not found in the GeoDataFrame; available "
                         f"columns: {[str(c) for c in points.columns]} (names are case-sensitive)")


def _check_geometry(gdf: geopandas.GeoDataFrame, id_column: str | None) -> None:
    geom = gdf.geometry
    if (bad := geom.isna() | geom.is_empty).any():
        raise InputError(f"{int(bad.sum())} record(s) have a missing or empty geometry at "
                         f"{columns.where(gdf, bad, id_column)}; drop them first")
    if (kinds := set(geom.geom_type)) != {"Point"}:
        raise InputError(f"the GeoDataFrame holds {sorted(kinds)} geometries; only Point is "
                         "accepted (explode MultiPoints, or take centroids deliberately)")
    xy = np.column_stack([geom.x.to_numpy(float), geom.y.to_numpy(float)])
    if (inf := ~np.isfinite(xy).all(axis=1)).any():
        raise InputError(f"non-finite coordinates at {columns.where(gdf, inf, id_column)}")


def _check_ids(gdf: geopandas.GeoDataFrame, id_column: str | None) -> str:
    """Return the id column, refusing missing or repeated ids; add ``record`` when None."""
    if id_column is None:
        if "record" in gdf.columns:
            raise InputError('the GeoDataFrame already has a column "record": pass '
                             '`id="record"` if it is the record id, or rename it')
        gdf.insert(0, "record", np.arange(len(gdf)))
        return "record"
    ids = gdf[id_column]
    if ids.isna().any():
        raise InputError(f"id column `{id_column}` has {int(ids.isna().sum())} missing values")
    if (repeated := ids.duplicated(keep=False)).any():
        shown = ids[repeated].unique()[:5].tolist()
        raise InputError(f"id column `{id_column}` is not unique: {shown} appear twice or more")
    return id_column


def _count_duplicates(gdf: geopandas.GeoDataFrame, id_column: str) -> int:
    """Count (and warn about) rows equal to an earlier one in location and every value."""
    key = pd.DataFrame(gdf.drop(columns=[id_column, gdf.geometry.name]))
    key = key.assign(__x=gdf.geometry.x.to_numpy(), __y=gdf.geometry.y.to_numpy())
    try:
        duplicated = key.duplicated(keep="first").to_numpy()
    except TypeError:  # unhashable cell values (lists): compare their text
        duplicated = key.astype(str).duplicated(keep="first").to_numpy()
    n = int(duplicated.sum())
    if n:
        warnings.warn(f"{n} exact duplicate row(s) in the GeoDataFrame (same location and values "
                      f"as an earlier row, e.g. {columns.where(gdf, duplicated, id_column)}): "
                      "kept; drop them first if they are not real records",
                      UserWarning, stacklevel=3)
    return n


def _to_metres(gdf: geopandas.GeoDataFrame, target_crs: str | int) -> geopandas.GeoDataFrame:
    """Keep a frame in a projected metric CRS; project any other to `target_crs`."""
    crs = pyproj.CRS.from_user_input(gdf.crs)
    if crs_mod.metric_problem(crs) is None:
        return gdf
    try:
        if isinstance(target_crs, str) and target_crs.lower() == "local":
            target = crs_mod.local_crs(gdf)
        elif isinstance(target_crs, str) and target_crs.lower() == "utm":
            target = pyproj.CRS.from_user_input(gdf.estimate_utm_crs())
        else:
            target = crs_mod.parse_crs(target_crs, "target_crs")
            if problem := crs_mod.metric_problem(target):
                raise InputError(f"`target_crs` = {target_crs!r} {problem}; use \"utm\" or a "
                                 "local metric CRS")
        return gdf.to_crs(target)
    except (RuntimeError, pyproj.exceptions.ProjError) as exc:
        raise InputError(f"cannot project the points from {crs_mod.describe(crs)} to a metric "
                         f"CRS ({exc}); set the right CRS with `gdf.set_crs(...)`") from exc
