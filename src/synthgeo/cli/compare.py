"""``synthgeo compare``: unrestricted, restricted and suppressed fits side by side."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from synthgeo.cli._spec import (
    add_output_arguments,
    add_spec_arguments,
    spec_from_args,
    spec_label,
)


def add_parser(sub, common) -> None:
    """Register ``synthgeo compare``."""
    c = sub.add_parser(
        "compare", parents=[common],
        help="fit unrestricted, restricted and suppressed models and compare risk and utility",
        description="Fit the unrestricted model, the restricted (differentially smoothed) model "
                    "and the suppressed baseline (at-risk records dropped) on the same data; "
                    "print the paper's Table 1/2 analogue (posterior summaries; Reiter (2003) "
                    "estimates with CI overlap against the confidential OLS fit), the risk "
                    "table (within `eps` dollars and within `p` of the true value, at-risk vs "
                    "other records, reduction vs unrestricted, implicate-average attack) and "
                    "the spatial utility (residual semivariogram, Moran's I). Output is "
                    "confidential: it is for the methodologist, not for release.",
    )
    add_spec_arguments(c)
    add_output_arguments(c, default=None,
                         holds="the tables (CSV), comparison.json and, with --frontier, "
                               "frontier.csv/.png")
    c.add_argument("--frontier", action="store_true",
                   help="also sweep gamma in {0, 1, auto = max(0, sigma2/tau2 - 1), 10, inf} x "
                        "rho0 in {0.05, 0.1, 0.2, 0.3} (20 restricted fits; M in metres from "
                        "each rho0) and tabulate and plot risk reduction vs CI overlap "
                        "(default: off)")


def run(args: argparse.Namespace, say) -> int:
    """Carry out the command; return the exit code."""
    import pandas as pd

    import synthgeo as sg
    from synthgeo.studies.compare import COMPARISON_RECORD, write_comparison

    t0 = time.perf_counter()
    spec = spec_from_args(args)
    if args.out is not None:  # refuse a bad --out before minutes of fitting
        from synthgeo.io.atomic import check_output_dir
        from synthgeo.release.writer import input_paths

        check_output_dir(Path(args.out), marker=COMPARISON_RECORD, overwrite=args.overwrite,
                         inputs=input_paths(spec), what="an earlier `synthgeo compare` output",
                         empty_ok=False)
    say(f"synthgeo {sg.__version__} compare: {spec_label(spec)}")
    result = sg.compare(spec, progress=lambda m: say(f"  {m}"))
    frontier = None
    if args.frontier:
        from synthgeo.studies.frontier import risk_utility_frontier

        say("risk-utility frontier (gamma x rho0)")
        frontier = risk_utility_frontier(spec, progress=lambda m: say(f"  {m}"))
    fmt = {"display.width": 200, "display.max_columns": 20,
           "display.float_format": "{:.4g}".format}
    rel = result.release
    with pd.option_context(*[x for kv in fmt.items() for x in kv]):
        say(f"\nN = {rel.data.n_records}, M = {rel.M_m:,.0f} m, at-risk records: "
            f"{rel.at_risk.n_at_risk}, L = {spec.synthesis.n_implicates}, gamma = "
            f"{spec.model.gamma}, engine: {rel.fits['restricted'].engine.get('sampler')}/"
            f"{rel.fits['restricted'].engine.get('gp')}")
        say("\nPosterior summaries (tau2 = nugget, phi per km, effective range in metres):")
        say(result.posterior.to_string(index=False))
        say(f"\nUtility, Reiter (2003) for {spec.formula!r} (CI overlap vs confidential OLS on "
            "all records; unclamped, negative = intervals do not meet):")
        say(result.utility[["model", "term", "estimate", "lower", "upper", "ci_overlap",
                            "std_diff"]].to_string(index=False))
        say("\nDisclosure risk (mean share of implicates within tolerance; reduction vs "
            "unrestricted; attack = share exposed by the implicate average; suppressed: "
            "at-risk records not released):")
        say(result.risk.to_string(index=False))
        say("\nAt-risk records (model scale: truth, synthetic mean and sd per model):")
        say(result.at_risk_records.to_string(index=False))
        say("\nMoran's I of the response (k-NN weights; mean and 5-95% over implicates):")
        say(result.spatial["morans_i"].to_string(index=False))
        say("\nLocal means in grid cells (>= 5 records): RMS difference from the confidential "
            "cell means, model scale:")
        say(result.spatial["local_means"].to_string(index=False))
        sv = result.spatial["semivariogram"].pivot(index="bin_upper_m", columns="model",
                                                   values="gamma")
        sv.index = sv.index.map(lambda x: f"{x:,.0f}")
        say("\nSemivariogram of the analyst's OLS residuals (mean over implicates) by lag bin "
            "(upper edge, m):")
        say(sv.to_string())
        if frontier is not None:
            say(f"\nRisk-utility frontier (reduction = {frontier.measure_rel}; "
                f"_abs = {frontier.measure_abs}):")
            say(frontier.table.to_string(index=False))
    if args.out is not None:
        out = write_comparison(result, args.out, overwrite=args.overwrite, frontier=frontier)
        print(f"comparison (confidential): {out}")
    secs = dict(result.seconds)
    if frontier is not None:
        secs["frontier"] = frontier.seconds["total"]
    secs["wall"] = time.perf_counter() - t0
    say("\nseconds: " + ", ".join(f"{k} {v:.1f}" for k, v in secs.items()))
    return 0
