"""``synthgeo run``: fit, synthesise, score risk and utility, write the release."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from synthgeo import __version__
from synthgeo.cli._spec import spec_from_args


def add_parser(sub, common) -> None:
    """Register ``synthgeo run``."""
    r = sub.add_parser(
        "run", parents=[common],
        help="fit, synthesise, score risk and utility, write the release",
        description="Fit the unrestricted and restricted GP models, draw L synthetic "
                    "implicates, score disclosure risk and utility, and write the release. "
                    "Ends with a summary: N, at-risk count, the distance M in metres, L, risk "
                    "before/after (tolerances `eps` in back-transformed units, e.g. dollars; "
                    "`p` relative) and the Reiter (2003) utility table.",
    )
    r.add_argument("spec", nargs="?", default=None,
                   help="release spec (TOML); default: the bundled Sacramento example")
    r.add_argument("--out", default="synthgeo-out", metavar="DIR",
                   help="output folder (default: ./synthgeo-out); holds release/, "
                        "confidential/, release.json, report.html; must not exist (see "
                        "--overwrite) and must not contain the spec or its data file")
    r.add_argument("--overwrite", action="store_true",
                   help="replace an existing output folder of an earlier run (default: refuse)")
    r.add_argument("--draws", type=int, metavar="N",
                   help="posterior draws kept per chain, integer >= 10 (default: the spec's "
                        "[sampling] draws; bundled spec: 1000)")
    r.add_argument("--tune", type=int, metavar="N",
                   help="warm-up (tuning) iterations per chain, discarded, integer >= 10 "
                        "(default: the spec's [sampling] tune; bundled spec: 1000)")
    r.add_argument("--chains", type=int, metavar="N",
                   help="number of MCMC chains, integer >= 2 (R-hat compares chains; 1 only "
                        "with --on-convergence-failure warn) (default: the spec's [sampling] "
                        "chains; bundled spec: 2)")
    r.add_argument("--seed", type=int, metavar="INT",
                   help="random seed, non-negative integer (default: the spec's [sampling] "
                        "seed; bundled spec: 20181); same spec + seed gives byte-identical "
                        "release files")
    r.add_argument("--implicates", type=int, metavar="L",
                   help="number L of synthetic data sets (Reiter's m), integer >= 2 (default: "
                        "the spec's [synthesis] n_implicates; bundled spec: 100)")
    r.add_argument("--scheduler", metavar="ADDRESS",
                   help="address of a dask.distributed scheduler (e.g. tcp://10.0.0.5:8786) "
                        "that computes the implicates; the files are the same as without it "
                        "(default: the spec's [compute] scheduler; none: this process)")
    r.add_argument("--on-convergence-failure", choices=["stop", "warn"],
                   help="when R-hat > 1.01, divergences or low ESS: stop before writing "
                        "release/, or warn and go on (default: the spec's [sampling] "
                        "on_convergence_failure; bundled spec: stop)")


def run(args: argparse.Namespace, say) -> int:
    """Carry out the command; return the exit code."""
    import pandas as pd

    from synthgeo.pipeline import run_release
    from synthgeo.release.report import render_report, summary_tables
    from synthgeo.release.writer import check_output_dir, input_paths, write_release

    t0 = time.perf_counter()
    spec = spec_from_args(args)
    if args.scheduler is not None:  # --scheduler overrides [compute] scheduler
        from synthgeo._errors import SpecError

        try:
            spec = spec.replace("compute", scheduler=args.scheduler)
        except SpecError as exc:
            raise SpecError(f"`--scheduler {args.scheduler}` is invalid: {exc}") from exc
    out = Path(args.out)
    check_output_dir(out, overwrite=args.overwrite, inputs=input_paths(spec))
    if spec.compute.scheduler is not None:  # refuse an unreachable cluster before the fits
        from synthgeo.compute import check_scheduler_reachable

        check_scheduler_reachable(spec.compute.scheduler)
    say(f"synthgeo {__version__}: {spec.source}")
    bars = getattr(args, "progressbar", False)
    result = run_release(spec, progress=lambda m: say(f"  {m}"), progressbar=bars)
    t = time.perf_counter()
    say("  writing the report and the release")
    html = render_report(result, progressbar=bars)
    tables = summary_tables(result)  # before writing: a failure after the rename would lie
    seconds = dict(result.seconds)
    out = write_release(result, out, overwrite=args.overwrite, report_html=html,
                        seconds=seconds)
    seconds["write"] = time.perf_counter() - t
    seconds["total"] = time.perf_counter() - t0
    with pd.option_context("display.width", 160, "display.max_columns", 20,
                           "display.float_format", "{:.4g}".format):
        say("\n" + tables["overview"].to_string(index=False, header=False))
        risk = tables["risk"][["group", "measure", "n_records", "mean_unrestricted",
                               "mean_restricted", "reduction", "median_record_reduction",
                               "attack_share_unrestricted",
                               "attack_share_restricted"]]
        say("\nDisclosure risk (share of synthetic values within tolerance of the truth; "
            "reduction = 1 - mean restricted / mean unrestricted;\n attack = share of records "
            "whose implicate average is within tolerance):")
        say(risk.to_string(index=False))
        util = tables["utility"][["model", "term", "estimate", "lower", "upper", "ci_overlap",
                                  "std_diff"]]
        say(f"\nUtility, Reiter (2003) for {spec.formula!r} (CI overlap vs confidential OLS):")
        say(util.to_string(index=False))
    say("\nstage seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in seconds.items()))
    print(f"release (restricted model's implicates): {out / 'release'}")
    print(f"report (confidential): {out / 'report.html'}")
    return 0
