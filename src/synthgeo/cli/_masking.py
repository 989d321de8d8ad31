"""Options and helpers shared by ``synthgeo mask`` and ``synthgeo choose-k``."""

from __future__ import annotations

import argparse
from pathlib import Path

from synthgeo._errors import SpecError
from synthgeo.cli._options import add_reading_options, reading_kwargs


def add_input_args(p: argparse.ArgumentParser) -> None:
    """Add the cases, households and region options."""
    p.add_argument("cases", help="case points (the rare disease): CSV with --x/--y/--crs, or a "
                                 "GeoPackage/GeoParquet/shapefile/GeoJSON layer; "
                                 "synthgeo:NAME names a data file shipped in the package "
                                 "(e.g. synthgeo:chorley_ribble_cancer.csv)")
    p.add_argument("--households", required=True, metavar="FILE",
                   help="household (address) points or a population proxy, same CRS as CASES; "
                        "may be the same file as CASES, told apart by the two queries (no "
                        "default: required)")
    g = p.add_argument_group("reading the files")
    add_reading_options(g)
    g.add_argument("--cases-query", metavar="EXPR",
                   help="""pandas query selecting the cases, e.g. "cancer == 'larynx'" """
                        "(default: all rows)")
    g.add_argument("--households-query", metavar="EXPR",
                   help="""pandas query selecting the households, e.g. "cancer == 'lung'" """
                        "(default: all rows)")
    g.add_argument("--id-col", metavar="COL",
                   help="unique case id column, written with the masked points (default: row "
                        "numbers in a column `record`)")
    g.add_argument("--weight-col", metavar="COL",
                   help="households (or people) per household point, e.g. for group quarters "
                        "(default: one household per point)")
    g.add_argument("--region", metavar="FILE",
                   help="study-region polygon: CSV of vertices (--region-x/--region-y, ring "
                        "column `ring`) in the cases' CRS and unit, or a polygon layer; "
                        "displacements leaving it are redrawn (default: none)")
    g.add_argument("--region-x", metavar="COL", help="region CSV: x column (default: --x)")
    g.add_argument("--region-y", metavar="COL", help="region CSV: y column (default: --y)")


def add_utility_args(p: argparse.ArgumentParser, *, required: bool) -> None:
    """Add the excess-near-a-source utility test options."""
    g = p.add_argument_group("utility test: excess cases within R of a source")
    g.add_argument("--source", metavar="X,Y", required=required,
                   help="suspected source, in the cases file's CRS and unit (scaled by "
                        "--coord-unit-m), e.g. 354.5,413.6 for km on the British National Grid"
                        " (default: none, no utility test)")
    g.add_argument("--radius-m", type=float, metavar="R", required=required,
                   help="radius R around the source, metres (distance <= R counts; default: "
                        "none, no utility test)")
    g.add_argument("--min-ratio", type=float, default=2.0, metavar="F",
                   help="detected when observed >= F × expected (default: 2); expected = cases "
                        "× share of households within R")
    g.add_argument("--min-count", type=int, default=3, metavar="N",
                   help="... and observed >= N cases (default: 3)")


def add_attacker_args(p: argparse.ArgumentParser) -> None:
    """Add the attacker option."""
    p.add_argument("--known-share", type=float, default=0.3, metavar="S",
                   help="attacker model: share of cases whose true household the attacker "
                        "knows, in (0, 1] (default: 0.3); each known case's masked point is "
                        "linked to the nearest known household, ties count as failures")


def parse_xy(text: str, name: str) -> tuple[float, float]:
    """Parse ``"X,Y"`` into two floats."""
    try:
        x, y = (float(v) for v in text.split(","))
    except ValueError as exc:
        raise SpecError(f"`{name}` = {text!r} must be two numbers X,Y, e.g. 354.5,413.6") from exc
    return x, y


def resolve(path: str | None) -> Path | None:
    """Resolve a file path, or ``synthgeo:NAME`` for a data file shipped in the package."""
    if path is None:
        return None
    if path.startswith("synthgeo:"):
        from importlib import resources

        return Path(str(resources.files("synthgeo") / "data" / path.split(":", 1)[1]))
    return Path(path)


def load_inputs(args: argparse.Namespace):
    """Load the cases, households and region named on the command line."""
    from synthgeo.masking.inputs import load_masking_inputs

    return load_masking_inputs(
        resolve(args.cases), households_path=resolve(args.households),
        **reading_kwargs(args), cases_query=args.cases_query,
        households_query=args.households_query, id_column=args.id_col,
        weight_column=args.weight_col, region_path=resolve(args.region), region_x=args.region_x,
        region_y=args.region_y,
    )


def make_utility(args: argparse.Namespace, inputs):
    """Build the ExcessNearSource test from --source/--radius-m (None when not given)."""
    from synthgeo.masking import ExcessNearSource

    if args.source is None and args.radius_m is None:
        return None
    if args.source is None or args.radius_m is None:
        raise SpecError("give both `--source` and `--radius-m` for the utility test")
    return ExcessNearSource.from_households(
        inputs.households, source_xy_m=inputs.point_m(parse_xy(args.source, "--source")),
        radius_m=args.radius_m, weights=inputs.weights, min_ratio=args.min_ratio,
        min_count=args.min_count)


def input_files(args: argparse.Namespace) -> list[Path]:
    """Input files the output folder must not contain."""
    return [resolve(p) for p in (args.cases, args.households, args.region) if p is not None]
