"""CRS checks and projection to a local metric CRS (docs/locations.md, "Distances and CRS").

A layer without a CRS is refused (EPSG:4326 is never assumed) and Web Mercator (or any other
Mercator projection, World Mercator EPSG:3395 among them) is never used for distances: at
latitude φ it reads a true distance d as d / cos φ. Geographic coordinates are
projected to the UTM zone of the data, or to an azimuthal equidistant projection centred on the
data when it spans several zones.
"""

from __future__ import annotations

from typing import Any

import geopandas
import numpy as np
import pyproj

from synthgeo._errors import InputError

__all__ = [
    "metric_problem", "parse_crs", "describe", "unit_m", "unit_name", "parse_target",
    "project", "local_crs", "check_projected", "coordinates_m", "note_zone_span",
]

_METRE = {"metre", "meter"}
_WEB_MERCATOR_EPSG = {3857, 3785, 900913, 102100, 102113}
_N_SHOW = 5  # how many offending ids an error message lists


def metric_problem(crs: pyproj.CRS) -> str | None:
    """Return why `crs` cannot be used for distances in metres, or None when it can.

    Examples
    --------
    >>> import pyproj
    >>> metric_problem(pyproj.CRS("EPSG:27700")) is None
    True
    >>> metric_problem(pyproj.CRS("EPSG:4326"))
    'is geographic (degrees); distances need a projected CRS in metres'
    >>> metric_problem(pyproj.CRS("EPSG:3395"))[:31]  # World Mercator: 1/cos φ as Web Mercator
    'is a Mercator projection, whose'
    >>> metric_problem(pyproj.CRS("EPSG:2226"))  # California zone 2, US survey feet
    "has axis unit 'US survey foot' (1 unit = 1200/3937 = 0.3048006 m), not metre"
    """
    op = crs.coordinate_operation
    text = f"{crs.name} {op.method_name if op else ''}".lower().replace("-", " ")
    if "pseudo mercator" in text or crs.to_epsg() in _WEB_MERCATOR_EPSG:
        return ("is Web Mercator, whose unit is a metre only at the equator: at latitude φ a "
                "true distance d reads as d / cos φ (x1.29 at 39°N), so radii and k are wrong")
    if op is not None and op.method_name.lower().startswith("mercator"):  # not Transverse
        return ("is a Mercator projection, whose scale grows as 1/cos φ away from its standard "
                "parallel (World Mercator, EPSG:3395, reads a true distance d as d / cos φ: "
                "x1.64 at 52.5°N), so radii and k are wrong")
    if crs.is_geographic:
        return "is geographic (degrees); distances need a projected CRS in metres"
    if not crs.is_projected:
        return "is not a projected CRS; distances need a projected CRS in metres"
    unit = crs.axis_info[0].unit_name if crs.axis_info else None
    if unit not in _METRE:
        factor = crs.axis_info[0].unit_conversion_factor if crs.axis_info else None
        return f"has axis unit {unit!r}{_factor_text(factor)}, not metre"
    return None


#: Exact metres per foot: the international foot, and the US survey foot (1200/3937 m).
_FEET = {0.3048: "0.3048", 1200 / 3937: "1200/3937 = 0.3048006"}


def _factor_text(factor: float | None) -> str:
    """`` (1 unit = F m)`` for a length unit's factor (exact for both feet), else ``""``.

    Examples
    --------
    >>> _factor_text(1200 / 3937), _factor_text(0.3048), _factor_text(None)
    (' (1 unit = 1200/3937 = 0.3048006 m)', ' (1 unit = 0.3048 m)', '')
    """
    if factor is None or not factor > 0:
        return ""
    exact = next((text for f, text in _FEET.items() if abs(factor / f - 1) < 1e-9), None)
    return f" (1 unit = {exact or format(factor, '.9g')} m)"


def parse_crs(value: Any, name: str) -> pyproj.CRS:
    """Parse a user-given CRS; InputError names the parameter `name`."""
    try:
        return pyproj.CRS.from_user_input(value)
    except pyproj.exceptions.CRSError as exc:
        msg = f'`{name}` = {value!r} is not a CRS ({exc}); give a code such as "EPSG:32610"'
        raise InputError(msg) from exc


def describe(crs: pyproj.CRS) -> str:
    """``name (EPSG:code)``, or the quoted name when the CRS has no EPSG code."""
    epsg = crs.to_epsg()
    return f"{crs.name} (EPSG:{epsg})" if epsg else repr(crs.name)


def unit_m(crs: pyproj.CRS) -> float | None:
    """Metres per unit of a projected CRS's first axis; None for a geographic CRS.

    Examples
    --------
    >>> import pyproj
    >>> unit_m(pyproj.CRS("EPSG:2227"))  # California zone 3, US survey feet
    0.30480060960121924
    """
    if crs.is_geographic or not crs.axis_info:
        return None
    return float(crs.axis_info[0].unit_conversion_factor)


def unit_name(crs: pyproj.CRS) -> str:
    """Name of the unit of the CRS's first axis ("metre", "degree", "US survey foot", ...)."""
    return crs.axis_info[0].unit_name if crs.axis_info else "unknown unit"


def parse_target(target_crs: Any) -> tuple[pyproj.CRS | None, bool]:
    """Check `target_crs`: ``(crs, False)`` for a given CRS, ``(None, local)`` for "utm"/"local".

    Raises
    ------
    InputError
        A CRS that is geographic, Web Mercator or not in metres.
    """
    if isinstance(target_crs, str) and target_crs.lower() in ("utm", "local"):
        return None, target_crs.lower() == "local"
    target = parse_crs(target_crs, "target_crs")
    if problem := metric_problem(target):
        raise InputError(f'`target_crs` = {target_crs!r} {problem}; use "utm" or a local '
                         "metric CRS")
    return target, False


def local_crs(gdf: geopandas.GeoDataFrame) -> pyproj.CRS:
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


def project(gdf: geopandas.GeoDataFrame, target: pyproj.CRS | None, *, local: bool,
            notes: list[dict[str, str]]) -> geopandas.GeoDataFrame:
    """Project `gdf` to `target` (or the local/UTM CRS of the data) in metres.

    A geographic layer spanning more than one UTM zone under ``"utm"`` adds the coded warning
    ``spans_utm_zones`` to `notes` (and warns).

    Raises
    ------
    InputError
        When pyproj cannot project the points (the message names the CRS).
    """
    source = pyproj.CRS.from_user_input(gdf.crs)
    try:
        if target is None and local:
            target = local_crs(gdf)
        if target is None:
            target = pyproj.CRS.from_user_input(gdf.estimate_utm_crs())
            if source.is_geographic:
                note_zone_span(gdf, target, notes)
        return gdf.to_crs(target)
    except (RuntimeError, pyproj.exceptions.ProjError) as exc:
        raise InputError(f"cannot project the points from {describe(source)} to a metric "
                         f"CRS ({exc}); give the 2-D CRS of the coordinates (e.g. EPSG:4326 for "
                         "lon/lat degrees, or a projected CRS in metres)") from exc


def note_zone_span(gdf: geopandas.GeoDataFrame, utm: pyproj.CRS,
                   notes: list[dict[str, str]]) -> None:
    """Add the coded warning ``spans_utm_zones`` when the points span over 6° of longitude.

    For points measured in the UTM zone `utm` (of geographic input): far from its zone a UTM
    projection distorts distances.
    """
    span = float(np.ptp(gdf.geometry.to_crs(4326).x.to_numpy()))
    if span > 6.0:
        from synthgeo.io.notices import note

        note(notes, "spans_utm_zones",
             f"the points span {span:.1f}° of longitude, more than one UTM zone, so "
             f"{describe(utm)} distorts distances far from its zone; consider an azimuthal "
             "equidistant `target_crs` centred on the data (+proj=aeqd +units=m)")


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

    Examples
    --------
    >>> import geopandas
    >>> s = geopandas.GeoSeries(geopandas.points_from_xy([0.0], [0.0]), crs="EPSG:32610")
    >>> check_projected(s).to_epsg()
    32610
    """
    if not isinstance(gdf, geopandas.GeoDataFrame | geopandas.GeoSeries):
        raise TypeError(f"expected a GeoDataFrame or GeoSeries, got {type(gdf).__name__}")
    if gdf.crs is None:
        raise InputError("the layer has no CRS, so distances are meaningless; set the CRS the "
                         "coordinates are in with `gdf.set_crs(...)` (never assume EPSG:4326)")
    crs = pyproj.CRS.from_user_input(gdf.crs)
    if problem := metric_problem(crs):
        raise InputError(f"the layer's CRS {describe(crs)} {problem}; project it first, e.g. "
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

    Examples
    --------
    >>> import geopandas
    >>> s = geopandas.GeoSeries(geopandas.points_from_xy([1.5], [2.0]), crs="EPSG:32610")
    >>> coordinates_m(s).tolist()
    [[1.5, 2.0]]
    """
    check_projected(gdf)
    geom = gdf.geometry if isinstance(gdf, geopandas.GeoDataFrame) else gdf
    bad = geom.isna().to_numpy() | geom.is_empty.to_numpy() | (geom.geom_type != "Point").to_numpy()
    if bad.any():
        raise InputError(f"{int(bad.sum())} geometries are not non-empty Points, e.g. at index "
                         f"{geom.index[bad][:_N_SHOW].tolist()}")
    return np.column_stack([geom.x.to_numpy(dtype="float64"), geom.y.to_numpy(dtype="float64")])

