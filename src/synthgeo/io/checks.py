"""Steps 3–9 of the input pass (the :mod:`synthgeo.io` package docstring): one per module.

:func:`check_points` runs them for a file's records (:func:`synthgeo.io.points.load_points`,
after reading and `query`) and for a GeoDataFrame handed over in memory
(:func:`synthgeo.io.read.check_points_frame`): the same refusals, only the words differ
(:class:`synthgeo.io.origin.Origin`; docs/locations.md, "Units and plausibility").
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import geopandas
import numpy as np
import pandas as pd
import pyproj

from synthgeo._errors import InputError
from synthgeo.io.columns import check_records, coordinates, duplicate_rows
from synthgeo.io.crs import coordinates_m, describe, metric_problem, note_zone_span, project
from synthgeo.io.notices import note
from synthgeo.io.origin import Origin
from synthgeo.io.plausibility import (
    check_extent,
    check_origin,
    check_ranges,
    check_utm_shaped,
)
from synthgeo.io.units import settle_unit
from synthgeo.io.where import LandChecked, StudyArea, check_land, check_study_area

__all__ = ["check_points", "check_records", "check_repeated_records", "MAX_REPEATED_SHARE"]
# check_records (columns.py): for pipeline.data

#: Records repeating another in location and every column but the id are refused above this
#: share of the records, when more than one does (unless accepted): a file appended to itself
#: or joined twice. One repeat is a record entered twice or a sale at one price twice. The
#: bundled Sacramento sales hold one such pair among 140 (0.7 %); the whole file doubled (50 %)
#: took location M from 5,506 m to 534 m and the release attacker's largest attributable risk
#: from 0.447 to 0.999 with one warning (break-it trial 2026-12-07).
MAX_REPEATED_SHARE = 0.01

logger = logging.getLogger(__name__)


def _geometry_in(frame: pd.DataFrame, xy: np.ndarray, source_crs: pyproj.CRS) -> np.ndarray:
    """Take a GeoDataFrame's points back to `source_crs` (a frame read_points projected)."""
    if not isinstance(frame, geopandas.GeoDataFrame):
        return xy
    crs = pyproj.CRS.from_user_input(frame.crs)
    if crs.equals(source_crs, ignore_axis_order=True):
        return xy
    to_source = pyproj.Transformer.from_crs(crs, source_crs, always_xy=True)
    return np.column_stack(to_source.transform(xy[:, 0], xy[:, 1], errcheck=False))


def _duplicates(frame: pd.DataFrame, xy: np.ndarray, *, id_column: str | None,
                drop_duplicates: bool, origin: Origin, notes: list) -> np.ndarray:
    """Flag exact duplicate rows and report them (coded warning ``exact_duplicates``).

    The warning counts them and names no record: it reaches the console, release.json and the
    report, and an id (or row) there tells an intruder which records repeat (break-it trial
    2026-12-07). Refusals still name rows, since they stop the run and write nothing.
    """
    duplicated = duplicate_rows(frame, xy, id_column)
    n_duplicates = int(duplicated.sum())
    if n_duplicates:
        action = "dropped" if drop_duplicates else origin.text("duplicates_kept")
        note(notes, "exact_duplicates",
             f"{n_duplicates} exact duplicate row(s) in {origin.name} (same location and every "
             "value but the id as an earlier row; no record is named, since the warning reaches "
             f"release.json): {action}")
    return duplicated


def check_repeated_records(gdf: geopandas.GeoDataFrame, *, accept: bool, fix: str,
                           notes: list | None = None,
                           accepted: str = "accepted by `[data] accept_repeated_records`: "
                                           "fitted and released as distinct records") -> int:
    """Refuse records repeating another in location and every column but the id.

    More than one record and more than :data:`MAX_REPEATED_SHARE` of the records doing so is
    refused: each repeat counts
    as another record in the fit and in spatial k (a doubled file halves every distance the
    model sees between a record and its own value). With `accept`, the count goes to `notes`
    as the coded warning ``repeated_records_accepted`` (release.json's ``warnings`` and the
    report).

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        Checked points (:func:`check_points`), in a CRS in metres; ``attrs["id_column"]``
        names the id, left out of the comparison.
    accept : bool
        Go on, with the coded warning, however many records repeat another.
    fix : str
        The refusal's last words: the options that drop or accept them.
    notes : list, optional
        Where the coded warning is kept (default: ``gdf.attrs["warnings"]``).
    accepted : str
        What the coded warning says of the acceptance (the option that gave it and what
        follows: kanon counts the repeats in spatial k, it fits and releases nothing).

    Returns
    -------
    int
        How many records repeat an earlier one (0 once they were dropped).

    Raises
    ------
    InputError
        Above the share without `accept`; no value and no id is shown.

    Examples
    --------
    >>> import geopandas
    >>> pts = geopandas.GeoDataFrame(
    ...     {"id": [1, 2, 3, 4], "v": [1.0, 1.0, 1.0, 2.0]},
    ...     geometry=geopandas.points_from_xy([0.0, 0.0, 0.0, 5.0], [0.0, 0.0, 0.0, 5.0]),
    ...     crs="EPSG:32610")
    >>> pts.attrs["id_column"] = "id"
    >>> check_repeated_records(pts.iloc[1:], accept=False, fix="drop them")  # one: kept
    1
    >>> check_repeated_records(pts, accept=False, fix="drop them")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    synthgeo._errors.InputError: 2 of 4 records repeat another ...
    """
    xy = np.column_stack([gdf.geometry.x.to_numpy(float), gdf.geometry.y.to_numpy(float)])
    n_repeated = int(duplicate_rows(gdf, xy, gdf.attrs.get("id_column")).sum())
    n = len(gdf)
    refused = n_repeated > max(1.0, MAX_REPEATED_SHARE * n)
    if n_repeated == 0 or not (refused or accept):
        return n_repeated
    text = (f"{n_repeated} of {n} records repeat another in location and every column but the id "
            f"({n_repeated / n:.1%}; more than one and above {MAX_REPEATED_SHARE:.0%} is "
            "refused)")
    if refused and not accept:
        raise InputError(f"{text}: a file appended to itself or joined twice? Each repeat "
                         "counts as another record (in the fit, in spatial k); distinct people "
                         "can repeat one another where coordinates are rounded and few columns "
                         f"are kept; {fix}")
    if notes is None:
        gdf.attrs["warnings"] = notes = list(gdf.attrs.get("warnings") or [])
    note(notes, "repeated_records_accepted", f"{text}; {accepted}")
    return n_repeated


def _layer(frame: pd.DataFrame, xy: np.ndarray, source_crs: pyproj.CRS
           ) -> geopandas.GeoDataFrame:
    """Return the records as Points in `source_crs`: a CSV's columns, or a layer's geometry."""
    if isinstance(frame, geopandas.GeoDataFrame):
        return frame
    points = geopandas.points_from_xy(xy[:, 0], xy[:, 1], crs=source_crs)
    return geopandas.GeoDataFrame(frame, geometry=points, crs=source_crs)


def check_points(
    frame: pd.DataFrame,
    *,
    origin: Origin,
    source_crs: pyproj.CRS,
    coord_unit_m: float | None = None,
    x: str | None = None,
    y: str | None = None,
    numeric_columns: Sequence[str] = (),
    required_columns: Sequence[str] = (),
    id_column: str | None = None,
    target: pyproj.CRS | None = None,
    local: bool = False,
    keep_metric: bool = False,
    drop_duplicates: bool = False,
    min_records: int = 10,
    accept_small_extent: bool = False,
    too_few: str = "",
    study_area: StudyArea | None = None,
    accept_offshore: bool = False,
    land_checked: LandChecked | None = None,
) -> geopandas.GeoDataFrame:
    """Validate records read from a file or handed over in memory; project them to metres.

    The input pass after reading, one step after another in the order of the
    :mod:`synthgeo.io` package docstring, each step's checks in their own module: columns, ids
    and numbers; coordinates; units; plausibility for the CRS; duplicates and the record count;
    projection to metres; the extent (docs/locations.md, "Units and plausibility").

    Parameters
    ----------
    frame : pandas.DataFrame or geopandas.GeoDataFrame
        A CSV's table (coordinates in columns `x`/`y`), a layer, or a GeoDataFrame in memory;
        a working copy (modified in place).
    origin : Origin
        A file or a GeoDataFrame in memory (for the messages).
    source_crs : pyproj.CRS
        CRS the coordinates were given in (for a GeoDataFrame projected by
        :func:`synthgeo.read_points`: the file's).
    coord_unit_m : float, optional
        Metres per unit of a CSV's x/y columns (default: the CRS's unit); refused for a
        geometry.
    x, y : str, optional
        A CSV's coordinate columns; for a GeoDataFrame, the location columns released with it.
    numeric_columns, required_columns : sequence of str, default=()
        Columns that must hold finite numbers / must exist.
    id_column : str, optional
        Unique record id column; None adds ``record`` = 0..N-1.
    target : pyproj.CRS, optional
        Projected CRS in metres; None: the UTM zone (or with `local`, a local CRS) of the data.
    local : bool, default=False
    keep_metric : bool, default=False
        Keep a frame that is already in a projected CRS in metres in it (no reprojection).
    drop_duplicates : bool, default=False
        Drop exact duplicate rows (always reported).
    min_records : int, default=10
    accept_small_extent : bool, default=False
        Go on, with a coded warning, when the extent is implausibly small.
    too_few : str, default=""
        Where the records were counted, for the `min_records` message.
    study_area : StudyArea, optional
        Declared study area (:func:`synthgeo.io.where.study_area`): any point outside it is
        refused.
    accept_offshore : bool, default=False
        Go on, with a coded warning (``offshore``), when most points lie over the sea
        (otherwise refused as a likely unit or axis error).
    land_checked : LandChecked, optional
        The land/sea test's outcome when these records' file bytes passed it already (the
        caller has matched the file's SHA-256): its notes are given again and the land mask
        is not loaded; ``attrs["land"]["n_at_sea"]`` is None then.

    Returns
    -------
    geopandas.GeoDataFrame
        Index 0..N-1, in a CRS in metres; ``attrs``: ``source_crs``, ``n_duplicates``,
        ``id_column``, ``coordinate_unit`` (the x/y's; for a GeoDataFrame whose geometry was
        built from its `x`/`y` columns, theirs: ``x_km`` beside a geometry in metres is in
        kilometres), ``extent``, ``land`` (points at sea) and ``warnings``.

    Raises
    ------
    InputError
        As :func:`synthgeo.io.points.load_points` (the message names `origin`).

    Examples
    --------
    >>> import geopandas, pyproj
    >>> from synthgeo.io.origin import Origin
    >>> crs = pyproj.CRS("EPSG:4326")
    >>> gdf = geopandas.GeoDataFrame(
    ...     {"price": [1.0, 2.0, 3.0]},
    ...     geometry=geopandas.points_from_xy([-121.5, -121.4, -121.3], [38.5, 38.6, 38.7]),
    ...     crs=crs)
    >>> out = check_points(gdf, origin=Origin.memory(), source_crs=crs, min_records=3)
    >>> out.crs.name, out.attrs["extent"]["n_distinct"]
    ('WGS 84 / UTM zone 10N', 3)
    """
    notes: list[dict[str, str]] = []
    is_table = not isinstance(frame, geopandas.GeoDataFrame)
    # 3. columns, ids, numbers (columns.py)
    check_records(frame, origin, columns=[id_column, x, y, *required_columns, *numeric_columns],
                  numeric_columns=numeric_columns, id_column=id_column)
    # 4. coordinates: finite numbers, or non-empty Points (columns.py), in the source CRS
    xy = _geometry_in(frame, coordinates(frame, x, y, id_column, origin), source_crs)
    # 5. units: the unit in effect, names stating another, swapped axes (units.py)
    unit, columns_unit, xy = settle_unit(frame, xy, x=x, y=y, crs=source_crs,
                                         coord_unit_m=coord_unit_m, is_table=is_table,
                                         origin=origin)
    unit_words = _unit_words(unit, source_crs)
    # 6. plausible for the CRS: lon/lat range, 0/0, projected bounds, area of use, a
    #    CRS origin off its area (plausibility.py); the declared study area (where.py)
    labels = (f"column `{x}`", f"column `{y}`") if is_table else ("geometry", "geometry")
    check_ranges(xy, source_crs, frame, labels=labels, id_column=id_column, origin=origin,
                 notes=notes)
    check_origin(xy, source_crs, unit_words=unit_words,
                 accept_small_extent=accept_small_extent, origin=origin, notes=notes)
    check_utm_shaped(xy, source_crs, declared=study_area is not None, origin=origin)
    check_study_area(xy, source_crs, study_area, origin=origin)
    # 7. exact duplicate rows (columns.py), then the number of records
    duplicated = _duplicates(frame, xy, id_column=id_column, drop_duplicates=drop_duplicates,
                             origin=origin, notes=notes)
    gdf = _layer(frame, xy, source_crs)
    if drop_duplicates and duplicated.any():
        gdf = gdf.loc[~duplicated]
    if len(gdf) < min_records:
        raise InputError(f"only {len(gdf)} record(s) {too_few}; `min_records` = {min_records} "
                         "are needed")
    gdf = gdf.reset_index(drop=True)
    if id_column is None:
        id_column = "record"
        gdf.insert(0, id_column, np.arange(len(gdf)))
    # 8. projection to a CRS in metres (crs.py)
    gdf = _to_metres(gdf, target, local=local, keep_metric=keep_metric, source_crs=source_crs,
                     notes=notes)
    # 9. the extent in metres (plausibility.py), then land or sea (where.py)
    xy_m = coordinates_m(gdf)
    extent = check_extent(xy_m, unit_words=unit_words,
                          accept_small_extent=accept_small_extent, origin=origin, notes=notes)
    if land_checked is None:
        land = check_land(np.column_stack([gdf.geometry.x, gdf.geometry.y]),
                          pyproj.CRS(gdf.crs), accept_offshore=accept_offshore, origin=origin,
                          notes=notes)
    else:  # the same bytes passed the test in a registered release: its outcome
        for n in land_checked.notes:
            note(notes, n["code"], n["message"])
        land = {"n_points": len(gdf), "n_at_sea": None}
    logger.info("%d points from %s in %s", len(gdf), origin.name,
                describe(pyproj.CRS(gdf.crs)))
    gdf.attrs.update(source_crs=source_crs.to_wkt(), n_duplicates=int(duplicated.sum()),
                     id_column=id_column, coordinate_unit=(columns_unit or unit).to_dict(),
                     extent=extent, land=land, warnings=notes)
    return gdf


def _unit_words(unit, source_crs: pyproj.CRS) -> str:
    """How the coordinates were read, e.g. "metre units, the unit of OSGB36 / ..."."""
    return f"{unit.name} units" + (f", the unit of {describe(source_crs)}"
                                   if unit.source == "crs" else "")


def _to_metres(gdf: geopandas.GeoDataFrame, target: pyproj.CRS | None, *, local: bool,
               keep_metric: bool, source_crs: pyproj.CRS,
               notes: list) -> geopandas.GeoDataFrame:
    """Project to `target`; with `keep_metric` or ``"local"``, keep a frame in a metric CRS.

    ``"local"`` measures in the data's own CRS when it is projected in metres (British National
    Grid stays British National Grid): only a geographic or non-metre CRS is reprojected.
    """
    crs = pyproj.CRS.from_user_input(gdf.crs)
    keep_metric = keep_metric or (local and target is None)
    if not (keep_metric and metric_problem(crs) is None):
        return project(gdf, target, local=local, notes=notes)
    if source_crs.is_geographic and "UTM zone" in crs.name:  # projected from degrees earlier
        note_zone_span(gdf, crs, notes)
    return gdf
