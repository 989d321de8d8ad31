"""Where the points are: a declared study area (step 6) and a land/sea test (after step 9).

Every other check of the input pass asks whether coordinates are *possible* for their CRS; a
wrong unit factor or swapped axes can still give possible coordinates in the wrong place (km
read with ``coord_unit_m = 100`` under EPSG:27700 lands in the sea south-west of Land's End;
lat/lon swapped in columns named x/y under EPSG:4326 moves north-east England to the Indian
Ocean). Two checks ask where the points are (docs/locations.md, "Where the points are"):

* **the study area** (optional, the primary check): a lon/lat box ``[west, south, east,
  north]`` in degrees or a polygon file geopandas reads (GeoJSON, GeoPackage, shapefile, with
  its own CRS); any point outside it refuses the file. Country codes are not offered: no
  maintained library in the environment ships country outlines offline (geopandas dropped
  Natural Earth in 1.0).
* **land or sea**: more than :data:`MAX_SEA_SHARE` of the points over the sea refuses the file
  unless offshore records are accepted. The land mask is roaring-landmask's raster of the
  GSHHG shoreline (1/240°, about 460 m; a cell touching land counts as land, so coastal
  records are never called sea: only cells with no land at all are).
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

import geopandas
import numpy as np
import pyproj
import shapely

from synthgeo._errors import InputError
from synthgeo.io.notices import note
from synthgeo.io.origin import Origin
from synthgeo.io.paths import not_a_file

__all__ = ["StudyArea", "LandChecked", "study_area", "lonlat", "check_study_area", "check_land",
           "release_land_mask", "MAX_SEA_SHARE"]

#: A file is refused when more than this share of its points lie over the sea.
MAX_SEA_SHARE = 0.5

_CAUSE = ("likely a wrong unit factor (`coord_unit_m`: 1000 for kilometres) or swapped x/y "
          "(lat/lon) columns")
_BOX = re.compile(r"^\s*" + r"\s*,\s*".join([r"([-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?)"] * 4)
                  + r"\s*$")


@dataclass(frozen=True)
class StudyArea:
    """A declared study area: a polygon in lon/lat degrees (EPSG:4326) and how it was given.

    Attributes
    ----------
    polygon : shapely.Geometry
        (Multi)polygon, longitude/latitude in degrees.
    label : str
        How messages name it, e.g. ``"box lon -3 to -2, lat 53 to 54"`` or the file's name.
    """

    polygon: shapely.Geometry
    label: str


@dataclass(frozen=True)
class LandChecked:
    """The land/sea test's outcome for a file whose very bytes a registered release checked.

    ``synthgeo draw`` reads the release's own input file again (the same ``[data]`` keys,
    from the release's signed spec); when the file's SHA-256 is the one the release recorded,
    the test's outcome is known and the land mask (about 0.8 s to load, 430 MB resident) is
    not loaded again (:func:`synthgeo.io.points.load_points`). Any other bytes are tested.

    Attributes
    ----------
    sha256 : str
        SHA-256 of the file bytes the release read (release.json ``input.sha256``).
    notes : tuple of dict
        The coded ``offshore`` warning the test gave then, if any (release.json
        ``warnings``), given again.
    """

    sha256: str
    notes: tuple = ()


def _box(values) -> StudyArea:
    try:
        west, south, east, north = (float(v) for v in values)
    except (TypeError, ValueError) as exc:
        raise InputError(f"`study_area` = {values!r} must be four numbers [west, south, east, "
                         "north] in degrees, or a polygon file") from exc
    if not (-180 <= west < east <= 180 and -90 <= south < north <= 90):
        raise InputError(f"`study_area` = {list(values)!r} must be [west, south, east, north] in "
                         "degrees with -180 <= west < east <= 180 and -90 <= south < north <= 90")
    return StudyArea(shapely.box(west, south, east, north),
                     f"box lon {west:g} to {east:g}, lat {south:g} to {north:g}")


def _polygon_file(path: Path) -> StudyArea:
    if (why := not_a_file(path)) is not None:
        if why == "does not exist" and re.fullmatch(r"[A-Za-z]{2,3}", path.name):
            raise InputError(f"`study_area` = {path.name!r}: country codes are not supported "
                             "(no country outlines ship with the installed libraries); give a "
                             "box [west, south, east, north] in degrees or a polygon file")
        raise InputError(f"`study_area` file {path!s} {why}; give the polygon file itself")
    try:
        layer = geopandas.read_file(path)
    except Exception as exc:  # pyogrio raises its own types for unreadable files
        raise InputError(f"`study_area` file {path.name} could not be read as a polygon layer "
                         f"(GeoJSON, GeoPackage, shapefile): {type(exc).__name__}") from exc
    if layer.crs is None:
        raise InputError(f"`study_area` file {path.name} has no CRS; save it with one")
    kinds = set(layer.geometry.geom_type.dropna())
    if not kinds or not kinds <= {"Polygon", "MultiPolygon"}:
        raise InputError(f"`study_area` file {path.name} must hold polygons, found "
                         f"{sorted(kinds) or 'no geometry'}")
    polygon = shapely.union_all(np.asarray(layer.to_crs("EPSG:4326").geometry.values))
    return StudyArea(polygon, f"polygon file {path.name}")


def study_area(value, *, relative_to: str | os.PathLike | None = None) -> StudyArea | None:
    """Read a declared study area: a lon/lat box, or a polygon file.

    Parameters
    ----------
    value : None, sequence of 4 numbers, str or os.PathLike
        ``[west, south, east, north]`` in degrees (also as the text ``"W,S,E,N"``), or a
        polygon file geopandas reads (GeoJSON, GeoPackage, shapefile) with its own CRS.
    relative_to : str or os.PathLike, optional
        Folder a relative file path is taken from (the spec's; default: the working folder).

    Returns
    -------
    StudyArea or None
        None when `value` is None.

    Raises
    ------
    InputError
        A box that is not four numbers with west < east, south < north in range; a missing or
        unreadable file, one without a CRS or holding other geometries than polygons; a
        country code (not supported).

    Examples
    --------
    >>> study_area([-3.2, 53.5, -2.3, 54.0]).label
    'box lon -3.2 to -2.3, lat 53.5 to 54'
    >>> study_area("-3.2, 53.5, -2.3, 54").polygon.bounds
    (-3.2, 53.5, -2.3, 54.0)
    """
    if value is None or isinstance(value, StudyArea):
        return value
    if isinstance(value, (list, tuple)):
        return _box(value)
    if isinstance(value, str) and (m := _BOX.match(value)):
        return _box(m.groups())
    if not isinstance(value, (str, os.PathLike)):
        raise InputError(f"`study_area` = {value!r} must be [west, south, east, north] in "
                         "degrees or a polygon file")
    path = Path(value)
    if relative_to is not None and not path.is_absolute():
        path = Path(relative_to) / path
    return _polygon_file(path)


def lonlat(xy: np.ndarray, crs: pyproj.CRS) -> tuple[np.ndarray, np.ndarray]:
    """Return longitude and latitude (degrees, EPSG:4326) of points `xy` given in `crs`.

    Parameters
    ----------
    xy : ndarray of shape (n_points, 2)
        Coordinates in `crs`'s own unit and axis order x, y (easting, northing or lon, lat).
    crs : pyproj.CRS

    Returns
    -------
    lon, lat : ndarray of shape (n_points,)
        Longitude in [-180, 180); non-finite where the transformation fails.

    Examples
    --------
    >>> lon, lat = lonlat(np.array([[400000.0, 100000.0]]), pyproj.CRS("EPSG:27700"))
    >>> round(float(lon[0]), 3), round(float(lat[0]), 3)
    (-2.001, 50.8)
    """
    to_deg = pyproj.Transformer.from_crs(crs, "EPSG:4326", always_xy=True)
    lon, lat = to_deg.transform(xy[:, 0], xy[:, 1], errcheck=False)
    lon = (np.asarray(lon, float) + 180.0) % 360.0 - 180.0
    return lon, np.asarray(lat, float)


def check_study_area(xy: np.ndarray, crs: pyproj.CRS, area: StudyArea | None, *,
                     origin: Origin) -> None:
    """Refuse points outside the declared study area (step 6; one line naming the count).

    Parameters
    ----------
    xy : ndarray of shape (n_points, 2)
        Coordinates in `crs`'s own unit.
    crs : pyproj.CRS
    area : StudyArea or None
        None: nothing is checked.
    origin : Origin

    Raises
    ------
    InputError
        Any point outside `area` (its boundary counts as inside): how many, the area and the
        likely cause.
    """
    if area is None:
        return
    lon, lat = lonlat(xy, crs)
    inside = shapely.intersects_xy(area.polygon, lon, lat)
    n_out = int((~inside).sum())
    if n_out:
        raise InputError(f"{n_out:,} of {len(xy):,} points in {origin.name} lie outside the "
                         f"study area ({area.label}) when read in {crs.name} with the unit "
                         f"given: {_CAUSE}; {origin.text('fix_crs')}, or the study area")


@functools.lru_cache(maxsize=1)
def _land_mask():
    """roaring-landmask's GSHHG raster (loaded once per process, about 1 s)."""
    import roaring_landmask

    return roaring_landmask.RoaringMask.new(roaring_landmask.LandmaskProvider.Gshhg)


def release_land_mask() -> None:
    """Drop the cached land mask (about 430 MB resident) once a job has checked its points.

    The release job calls this after reading its records, so that the mask does not stay
    resident through the fits (it raised the peak memory of the Lucas and 10⁵ runs by
    ~0.4 GB); a later check loads it again (about 1–2 s).

    Examples
    --------
    >>> release_land_mask()
    """
    _land_mask.cache_clear()


def on_land(lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """Whether each point's GSHHG raster cell (1/240°) touches land; False where not finite.

    Examples
    --------
    >>> on_land(np.array([-2.7, -6.0]), np.array([53.7, 49.8])).tolist()  # Preston; off Cornwall
    [True, False]
    """
    ok = np.isfinite(lon) & np.isfinite(lat) & (np.abs(lat) <= 90)
    out = np.zeros(len(lon), dtype=bool)
    if ok.any():
        out[ok] = np.asarray(_land_mask().contains_many(
            np.ascontiguousarray(lon[ok], dtype=float), np.ascontiguousarray(lat[ok], dtype=float)),
            dtype=bool)
    return out


def check_land(xy: np.ndarray, crs: pyproj.CRS, *, accept_offshore: bool, origin: Origin,
               notes: list) -> dict[str, int]:
    """Refuse a file most of whose points lie over the sea (after step 9).

    Parameters
    ----------
    xy : ndarray of shape (n_points, 2)
        Coordinates in `crs` (the projected points, metres).
    crs : pyproj.CRS
    accept_offshore : bool
        Go on, with the coded warning ``offshore``, when most points are at sea.
    origin : Origin
    notes : list
        Coded warnings (:func:`synthgeo.io.notices.note`).

    Returns
    -------
    dict
        ``{"n_points", "n_at_sea"}``.

    Raises
    ------
    InputError
        More than :data:`MAX_SEA_SHARE` of the points at sea, unless `accept_offshore`.
    """
    n = len(xy)
    n_sea = int((~on_land(*lonlat(xy, crs))).sum()) if n else 0
    if n and n_sea > MAX_SEA_SHARE * n:
        text = (f"{n_sea:,} of {n:,} points ({n_sea / n:.0%}) in {origin.name} lie over the sea "
                "(GSHHG land mask, roaring-landmask): " + _CAUSE)
        if not accept_offshore:
            raise InputError(f"{text}; {origin.text('fix_crs')}. If the records really are "
                             f"offshore, {origin.text('fix_offshore')}")
        note(notes, "offshore", f"{text}; accepted as offshore records")
    return {"n_points": n, "n_at_sea": n_sea}
