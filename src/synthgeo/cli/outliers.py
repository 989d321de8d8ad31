"""``synthgeo outliers``: the outlier policy — labels, disposals, caps, hole and bias checks."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from synthgeo.cli._points import add_points_arguments, columns, load

MARKER = "outliers.json"


def add_parser(sub, common) -> None:
    """Register ``synthgeo outliers``."""
    p = sub.add_parser(
        "outliers", parents=[common],
        help="outlier policy: isolation ratios, ok/merge/generalise/suppress, caps",
        description="Isolation ratio = distance to the (K-1)-th nearest other record (other "
                    "subject) / --r-max-m. ok (<= 1), merge (<= --merge-ratio: published at "
                    "the centroid of a group of >= K nearest records), generalise (<= "
                    "--generalise-ratio: the smallest quadtree cell holding >= K records), "
                    "suppress. R bounds every disposal: no cell's half-diagonal and no merged "
                    "member's distance to its group centroid exceeds it, and a record that "
                    "cannot be placed within R is suppressed (counted against the caps). "
                    "Re-classifies after disposals to a fixed point (at most "
                    "--max-passes passes), then checks the global and per-unit suppression "
                    "caps, merged-group extent, the hole in published unit totals, and "
                    "compares suppressed with retained records (bias statement). With "
                    "--time-col the same logic runs on the time axis with --r-max-time; a "
                    "record's verdict is the worse of the two. A breach refuses (exit 1, "
                    "nothing written) and says which parameter to move.",
    )
    add_points_arguments(p)
    p.add_argument("--k", type=int, required=True, metavar="K",
                   help="anonymity threshold, integer >= 2 (e.g. 5); no default")
    p.add_argument("--r-max-m", type=float, required=True, metavar="R",
                   help="r_max in metres: the largest generalisation the release can tolerate; "
                        "it bounds every disposal (a cell's half-diagonal, a merged record's "
                        "distance to its group centroid); no default")
    p.add_argument("--unit-col", metavar="COL",
                   help="administrative unit column (per-unit cap, per-unit shares, hole "
                        "check); default: none")
    p.add_argument("--time-col", metavar="COL",
                   help="time column (ISO 8601; times without a zone read as UTC) for temporal "
                        "outliers; needs --r-max-time (default: none, no temporal check)")
    p.add_argument("--r-max-time", metavar="DURATION",
                   help='time tolerance with a unit: s, min, h or d, e.g. "6h", "2d" (no '
                        "default; needed with --time-col)")
    p.add_argument("--merge-ratio", type=float, default=2.0, metavar="X",
                   help="isolation ratio up to which a record is merged (default: 2)")
    p.add_argument("--generalise-ratio", type=float, default=4.0, metavar="X",
                   help="isolation ratio up to which a record is generalised; above it, "
                        "suppressed (default: 4)")
    p.add_argument("--max-suppressed-share", type=float, default=0.01, metavar="S",
                   help="global cap on the suppressed share, 0-1 (default: 0.01 = 1%%)")
    p.add_argument("--max-unit-suppressed-share", type=float, default=0.10, metavar="S",
                   help="cap on the suppressed share within each unit, 0-1 (default: 0.10 = "
                        "10%%)")
    p.add_argument("--group-diameter-ratio", type=float, default=1.0, metavar="X",
                   help="widest merge group allowed (largest distance between two members' "
                        "true locations), as a multiple of --r-max-m (of --r-max-time in time); "
                        "a wider merge, chained or not, fails and the record is generalised "
                        "(default: 1, so a record labelled merge is generalised in practice; "
                        "a member more than r_max from the group centroid fails it too)")
    p.add_argument("--max-passes", type=int, default=5, metavar="N",
                   help="classification passes allowed to reach a fixed point, the "
                        "confirming pass included (default: 5)")
    p.add_argument("--attributes", metavar="COLS",
                   help="comma-separated columns compared between suppressed and retained "
                        "records (default: numeric columns and text columns with <= 20 "
                        "values)")
    p.add_argument("--keep", metavar="COLS",
                   help="comma-separated attribute columns carried into the disposed layer "
                        "(default: none; id, unit and time always; never the input's "
                        "coordinate columns)")
    p.add_argument("--on-breach", choices=["refuse", "report"], default="refuse",
                   help="on a breached cap or no fixed point: refuse (exit 1, nothing "
                        "written; default) or report (exit 0, labels and JSON written, no "
                        "disposed layer)")
    p.add_argument("--units", type=int, default=20, metavar="N",
                   help="units to print, highest suppressed share first (default: 20; all "
                        "go to --out)")


def _print_tables(res, args, say) -> None:
    import pandas as pd

    pct = "{:.1%}".format
    with pd.option_context("display.width", 160, "display.max_rows", 500,
                           "display.max_columns", 20):
        counts = res.label_counts()
        say("labels (worst of space and time): " + ", ".join(f"{k} {v:,}"
                                                              for k, v in counts.items()))
        for axis, d in res.disposal_counts().items():
            say(f"disposals ({axis}): " + ", ".join(f"{k} {v:,}" for k, v in d.items()))
        say(f"passes: {res.n_passes} ({'fixed point' if res.converged else 'NO fixed point'})"
            "; per pass: " + "; ".join(
                f"{p['pass']}: " + " ".join(f"{ax} " + "/".join(str(v) for v in c.values())
                                            for ax, c in p.items() if ax != "pass")
                for p in res.passes) + "  (ok/merge/generalise/suppress)")
        o = res.overall
        say(f"suppressed: {o['n_suppressed']:,} of {o['n_records']:,} = {o['share']:.2%} "
            f"(cap {o['cap']:.2%}: {'passes' if o['passes'] else 'BREACHED'})")
        if res.units is not None:
            u = res.units
            n_hit = int((u["n_suppressed"] > 0).sum())
            say(f"\nsuppression share per {args.unit_col} ({len(u)} units, {n_hit} with "
                f"suppressions; cap {res.policy.max_unit_suppressed_share:.0%}), highest "
                f"first:")
            shown = u.head(args.units).assign(share=u["share"].head(args.units).map(pct))
            say(shown.to_string(index=False))
            if len(u) > args.units:
                rest = u["share"].iloc[args.units]
                say(f"  ... {len(u) - args.units} more units ("
                    + ("none with suppressions)" if rest == 0 else f"all at {pct(rest)} or less)"))
            say(res.hole["message"])
        for axis, n in res.n_merges_too_wide.items():
            if n:
                say(f"merges refused ({axis}): {n:,} would have made a group wider than "
                    f"{res.policy.group_diameter_ratio:g} × r_max (or put a member beyond "
                    "r_max of its centroid); those records went on to be generalised (or "
                    "suppressed where no cell within r_max held k)")
        for axis, n in res.n_unplaced.items():
            if n:
                cell, bound = (("cell", "r_max") if axis == "space" else
                               ("time bin", "r_max_time"))
                say(f"not placed within {bound} ({axis}): {n:,} record(s) had no {cell} "
                    f"within {bound} of them holding k; suppressed and counted against the "
                    "caps")
        say(res.widest_disposal_line())
        if res.time_column:
            say(res.widest_disposal_line("time"))
        g = res.groups
        if len(g):
            for axis, part in g.groupby("axis"):
                unit = "m" if axis == "space" else "s"
                say(f"merge groups ({axis}): {len(part)}; diameter median "
                    f"{part['diameter'].median():,.0f} {unit}, max {part['diameter'].max():,.0f}"
                    f" {unit}; {int(part['exceeds_r_max'].sum())} exceed r_max (k-anonymous in "
                    f"name only); {int(part['displacement_exceeds_r_max'].sum())} moved a "
                    f"member farther than r_max")
        # a refusing policy publishes nothing: say what it would have done
        say("\nbias: " + (res.conditional_bias_statement() if res.refused
                           else res.bias_statement))


def run(args: argparse.Namespace, say) -> int:
    """Carry out the command; return the exit code."""
    import pyproj

    from synthgeo._errors import SpecError
    from synthgeo.io.atomic import check_output_dir, write_folder
    from synthgeo.io.provenance import provenance
    from synthgeo.locations.outliers import apply_outlier_policy
    from synthgeo.locations.policy import OutlierPolicy

    t0 = time.perf_counter()
    if (args.time_col is None) != (args.r_max_time is None):
        raise SpecError("`--time-col` and `--r-max-time` go together: temporal outliers need "
                        "the time column and its tolerance (e.g. --r-max-time 6h)")
    policy = OutlierPolicy(
        k=args.k, r_max_m=args.r_max_m, merge_ratio=args.merge_ratio,
        generalise_ratio=args.generalise_ratio, max_suppressed_share=args.max_suppressed_share,
        max_unit_suppressed_share=args.max_unit_suppressed_share, r_max_time=args.r_max_time,
        max_passes=args.max_passes, group_diameter_ratio=args.group_diameter_ratio)
    if args.out:
        check_output_dir(args.out, marker=MARKER, overwrite=args.overwrite,
                         inputs=(Path(args.points),))
    keep, attributes = columns(args.keep), columns(args.attributes) or None
    coords = [c for c in (getattr(args, "x", None), getattr(args, "y", None)) if c]
    if set(keep) & set(coords):
        from synthgeo._errors import SpecError

        bad = sorted(set(keep) & set(coords))
        raise SpecError(f"`--keep` names the coordinate column(s) {bad}: the disposed layer "
                        "publishes the treated location, never the true one")
    gdf = load(args, [c for c in (args.unit_col, args.time_col) if c] + keep +
               (attributes or []))
    t_load = time.perf_counter() - t0
    if attributes is None:  # the bias table compares attributes, not the coordinates themselves
        skip = {*coords, gdf.geometry.name, gdf.attrs.get("id_column"), args.unit_col,
                args.time_col, args.subject_col}
        attributes = [c for c in gdf.columns if c not in skip]
    t = time.perf_counter()
    res = apply_outlier_policy(gdf, policy, unit=args.unit_col, time=args.time_col,
                               subject=args.subject_col, attributes=attributes,
                               on_failure="report")
    t_policy = time.perf_counter() - t
    say(f"{Path(args.points).name}: {len(gdf):,} records, x/y read in "
        f"{gdf.attrs['coordinate_unit']['name']} units, distances in metres in {gdf.crs.name}")
    say(f"outlier policy: k = {policy.k}, r_max = {policy.r_max_m:g} m"
        + (f", r_max_time = {policy.r_max_time}" if args.time_col else "")
        + f", ratios {policy.merge_ratio:g}/{policy.generalise_ratio:g}")
    _print_tables(res, args, say)
    if res.refused and args.on_breach == "refuse":
        raise SpecError("the outlier policy refuses: " + res.refusal_message())
    if args.out:
        labels = res.to_dataframe()
        files = {"labels.csv": lambda p: labels.to_csv(p, index=False),
                 "groups.csv": lambda p: res.groups.to_csv(p, index=False),
                 "bias.csv": lambda p: res.bias.to_csv(p, index=False)}
        if res.units is not None:
            files["units.csv"] = lambda p: res.units.to_csv(p, index=False)
        if not res.refused:
            layer = res.disposed_layer(gdf, keep_columns=keep)
            table = layer.drop(columns=layer.geometry.name)
            to = pyproj.Transformer.from_crs(pyproj.CRS.from_wkt(res.crs_wkt), layer.crs,
                                             always_xy=True)
            xy = res.published_m[~res.suppressed]
            table["x"], table["y"] = to.transform(xy[:, 0], xy[:, 1]) if len(xy) else ([], [])
            scale = gdf.attrs["coordinate_unit"].get("scale_to_crs", 1.0)  # the input's unit
            table["x"], table["y"] = table["x"] / scale, table["y"] / scale
            files["disposed.parquet"] = lambda p: layer.to_parquet(p, index=False)
            files["disposed.csv"] = lambda p: table.to_csv(p, index=False)
        record = provenance("outliers", points=gdf, path=args.points, query=args.query)
        record["crs"]["disposed_csv_xy"] = "in the input's CRS and unit (coordinate_unit)"
        files[MARKER] = {**record, **res.record()}
        out = write_folder(args.out, files, marker=MARKER, overwrite=args.overwrite,
                           inputs=(Path(args.points),))
        what = "labels and record (refused: no disposed layer)" if res.refused else \
            "labels, disposed layer and record"
        say(f"\n{what} (confidential): {out}")
    say(f"seconds: load {t_load:.2f}, policy {t_policy:.2f}")
    return 0
