"""Are these coordinates plausible for their CRS and unit? Refuse before any work if not.

docs/locations.md, "Units and plausibility". Checked on every load:

- geographic coordinates within ±180° / ±90°;
- projected values within the CRS's projected bounds (its area of use, buffered by 1°, projected):
  x = 1e12 m in a UTM zone is refused here, not after minutes of MCMC; under a world-wide
  projected CRS (no bounds to check), a value no lon/lat maps to (past ±180° / ±90°), whatever
  the share of such points;
- every point within the CRS's area of use (pyproj ``area_of_use``) buffered by 1° (data crossing
  a UTM zone edge by less than that pass): lon/lat degrees labelled with a UTM CRS land off the
  zone and are refused;
- not an implausibly small extent, unless ``accept_small_extent``: a bounding-box diagonal under
  100 m with 10–49 distinct locations or under 1 km with 50 or more, or (from 10 locations) a
  median distance to the nearest other distinct location under 1 m (km read as metres: 40 cases
  across 20 km read as metres span 20 m);
- not (half or more of the points) within 10 km of the projected origin (0, 0) of a CRS whose
  origin lies outside its area of use or within 0.5° of its edge (false origins are placed off
  the area so that every valid coordinate is large: British National Grid's lies in the sea off
  the Scilly Isles), the signature of kilometres or units of 100 m read as metres whatever the
  number of points or the size of the region, unless ``accept_small_extent``.

- not UTM-shaped values under a world-wide projected CRS (Web Mercator, World Mercator, World
  Equidistant Cylindrical, ...), unless a ``study_area`` is declared: every x within 160–840 km
  and every y within 0–10,000 km are UTM eastings and northings (false easting 500 km), and a
  world-wide CRS's area of use cannot refuse them, since read in it they fall on a 6° strip at
  1.4–7.5°E, inside the world (UTM zone 31N metres labelled EPSG:3857 read every distance at
  0.69 of its length; break-it trial, 2026-12-07).

Checks that cannot refuse (fewer points) leave coded warnings (:mod:`synthgeo.io.notices`).
Messages name the fix in the words of the records' origin (a file's options, or what to change
in a GeoDataFrame: :class:`synthgeo.io.origin.Origin`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyproj
from scipy.spatial import cKDTree

from synthgeo._errors import InputError
from synthgeo.io.columns import where
from synthgeo.io.crs import describe, unit_m
from synthgeo.io.notices import note
from synthgeo.io.origin import Origin

__all__ = ["check_ranges", "check_extent", "check_origin", "check_utm_shaped", "min_diagonal_m",
           "BUFFER_DEG", "UTM_EASTING_M", "UTM_NORTHING_M", "UTM_SHAPED_SHARE",
           "MIN_DISTINCT", "FEW_DIAGONAL_M", "FULL_DISTINCT", "MIN_DIAGONAL_M",
           "MIN_MEDIAN_SPACING_M", "ORIGIN_RADIUS_M", "ORIGIN_EDGE_DEG"]

BUFFER_DEG = 1.0  # the area of use is widened by this many degrees on every side
MIN_DISTINCT = 10  # the small-extent rule applies from this many distinct locations
FEW_DIAGONAL_M = 100.0  # ... refusing a bounding-box diagonal below this with 10-49 locations
FULL_DISTINCT = 50  # ... and from this many
MIN_DIAGONAL_M = 1000.0  # ... a diagonal below this
MIN_MEDIAN_SPACING_M = 1.0  # ... or a median nearest-distinct-location distance below this
ORIGIN_RADIUS_M = 10_000.0  # every |x|, |y| below this (CRS unit read as metres): near (0, 0)
ORIGIN_EDGE_DEG = 0.5  # an origin this close to the area of use's edge counts as off the area
ORIGIN_MIN_SHARE = 0.5  # ... refused when at least this share of the points lie near it
#: UTM eastings: the false easting 500 km ± a zone's half-width at the equator (334 km), widened
UTM_EASTING_M = (160_000.0, 840_000.0)
#: UTM northings, metres (the southern hemisphere's false northing is 10,000 km)
UTM_NORTHING_M = (0.0, 10_000_000.0)
#: ... refused when at least this share of the points is UTM-shaped: mistyped eastings must
#: not let the rest through (break-it trials 2026-12-07: one with np.all; 6 % of them with a
#: 95 % share, projected to UTM zone 36N for a Sacramento file); a majority decides
UTM_SHAPED_SHARE = 0.5


def _lonlat_range(xy: np.ndarray, crs: pyproj.CRS, frame: pd.DataFrame, labels: tuple[str, str],
                  id_column: str | None, origin: Origin) -> None:
    for axis, name, limit in ((0, "longitude", 180.0), (1, "latitude", 90.0)):
        out = np.abs(xy[:, axis]) > limit
        if out.any():
            raise InputError(
                f"{name} ({labels[axis]}) outside [-{limit:g}, {limit:g}] in {describe(crs)} "
                f"for {int(out.sum()):,} of {len(xy):,} points, at "
                f"{where(frame, out, id_column, origin)} (no value is shown: coordinates are "
                "confidential); check that `x`/`y` are not swapped and that `crs` is right")


def _null_island(xy: np.ndarray, crs: pyproj.CRS, frame: pd.DataFrame, id_column: str | None,
                 origin: Origin) -> None:
    """Refuse points at longitude 0, latitude 0 (in any CRS: Web Mercator's 0/0 is there too)."""
    if crs.is_geographic:
        null = (np.abs(xy[:, 0]) < 1e-7) & (np.abs(xy[:, 1]) < 1e-7)
    else:  # where (0°, 0°) lies in this CRS, if anywhere: one transform, not one per point
        to = pyproj.Transformer.from_crs(pyproj.CRS.from_epsg(4326), crs, always_xy=True)
        with np.errstate(all="ignore"):
            x0, y0 = to.transform(0.0, 0.0)
        if not (np.isfinite(x0) and np.isfinite(y0)):
            return
        null = np.hypot(xy[:, 0] - x0, xy[:, 1] - y0) < 0.01  # within 1 cm (or 0.01 ft)
    if null.any():  # (0°, 0°) is open sea: how failed geocodes are often written
        raise InputError(
            f"{int(null.sum())} point(s) at longitude 0, latitude 0 in {describe(crs)} (the Gulf "
            "of Guinea: a failed geocode written as 0/0) at "
            f"{where(frame, null, id_column, origin)}; "
            "geocode them or leave them out (`[data] query`, e.g. \"x != 0 or y != 0\" with "
            "your coordinate columns)")


def _area(crs: pyproj.CRS) -> tuple[float, float, float, float] | None:
    """Return the area of use (west, south, east, north) buffered by :data:`BUFFER_DEG`, or None."""
    aou = crs.area_of_use
    if aou is None:
        return None
    w, s, e, n = aou.bounds
    b = BUFFER_DEG
    return w - b, max(s - b, -90.0), e + b, min(n + b, 90.0)


def _projected_bounds(xy: np.ndarray, crs: pyproj.CRS, area: tuple, frame: pd.DataFrame,
                      labels: tuple[str, str], id_column: str | None, origin: Origin) -> None:
    w, s, e, n = area
    if e - w >= 360.0 or w > e:  # world-wide or across the antimeridian: leave it to the lon/lat
        return
    to_crs = pyproj.Transformer.from_crs(crs.geodetic_crs, crs, always_xy=True)
    try:
        lo_x, lo_y, hi_x, hi_y = to_crs.transform_bounds(max(w, -180.0), s, min(e, 180.0), n,
                                                         densify_pts=21)
    except pyproj.exceptions.ProjError:
        return
    if not np.all(np.isfinite([lo_x, lo_y, hi_x, hi_y])):
        return
    for axis, lo, hi in ((0, lo_x, hi_x), (1, lo_y, hi_y)):
        out = (xy[:, axis] < lo) | (xy[:, axis] > hi)
        if out.any():
            raise InputError(
                f"{'xy'[axis]} ({labels[axis]}) of {int(out.sum()):,} of {len(xy):,} points, "
                f"at {where(frame, out, id_column, origin)}, is outside the projected bounds of "
                f"{describe(crs)} ({lo:,.0f} to {hi:,.0f} in its unit, its area of use widened "
                f"by {BUFFER_DEG:g}°): an impossible value for this CRS; "
                f"{origin.text('fix_crs')}")


def _beyond_the_world(xy: np.ndarray, crs: pyproj.CRS, frame: pd.DataFrame,
                      labels: tuple[str, str], id_column: str | None, origin: Origin) -> None:
    """Refuse projected values no longitude/latitude maps to (past ±180° / ±90°).

    A world-wide CRS has no projected bounds to check (:func:`_projected_bounds` leaves it to the
    lon/lat), and PROJ wraps the longitude of an x past the world's edge (x = 63,000 km in Web
    Mercator reads as 154°W): such a value is impossible, whatever share of the points look
    right (break-it trial 2026-12-07: UTM metres labelled EPSG:3857, 60 % of the eastings
    mistyped, passed the UTM-shaped check). A value counts when projecting its lon/lat back does
    not return it (to 1 mm per 1,000 km), or its latitude is past ±90°.
    """
    to_deg = pyproj.Transformer.from_crs(crs, crs.geodetic_crs, always_xy=True)
    to_crs = pyproj.Transformer.from_crs(crs.geodetic_crs, crs, always_xy=True)
    with np.errstate(all="ignore"):
        lon, lat = (np.asarray(v, float) for v in to_deg.transform(xy[:, 0], xy[:, 1],
                                                                   errcheck=False))
        back = np.column_stack([np.asarray(v, float) for v in to_crs.transform(
            lon, lat, errcheck=False)])
        off = ~(np.abs(back - xy) <= 1e-3 + 1e-9 * np.abs(xy))  # NaN counts as off
        # an x just past the edge (a web map panned across the antimeridian: 180.3°) is a
        # place, wrapped by PROJ: allowed up to BUFFER_DEG past it, as the area-of-use check
        # allows (break-it trial 2026-12-07: Fiji at 179.8-180.3° was refused)
        edge = np.abs(np.asarray(to_crs.transform(np.full(len(xy), 180.0),
                                                  np.clip(lat, -90.0, 90.0),
                                                  errcheck=False)[0], float))
        near = np.abs(xy[:, 0]) <= edge * (180.0 + BUFFER_DEG) / 180.0
    off[:, 0] &= ~near
    off[:, 1] |= ~(np.abs(lat) <= 90.0)
    for axis in (0, 1):
        out = off[:, axis]
        if out.any():
            raise InputError(
                f"{'xy'[axis]} ({labels[axis]}) of {int(out.sum()):,} of {len(xy):,} points, "
                f"at {where(frame, out, id_column, origin)}, is beyond the world's extent in "
                f"{describe(crs)} (no longitude within ±{180 + BUFFER_DEG:g}° and latitude "
                "within ±90° maps to it): an impossible value for this CRS, whatever share of "
                f"the points look right (mistyped values?); {origin.text('fix_crs')}")


def _lon_within(lon, west: float, east: float):
    """Longitudes between `west` and `east`, measured eastwards: right across the antimeridian."""
    return (lon - west) % 360.0 <= (east - west) % 360.0


def _area_of_use(xy: np.ndarray, crs: pyproj.CRS, area: tuple, frame: pd.DataFrame,
                 id_column: str | None, origin: Origin) -> None:
    w, s, e, n = area
    to_deg = pyproj.Transformer.from_crs(crs, crs.geodetic_crs, always_xy=True)
    lon, lat = to_deg.transform(xy[:, 0], xy[:, 1], errcheck=False)
    lon, lat = np.asarray(lon, float), np.asarray(lat, float)
    lon = (lon + 180.0) % 360.0 - 180.0
    lon_ok = np.isfinite(lon) if e - w >= 360.0 else _lon_within(lon, w, e)
    out = ~(lon_ok & (lat >= s) & (lat <= n) & np.isfinite(lat))
    if out.any():
        raise InputError(
            f"{int(out.sum()):,} of {len(xy):,} points lie outside the area of use of "
            f"{describe(crs)} (lon {w:g} to {e:g}, lat {s:g} to {n:g}, widened by "
            f"{BUFFER_DEG:g}°), at {where(frame, out, id_column, origin)}: are the "
            "coordinates in another CRS or unit "
            f"(lon/lat degrees given a projected CRS, km read as metres)? "
            f"{origin.text('fix_crs')}")


def check_ranges(xy: np.ndarray, crs: pyproj.CRS, frame: pd.DataFrame, *,
                 labels: tuple[str, str], id_column: str | None, origin: Origin,
                 notes: list[dict[str, str]] | None = None) -> None:
    """Refuse coordinates impossible or implausible for `crs` (values in the CRS's unit).

    Parameters
    ----------
    xy : ndarray of shape (n_records, 2)
        Coordinates in the CRS's own unit (after ``coord_unit_m``).
    crs : pyproj.CRS
        The coordinates' CRS.
    frame : pandas.DataFrame
        The table the rows come from (to name offending ids or rows).
    labels : tuple of str
        How to name the x and y values in messages (e.g. "column `lon`").
    id_column : str, optional
    origin : Origin
        A file or a GeoDataFrame in memory: the words of the messages' fixes.
    notes : list, optional
        Receives the coded warning ``degrees_as_metres`` when a projected layer's values all
        lie within ±180/±90 but nothing refused them.

    Raises
    ------
    InputError
        Longitude/latitude out of range; a value outside the projected bounds; a point outside
        the area of use. The message names the CRS, the records and the options to check.
    """
    if crs.is_geographic:
        _lonlat_range(xy, crs, frame, labels, id_column, origin)
    if len(xy):
        _null_island(xy, crs, frame, id_column, origin)
    area = _area(crs)
    if area is not None and not crs.is_geographic:
        _projected_bounds(xy, crs, area, frame, labels, id_column, origin)
    if not crs.is_geographic and len(xy) and (area is None or area[2] - area[0] >= 360.0
                                              or area[0] > area[2]):
        _beyond_the_world(xy, crs, frame, labels, id_column, origin)  # no bounds checked
    if area is not None:
        _area_of_use(xy, crs, area, frame, id_column, origin)
    if (not crs.is_geographic and len(xy) > 1 and np.all(np.abs(xy[:, 0]) <= 180)
            and np.all(np.abs(xy[:, 1]) <= 90)):
        note(notes, "degrees_as_metres",
             f"the {len(xy)} coordinates in {describe(crs)} all lie within ±180/±90: are they "
             "lon/lat degrees labelled with a projected CRS? Distances (and every k) would be "
             "wrong")


def _world_wide(crs: pyproj.CRS) -> bool:
    """Whether a projected CRS's area of use spans every longitude (it can refuse no place)."""
    aou = crs.area_of_use
    return (not crs.is_geographic and aou is not None
            and aou.east - aou.west >= 360.0 - BUFFER_DEG)


def _distance_factor(crs: pyproj.CRS, lon: float, lat: float) -> float | None:
    """Return 1/k, k the CRS's linear scale at (lon, lat): how it reads true metres."""
    try:
        factors = pyproj.Proj(crs).get_factors(lon, lat)
        k = float(np.sqrt(factors.areal_scale))
    except (pyproj.exceptions.ProjError, RuntimeError, ValueError):
        return None
    return 1.0 / k if np.isfinite(k) and k > 0 else None


def check_utm_shaped(xy: np.ndarray, crs: pyproj.CRS, *, declared: bool,
                     origin: Origin) -> None:
    """Refuse UTM-shaped values under a world-wide projected CRS (UTM labelled EPSG:3857).

    Parameters
    ----------
    xy : ndarray of shape (n_records, 2)
        Coordinates in the CRS's own unit (after ``coord_unit_m``).
    crs : pyproj.CRS
        The coordinates' CRS.
    declared : bool
        A study area is declared (``study_area``): the points are checked against it instead.
    origin : Origin

    Raises
    ------
    InputError
        `crs` is projected with a world-wide area of use (Web Mercator, EPSG:3395, EPSG:4087,
        ...), no study area is declared, and at least :data:`UTM_SHAPED_SHARE` (half) of the
        points have x within :data:`UTM_EASTING_M` and y within :data:`UTM_NORTHING_M` (in
        metres): UTM eastings and northings, which read in `crs` fall on a 6° strip near
        4.5°E. The message names how many points are not so shaped (no value is shown) and
        the distance factor the reading would give (1/k, k the CRS's scale there: cos φ for
        Web Mercator).

    Examples
    --------
    >>> import numpy as np, pyproj
    >>> from synthgeo.io.origin import Origin
    >>> utm = np.array([[628_000.0, 5_800_000.0], [631_000.0, 5_803_000.0]])  # Amsterdam
    >>> check_utm_shaped(utm, pyproj.CRS("EPSG:32631"), declared=False, origin=Origin.memory())
    >>> check_utm_shaped(utm, pyproj.CRS("EPSG:3857"), declared=False, origin=Origin.memory())
    Traceback (most recent call last):
    ...
    synthgeo._errors.InputError: all 2 points have x within 160–840 km and y within 0–10,000 km,...
    """
    if declared or not len(xy) or not _world_wide(crs):
        return
    m = xy * (unit_m(crs) or 1.0)
    (e_lo, e_hi), (n_lo, n_hi) = UTM_EASTING_M, UTM_NORTHING_M
    shaped = ((m[:, 0] >= e_lo) & (m[:, 0] <= e_hi) & (m[:, 1] >= n_lo) & (m[:, 1] <= n_hi))
    n_shaped = int(shaped.sum())
    if n_shaped < UTM_SHAPED_SHARE * len(xy):
        return
    to_deg = pyproj.Transformer.from_crs(crs, crs.geodetic_crs, always_xy=True)
    lon, lat = (np.asarray(v, float) for v in to_deg.transform(xy[shaped, 0], xy[shaped, 1],
                                                              errcheck=False))
    west, east = (float(v) for v in to_deg.transform(np.array([e_lo, e_hi]) / (unit_m(crs) or 1.0),
                                                     np.zeros(2), errcheck=False)[0])
    factor = _distance_factor(crs, float(np.median(lon)), float(np.median(lat)))
    reads = ("" if factor is None else
             f"; if they are UTM metres, every distance reads at about {factor:.1f} of its "
             "length")
    n_other = len(xy) - n_shaped
    which = (f"all {len(xy):,} points have" if not n_other else
             f"{n_shaped:,} of {len(xy):,} points (at least {UTM_SHAPED_SHARE:.0%}; {n_other:,} "
             f"not, {'a mistyped value or two' if n_other <= 2 else 'mistyped values'}?) have")
    raise InputError(
        f"{which} x within {e_lo / 1000:,.0f}–{e_hi / 1000:,.0f} km and y "
        f"within {n_lo / 1000:,.0f}–{n_hi / 1000:,.0f} km, the ranges of UTM eastings and "
        f"northings (false easting 500,000 m), under {describe(crs)}, whose area of use is the "
        f"world and so cannot refuse them (read in it, such values lie at {west:.1f}° to "
        f"{east:.1f}°E){reads}; {origin.text('fix_utm')}")


def min_diagonal_m(n_distinct: int) -> float:
    """Smallest plausible bounding-box diagonal (metres) for `n_distinct` distinct locations.

    0 below :data:`MIN_DISTINCT` (10) locations (too few to judge), 100 m for 10–49 (a street of
    ten houses spans more; 40 cases across 20 km in kilometres read as metres span 20 m), 1 km
    from :data:`FULL_DISTINCT` (50) on. docs/locations.md, "Distances, CRS and units".

    Examples
    --------
    >>> [min_diagonal_m(n) for n in (9, 10, 49, 50)]
    [0.0, 100.0, 100.0, 1000.0]
    """
    if n_distinct < MIN_DISTINCT:
        return 0.0
    return FEW_DIAGONAL_M if n_distinct < FULL_DISTINCT else MIN_DIAGONAL_M


def _origin_off_area(crs: pyproj.CRS) -> tuple[float, float] | None:
    """Lon/lat of the projected origin (0, 0) when it lies off the area of use (or at its edge)."""
    aou = crs.area_of_use
    if aou is None or crs.is_geographic:
        return None
    to_deg = pyproj.Transformer.from_crs(crs, crs.geodetic_crs, always_xy=True)
    lon, lat = (float(v) for v in to_deg.transform(0.0, 0.0, errcheck=False))
    if not (np.isfinite(lon) and np.isfinite(lat)):
        return None
    w, s, e, n = aou.bounds
    b = ORIGIN_EDGE_DEG
    inside_lon = e - w >= 360.0 - 2 * b or bool(_lon_within(lon, w + b, e - b))
    inside = inside_lon and s + b <= lat <= n - b
    return None if inside else (lon, lat)


def check_origin(xy: np.ndarray, crs: pyproj.CRS, *, unit_words: str,
                 accept_small_extent: bool, origin: Origin,
                 notes: list[dict[str, str]] | None = None, fix: str | None = None) -> None:
    """Refuse coordinates that all sit next to a projected CRS's off-area origin (km as metres).

    Parameters
    ----------
    xy : ndarray of shape (n_records, 2)
        Coordinates in the CRS's own unit (after ``coord_unit_m``).
    crs : pyproj.CRS
    unit_words : str
        How the coordinates were read, for the message.
    accept_small_extent : bool
        Keep going (with the coded warning ``near_crs_origin``) instead of refusing.
    origin : Origin
    notes : list, optional
    fix : str, optional
        The refusal's last sentence, the fix (default: `origin`'s wording for a small extent).

    Raises
    ------
    InputError
        At least half the points (:data:`ORIGIN_MIN_SHARE`; a few stray records in metres must
        not hide the rest) within :data:`ORIGIN_RADIUS_M` of (0, 0) in a CRS whose origin lies off
        its area of use (or within 0.5° of its edge), unless `accept_small_extent`.

    Examples
    --------
    >>> import numpy as np, pyproj
    >>> from synthgeo.io.origin import Origin
    >>> bng = pyproj.CRS("EPSG:27700")
    >>> km = np.array([[353.2, 428.0], [354.1, 422.3], [360.0, 430.0]])  # Chorley, in km
    >>> check_origin(km * 1000, bng, unit_words="metre", accept_small_extent=False,
    ...              origin=Origin.memory())
    >>> check_origin(km, bng, unit_words="metre", accept_small_extent=False,
    ...              origin=Origin.memory())
    Traceback (most recent call last):
    ...
    synthgeo._errors.InputError: all 3 points lie within 10 km of the origin (0, 0) of ...
    """
    if crs.is_geographic or not len(xy):
        return
    near = np.all(np.abs(xy) < ORIGIN_RADIUS_M, axis=1)
    if near.mean() < ORIGIN_MIN_SHARE:  # one stray record must not hide the rest (break-it)
        return
    where_deg = _origin_off_area(crs)
    if where_deg is None:
        return
    lon, lat = where_deg
    how_many = (f"all {len(xy):,} points" if near.all() else
                f"{int(near.sum()):,} of {len(xy):,} points (the rest far from it: mixed units?)")
    text = (f"{how_many} lie within {ORIGIN_RADIUS_M / 1000:g} km of the origin "
            f"(0, 0) of {describe(crs)} (read in {unit_words}); that origin, at lon "
            f"{lon:.4g}, lat {lat:.4g}, lies off the CRS's area of use, where no real "
            "coordinate is so small: kilometres or units of 100 m read as metres look exactly "
            "like this")
    if not accept_small_extent:
        raise InputError(f"{text}. {fix or origin.text('fix_extent')}")
    note(notes, "near_crs_origin", text + "; accepted by `accept_small_extent`")


def _metres(value: float) -> str:
    """Format a distance in metres: "554,000 m", "99 m", "0.11 m" (never 5.54e+05)."""
    if not np.isfinite(value):
        return "n/a"
    return f"{value:,.0f} m" if value >= 100 else f"{value:.3g} m"


def check_extent(xy_m: np.ndarray, *, unit_words: str, accept_small_extent: bool,
                 origin: Origin,
                 notes: list[dict[str, str]] | None = None) -> dict[str, float | int]:
    """Refuse an implausibly small extent for the number of distinct locations (metres).

    Parameters
    ----------
    xy_m : ndarray of shape (n_records, 2)
        Projected coordinates, metres.
    unit_words : str
        How the coordinates were read (e.g. "metre, the unit of EPSG:27700"), for the message.
    accept_small_extent : bool
        Keep going (with the coded warning ``small_extent``) instead of refusing.
    origin : Origin
        A file or a GeoDataFrame in memory: the words of the message's fix.
    notes : list, optional
        Receives coded warnings.

    Returns
    -------
    dict
        ``n_distinct``, ``diagonal_m`` (bounding-box diagonal), ``median_spacing_m`` (median
        distance from a distinct location to the nearest other; NaN below 2 locations).

    Raises
    ------
    InputError
        ≥ 10 distinct locations with a diagonal under :func:`min_diagonal_m` (100 m; 1 km from
        50 locations on), or a wide enough diagonal but a median spacing < 1 m (a refusal of
        its own, naming both measures: close locations, not a small extent), unless
        `accept_small_extent`.

    Examples
    --------
    >>> import numpy as np
    >>> from synthgeo.io.origin import Origin
    >>> grid = np.stack(np.meshgrid(np.arange(10.0), np.arange(10.0)), -1).reshape(-1, 2)
    >>> frame = Origin.memory()
    >>> check_extent(grid * 1000, unit_words="metre", accept_small_extent=False,
    ...              origin=frame)["n_distinct"]
    100
    >>> check_extent(grid, unit_words="metre", accept_small_extent=False, origin=frame)
    Traceback (most recent call last):
    ...
    synthgeo._errors.InputError: the 100 points (100 distinct locations) span only 12.7 m ...
    """
    distinct = np.unique(xy_m, axis=0) if len(xy_m) else xy_m
    n = len(distinct)
    diag = float(np.hypot(*np.ptp(distinct, axis=0))) if n else 0.0
    spacing = float("nan")
    if n >= 2:
        spacing = float(np.median(cKDTree(distinct).query(distinct, k=2)[0][:, 1]))
    out = {"n_distinct": n, "diagonal_m": diag, "median_spacing_m": spacing}
    bound = min_diagonal_m(n)
    narrow = n >= MIN_DISTINCT and diag < bound
    close = n >= MIN_DISTINCT and not narrow and spacing < MIN_MEDIAN_SPACING_M
    small = narrow or close
    if close:  # spacing, not extent: a scale error shrinks both, so the extent would be small
        text = (f"the {len(xy_m):,} points ({n:,} distinct locations) span {_metres(diag)} "
                f"(bounding-box diagonal, at least the {_metres(bound)} the check accepts) but "
                f"lie a median spacing {_metres(spacing)} from the nearest other distinct "
                f"location, read in {unit_words}")
    else:
        text = (f"the {len(xy_m):,} points ({n:,} distinct locations) span only {_metres(diag)} "
                f"(bounding-box diagonal; median spacing {_metres(spacing)}) read in "
                f"{unit_words}")
    if small and not accept_small_extent:
        why = (f"implausibly small for {n:,} locations (under {bound:,.0f} m across, the "
               "smallest diagonal the check accepts)" if narrow else
               f"implausibly close for {n:,} locations (a median under "
               f"{MIN_MEDIAN_SPACING_M:g} m from the nearest other, the smallest spacing the "
               "check accepts): most locations have a twin under 1 m away, like records "
               "copied with a small shift, or a scale error")
        raise InputError(f"{text}: {why}. "
                         f"{origin.text('fix_extent' if narrow else 'fix_spacing')}")
    if small or (1 < n < MIN_DISTINCT and diag < MIN_MEDIAN_SPACING_M):
        note(notes, "small_extent", text + ("; accepted by `accept_small_extent`" if small
                                           else "; check the CRS given for the coordinates"))
    return out
