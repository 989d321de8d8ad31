"""``synthgeo choose-k``: sweep k over replicate donut masks and choose it from evidence."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from synthgeo.cli._masking import (
    add_attacker_args,
    add_input_args,
    add_utility_args,
    input_files,
    load_inputs,
    make_utility,
)
from synthgeo.cli._options import MASKING, add, seed_value


def add_parser(sub, common) -> None:
    """Register ``synthgeo choose-k``."""
    p = sub.add_parser(
        "choose-k", parents=[common],
        help="choose the masking method and k from simulated attacks and a utility test",
        description="For each method (donut, areal) and k on the grid, draw many replicate "
                    "masks and measure the success of the naive and the method-aware attacker "
                    "(verdicts use the stronger, never below the random-guess floor) and how "
                    "often the utility test (excess cases within "
                    "R metres of a source) still detects what it detects on the true locations. "
                    "Prints the sweep table and the method and k meeting both targets, or the "
                    "finding that none does with the two alternatives; every row gives the "
                    "verified k of the masks (households at least as close to the masked point "
                    "as the true location). --attacker-only sweeps without a utility test. "
                    "Writes DIR/sweep.csv, DIR/choose_k.json (compliance record) and "
                    "DIR/choose_k.png.",
    )
    add_input_args(p)
    add_utility_args(p, required=False)
    add(p, MASKING, ["attacker_only", "preregistered", "verify", "max_verify_redraws",
                     "max_site_records"])
    p.add_argument("--methods", default="donut,areal", metavar="M,M",
                   help="masking methods to compare: donut, areal or both (default: "
                        "donut,areal); the recommendation names the method and k")
    add_attacker_args(p)
    p.add_argument("--k-grid", default="5,10,15,20,30,50", metavar="K,K,...",
                   help="values of k (households) to try (default: 5,10,15,20,30,50)")
    p.add_argument("--replicates", type=int, default=200, metavar="N",
                   help="replicate masks per k (default: 200)")
    p.add_argument("--max-attacker-success", type=float, default=0.05, metavar="P",
                   help="target, set before the sweep: attacker success <= P (default: 0.05)")
    p.add_argument("--min-detection", type=float, default=0.8, metavar="P",
                   help="target, set before the sweep: detection rate >= P (default: 0.8)")
    p.add_argument("--seed", type=seed_value, default=1, metavar="INT",
                   help="random seed of the sweep, non-negative integer (default: 1); same "
                        "inputs and seed give the same table")
    p.add_argument("--out", default="synthgeo-choose-k", metavar="DIR",
                   help="output folder (default: ./synthgeo-choose-k); must not exist (see "
                        "--overwrite)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing output folder of an earlier choose-k run "
                        "(default: refuse)")


def _grid(text: str) -> list[int]:
    from synthgeo._errors import SpecError

    try:
        return [int(v) for v in text.split(",")]
    except ValueError as exc:
        raise SpecError(f"`--k-grid` = {text!r} must be integers separated by commas, e.g. "
                        "5,10,20,50") from exc


def run(args: argparse.Namespace, say) -> int:
    """Carry out the command; return the exit code."""
    import pandas as pd

    from synthgeo.io.provenance import provenance
    from synthgeo.masking import NearestHouseholdAttacker, choose_k, write_choose_k
    from synthgeo.masking.store import CHOOSE_K_RECORD, check_output_dir

    t0 = time.perf_counter()
    grid = _grid(args.k_grid)
    attacker = NearestHouseholdAttacker(known_share=args.known_share)
    out = Path(args.out)
    check_output_dir(out, marker=CHOOSE_K_RECORD, overwrite=args.overwrite,
                     inputs=input_files(args))
    from synthgeo._errors import SpecError

    if args.attacker_only and (args.source is not None or args.radius_m is not None):
        raise SpecError("`--attacker-only` sweeps without a utility test: drop `--source` and "
                        "`--radius-m`, or drop `--attacker-only`")
    if not args.attacker_only and (args.source is None or args.radius_m is None):
        raise SpecError("give the utility test (`--source X,Y` and `--radius-m R`), or "
                        "`--attacker-only` to sweep the attacker side alone")
    inputs = load_inputs(args)
    utility = make_utility(args, inputs)
    say(f"choose-k: {len(inputs.cases)} cases, {inputs.provenance['households']['total_weight']:g}"
        f" households, k grid {grid}, {args.replicates} masks per k, CRS {inputs.crs.name}")
    result = choose_k(inputs.cases, inputs.households, utility=utility, k_grid=grid,
                      n_replicates=args.replicates, attacker=attacker,
                      max_attacker_success=args.max_attacker_success,
                      min_detection_rate=args.min_detection, weights=inputs.weights,
                      region=inputs.region, random_seed=args.seed,
                      progressbar=getattr(args, "progressbar", False),
                      preregistered=args.preregistered, verify=args.verify,
                      max_verify_redraws=args.max_verify_redraws,
                      methods=[m.strip() for m in args.methods.split(",")],
                      max_site_records=args.max_site_records)
    seconds = time.perf_counter() - t0
    record = {**provenance("choose-k", inputs=inputs.provenance), "seconds": round(seconds, 2)}
    written = write_choose_k(result, out, record=record, overwrite=args.overwrite,
                             inputs=input_files(args))
    t = result.table
    cols = {"method": "method", "k": "k", "attacker_success_naive": "naive",
            "attacker_success_aware": "aware", "attacker_success_aware_households": "aware_hh",
            "guess_floor": "floor", "attacker_success": "stronger",
            "detection_rate": "detection",
            "median_displacement_m": "median_disp_m", "median_displacement_dense_m": "dense_m",
            "median_displacement_sparse_m": "sparse_m", "verified_k_median": "verified_k",
            "verified_k_share_below_k": "below_k", "meets_both": "both_targets"}
    u = result.utility
    if u.get("attacker_only"):
        cols.pop("detection_rate")
        say(f"attacker only, no utility test; attacker knows {result.attacker.get('n_known')} "
            "cases")
    else:
        if not u.get("passes_on_true_locations"):
            cols["agreement_rate"] = "no_excess"
        say(f"utility test on the true locations: {u.get('observed_on_true_locations')} cases "
            f"within {u.get('radius_m', float('nan')):.0f} m vs "
            f"{u.get('expected', float('nan')):.2f} expected ("
            + ("passes" if u.get("passes_on_true_locations") else
               "no excess: pre-registered test") + f"); attacker knows "
            f"{result.attacker.get('n_known')} cases")
    with pd.option_context("display.width", 160, "display.float_format", "{:.3f}".format):
        say("\n" + t[list(cols)].rename(columns=cols).to_string(index=False))
    say("(naive: nearest known case household; aware: method-aware Bayes attacker knowing the "
        "same cases, aware_hh: the same over all households (uniform prior); stronger: the "
        "largest, which verdicts use with floor = max(1/k, 1/known cases); dense/sparse: cases "
        "above/below the median household density; verified_k: median households at least as "
        "close to the masked point as the true location (areal: households in the area), "
        "below_k: share of cases under k" + (", verified masks" if args.verify else "") + ")")
    for note in result.notes:
        say(f"note: {note}")
    print(result.finding)
    say(f"({seconds:.1f} s)")
    print(f"sweep table, compliance record and plot: {written}")
    return 0
