"""``synthgeo kanon``: spatial k within a radius, its distribution and worst offenders."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from synthgeo.cli._points import add_points_arguments, columns, load

MARKER = "kanon.json"


def add_parser(sub, common) -> None:
    """Register ``synthgeo kanon``."""
    p = sub.add_parser(
        "kanon", parents=[common],
        help="spatial k-anonymity: per-record k within a radius, distribution, worst offenders",
        description="For each record, spatial k = the number of records (distinct subjects "
                    "with --subject-col) within --radius-m metres, itself included (distance "
                    "<= radius), among records with the same --group-by values. Prints the "
                    "summary (count, min, 5th percentile, median, number and share below k), "
                    "the distribution, k by group and the worst offenders with their "
                    "locations; --out writes per-record k (confidential) and a JSON summary. "
                    "Geographic data are projected to a local metric CRS (never Web Mercator).",
    )
    add_points_arguments(p)
    p.add_argument("--radius-m", type=float, required=True, metavar="R",
                   help="radius in metres: the uncertainty a recipient has about a published "
                        "location (e.g. 50-100 m of geocoding error for exact locations); no "
                        "default, it is a judgement, not a knob")
    p.add_argument("--group-by", metavar="COLS",
                   help="comma-separated quasi-identifier columns a recipient can tell apart, "
                        "e.g. race,gender (default: location only); missing values form their "
                        "own group")
    p.add_argument("--k", type=int, default=5, metavar="K",
                   help="threshold: records with spatial k < K break k-anonymity (default: 5)")
    p.add_argument("--k-max", type=int, default=100, metavar="N",
                   help="cap on counts, shown as '>=N'; counts below it are exact; must be >= "
                        "K (default: 100)")
    p.add_argument("--worst", type=int, default=10, metavar="N",
                   help="worst offenders to print (default: 10)")
    dup = p.add_mutually_exclusive_group()
    dup.add_argument("--drop-duplicates", action="store_true",
                     help="drop records that repeat an earlier one in location and every "
                          "column but the id, as `synthgeo run` does under [data] "
                          "drop_duplicates = true (default: keep them; more than 1%% of the "
                          "records so is refused)")
    dup.add_argument("--accept-repeated-records", action="store_true",
                     help="count such repeats as distinct records (each adds to spatial k) "
                          "however many there are, with a warning in kanon.json, as [data] "
                          "accept_repeated_records = true does for run (default: refuse "
                          "above 1%% of the records)")


def run(args: argparse.Namespace, say) -> int:
    """Carry out the command; return the exit code."""
    import pandas as pd

    from synthgeo.io.atomic import check_output_dir, write_folder
    from synthgeo.io.checks import check_repeated_records
    from synthgeo.io.provenance import provenance
    from synthgeo.locations.spatial_k import measure_spatial_k

    t0 = time.perf_counter()
    group_by = columns(args.group_by)
    if args.out:
        check_output_dir(args.out, marker=MARKER, overwrite=args.overwrite,
                         inputs=(Path(args.points),))
    gdf = load(args, group_by, drop_duplicates=args.drop_duplicates)
    check_repeated_records(gdf, accept=args.accept_repeated_records, fix=(
        "pass --drop-duplicates to drop them, or --accept-repeated-records if they are "
        "distinct records (each adds to spatial k)"), accepted=(
        "accepted by --accept-repeated-records: counted as distinct records in spatial k"))
    t_load = time.perf_counter() - t0
    t = time.perf_counter()
    res = measure_spatial_k(gdf, args.radius_m, k=args.k, group_by=group_by,
                            subject=args.subject_col, k_max=args.k_max)
    t_k = time.perf_counter() - t
    s = res.summary()
    grouped = f"by {' × '.join(group_by)} ({s['n_groups']} groups)" if group_by else \
        "location only"
    unit = "subjects" if args.subject_col else "records"
    say(f"{Path(args.points).name}: {s['n_records']:,} records, x/y read in "
        f"{gdf.attrs['coordinate_unit']['name']} units, distances in metres in {gdf.crs.name}")
    say(f"spatial k = {unit} within {args.radius_m:g} m (itself included), {grouped}; "
        f"k = {args.k}, counts capped at {args.k_max}")
    if s["n_records"]:
        say(f"  min {res.label(s['min'])} | 5th percentile {res.label(s['p05'])} | median "
            f"{res.label(s['median'])} | below k: {s['n_below_k']:,} "
            f"({s['share_below_k']:.1%}) | k = 1: {s['n_k_equals_1']:,}")
    hist = res.histogram()
    with pd.option_context("display.width", 160, "display.max_rows", 200,
                           "display.max_columns", 20):
        say("\ndistribution of spatial k:")
        shown = hist.assign(share=hist["share"].map("{:.1%}".format))
        say(shown[["label", "n_records", "share"]].rename(
            columns={"label": "spatial_k"}).to_string(index=False))
        if group_by:
            say(f"\nper-record k by {' × '.join(group_by)} (worst share below k first):")
            bg = res.by_group()
            say(bg.assign(share_below_k=bg["share_below_k"].map("{:.1%}".format))
                .to_string(index=False))
        src = gdf.attrs.get("source_crs")
        worst = res.worst_offenders(args.worst, crs=src)
        scale = gdf.attrs["coordinate_unit"].get("scale_to_crs", 1.0)  # the input's unit
        for c in ("x", "y"):  # the file's own values (e.g. km with --coord-unit-m 1000)
            if c in worst:
                worst[c] = worst[c] / scale
        if len(worst):
            say(f"\nworst offenders (lowest k, most isolated first; confidential: true "
                f"locations; x/y as in the file, x_m/y_m in metres in {gdf.crs.name}):")
            fmt = {c: "{:.1f}".format for c in ("nearest_other_m", "x_m", "y_m")}
            fmt.update({c: "{:.6f}".format for c in ("x", "y") if c in worst})
            say(worst.to_string(index=False, formatters=fmt))
    if args.out:
        record = {
            **provenance("kanon", points=gdf, path=args.points, query=args.query),
            "summary": s, "histogram": hist.to_dict("records"),
            "distribution": res.distribution().to_dict("records"),
            "by_group": res.by_group().to_dict("records"),
        }
        per_record = res.to_dataframe()
        layer = gdf[[gdf.geometry.name]].join(per_record)
        files = {
            "spatial_k.csv": lambda p: per_record.to_csv(p, index=False),
            "spatial_k.parquet": lambda p: layer.to_parquet(p, index=False),
            "distribution.csv": lambda p: hist.to_csv(p, index=False),
            "by_group.csv": lambda p: res.by_group().to_csv(p, index=False),
            "worst_offenders.csv": lambda p: worst.to_csv(p, index=False),  # as printed
            MARKER: record,
        }
        out = write_folder(args.out, files, marker=MARKER, overwrite=args.overwrite,
                           inputs=(Path(args.points),))
        say(f"\nper-record k (confidential): {out / 'spatial_k.csv'} (and spatial_k.parquet); "
            f"summary: {out / MARKER}")
    say(f"seconds: load {t_load:.2f}, spatial k {t_k:.2f}")
    return 0
