"""``synthgeo verify``: an analyst's model checked on the confidential data (measures only)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from synthgeo._errors import SpecError
from synthgeo.cli._options import seed_value

#: Noise sd above which the console says the private answer carries little information (a
#: measure in [0, 1] read with noise of sd 0.25 is off by more than 0.25 a third of the time).
NOISE_SD_WARN = 0.25


def add_parser(sub, common) -> None:
    """Register ``synthgeo verify``."""
    v = sub.add_parser(
        "verify", parents=[common],
        help="verify an analyst's model on the confidential data (differentially private)",
        description="Fit an analyst's model (formula and family, checked by the spec's "
                    "allow-list) to the released implicates (Reiter's rules) and to the "
                    "confidential records the release was made from, and return only "
                    "verification measures per coefficient: CI overlap, sign and significance "
                    "agreement. Differentially private by default (subsample and aggregate, "
                    "Laplace noise at --epsilon, charged to --analyst in the budget store); "
                    "every request is logged (docs/risk-and-utility.md, 'Verification').")
    v.add_argument("release_dir", metavar="RELEASE_DIR", help="a `synthgeo run` output folder")
    v.add_argument("analysis", metavar="ANALYSIS", nargs="?", default=None,
                   help="a TOML file with `formula`, `family` (gaussian or bernoulli) and "
                        "`alpha` (default: none; then --formula gives the model)")
    v.add_argument("--formula",
                   help="the analyst's formula, e.g. 'log_price ~ sqft_living' (default: the "
                        "ANALYSIS file's)")
    v.add_argument("--family", choices=("gaussian", "bernoulli"), default=None,
                   help="OLS or logistic regression (default: gaussian)")
    v.add_argument("--analyst", required=True, help="who is charged ε (required; no default)")
    v.add_argument("--epsilon", type=float, default=1.0,
                   help="ε of this request (default: 1.0)")
    v.add_argument("--budget", type=float, default=None,
                   help="agency: set the analyst's total ε before the request (default: the "
                        "store's)")
    v.add_argument("--store", default=None,
                   help="the budget store and audit log (SQLite; default "
                        "RELEASE_DIR/confidential/verification.sqlite)")
    v.add_argument("--subsets", type=int, default=None,
                   help="M, disjoint subsets of the confidential records (default: N / "
                        "max(25, 10 × coefficients))")
    v.add_argument("--data", default=None,
                   help="the confidential file, if moved (its SHA-256 must match release.json; "
                        "default: the release's [data] path)")
    v.add_argument("--agency-non-private", metavar="REASON", default=None,
                   help="agency: answer exactly, without noise or ε; the reason is logged "
                        "(default: off, differentially private)")
    v.add_argument("--seed", type=seed_value, default=None,
                   help="seed of the partition and the noise, an integer >= 0 (tests only: "
                        "whoever knows it can "
                        "remove the noise; default: fresh)")
    v.add_argument("--out", default=None,
                   help="write the answer as JSON to this file (default: printed only)")


def run(args: argparse.Namespace, say) -> int:
    """Carry out the command; return the exit code."""
    from synthgeo.verification.analysis import load_analysis
    from synthgeo.verification.api import verify

    if (args.analysis is None) == (args.formula is None):
        raise SpecError("give the analyst's model as an ANALYSIS file or as --formula (one)")
    if args.analysis is not None:
        analysis = load_analysis(args.analysis)
        if args.family is not None:
            analysis = dataclasses.replace(analysis, family=args.family)
    else:
        analysis = None
    res = verify(args.release_dir, args.formula, family=args.family or "gaussian",
                 analysis=analysis, analyst=args.analyst, epsilon=args.epsilon,
                 budget=args.budget, store=args.store, n_subsets=args.subsets, data=args.data,
                 non_private_reason=args.agency_non_private, seed=args.seed)
    if res.mode == "dp":
        sd = 2 ** 0.5 * res.laplace_scale
        say(f"verification of {res.formula!r} ({res.family}): ε = {res.epsilon:g}, "
            f"{res.n_subsets} disjoint subsets, sensitivity {res.sensitivity:.3g}, Laplace "
            f"scale {res.laplace_scale:.3g} (noise sd {sd:.3g}); values are noisy shares of "
            "subsets in [0, 1]")
        if sd > NOISE_SD_WARN:
            say(f"NOTE: the noise sd {sd:.2g} is large against values in [0, 1]: this answer "
                "carries little information (the ε was charged); a larger ε, or a model with "
                "fewer terms, gives a less noisy answer")
    else:
        say(f"verification of {res.formula!r} ({res.family}): NON-PRIVATE (agency setting: "
            f"{res.reason}); exact measures")
    # the answer the analyst paid ε for: printed even under --quiet
    print(res.measures.to_string(float_format=lambda x: f"{x:.3f}"))
    b = res.budget
    if b.get("total") is not None:
        say(f"budget of {res.analyst!r}: spent ε = {b['spent']:g} of {b['total']:g}, "
            f"remaining {b['remaining']:g}")
    if args.out:
        say(f"answer: {res.write(Path(args.out))}")
    return 0
