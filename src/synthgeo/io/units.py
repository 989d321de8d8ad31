"""The unit of the coordinates: ``coord_unit_m``, the CRS's unit, and units stated in names.

Many real files carry coordinates in km or in units of 100 m under a metre grid (British
National Grid files often do); read as metres they shrink the map a thousandfold and every record
looks crowded — a false all-clear (docs/locations.md, "Units and plausibility"). Precedence: an
explicit ``coord_unit_m`` (metres per unit of the x/y columns) over the CRS's own unit; refused
with a geographic CRS. A coordinate column whose name states a unit (``x_km``, ``y_100m``,
``east_ft``, ``lat``/``lon``) that contradicts the unit in effect is refused. For a GeoDataFrame
handed over in memory the geometry's CRS sets the unit, and a column the geometry was built from
(its coordinates are the column's values times one factor) must state a unit that agrees
(:func:`geometry_unit`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyproj

from synthgeo._errors import InputError
from synthgeo.io.crs import describe, unit_m, unit_name
from synthgeo.io.origin import Origin

__all__ = ["CoordinateUnit", "coordinate_unit", "check_unit_names", "check_axis_names",
           "stated_unit", "check_coord_unit_m", "to_crs_units", "geometry_unit", "settle_unit",
           "OPTION"]

#: How the option is spelt in the spec and on the command line (for messages).
OPTION = "`coord_unit_m` ([data] coord_unit_m, or --coord-unit-m)"

# the last word of a column name that states a length unit: metres per unit
_LENGTH_SUFFIX = {
    "m": 1.0, "metre": 1.0, "metres": 1.0, "meter": 1.0, "meters": 1.0,
    "km": 1000.0, "kilometre": 1000.0, "kilometres": 1000.0, "kilometers": 1000.0,
    "100m": 100.0, "hm": 100.0, "10m": 10.0,
    "ft": 0.3048, "feet": 0.3048, "foot": 0.3048, "usft": 1200 / 3937,
    "mi": 1609.344, "miles": 1609.344,
}
_SUFFIX_NAME = {1.0: "metres", 1000.0: "kilometres", 100.0: "units of 100 m",
                10.0: "units of 10 m", 0.3048: "feet", 1200 / 3937: "US survey feet",
                1609.344: "miles"}
# any word of a column name that says degrees of latitude/longitude
_DEGREE_WORDS = {"lat", "lon", "lng", "long", "latitude", "longitude"}
_LATITUDE_WORDS = {"lat", "latitude"}
_LONGITUDE_WORDS = _DEGREE_WORDS - _LATITUDE_WORDS
_FOOT_TOLERANCE = 1e-4  # international vs US survey foot differ by 2e-6 (relative)


@dataclass(frozen=True, kw_only=True)
class CoordinateUnit:
    """The unit the x/y columns are read in.

    Attributes
    ----------
    metres_per_unit : float or None
        Metres per unit of the x/y values; None for degrees (geographic CRS).
    name : str
        Words for messages and records ("metre", "degree", "kilometre", "100-metre").
    source : {"crs", "coord_unit_m", "geometry"}
        Where the unit comes from ("geometry": a column the geometry was built from).
    scale_to_crs : float
        Factor turning the x/y values into the CRS's own unit (1 unless `coord_unit_m` is
        given and differs from the CRS unit).
    """

    metres_per_unit: float | None
    name: str
    source: str
    scale_to_crs: float = 1.0

    def to_dict(self) -> dict:
        """JSON-ready description (for release records and command outputs)."""
        return {"metres_per_unit": self.metres_per_unit, "name": self.name,
                "source": self.source, "scale_to_crs": self.scale_to_crs}


def check_coord_unit_m(value: float | None) -> float | None:
    """Refuse a `coord_unit_m` that is not a positive finite number (None passes)."""
    if value is None:
        return None
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not math.isfinite(value) or value <= 0):
        raise InputError(f"`coord_unit_m` must be a positive number of metres per coordinate "
                         f"unit (1000 for kilometres), got {value!r}")
    return float(value)


def coordinate_unit(crs: pyproj.CRS, coord_unit_m: float | None) -> CoordinateUnit:
    """Return the unit in effect for x/y values in `crs`, given an optional explicit `coord_unit_m`.

    Parameters
    ----------
    crs : pyproj.CRS
        CRS of the coordinates.
    coord_unit_m : float, optional
        Metres per unit of the x/y values; takes precedence over the CRS's unit.

    Returns
    -------
    CoordinateUnit

    Raises
    ------
    InputError
        `coord_unit_m` given with a geographic (degree) CRS, or not a positive number; a CRS
        that is not 2-D geographic or projected (e.g. geocentric).

    Examples
    --------
    >>> import pyproj
    >>> u = coordinate_unit(pyproj.CRS("EPSG:27700"), 1000)
    >>> u.metres_per_unit, u.scale_to_crs
    (1000.0, 1000.0)
    >>> coordinate_unit(pyproj.CRS("EPSG:27700"), None).name
    'metre'
    """
    value = check_coord_unit_m(coord_unit_m)
    if not (crs.is_geographic or crs.is_projected) or len(crs.axis_info) != 2:
        raise InputError(f"cannot project the points from {describe(crs)} to a metric CRS (it "
                         "is not a 2-D geographic or projected CRS); give the 2-D CRS of the "
                         "coordinates (e.g. EPSG:4326 for lon/lat degrees, or a projected CRS "
                         "in metres)")
    crs_m = unit_m(crs)
    if crs_m is None:
        if value is not None:
            raise InputError(f"`coord_unit_m` = {coord_unit_m!r} rescales coordinates to metres, "
                             f"but `crs` {describe(crs)} is geographic (degrees); give a "
                             "projected `crs` for coordinates in length units, or drop "
                             "`coord_unit_m` for lon/lat degrees")
        return CoordinateUnit(metres_per_unit=None, name="degree", source="crs")
    if value is None:
        return CoordinateUnit(metres_per_unit=crs_m, name=unit_name(crs), source="crs")
    name = {1.0: "metre", 1000.0: "kilometre"}.get(value, f"{value:g}-metre")
    return CoordinateUnit(metres_per_unit=value, name=name, source="coord_unit_m",
                          scale_to_crs=value / crs_m)


def stated_unit(column: str) -> float | str | None:
    """Return the unit a column name states: metres per unit, ``"degree"``, or None.

    Examples
    --------
    >>> stated_unit("x_km"), stated_unit("y_100m"), stated_unit("lon_derived"), stated_unit("x")
    (1000.0, 100.0, 'degree', None)
    """
    words = [w for w in re.split(r"[^a-z0-9]+", str(column).lower()) if w]
    if not words:
        return None
    if _DEGREE_WORDS & set(words):
        return "degree"
    return _LENGTH_SUFFIX.get(words[-1])


def _same_length(a: float, b: float) -> bool:
    return abs(a - b) <= _FOOT_TOLERANCE * max(a, b)


def check_unit_names(columns: list[str], crs: pyproj.CRS, unit: CoordinateUnit,
                     origin: Origin | None = None) -> None:
    """Refuse a coordinate column whose name states a unit other than the one in effect.

    Parameters
    ----------
    columns : list of str
        The coordinate columns (a CSV's x/y; for a GeoDataFrame, one the geometry was built
        from).
    crs : pyproj.CRS
        The CRS the coordinates are given in.
    unit : CoordinateUnit
        The unit the column's values are read in (:func:`coordinate_unit`, or for a column of a
        GeoDataFrame :func:`geometry_unit`).
    origin : Origin, optional
        A file (default) or a GeoDataFrame in memory: the words of the fix.

    Raises
    ------
    InputError
        Naming the column, the unit it states, the CRS's unit and the option that fixes it.

    Examples
    --------
    >>> import pyproj
    >>> crs = pyproj.CRS("EPSG:27700")
    >>> check_unit_names(["x_km"], crs, coordinate_unit(crs, 1000))  # consistent: no error
    >>> check_unit_names(["x_km"], crs, coordinate_unit(crs, None))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    synthgeo._errors.InputError: column `x_km` states kilometres (1000 m per unit), ...
    """
    origin = origin or Origin(name="the file")
    for col in columns:
        said = stated_unit(col)
        if said is None:
            continue
        if said == "degree":
            if unit.metres_per_unit is not None:
                raise InputError(
                    f"column `{col}` names a latitude/longitude in degrees, but "
                    f"{origin.crs(describe(crs))} is projected ({unit_name(crs)}): "
                    f"{origin.text('fix_degrees')}")
            continue
        if unit.metres_per_unit is None:
            raise InputError(
                f"column `{col}` states {_SUFFIX_NAME[said]}, but {origin.crs(describe(crs))} is "
                f"geographic (degrees): {origin.text('fix_lengths')}")
        if not _same_length(said, unit.metres_per_unit):
            raise InputError(f"column `{col}` states {_SUFFIX_NAME[said]} ({said:g} m per "
                             f"unit), {_unit_clash(col, said, crs, unit, origin)}")


def check_axis_names(x: str, y: str) -> None:
    """Refuse x/y columns whose names say they are swapped (x a latitude, y a longitude).

    x is the easting (longitude), y the northing (latitude). A swap inside the valid ranges
    (lon/lat both within ±90°, e.g. in Europe) passes the range checks and silently puts every
    record elsewhere, so the names are read.

    Parameters
    ----------
    x, y : str
        The columns given as x and y.

    Raises
    ------
    InputError
        Naming both columns and the keys that fix it.

    Examples
    --------
    >>> check_axis_names("lon", "lat")
    >>> check_axis_names("lat", "lon")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    synthgeo._errors.InputError: `x` = `lat` names a latitude and `y` = `lon` names a ...
    """
    def words(col: str) -> set[str]:
        return {w for w in re.split(r"[^a-z0-9]+", str(col).lower()) if w}

    wx, wy = words(x), words(y)
    x_lat = bool(wx & _LATITUDE_WORDS) and not wx & _LONGITUDE_WORDS
    y_lon = bool(wy & _LONGITUDE_WORDS) and not wy & _LATITUDE_WORDS
    if x_lat or y_lon:
        said = [f"`x` = `{x}` names a latitude"] if x_lat else []
        said += [f"`y` = `{y}` names a longitude"] if y_lon else []
        raise InputError(f"{' and '.join(said)}: x is the longitude (east), y the latitude "
                         "(north); swap them ([data] x/y, or --x/--y)")


def _unit_clash(col: str, said: float, crs: pyproj.CRS, unit: CoordinateUnit,
                origin: Origin) -> str:
    """Return the rest of the message for a column read in another unit than it states."""
    per_unit = f"{unit.name} units ({unit.metres_per_unit:g} m per unit)"
    if origin.in_memory:
        return (f"but {origin.name}'s geometry holds it in {per_unit} of {describe(crs)}; build "
                f"the geometry from `{col}` x {said / unit_m(crs):g} (the CRS's "
                f"{unit_name(crs)} units), or rename the column")
    how = ("set by `coord_unit_m`" if unit.source == "coord_unit_m"
           else f"the unit of `crs` {describe(crs)}")
    return (f"but the coordinates would be read in {per_unit}, {how}; set {OPTION} to "
            f"{said:g} if the column is in {_SUFFIX_NAME[said]}, or rename the column")


def geometry_unit(values: np.ndarray, coords: np.ndarray,
                  crs: pyproj.CRS) -> CoordinateUnit | None:
    """Return the unit of a column the geometry was built from, or None if it was not.

    The geometry was built from the column when its coordinates (in `crs`'s unit) are the
    column's values times one positive factor s: the column is then in units of
    s × (metres per CRS unit), or in degrees when `crs` is geographic and s = 1.

    Parameters
    ----------
    values : ndarray of shape (n_records,)
        The column's values.
    coords : ndarray of shape (n_records,)
        The matching coordinate of the geometry (x for an x column), in `crs`'s unit.
    crs : pyproj.CRS

    Returns
    -------
    CoordinateUnit or None
        ``source = "geometry"``; None when the values are not proportional to the coordinates
        (e.g. lon/lat columns beside a UTM geometry).

    Examples
    --------
    >>> import numpy as np, pyproj
    >>> km = np.array([350.5, 351.0, 352.25])
    >>> geometry_unit(km, km * 1000, pyproj.CRS("EPSG:27700")).name
    'kilometre'
    >>> geometry_unit(km, km, pyproj.CRS("EPSG:27700")).name
    'metre'
    >>> geometry_unit(km, km + 7, pyproj.CRS("EPSG:27700")) is None
    True
    """
    v = np.asarray(values, dtype=float)
    g = np.asarray(coords, dtype=float)
    ok = v != 0
    if not (len(v) and np.isfinite(v).all() and np.isfinite(g).all() and ok.any()):
        return None
    s = float(f"{np.median(g[ok] / v[ok]):.9g}")
    if not (s > 0 and np.allclose(v * s, g, rtol=1e-6, atol=1e-9 * float(np.abs(g).max()))):
        return None
    crs_m = unit_m(crs)
    if crs_m is None:  # degrees, or not built from the column
        return CoordinateUnit(metres_per_unit=None, name="degree", source="geometry") \
            if abs(s - 1.0) < 1e-6 else None
    if abs(s - 1.0) < 1e-6:
        return CoordinateUnit(metres_per_unit=crs_m, name=unit_name(crs), source="geometry")
    metres = s * crs_m
    name = {1.0: "metre", 1000.0: "kilometre"}.get(metres, f"{metres:g}-metre")
    return CoordinateUnit(metres_per_unit=metres, name=name, source="geometry", scale_to_crs=s)


def to_crs_units(xy: np.ndarray, unit: CoordinateUnit) -> np.ndarray:
    """x/y values in the CRS's own unit (multiplied by ``unit.scale_to_crs`` when not 1)."""
    return xy if unit.scale_to_crs == 1.0 else xy * unit.scale_to_crs


def settle_unit(frame: pd.DataFrame, xy: np.ndarray, *, x: str | None, y: str | None,
                crs: pyproj.CRS, coord_unit_m: float | None, is_table: bool,
                origin: Origin) -> tuple[CoordinateUnit, CoordinateUnit | None, np.ndarray]:
    """Settle the coordinates' unit and refuse names that contradict it (the units step).

    A CSV's x/y columns are read in :func:`coordinate_unit` (``coord_unit_m``, else the CRS's);
    their names must not state another unit (:func:`check_unit_names`) nor say that x and y are
    swapped (:func:`check_axis_names`). A geometry is in its CRS's unit (``coord_unit_m`` is
    refused for it); for a GeoDataFrame in memory, an `x`/`y` column the geometry was built from
    must state a unit that agrees (:func:`geometry_unit`).

    Parameters
    ----------
    frame : pandas.DataFrame or geopandas.GeoDataFrame
        The records (for the values of a GeoDataFrame's `x`/`y` columns).
    xy : ndarray of shape (n_records, 2)
        The coordinates as read: a CSV's columns, or the geometry's in `crs`.
    x, y : str, optional
        A CSV's coordinate columns; for a GeoDataFrame, the location columns released with it.
    crs : pyproj.CRS
        The CRS the coordinates are given in.
    coord_unit_m : float, optional
        Metres per unit of a CSV's x/y columns.
    is_table : bool
        True for a CSV's table (coordinates in columns), False for a geometry.
    origin : Origin

    Returns
    -------
    unit : CoordinateUnit
        The unit the coordinates are read in.
    columns_unit : CoordinateUnit or None
        The unit of the `x`/`y` columns a GeoDataFrame's geometry was built from (None: none).
    xy : ndarray of shape (n_records, 2)
        The coordinates in the CRS's own unit (:func:`to_crs_units`).

    Raises
    ------
    InputError
        As :func:`coordinate_unit`, :func:`check_unit_names` and :func:`check_axis_names`;
        `coord_unit_m` with a geometry.
    """
    unit = coordinate_unit(crs, coord_unit_m)
    if is_table:
        check_unit_names([x, y], crs, unit, origin)
        check_axis_names(x, y)
        return unit, None, to_crs_units(xy, unit)
    if unit.scale_to_crs != 1.0:
        raise InputError(f"`coord_unit_m` = {coord_unit_m!r} applies to CSV x/y columns only; "
                         f"{origin.name} has a geometry whose CRS defines its unit")
    found = []
    for j, column in enumerate((x, y)):
        if origin.in_memory and column is not None:
            values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
            if (built_from := geometry_unit(values, xy[:, j], crs)) is not None:
                check_unit_names([column], crs, built_from, origin)
                found.append(built_from)
    return unit, (found[0] if found and all(u == found[0] for u in found) else None), xy
