"""``synthgeo run``: fit, synthesise, score risk and utility, write the release."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from synthgeo import __version__
from synthgeo._errors import RiskError
from synthgeo.cli._spec import (
    add_output_arguments,
    add_spec_arguments,
    spec_from_args,
    spec_label,
)


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
    add_spec_arguments(r)
    r.add_argument("--previous", metavar="DIR",
                   help="an earlier release of the same records (the folder `synthgeo run` "
                        "wrote): checked against the register (not its own release.json; "
                        "needs --register), records linked by [data] id, each release alone "
                        "and the pooled implicates scored (cumulative risk = the largest) and "
                        "the chain of releases recorded (default: none, a first release)")
    r.add_argument("--register", metavar="PATH",
                   help="the release register: a SQLite file named *.sqlite, *.sqlite3 or "
                        "*.db in the confidential store (created by the first release written "
                        "to it; a failed run leaves none) or a SQLAlchemy URL "
                        "(postgresql+psycopg://...); "
                        "a seed a registered release used is refused, and the release is "
                        "registered when written (default: $SYNTHGEO_REGISTER, else none)")
    r.add_argument("--key-file", metavar="PATH",
                   help="the release key (kept outside the register): release.json is signed "
                        "with an HMAC under it (default: $SYNTHGEO_RELEASE_KEY; a registered "
                        "release needs one unless --allow-unsigned)")
    r.add_argument("--allow-unsigned", action="store_true",
                   help="register the release without a key; release.json and the report say "
                        "it is unsigned (default: off: a registered release must be signed)")
    add_output_arguments(r, default="synthgeo-out",
                         holds="release/, confidential/, release.json, report.html")
    r.add_argument("--strict", action="store_true",
                   help="exit with code 3 after writing when a verdict is FAIL (a release "
                        "written under `on_risk_failure` / `on_location_failure = \"warn\"`), "
                        "for schedulers that must see the failure (default: exit 0 once written)")


def run(args: argparse.Namespace, say) -> int:
    """Carry out the command; return the exit code."""
    import synthgeo as sg
    from synthgeo.release.writer import check_output_dir, input_paths

    t0 = time.perf_counter()
    spec = spec_from_args(args)
    out = Path(args.out)
    previous = getattr(args, "previous", None)
    inputs = input_paths(spec) + ([Path(previous)] if previous else [])
    check_output_dir(out, overwrite=args.overwrite, inputs=inputs,
                     register=getattr(args, "register", None))
    if spec.compute.scheduler is not None:  # refuse an unreachable cluster before the fits
        from synthgeo.compute import check_scheduler_reachable

        check_scheduler_reachable(spec.compute.scheduler)
    say(f"synthgeo {__version__}: {spec_label(spec)}")
    bars = getattr(args, "progressbar", False)
    try:
        rel = sg.run(spec, progress=lambda m: say(f"  {m}"), progressbar=bars,
                     previous=previous, register=getattr(args, "register", None),
                     key_file=getattr(args, "key_file", None),
                     allow_unsigned=getattr(args, "allow_unsigned", False))
    except RiskError:  # a run stopped by its targets (bad input is one line: its own error)
        _say_earlier_output_kept(out)
        raise
    return write_and_report(rel, out, args, say, t0)


def _say_earlier_output_kept(out: Path) -> None:
    """Say on stderr that ``out`` still holds an earlier run's release, not this spec's.

    A run stopped by its targets (``on_risk_failure = "stop"``) writes nothing, so a folder
    from an earlier run would otherwise look like this run's output. (Bad input stays one
    line: its error names what to fix and says nothing was written.)
    """
    if (out / "release.json").is_file():
        print(f"synthgeo: note: {out} still holds an earlier run's release, left as it was; "
              "it is not the output of this spec", file=sys.stderr)


def write_and_report(rel, out: Path, args: argparse.Namespace, say, t0: float) -> int:
    """Write the release and print the run's summary (``synthgeo run`` and ``synthgeo draw``).

    Returns the exit code (:func:`_closing`).
    """
    import pandas as pd

    from synthgeo.release.report import summary_tables

    spec = rel.result.spec
    bars = getattr(args, "progressbar", False)
    t = time.perf_counter()
    say("  writing the report and the release")
    if spec.data.sequential:  # [[data.responses]]: per-response tables
        return _write_sequential(rel, out, args, say, t0, t, bars)
    tables = {k: _relabel(v, spec) for k, v in summary_tables(rel.result).items()}  # before
    # writing: a failure after the rename would lie
    released = released_name(spec)
    out = rel.write(out, overwrite=args.overwrite, progressbar=bars)
    seconds = {**rel.seconds, "write": time.perf_counter() - t,
               "total": time.perf_counter() - t0}
    with pd.option_context("display.width", 160, "display.max_columns", 20,
                           "display.float_format", "{:.4g}".format):
        say("\n" + _key_values(tables["overview"]))
        risk = tables["risk"][["group", "measure", "n_records", "mean_unrestricted",
                               f"mean_{released}", "reduction", "median_record_reduction",
                               "attack_share_unrestricted",
                               f"attack_share_{released}"]]
        say("\nDisclosure risk (share of synthetic values within tolerance of the truth; "
            f"reduction = 1 - mean {released} / mean unrestricted;\n attack_share = share of "
            "records whose implicate average on the model scale (the geometric mean under "
            "exp) is within tolerance; the release-vs-baselines table after this one reports "
            "the stronger of the geometric and arithmetic means, so its 'average' rows can be "
            "higher):")
        say(risk.to_string(index=False))
        if "attributable" in tables:
            say("\nRelease vs baselines (release = Rao-Blackwellised risk for share, the "
                "rate of records the stronger average guess hits for average; attributable = "
                "release - the stronger baseline, attributable_se its Monte Carlo se; "
                "largest_attributable = the largest per-record a_i, share attack only):")
            say(tables["attributable"].to_string(index=False))
        units = getattr(rel.result.risk_scores, "loo_units", None)
        if units is not None:
            say(units.line(label=released))
        if rel.result.risk_scores is not None:
            say("\n" + rel.result.risk_scores.verdict_line())
        _say_protection(rel.result, say)
        cumulative = rel.result.cumulative
        if cumulative is not None:  # a repeated release (--previous, synthgeo draw)
            say(f"\nCumulative risk over {cumulative.n_implicates_pooled} pooled implicates of "
                f"{cumulative.n_linked} linked records (share within tolerance: this release, "
                "the earlier one, pooled; worst = the largest, which the board reads):")
            say(cumulative.summary[["group", "measure", "n_records", "mean_this",
                                    "mean_previous", "mean_cumulative", "mean_worst",
                                    "attack_share_worst"]].to_string(index=False))
            if cumulative.verdict is not None:
                say(f"cumulative risk verdict (pooled implicates): {cumulative.verdict.status}")
        util = tables["utility"][["model", "term", "estimate", "lower", "upper", "ci_overlap",
                                  "std_diff"]]
        say(f"\nUtility, Reiter (2003) for {spec.formula!r} (CI overlap vs confidential OLS):")
        say(util.to_string(index=False))
    say(_stage_line(seconds, spec))
    return _closing(rel, out, args)


def released_name(spec) -> str:
    """Return the console's name of the released model's implicates.

    ``"cross_fitted"`` under ``[synthesis] predictive = "cross_fit"`` (no restricted model is
    fitted: every record is drawn from the unrestricted fit's leave-out predictive), else
    ``"restricted"``.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> released_name(NS(synthesis=NS(predictive="cross_fit")))
    'cross_fitted'
    """
    cross_fit = getattr(spec.synthesis, "predictive", None) == "cross_fit"
    return "cross_fitted" if cross_fit else "restricted"


def _relabel(table, spec):
    """Name the released model as :func:`released_name` does in a console table.

    Renames the columns ending in ``_restricted`` and the ``restricted`` entries of a
    ``model`` column (and the overview's ``engine, restricted`` row); nothing under the
    paper's mechanism.
    """
    name = released_name(spec)
    if name == "restricted":
        return table
    table = table.rename(columns={c: c[: -len("restricted")] + name for c in table.columns
                                  if c.endswith("_restricted")})
    if "model" in table.columns:
        table = table.assign(model=table["model"].replace({"restricted": name}))
    if "item" in table.columns:  # the overview: no restricted fit was made
        rows = table["item"] == "engine, restricted"
        table = table.assign(
            item=table["item"].where(~rows, f"engine, {name}"),
            value=table["value"].where(~rows, "no restricted fit: the unrestricted fit's "
                                              "posterior draws, each record's leave-out "
                                              "predictive"))
    return table


def _stage_line(seconds: dict, spec) -> str:
    """Return the console's stage seconds (cross-fit: no restricted fit, so not its 0 s)."""
    skip = () if released_name(spec) == "restricted" else ("fit_restricted",)
    return "\nstage seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in seconds.items()
                                          if k not in skip)


def _say_protection(result, say) -> None:
    """Under ``[risk] protect = "targets"``: which round was released, and whether it met all."""
    protection = getattr(result, "protection", None)
    if protection is not None:
        from synthgeo.pipeline.released import released_label_of

        say(f"seeking the targets: released {released_label_of(result)}; "
            + ("every target met" if protection["reached"]
               else f"targets not reached {protection['why_not']}"))


def _key_values(table) -> str:
    """Two-column (item, value) table as left-aligned "item  value" lines, no padding."""
    items, values = (table.iloc[:, i].astype(str).tolist() for i in (0, 1))
    width = max(map(len, items), default=0)
    return "\n".join(f"{item:<{width}}  {value}" for item, value in zip(items, values))


def _write_sequential(rel, out, args, say, t0, t, bars) -> int:
    """Write a sequential release and print each response's risk and Reiter tables."""
    import pandas as pd

    spec = rel.result.spec

    out = rel.write(out, overwrite=args.overwrite, progressbar=bars)
    seconds = {**rel.seconds, "write": time.perf_counter() - t,
               "total": time.perf_counter() - t0}
    with pd.option_context("display.width", 160, "display.max_columns", 20,
                           "display.float_format", "{:.4g}".format):
        for r in rel.result.responses:
            say(f"\n{r.name} ({r.family}): risk")
            say(_relabel(r.risk_summary, spec).to_string(index=False))
            if r.attributable is not None:  # gaussian: release vs baselines, the largest a_i
                t = _relabel(r.attributable, spec)
                say(f"{r.name}: release vs baselines (attributable = release - the stronger "
                    "baseline; largest_attributable = the largest per-record a_i, share "
                    "attack; the average attack's figures are rates):")
                say(t[t["group"].isin(["all", "at_risk"])][
                    ["measure", "attack", "group", "model", "n_records", "release", "baseline",
                     "attributable", "attributable_se", "largest_attributable"]
                ].to_string(index=False))
            if r.risk_scores is not None and rel.result.spec.risk.targets:
                say(f"{r.name}: {r.risk_scores.verdict_line()}")
            say(f"utility, Reiter (2003) for {r.formula!r}:")
            say(_relabel(r.utility, spec)[["model", "term", "estimate", "lower", "upper",
                                           "ci_overlap", "std_diff"]].to_string(index=False))
        if rel.result.joint_risk is not None:
            say("\njoint risk:\n" + _relabel(rel.result.joint_risk, spec).to_string(index=False))
        if rel.result.spec.risk.targets:
            say("\n" + _several_verdict_line(rel.result))
        _say_protection(rel.result, say)
    say(_stage_line(seconds, spec))
    return _closing(rel, out, args)


def _several_verdict_line(result) -> str:
    """Return the release's risk verdict over its responses, each one's, and the joint count."""
    line = (f"risk verdict of the release: {result.risk_status} (FAIL if any response fails, "
            "PASS only if every one passes): "
            + ", ".join(f"{k} {v}" for k, v in result.risk_statuses.items()))
    j = result.risk_joint
    if j is not None:
        line += (f"\njoint: {int(j.joint.sum())} of {j.above.size} records identifiable by "
                 f"location and possibly above attributable risk {j.threshold:g} in at least "
                 "one response (upper Monte Carlo bound)")
    return line


#: The exit code of ``--strict`` when a release was written with a failed verdict.
STRICT_FAILED = 3


def closing_lines(rel, out: Path) -> list[str]:
    """Return the last lines of every run: both verdicts, records not released, paths.

    Parameters
    ----------
    rel : synthgeo.Release
    out : Path
        The folder written.

    Returns
    -------
    list of str
        Whether release.json is signed and where it is registered; ``verdicts: location X,
        risk Y``; the records released (read, less those dropped by ``[data] missing =
        "drop"`` and those withheld by ``[anonymity] treatment = "apply"``), dropped and
        withheld; then the release and report paths. No record-level value.
    """
    v = rel.verdicts
    lines = [f"verdicts: location {v['location']}, risk {v['risk']}"
             + (" (a FAIL written under \"warn\": release.json, the report and the data "
                "users' README say so)" if "FAIL" in v.values() else "")]
    data = rel.result.data
    dropped = (data.missing or {}).get("n_dropped", 0)
    n = int(data.n_records)  # read and kept: the records synthesised
    treatment = getattr(getattr(rel.result, "locations", None), "treatment", None)
    withheld = int((treatment.totals or {}).get("n_withheld", 0)) if treatment else 0
    line = f"records: {n - withheld} released"  # withheld ones are not in release/
    if dropped:
        line += (f", {dropped} dropped for a missing value ([data] missing = \"drop\"; "
                 f"{dropped / (n + dropped):.1%} of {n + dropped})")
    if withheld:
        line += f", {withheld} withheld by the outlier policy ([anonymity] treatment = \"apply\")"
    lines.append(line)
    from synthgeo.pipeline.released import released_label_of

    lines += [f"release (released model: {released_label_of(rel.result)}): {out / 'release'}",
              f"report (confidential): {out / 'report.html'}"]
    return _register_line(rel, out) + lines


def _register_line(rel, out: Path) -> list[str]:
    """Return the register line: the release's number and whether it is signed."""
    import json

    reg = getattr(getattr(rel, "ledger", None), "register", None)
    path = out / "release.json"
    if not path.is_file():
        return []
    rec = json.loads(path.read_text(encoding="utf-8"))
    sig = rec.get("signature") or {}
    signed = (f"signed (HMAC-SHA256, key {sig['key_id']})" if sig.get("value")
              else f"UNSIGNED ({sig.get('unsigned_reason') or 'no key'})")
    if reg is None:
        return [f"release.json: {signed}; not registered (no --register)"]
    from synthgeo.io.provenance import file_sha256

    entry = reg.by_release_json(file_sha256(path))
    number = "?" if entry is None else entry.id
    return [f"register: release {number} in {reg.location}; release.json {signed}"]


def _closing(rel, out: Path, args) -> int:
    """Print :func:`closing_lines`; under ``--strict`` a FAIL exits :data:`STRICT_FAILED`."""
    for line in closing_lines(rel, out):
        print(line)
    if getattr(args, "strict", False) and "FAIL" in rel.verdicts.values():
        print(f"--strict: a verdict is FAIL; exit code {STRICT_FAILED} (the release is written)")
        return STRICT_FAILED
    return 0
