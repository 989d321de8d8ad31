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
from synthgeo._errors import SpecError, SynthgeoError

__all__ = ["main"]


def _versions() -> str:
    from synthgeo._versions import package_versions

    return "\n".join(f"{k} {v}" for k, v in package_versions().items() if k != "synthgeo")


def _one_line(message: object) -> str:
    """Collapse a message to one line (the CLI's error contract: one line on stderr)."""
    return " ".join(str(message).split())


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors as one ``synthgeo: error:`` line (exit code 2)."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"synthgeo: error: {_one_line(message)} (see `{self.prog} --help`)\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="synthgeo",
        description="Partially synthetic geocoded public-use files with differential smoothing.",
    )
    p.add_argument("--version", action="store_true",
                   help="print synthgeo's and its main dependencies' versions and exit")
    p.add_argument("--verbose", action="store_true", help="log details; show tracebacks")
    p.add_argument("--quiet", action="store_true", help="print only errors and the result path")
    # the same two flags after the subcommand (SUPPRESS keeps the top-level value otherwise)
    common = _Parser(add_help=False)
    common.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS,
                        help="log details; show tracebacks")
    common.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS,
                        help="print only errors and the result path")
    sub = p.add_subparsers(dest="command")
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
                   help="posterior draws kept per chain, integer >= 10 (overrides [sampling] "
                        "draws; bundled spec: 1000)")
    r.add_argument("--tune", type=int, metavar="N",
                   help="warm-up (tuning) iterations per chain, discarded, integer >= 10 "
                        "(overrides [sampling] tune; bundled spec: 1000)")
    r.add_argument("--chains", type=int, metavar="N",
                   help="number of MCMC chains, integer >= 2 (R-hat compares chains; 1 only "
                        "with --on-convergence-failure warn) (overrides [sampling] chains; "
                        "bundled spec: 2)")
    r.add_argument("--seed", type=int, metavar="INT",
                   help="random seed, non-negative integer (overrides [sampling] seed; bundled "
                        "spec: 20181); same spec + seed gives byte-identical release files")
    r.add_argument("--implicates", type=int, metavar="L",
                   help="number L of synthetic data sets (Reiter's m), integer >= 2 (overrides "
                        "[synthesis] n_implicates; bundled spec: 100)")
    r.add_argument("--on-convergence-failure", choices=["stop", "warn"],
                   help="when R-hat > 1.01, divergences or low ESS: stop before writing "
                        "release/, or warn and go on (overrides [sampling] "
                        "on_convergence_failure; default: stop)")
    v = sub.add_parser(
        "validate", parents=[common], help="check a spec and its data without fitting",
        description="Check a spec and its data without fitting: columns, NaN/text in numeric "
                    "columns, coordinates, CRS (projected to metres), prior overrides. Prints "
                    "the number of records and sites.",
    )
    v.add_argument("spec", nargs="?", default=None, help="release spec (TOML); default: bundled")
    return p


# command-line option -> spec key, per spec section
_OVERRIDES = {
    "sampling": (("draws", "draws"), ("tune", "tune"), ("chains", "chains"), ("seed", "seed"),
                 ("on_convergence_failure", "on_convergence_failure")),
    "synthesis": (("implicates", "n_implicates"),),
}


def _spec(args: argparse.Namespace):
    from synthgeo.config import bundled_spec_path, load_spec

    spec = load_spec(Path(args.spec) if args.spec else bundled_spec_path())
    for section, options in _OVERRIDES.items():
        given = {key: (option, getattr(args, option)) for option, key in options
                 if getattr(args, option, None) is not None}
        if not given:
            continue
        try:  # one section at a time: its keys are checked together (chains vs stop/warn)
            spec = spec.replace(section, **{key: value for key, (_, value) in given.items()})
        except SpecError as exc:
            # name the option(s) the user typed whose key the message names
            named = [v for k, v in given.items() if f"] {k}`" in str(exc)] or list(given.values())
            flags = ", ".join(f"`--{o.replace('_', '-')} {v}`" for o, v in named)
            raise SpecError(f"{flags} is invalid: {exc}") from exc
    return spec


def _cmd_validate(args: argparse.Namespace, say) -> int:
    from synthgeo.model.restricted_gp import default_priors
    from synthgeo.pipeline import prepare_data

    spec = _spec(args)
    data = prepare_data(spec)
    default_priors(data.y, data.X, data.sites, **spec.model.priors)  # checks prior overrides
    say(f"OK: {spec.source}\n  {data.n_records} records at {data.sites.n_sites} sites, "
        f"CRS {data.gdf.crs.name}; response {spec.data.response!r}, covariates "
        f"{spec.data.covariates}; analyst's model {spec.formula!r}")
    return 0


def _cmd_run(args: argparse.Namespace, say) -> int:
    import pandas as pd

    from synthgeo.pipeline import run_release
    from synthgeo.release import check_output_dir, input_paths, write_release
    from synthgeo.report import render_report, summary_tables

    t0 = time.perf_counter()
    spec = _spec(args)
    out = Path(args.out)
    check_output_dir(out, overwrite=args.overwrite, inputs=input_paths(spec))
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


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``synthgeo`` command; returns the exit code.

    0 on success, 1 on bad input or a failed release (one ``synthgeo: error:`` line on
    stderr), 2 on a command-line usage error, 130 when interrupted.
    """
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error already printed as one line
        return exc.code if isinstance(exc.code, int) else 2
    # warning filters and the one-line display are restored on return (main may run in-process)
    with warnings.catch_warnings():
        try:
            return _main(args)
        except BrokenPipeError:  # e.g. `synthgeo --version | head -1`
            sys.stderr.close()
            return 0


def _sigterm(signum, frame):  # noqa: ARG001
    # turn SIGTERM into KeyboardInterrupt so that write_release removes its temporary folder
    raise KeyboardInterrupt


def _main(args: argparse.Namespace) -> int:
    import signal

    try:
        signal.signal(signal.SIGTERM, _sigterm)
    except ValueError:  # not the main thread (e.g. called from a worker): leave it
        pass
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    if not args.verbose:
        warnings.filterwarnings("ignore", category=FutureWarning)
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        # arviz logs notes to stderr through its own handler (e.g. R-hat of one chain)
        for name in ("pymc", "arviz"):
            logging.getLogger(name).setLevel(logging.ERROR)
    say = (lambda m: None) if args.quiet else (lambda m: print(m, flush=True))
    if not args.verbose:
        # warnings (duplicates, convergence under "warn") as one line each, no source echo
        warnings.showwarning = lambda message, category, *a, **k: print(
            f"synthgeo: warning: {_one_line(message)}", file=sys.stderr, flush=True
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
        print(f"synthgeo: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("synthgeo: interrupted; nothing was written", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug, not bad input: still one line; --verbose shows it
        if args.verbose:
            raise
        print(f"synthgeo: error: unexpected {type(exc).__name__}: {_one_line(exc)} (rerun "
              "with --verbose for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
