"""The front door's points: :func:`read_points` from a file, :func:`check_points_frame` in memory.

Both give a GeoDataFrame in a projected CRS in metres, checked by the same code
(:func:`synthgeo.io.checks.check_points`), whose ``attrs`` carry its provenance
(:data:`synthgeo.io.provenance.INPUT_KEYS`, ``source_crs``, ``id_column``, ``coordinate_unit``,
``extent``, ``warnings``) and, after :func:`read_points`, the ``[data]`` keys it was read with
(``read_options``). A frame that still has the data :func:`read_points` returned (same
:func:`~synthgeo.io.provenance.frame_sha256`) keeps the file's path and hash; any change in
memory drops them, so a record never names a file the data no longer match.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import geopandas
import pyproj

from synthgeo._errors import InputError
from synthgeo.io import crs as crs_mod
from synthgeo.io import points as _points
from synthgeo.io import where
from synthgeo.io.checks import check_points
from synthgeo.io.columns import check_records
from synthgeo.io.origin import Origin
from synthgeo.io.paths import PACKAGE_PREFIX, resolve_input
from synthgeo.io.provenance import frame_sha256

__all__ = ["read_points", "check_points_frame", "read_options", "READ_KEYS"]

#: The ``[data]`` keys that say how a file is read (the others name the columns' roles).
READ_KEYS = ("path", "x", "y", "crs", "id", "query", "target_crs", "drop_duplicates",
             "coord_unit_m", "sep", "decimal", "thousands", "encoding", "accept_small_extent",
             "study_area", "accept_offshore")


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
    thousands: str | None = None,
    accept_small_extent: bool = False,
    numeric_columns: Sequence[str] = (),
    required_columns: Sequence[str] = (),
    land_checked: where.LandChecked | None = None,
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
    thousands : str, optional
        The CSV's thousands separator (``"."`` with decimal commas: ``1.234,5``); see
        :func:`~synthgeo.io.points.load_points`.
    accept_small_extent : bool, default=False
        Go on, with a coded warning, when many distinct locations span an implausibly small
        extent (otherwise refused as a likely unit error).
    numeric_columns, required_columns : sequence of str, default=()
        Columns that must be finite numbers / exist (checked again by
        :func:`synthgeo.synthesize` for the roles it is given).
    land_checked : synthgeo.io.where.LandChecked, optional
        A registered release's land/sea outcome for these file bytes (``synthgeo draw``):
        see :func:`~synthgeo.io.points.load_points`. Not a ``[data]`` key (not recorded).
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
                              encoding=encoding, thousands=thousands,
                              accept_small_extent=accept_small_extent,
                              numeric_columns=list(numeric_columns),
                              required_columns=list(required_columns),
                              land_checked=land_checked, **options)
    given = os.fspath(path)  # `synthgeo:NAME` kept as written; a relative path made absolute
    named = given if isinstance(given, str) and given.startswith(PACKAGE_PREFIX) else None
    read_options = {"path": named or os.fspath(file.absolute()), "x": x, "y": y, "crs": crs,
                    "id": id, "query": query, "target_crs": target_crs,
                    "drop_duplicates": drop_duplicates, "coord_unit_m": coord_unit_m,
                    "sep": sep, "decimal": decimal, "thousands": thousands,
                    "encoding": encoding,
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
    x: str | None = None,
    y: str | None = None,
    accept_small_extent: bool = False,
    study_area=None,
    accept_offshore: bool = False,
) -> geopandas.GeoDataFrame:
    """Check records handed over in memory and return a copy in metres with provenance.

    The checks a file gets from :func:`synthgeo.io.points.load_points`, by the same code
    (:func:`synthgeo.io.checks.check_points`; messages name "the GeoDataFrame"): columns,
    finite numbers, Point geometries, a CRS, unique ids, the unit stated by the name of an
    `x`/`y` column the geometry was built from, plausibility for the CRS (lon/lat range,
    projected bounds, area of use), exact duplicates, the small-extent rule. A frame already in
    a projected CRS in metres stays in it; any other is projected to `target_crs`. A frame that
    :func:`read_points` returned and that is unchanged (same
    :func:`~synthgeo.io.provenance.frame_sha256`) was checked when the file was read: it gets
    the column checks only and keeps the file's provenance. The input is never modified.

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
    x, y : str, optional
        Location columns released with the records (``[data] x``/``y``): they must exist, and
        one the geometry was built from must not state another unit in its name (``x_km``
        beside a geometry in metres).
    accept_small_extent : bool, default=False
        Go on, with a coded warning (``small_extent``, ``near_crs_origin``), when the points'
        extent is implausibly small (10–49 distinct locations under 100 m across, 50 or more
        under 1 km, or a median under 1 m apart) or every point lies within 10 km of an
        off-area CRS origin (otherwise refused as a likely unit error, e.g. km as metres).
    study_area : sequence of 4 numbers, str or os.PathLike, optional
        Declared study area (:func:`synthgeo.io.where.study_area`); any point outside it is
        refused.
    accept_offshore : bool, default=False
        Go on, with a coded warning (``offshore``), when more than half of the points lie
        over the sea (otherwise refused as a likely unit or axis error).

    Returns
    -------
    geopandas.GeoDataFrame
        Index 0..N-1; ``attrs`` as :func:`read_points` sets them. ``frame_sha256`` is the
        hash of `points` as given; ``path`` and ``sha256`` name the file only while `points`
        holds exactly the data :func:`read_points` returned, else they are None.
        ``source_crs`` and ``coordinate_unit`` are those a frame from :func:`read_points` was
        read with (its x/y columns keep the file's CRS and unit), else the frame's own CRS.

    Raises
    ------
    TypeError
        If `points` is not a GeoDataFrame.
    synthgeo.InputError
        No CRS; missing, non-point or non-finite geometries; repeated or missing columns;
        text, NaN or inf in a numeric column; missing or repeated ids; too few records;
        coordinates implausible for the CRS or an implausibly small extent (unless
        `accept_small_extent`); an `x`/`y` column stating another unit than the geometry's;
        a `target_crs` that is geographic, Web Mercator or not in metres.

    Warns
    -----
    UserWarning
        Exact duplicate rows (``exact_duplicates``, counted in ``n_duplicates``), and the other
        coded warnings of :func:`~synthgeo.io.points.load_points`, kept in ``attrs["warnings"]``.

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
    target, local = crs_mod.parse_target(target_crs)
    digest = frame_sha256(points)
    id_column = id_column or points.attrs.get("id_column")
    origin = Origin.memory()
    gdf = points.copy().reset_index(drop=True)
    gdf.attrs = {}
    columns = [id_column, x, y, *required_columns, *numeric_columns]
    if _unchanged(points, digest):  # checked as the file was read: columns only
        check_records(gdf, origin, columns=columns, numeric_columns=numeric_columns,
                      id_column=id_column)
        if len(gdf) < min_records:
            raise InputError(f"only {len(gdf)} record(s) in {origin.name}; `min_records` = "
                             f"{min_records} are needed")
        gdf.attrs.update(_file_provenance(points), id_column=id_column)
        return gdf
    source_crs, unit = _given_in(points)
    gdf = check_points(gdf, origin=origin, source_crs=source_crs, x=x, y=y,
                       numeric_columns=numeric_columns, required_columns=required_columns,
                       id_column=id_column, target=target, local=local, keep_metric=True,
                       min_records=min_records, accept_small_extent=accept_small_extent,
                       study_area=where.study_area(study_area),
                       accept_offshore=accept_offshore, too_few=f"in {origin.name}")
    gdf.attrs.update(path=None, sha256=None, n_read=len(points), query=None,
                     frame_sha256=digest, **({"coordinate_unit": unit} if unit else {}))
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


def _unchanged(points: geopandas.GeoDataFrame, digest: str) -> bool:
    """Whether `points` holds exactly what :func:`read_points` returned (`digest`: its hash)."""
    return points.attrs.get("read_options") is not None and \
        points.attrs.get("frame_sha256") == digest


def _file_provenance(points: geopandas.GeoDataFrame) -> dict[str, Any]:
    """Return the attrs :func:`read_points` recorded: the file's provenance and checks."""
    keys = ("path", "sha256", "n_read", "n_duplicates", "query", "frame_sha256", "source_crs",
            "id_column", "coordinate_unit", "warnings", "extent", "land", "read_options")
    out = {k: points.attrs.get(k) for k in keys}
    out["warnings"] = list(out["warnings"] or [])
    return out


def _given_in(points: geopandas.GeoDataFrame) -> tuple[pyproj.CRS, dict | None]:
    """Return the CRS the frame's coordinates were given in, and the unit of its x/y columns.

    A frame :func:`read_points` returned (then changed) keeps the file's: its geometry was
    projected from it, and its x/y columns are still in the file's CRS and unit. Any other
    frame: its own CRS (unit None: the CRS's).
    """
    wkt, unit = points.attrs.get("source_crs"), points.attrs.get("coordinate_unit")
    if wkt and unit:
        return pyproj.CRS.from_wkt(wkt), dict(unit)
    return pyproj.CRS.from_user_input(points.crs), None
