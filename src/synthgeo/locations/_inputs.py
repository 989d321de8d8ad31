"""Validate a points layer once, at the door, for the location diagnostics."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import geopandas
import numpy as np
import pandas as pd

from synthgeo._errors import InputError, SpecError
from synthgeo.io.columns import near_names
from synthgeo.io.points import coordinates_m

MISSING_LABEL = "<missing>"


@dataclass(frozen=True, kw_only=True)
class Prepared:
    """Coordinates, ids, group labels and subject codes of a checked layer."""

    coords_m: np.ndarray
    record_id: np.ndarray
    id_column: str
    group_label: np.ndarray | None
    subject: np.ndarray | None
    crs_wkt: str
    source_crs_wkt: str | None


def as_columns(value: str | Sequence[str] | None, name: str) -> tuple[str, ...]:
    """Column names from None, one name or a sequence of names."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    cols = tuple(value)
    if not all(isinstance(c, str) and c for c in cols):
        raise TypeError(f"`{name}` must be a column name or a list of column names, got {value!r}")
    return cols


def check_columns(points: geopandas.GeoDataFrame, columns: Sequence[str], role: str) -> None:
    """Raise InputError naming the missing columns and the available ones."""
    missing = [c for c in columns if c not in points.columns]
    if missing:
        shown = [str(c) for c in points.columns if c != points.geometry.name]
        raise InputError(f"{role} column(s) {missing} not found"
                         f"{near_names(missing, shown)}; available columns: {shown} "
                         "(names are case-sensitive)")


def group_labels(points: pd.DataFrame, group_by: Sequence[str]) -> np.ndarray | None:
    """One text label per record joining the `group_by` values (missing values labelled)."""
    if not group_by:
        return None
    parts = []
    for c in group_by:
        col = points[c]
        text = col.astype(object).where(col.notna(), MISSING_LABEL).astype(str)
        parts.append(text.to_numpy(dtype=object))
    label = parts[0]
    for p in parts[1:]:
        label = label + " × " + p
    return np.asarray(label, dtype=object)


def _check_plausible(points: geopandas.GeoDataFrame, coords_m: np.ndarray) -> None:
    """Run the unit check a file gets on a layer built in memory: the off-area origin rule.

    Break-it: km under BNG in a GeoDataFrame gave spatial k at its cap. (The small-extent rule
    is not applied here: a layer of a few nearby points is a legitimate input to these
    diagnostics.)
    """
    import pyproj

    from synthgeo.io.origin import Origin
    from synthgeo.io.plausibility import check_origin

    crs = pyproj.CRS.from_user_input(points.crs)
    check_origin(coords_m, crs, unit_words=f"the unit of {crs.name}, as the geometry was built",
                 accept_small_extent=False, origin=Origin.memory(),
                 fix="Build the geometry in metres (x 1000 for kilometres); if the coordinates "
                     "are right, check the frame with "
                     "`synthgeo.io.read.check_points_frame(gdf, accept_small_extent=True)` first")


def _in_metres(points: geopandas.GeoDataFrame, id_column: str | None) -> geopandas.GeoDataFrame:
    """Check and project a frame in lon/lat degrees (or another CRS not in metres).

    The same checks and projection as :func:`synthgeo.synthesize` gives a frame in memory
    (:func:`synthgeo.io.read.check_points_frame`, ``target_crs="utm"``), so the location
    diagnostics accept what the release accepts; a frame in metres, or one without a CRS (the
    error names the fix), is returned as it is. The input is never modified.
    """
    import pyproj

    from synthgeo.io.crs import metric_problem

    if points.crs is None or metric_problem(pyproj.CRS.from_user_input(points.crs)) is None:
        return points
    from synthgeo.io.read import check_points_frame

    return check_points_frame(points, id_column=id_column, min_records=1)


def prepare(
    points: geopandas.GeoDataFrame,
    *,
    group_by: Sequence[str] = (),
    subject: str | None = None,
    id_column: str | None = None,
) -> Prepared:
    """Check a projected points layer and pull out what the diagnostics need.

    Raises
    ------
    TypeError
        If `points` is not a GeoDataFrame.
    InputError
        Missing CRS, implausible coordinates for a geographic CRS (which is otherwise
        projected to its UTM zone, as :func:`synthgeo.synthesize` does), non-point geometry,
        missing column,
        missing subject ids, or duplicate record ids; for a layer not loaded by
        :func:`synthgeo.io.points.load_points` (no ``extent`` in its ``attrs``), coordinates
        all next to an off-area CRS origin (km read as metres).
    """
    if not isinstance(points, geopandas.GeoDataFrame):
        raise TypeError("`points` must be a GeoDataFrame (see synthgeo.io.points.load_points), "
                        f"got {type(points).__name__}")
    points = _in_metres(points, id_column)
    coords = coordinates_m(points)
    if "extent" not in points.attrs:  # not through load_points / check_points_frame
        _check_plausible(points, coords)
    if id_column is None:
        id_column = points.attrs.get("id_column")
    check_columns(points, [c for c in (id_column,) if c], "id")
    check_columns(points, list(group_by), "`group_by`")
    check_columns(points, [subject] if subject else [], "subject")
    if id_column:
        ids = points[id_column].to_numpy()
        if pd.Series(ids).duplicated().any():
            raise InputError(f"id column `{id_column}` is not unique")
    else:
        id_column = "record"
        ids = np.arange(len(points))
    subj = None
    if subject:
        col = points[subject]
        if col.isna().any():
            raise InputError(f"subject column `{subject}` has {int(col.isna().sum())} missing "
                             "ids; give every record its subject (or drop `subject`)")
        subj = pd.factorize(col.to_numpy())[0].astype(np.int64)
    return Prepared(
        coords_m=coords, record_id=ids, id_column=id_column,
        group_label=group_labels(points, group_by), subject=subj,
        crs_wkt=points.crs.to_wkt(), source_crs_wkt=points.attrs.get("source_crs"),
    )


def check_threshold(k: int, k_max: int | None) -> None:
    """Refuse k < 2, or a cap below k (then "below k" could not be told)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
        raise SpecError(f"`k` must be an integer >= 2 (the anonymity threshold), got {k!r}")
    if k_max is not None and (isinstance(k_max, bool) or not isinstance(k_max, (int, np.integer))
                              or k_max < k):
        raise SpecError(f"`k_max` must be an integer >= `k` = {k} (counts are exact below the "
                        f"cap), got {k_max!r}; raise `k_max` or lower `k`")
