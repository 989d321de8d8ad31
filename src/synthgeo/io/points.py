"""Read a points file into a validated GeoDataFrame in a projected CRS measured in metres.

:func:`load_points` is the door every file goes through (every command and the spec): it reads
CSV (separator, decimal mark, encoding), GeoPackage, shapefile, GeoJSON or GeoParquet
(:mod:`synthgeo.io.files`) and filters rows (steps 1–2 of the input pass, :mod:`synthgeo.io`);
:func:`synthgeo.io.checks.check_points`, the checks a GeoDataFrame handed over in memory gets
too, does the rest (columns, units, plausibility, duplicates, projection, extent). A layer
without a CRS is refused (EPSG:4326 is never assumed) and Web Mercator is never used for
distances. Warnings that survive are kept, coded, in ``attrs["warnings"]`` for the release
record and the report (:mod:`synthgeo.io.notices`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

import geopandas
import pandas as pd

from synthgeo._errors import InputError
from synthgeo.io import where
from synthgeo.io.checks import check_points
from synthgeo.io.crs import check_projected, coordinates_m, metric_problem, parse_target
from synthgeo.io.files import CsvOptions, read_table
from synthgeo.io.origin import Origin
from synthgeo.io.paths import not_a_file
from synthgeo.io.provenance import file_sha256
from synthgeo.io.units import check_coord_unit_m

__all__ = ["load_points", "check_projected", "coordinates_m", "metric_problem"]

logger = logging.getLogger(__name__)


def _check_arguments(numeric_columns, required_columns, min_records, coord_unit_m) -> None:
    for name, cols in (("numeric_columns", numeric_columns),
                       ("required_columns", required_columns)):
        if isinstance(cols, str):
            raise TypeError(f"`{name}` must be a list of column names, got the string {cols!r}")
    if isinstance(min_records, bool) or not isinstance(min_records, int) or min_records < 1:
        raise InputError(f"`min_records` must be a positive integer, got {min_records!r}")
    check_coord_unit_m(coord_unit_m)


def _query(frame: pd.DataFrame, query: str | None, n_read: int) -> pd.DataFrame:
    """Rows matching `query` over the columns only: no ``@variable``, no dunder.

    pandas resolves ``@name`` in the caller's scope, so ``@os.system(...)`` in a reviewed spec
    ran a shell command; columns, literals and their methods are all a selection needs.
    """
    if query is None:
        return frame
    if "@" in query or "__" in query:
        raise InputError(f"`query` = {query!r} refers to something other than the columns "
                         "(`@variable` or `__`); write it with column names and literals only, "
                         "e.g. \"beds == 2\"")
    try:
        out = frame.query(query, local_dict={}, global_dict={})
    except Exception as exc:  # pandas raises many types for a bad expression
        raise InputError(f"`query` = {query!r} failed: {type(exc).__name__}: {exc}") from exc
    logger.info("query %r kept %d of %d rows", query, len(out), n_read)
    return out


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
    coord_unit_m: float | None = None,
    sep: str = ",",
    decimal: str = ".",
    encoding: str = "utf-8",
    thousands: str | None = None,
    accept_small_extent: bool = False,
    study_area=None,
    accept_offshore: bool = False,
    land_checked: where.LandChecked | None = None,
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
        warning when it spans more than one zone); ``"local"`` keeps a projected CRS in metres
        as it is (e.g. British National Grid) and otherwise uses the UTM zone within one zone
        and an azimuthal equidistant projection centred on the data across zones
        (docs/locations.md, "Distances, CRS and units"); otherwise any projected CRS whose axis
        unit is the metre (never Web Mercator).
    drop_duplicates : bool, default=False
        Drop exact duplicate rows (same location and all columns but the id equal), keeping the
        first. They are reported with a warning either way.
    min_records : int, default=10
        Fewest records allowed after `query` and duplicate removal.
    coord_unit_m : float, optional
        CSV only: metres per unit of the `x`/`y` columns; takes precedence over the unit of a
        projected `crs` (default None: the CRS's unit), e.g. ``1000`` for a file in kilometres
        on the British National Grid (``crs="EPSG:27700"``). Refused with a geographic `crs`.
        The input columns themselves are kept unscaled.
    sep, decimal, encoding : str, default=",", ".", "utf-8"
        CSV only: field separator (one character), decimal mark and text encoding.
    thousands : str, optional
        CSV only: the thousands separator of numbers (``"."`` for ``1.234,5``). Under
        ``decimal = ","`` without it, a column of dot-grouped numbers (``1.234``, beside whole
        ones, a few typos aside) is refused rather than read as 1.234.
    accept_small_extent : bool, default=False
        Keep going, with a coded warning (``small_extent``, ``near_crs_origin``), when the
        points' extent is implausibly small (10–49 distinct locations under 100 m across, 50
        or more under 1 km, or a median under 1 m apart) or every point lies within 10 km of
        an off-area CRS origin (otherwise refused as a likely unit error, e.g. km as metres).
    study_area : sequence of 4 numbers, str or os.PathLike, optional
        Declared study area (:func:`synthgeo.io.where.study_area`): a lon/lat box
        ``[west, south, east, north]`` in degrees (or ``"W,S,E,N"``), or a polygon file
        (relative to the working folder); any point outside it is refused.
    accept_offshore : bool, default=False
        Keep going, with a coded warning (``offshore``), when more than half of the points lie
        over the sea (GSHHG land mask; otherwise refused as a likely unit factor or axis error).
    land_checked : synthgeo.io.where.LandChecked, optional
        A registered release's land/sea outcome for its input file (``synthgeo draw``, with
        the release's own ``[data]`` keys): used instead of the land mask when the file's
        SHA-256 is ``land_checked.sha256``; other bytes are tested as usual.

    Returns
    -------
    geopandas.GeoDataFrame
        One Point per record in `target_crs` (coordinates in metres), index 0..N-1, all input
        columns kept plus the id column. ``attrs`` holds ``"source_crs"`` (WKT of the input CRS),
        ``"sha256"`` (hex digest of the file bytes; the ``.shp`` for a shapefile), ``"n_read"``
        (rows before `query`), ``"n_duplicates"`` (exact duplicate rows found),
        ``"id_column"``, ``"coordinate_unit"`` (how x/y were read: metres per unit, name,
        source), ``"extent"`` (distinct locations, diagonal and median spacing in metres) and
        ``"warnings"`` (coded warnings ``{"code", "message"}`` that survived).

    Raises
    ------
    InputError
        Missing file or column; a repeated header; a likely other separator; bytes outside
        `encoding`; text (decimal commas named), NaN or inf in coordinates or
        `numeric_columns`; lon/lat out of range; a projected value outside the CRS's bounds; a
        point outside the CRS's area of use (widened by 1°); an implausibly small extent
        (unless `accept_small_extent`); a coordinate column whose name states another unit;
        missing or conflicting CRS; non-point geometry; duplicate ids; bad `query`; fewer than
        `min_records` records; `target_crs` geographic, Web Mercator or not metres;
        `coord_unit_m` not positive, with a geographic `crs`, or on a non-CSV file; a point
        outside `study_area`, or most points over the sea (unless `accept_offshore`).

    Warns
    -----
    UserWarning
        Exact duplicate rows (``exact_duplicates``); geographic data spanning more than one UTM
        zone (``spans_utm_zones``); a small extent accepted or too few points to refuse
        (``small_extent``); projected values all within ±180/±90 (``degrees_as_metres``).

    Examples
    --------
    >>> from importlib import resources
    >>> path = resources.files("synthgeo") / "data" / "chorley_ribble_cancer.csv"
    >>> import warnings
    >>> with warnings.catch_warnings():  # the file's rows rounded to 100 m repeat exactly
    ...     warnings.simplefilter("ignore")
    ...     gdf = load_points(path, x="x_km", y="y_km", crs="EPSG:27700", coord_unit_m=1000,
    ...                       id_column="id", target_crs="EPSG:27700")
    >>> len(gdf), gdf.attrs["coordinate_unit"]["name"], float(gdf.geometry.x.iloc[0])
    (1036, 'kilometre', 353200.0)
    """
    _check_arguments(numeric_columns, required_columns, min_records, coord_unit_m)
    target, local = parse_target(target_crs)
    options = CsvOptions(sep=sep, decimal=decimal, encoding=encoding, thousands=thousands)
    area = where.study_area(study_area)
    path = Path(path)
    if (why := not_a_file(path)) is not None:
        raise InputError(f"input file {path!s} {why}; give the data file itself")
    digest = file_sha256(path)
    origin = Origin.file(path)
    frame, source_crs = read_table(path, x=x, y=y, crs=crs, csv_options=options,
                                   id_column=id_column,
                                   number_columns=[c for c in (*numeric_columns,
                                                               *required_columns)
                                                   if c not in (x, y, id_column)])
    n_read = len(frame)
    logger.info("read %d rows from %s", n_read, path)
    frame = _query(frame, query, n_read)
    gdf = check_points(frame, origin=origin, source_crs=source_crs, coord_unit_m=coord_unit_m,
                       x=x, y=y,
                       numeric_columns=numeric_columns, required_columns=required_columns,
                       id_column=id_column, target=target, local=local,
                       drop_duplicates=drop_duplicates, min_records=min_records,
                       accept_small_extent=accept_small_extent, study_area=area,
                       accept_offshore=accept_offshore,
                       land_checked=(land_checked if land_checked is not None
                                     and land_checked.sha256 == digest else None),
                       too_few=(f"left after `query` = {query!r} and duplicate removal"
                                if query is not None else
                                f"in {origin.name} after duplicate removal") + f" (read {n_read})")
    gdf.attrs.update(sha256=digest, n_read=n_read)
    return gdf
