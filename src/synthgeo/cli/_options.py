"""One declaration of the options several commands share (reading points, locations).

``kanon``, ``outliers``, ``mask`` and ``choose-k`` read points files with the same options
(:data:`READING`); ``run`` and ``validate`` take the spec-overriding ones (:data:`SPEC_DATA`,
:data:`SPEC_ANONYMITY`). Each entry is ``(flag, argparse keywords)``; every help text states the
default and the unit.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["READING", "SPEC_DATA", "SPEC_ANONYMITY", "MASKING", "add", "reading_kwargs",
           "add_reading_options", "add_spec_overrides", "seed_value"]

_CSV = "CSV only: "


def _study_area(text: str) -> str:
    """Keep a "W,S,E,N" `--study-area` value; make a file path absolute (not the spec's)."""
    import os

    return text if "," in text or not os.path.exists(text) else os.path.abspath(text)


_STUDY_AREA = ("--study-area", dict(
    type=_study_area, metavar="AREA",
    help='where the points must lie: a lon/lat box "WEST,SOUTH,EAST,NORTH" in degrees (write '
         "--study-area=-3.2,53.5,-2.3,54 when WEST is negative), or a polygon file (GeoJSON, "
         "GeoPackage, shapefile, with its CRS); any point outside it refuses the file, naming "
         "how many (default: %s)"))
_ACCEPT_OFFSHORE = ("--accept-offshore", dict(
    help="go on, with a warning, when more than half of the points lie over the sea (GSHHG "
         "land mask), usually a wrong unit factor or swapped x/y (default: %s)"))

#: Options for reading a points file (load_points' keywords of the same names).
READING: dict[str, tuple[str, dict[str, Any]]] = {
    "x": ("--x", dict(metavar="COL", help=_CSV + "x column (longitude or easting); no "
                                                 "default, required for CSV")),
    "y": ("--y", dict(metavar="COL", help=_CSV + "y column (latitude or northing); no "
                                                 "default, required for CSV")),
    "crs": ("--crs", dict(metavar="CRS", help='CRS of --x/--y, e.g. "EPSG:4326" for lon/lat '
                                             'degrees or "EPSG:27700"; required for CSV, a '
                                             "layer's own CRS is used otherwise (no default: "
                                             "EPSG:4326 is never assumed)")),
    "coord_unit_m": ("--coord-unit-m", dict(
        type=float, metavar="M",
        help=_CSV + "metres per unit of the x/y values (and of coordinates given with them), "
                    "e.g. 1000 for kilometres, 100 for units of 100 m; refused with a "
                    "geographic --crs (default: the unit of --crs, e.g. metres for "
                    "EPSG:27700)")),
    "sep": ("--sep", dict(default=",", metavar="C",
                          help=_CSV + "field separator, one character, e.g. ';' or a tab "
                                      "(default: ',')")),
    "decimal": ("--decimal", dict(default=".", metavar="C",
                                  help=_CSV + "decimal mark, e.g. ',' (default: '.')")),
    "thousands": ("--thousands", dict(default=None, metavar="C",
                                      help=_CSV + "thousands separator of numbers, e.g. '.' "
                                                  "with --decimal ',' for 1.234,5 (default: "
                                                  "none; with --decimal ',' a column of "
                                                  "numbers like 1.234 is refused)")),
    "encoding": ("--encoding", dict(default="utf-8", metavar="NAME",
                                    help=_CSV + "text encoding, e.g. latin-1 or cp1252 "
                                                "(default: utf-8)")),
    "accept_small_extent": ("--accept-small-extent", dict(
        action="store_true",
        help="go on when 10-49 distinct locations span under 100 m (50 or more "
             "under 1 km; bounding-box diagonal) or lie a median under 1 m apart, usually a "
             "unit error such as km read as metres; "
             "recorded as a warning (default: refuse)")),
    "study_area": (_STUDY_AREA[0], {**_STUDY_AREA[1],
                                    "help": _STUDY_AREA[1]["help"] % "none"}),
    "accept_offshore": (_ACCEPT_OFFSHORE[0], {
        "action": "store_true", "help": _ACCEPT_OFFSHORE[1]["help"] % "refuse"}),
}

#: ``[data]`` keys ``run``/``validate`` can override (None: the spec's value stands).
SPEC_DATA: dict[str, tuple[str, dict[str, Any]]] = {
    "coord_unit_m": ("--coord-unit-m", dict(
        type=float, metavar="M",
        help="metres per unit of the spec's x/y columns, e.g. 1000 for kilometres (default: "
             "the spec's [data] coord_unit_m, else the unit of its crs)")),
    "accept_small_extent": ("--accept-small-extent", dict(
        action="store_const", const=True,
        help="go on when the points' extent is implausibly small for their number (10-49 "
             "distinct locations under 100 m across, 50 or more under 1 km, or a median under "
             "1 m apart), with a warning in release.json (default: the spec's [data] "
             "accept_small_extent, else refuse)")),
    "study_area": (_STUDY_AREA[0], {**_STUDY_AREA[1], "help": _STUDY_AREA[1]["help"] % (
        "the spec's [data] study_area, else none")}),
    "accept_offshore": (_ACCEPT_OFFSHORE[0], {
        "action": "store_const", "const": True,
        "help": _ACCEPT_OFFSHORE[1]["help"] % "the spec's [data] accept_offshore, else refuse"}),
}

#: ``[anonymity]`` keys ``run`` can override.
SPEC_ANONYMITY: dict[str, tuple[str, dict[str, Any]]] = {
    "treatment": ("--treatment", dict(
        choices=["none", "apply"],
        help="location treatment: none = release exact locations (the location verdict "
             "fails when a record the outlier policy labels merge/generalise/suppress is "
             "released exactly); apply = publish the policy's disposals and withhold "
             "suppressed records (default: the spec's [anonymity] treatment, else none)")),
    "on_location_failure": ("--on-location-failure", dict(
        choices=["stop", "warn"],
        help="when the location verdict is FAIL: stop before fitting, or warn (in "
             "release.json and the report) and go on (default: the spec's [anonymity] "
             "on_location_failure, else stop)")),
}


#: Options of the masking commands beyond reading (``mask``, ``choose-k``).
MASKING: dict[str, tuple[str, dict[str, Any]]] = {
    "verify": ("--verify", dict(
        action="store_true",
        help="verified mask: redraw each case until its verified k (households at least as "
             "close to the masked point as the true location, own counted once) reaches k, "
             "widening the annulus x1.25 after every 10 failed draws; redraws are reported "
             "(default: off: the verified k is only reported)")),
    "max_verify_redraws": ("--max-verify-redraws", dict(
        type=int, default=100, metavar="N",
        help="with --verify: rounds of redraws before refusing a case still below k "
             "(default: 100)")),
    "attacker_only": ("--attacker-only", dict(
        action="store_true",
        help="no utility test: sweep the attacker's success, the displacement and the verified "
             "k only, and choose the smallest k meeting the attacker target (default: off; "
             "--source and --radius-m are then not needed)")),
    "preregistered": ("--preregistered", dict(
        action="store_true",
        help="the source and radius were registered before looking at the data: go on when "
             "the true locations show no excess (the sweep then measures how often masking "
             "keeps that finding, i.e. shows no spurious excess), and say so (default: off: "
             "refuse a test that does not pass on the true locations)")),
    "max_site_records": ("--max-site-records", dict(
        type=int, default=10, metavar="N",
        help="records at one exact location share one published point; a site with more than "
             "N records is refused, since its stack of identical points can name an "
             "institution (default: 10; release such a site as a count instead)")),
}


def seed_value(text: str) -> int:
    """Parse a ``--seed``: an integer >= 0; else one argparse error line naming the range.

    argparse reports it as ``synthgeo: error: argument --seed: ...`` (exit code 2).

    Examples
    --------
    >>> seed_value("20181")
    20181
    >>> try:
    ...     seed_value("-1")
    ... except argparse.ArgumentTypeError as exc:
    ...     print(exc)  # doctest: +NORMALIZE_WHITESPACE
    -1 is negative: a seed is an integer >= 0 (e.g. 20181; leave --seed out for a fresh
    random one)
    """
    fix = "a seed is an integer >= 0 (e.g. 20181; leave --seed out for a fresh random one)"
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer: {fix}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative: {fix}")
    return value


def add(p: argparse.ArgumentParser | Any, table: dict[str, tuple[str, dict[str, Any]]],
        names: list[str] | None = None, **overrides: dict[str, Any]) -> None:
    """Register the options `names` (default: all) of `table` on parser or group `p`.

    ``overrides`` maps an option's key to argparse keywords replacing the declared ones (e.g. a
    command-specific help line).
    """
    for key in names or list(table):
        flag, kwargs = table[key]
        p.add_argument(flag, dest=key, **{**kwargs, **overrides.get(key, {})})


def add_reading_options(p: argparse.ArgumentParser | Any) -> None:
    """Register every :data:`READING` option."""
    add(p, READING)


def reading_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """:func:`synthgeo.io.points.load_points` keywords from the :data:`READING` options."""
    return {key: getattr(args, key) for key in READING}


def add_spec_overrides(p: argparse.ArgumentParser, *, anonymity: bool = True) -> None:
    """Register the :data:`SPEC_DATA` (and :data:`SPEC_ANONYMITY`) overrides of a spec."""
    g = p.add_argument_group("location overrides of the spec (for previews; the release "
                             "record keeps the values used)")
    add(g, SPEC_DATA)
    if anonymity:
        add(g, SPEC_ANONYMITY)
