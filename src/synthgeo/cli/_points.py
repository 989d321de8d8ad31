"""Options shared by the commands that read a points file directly (kanon, outliers)."""

from __future__ import annotations

import argparse

from synthgeo.cli._options import add_reading_options, reading_kwargs
from synthgeo.io.paths import resolve_input


def add_points_arguments(p: argparse.ArgumentParser) -> None:
    """Register POINTS and the loading options (columns, CRS, query, output folder)."""
    p.add_argument("points", metavar="POINTS", type=resolve_input,
                   help="points file: CSV (with --x/--y/--crs), GeoPackage, shapefile, GeoJSON "
                        "or GeoParquet, or synthgeo:NAME for a data file shipped in the "
                        "package; only read, never changed")
    add_reading_options(p.add_argument_group("reading the file"))
    p.add_argument("--target-crs", default="local", metavar="CRS",
                   help='projected CRS in metres for distances (default: "local" = the '
                        "data's own CRS when it is projected in metres, e.g. EPSG:27700; else "
                        "the UTM zone of the data, or an azimuthal equidistant projection "
                        'centred on the data when it spans several zones; "utm" forces UTM); '
                        "geographic and Web Mercator (EPSG:3857) are refused")
    p.add_argument("--id-col", metavar="COL",
                   help="record id column, unique (default: the row number 0..N-1)")
    p.add_argument("--query", metavar="EXPR",
                   help='pandas query selecting records, e.g. "beds == 2" (default: all)')
    p.add_argument("--subject-col", metavar="COL",
                   help="subject id column: one subject's records never count as each "
                        "other's neighbours, and k counts distinct subjects (default: every "
                        "record is its own subject)")
    p.add_argument("--out", metavar="DIR",
                   help="write the confidential outputs into this new folder (default: print "
                        "only); must not exist (see --overwrite) nor contain POINTS")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing --out folder of an earlier run of this command "
                        "(default: refuse)")


def columns(text: str | None) -> list[str]:
    """Column names from a comma-separated option value."""
    if not text:
        return []
    return [c.strip() for c in text.split(",") if c.strip()]


def load(args: argparse.Namespace, required: list[str], **options):
    """Load and project POINTS as the options say (see :func:`synthgeo.io.points.load_points`).

    `options`: further keywords of ``load_points`` (e.g. ``drop_duplicates``).
    """
    from synthgeo.io.points import load_points

    cols = [c for c in dict.fromkeys([*required, args.subject_col]) if c]
    return load_points(args.points, id_column=args.id_col, query=args.query,
                       required_columns=cols, target_crs=args.target_crs, min_records=1,
                       **reading_kwargs(args), **options)
