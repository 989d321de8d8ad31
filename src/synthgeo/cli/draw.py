"""``synthgeo draw``: more implicates from a release's stored posterior, as a new release."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from synthgeo import __version__
from synthgeo.cli._options import seed_value


def add_parser(sub, common) -> None:
    """Register ``synthgeo draw``."""
    d = sub.add_parser(
        "draw", parents=[common],
        help="draw more implicates from a release's stored posterior (no refit unless "
             "--refit and its draws are used up)",
        description="Draw N more implicates from the posterior a release stored in "
                    "confidential/synthesiser.nc, from posterior draws no implicate used "
                    "before, without refitting, and write them as a new release of the same "
                    "records: registered after the earlier one, scored like any release, with "
                    "the cumulative risk over the earlier and the new implicates judged by the "
                    "same targets (docs/release.md, 'More implicates later'). When fewer "
                    "unused draws are left than asked for it refuses, unless --refit.")
    d.add_argument("release_dir", metavar="RELEASE_DIR",
                   help="a registered release folder (`synthgeo run --register`)")
    d.add_argument("--implicates", type=int, required=True, metavar="N",
                   help="how many new implicates (an integer >= 2; required, no default)")
    d.add_argument("--seed", type=seed_value, default=None,
                   help="seed of the new implicates, an integer >= 0 (a key, kept in the new "
                        "release's confidential/; the same seed gives the same implicates; "
                        "default: a fresh random one)")
    d.add_argument("--register", metavar="PATH",
                   help="the release register RELEASE_DIR is registered in (required; "
                        "default: $SYNTHGEO_REGISTER)")
    d.add_argument("--key-file", metavar="PATH",
                   help="the release key (default: $SYNTHGEO_RELEASE_KEY): the earlier "
                        "release.json's HMAC is checked and the new one signed")
    d.add_argument("--allow-unsigned", action="store_true",
                   help="accept an unsigned earlier release and register the new one "
                        "unsigned (default: off)")
    d.add_argument("--refit", action="store_true",
                   help="when fewer than N posterior draws are unused, fit both models again "
                        "from the stored state (the release's spec and records, checked by "
                        "SHA-256; the fits' seed derived from --seed) instead of refusing; "
                        "release.json and the report say \"refit\" (default: off: refuse)")
    d.add_argument("--out", default=None, metavar="DIR",
                   help="output folder of the new release (default: RELEASE_DIR-draw); must "
                        "not exist (see --overwrite)")
    d.add_argument("--overwrite", action="store_true",
                   help="replace an existing output folder of an earlier run (default: refuse)")
    d.add_argument("--strict", action="store_true",
                   help="exit with code 3 after writing when a verdict is FAIL (default: exit "
                        "0 once written)")


def run(args: argparse.Namespace, say) -> int:
    """Carry out the command; return the exit code."""
    import synthgeo as sg
    from synthgeo.cli.run import write_and_report
    from synthgeo.pipeline.draw import check_draw_request
    from synthgeo.release.writer import check_output_dir

    t0 = time.perf_counter()
    folder = check_draw_request(args.release_dir, args.implicates)
    out = Path(args.out) if args.out else folder.with_name(folder.name + "-draw")
    check_output_dir(out, overwrite=args.overwrite, inputs=[folder], register=args.register)
    say(f"synthgeo {__version__}: draw {args.implicates} implicates from {folder}")
    rel = sg.draw(folder, args.implicates, seed=args.seed, register=args.register,
                  key_file=args.key_file, allow_unsigned=args.allow_unsigned,
                  progress=lambda m: say(f"  {m}"),
                  progressbar=getattr(args, "progressbar", False), refit=args.refit)
    return write_and_report(rel, out, args, say, t0)
