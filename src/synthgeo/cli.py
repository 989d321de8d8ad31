"""Command line: ``synthgeo run [SPEC]``, ``synthgeo validate SPEC``, ``synthgeo --version``.

Thin layer over the public API; the only module that prints.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings
from pathlib import Path

from synthgeo import __version__
from synthgeo._errors import SynthgeoError

__all__ = ["main"]


def _versions() -> str:
    from synthgeo.release import package_versions

    return "\n".join(f"{k} {v}" for k, v in package_versions().items())


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="synthgeo",
        description="Partially synthetic geocoded public-use files with differential smoothing.",
    )
    p.add_argument("--version", action="store_true",
                   help="print synthgeo's and its main dependencies' versions and exit")
    p.add_argument("--verbose", action="store_true", help="log details; show tracebacks")
    p.add_argument("--quiet", action="store_true", help="print only errors and the result path")
    # the same two flags after the subcommand (SUPPRESS keeps the top-level value otherwise)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS,
                        help="log details; show tracebacks")
    common.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS,
                        help="print only errors and the result path")
    sub = p.add_subparsers(dest="command")
    r = sub.add_parser("run", parents=[common],
                       help="fit, synthesise, score risk and utility, write the release")
    r.add_argument("spec", nargs="?", default=None,
                   help="release spec (TOML); default: the bundled Sacramento example")
    r.add_argument("--out", default="synthgeo-out",
                   help="output folder (default: ./synthgeo-out); holds release/, "
                        "confidential/, release.json, report.html")
    r.add_argument("--overwrite", action="store_true",
                   help="replace an existing output folder (default: refuse)")
    r.add_argument("--draws", type=int, help="override [sampling] draws (per chain)")
    r.add_argument("--tune", type=int, help="override [sampling] tune (warm-up per chain)")
    r.add_argument("--chains", type=int, help="override [sampling] chains")
    r.add_argument("--seed", type=int, help="override [sampling] seed (non-negative integer)")
    r.add_argument("--implicates", type=int, help="override [synthesis] n_implicates (L >= 2)")
    r.add_argument("--on-convergence-failure", choices=["stop", "warn"],
                   help="override [sampling] on_convergence_failure (default in spec: stop)")
    v = sub.add_parser("validate", parents=[common], help="check a spec and its data without fitting")
    v.add_argument("spec", nargs="?", default=None, help="release spec (TOML); default: bundled")
    return p


def _spec(args: argparse.Namespace):
    from synthgeo.config import bundled_spec_path, load_spec

    spec = load_spec(Path(args.spec) if args.spec else bundled_spec_path())
    over = {k: getattr(args, k, None) for k in ("draws", "tune", "chains", "seed")}
    over = {k: v for k, v in over.items() if v is not None}
    if getattr(args, "on_convergence_failure", None):
        over["on_convergence_failure"] = args.on_convergence_failure
    if over:
        spec = spec.replace("sampling", **over)
    if getattr(args, "implicates", None) is not None:
        spec = spec.replace("synthesis", n_implicates=args.implicates)
    return spec


def _cmd_validate(args: argparse.Namespace, say) -> int:
    from synthgeo.pipeline import prepare_data

    spec = _spec(args)
    data = prepare_data(spec)
    say(f"OK: {spec.source}\n  {data.n_records} records at {data.sites.n_sites} sites, "
        f"CRS {data.gdf.crs.name}; response {spec.data.response!r}, covariates "
        f"{spec.data.covariates}; analyst's model {spec.formula!r}")
    return 0


def _cmd_run(args: argparse.Namespace, say) -> int:
    import pandas as pd

    from synthgeo.pipeline import run_release
    from synthgeo.release import check_output_dir, write_release
    from synthgeo.report import render_report, summary_tables

    t0 = time.perf_counter()
    spec = _spec(args)
    out = Path(args.out)
    check_output_dir(out, overwrite=args.overwrite, inputs=[spec.data_path()])
    say(f"synthgeo {__version__}: {spec.source}")
    result = run_release(spec, progress=lambda m: say(f"  {m}"))
    t = time.perf_counter()
    html = render_report(result)
    seconds = dict(result.seconds)
    out = write_release(result, out, overwrite=args.overwrite, report_html=html,
                        seconds=seconds)
    seconds["write"] = time.perf_counter() - t
    seconds["total"] = time.perf_counter() - t0
    tables = summary_tables(result)
    with pd.option_context("display.width", 160, "display.max_columns", 20,
                           "display.float_format", "{:.4g}".format):
        say("\n" + tables["overview"].to_string(index=False, header=False))
        risk = tables["risk"][["group", "measure", "n_records", "mean_unrestricted",
                               "mean_restricted", "reduction", "attack_share_unrestricted",
                               "attack_share_restricted"]]
        say("\nDisclosure risk (share of synthetic values within tolerance of the truth):")
        say(risk.to_string(index=False))
        util = tables["utility"][["model", "term", "estimate", "lower", "upper", "ci_overlap",
                                  "std_diff"]]
        say(f"\nUtility, Reiter (2003) for {spec.formula!r} (CI overlap vs confidential OLS):")
        say(util.to_string(index=False))
    say("\nstage seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in seconds.items()))
    print(f"report: {out / 'report.html'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``synthgeo`` command; returns the exit code."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    if not args.verbose:
        warnings.filterwarnings("ignore", category=FutureWarning)
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        logging.getLogger("pymc").setLevel(logging.ERROR)
    say = (lambda m: None) if args.quiet else (lambda m: print(m, flush=True))
    if not args.verbose:
        # warnings (duplicates, convergence under "warn") as one line each, no source echo
        warnings.showwarning = lambda message, category, *a, **k: print(
            f"synthgeo: warning: {message}", file=sys.stderr, flush=True
        )
    if args.version:
        print(f"synthgeo {__version__}\n{_versions()}")
        return 0
    if args.command is None:
        _parser().print_help()
        return 2
    try:
        if args.command == "validate":
            return _cmd_validate(args, say)
        return _cmd_run(args, say)
    except (SynthgeoError, ValueError, TypeError, OSError) as exc:
        if args.verbose:
            raise
        print(f"synthgeo: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("synthgeo: interrupted; nothing was written", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
