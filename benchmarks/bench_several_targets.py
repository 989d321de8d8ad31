"""Targets and verdicts for several responses on a real file (issue 22 phase 2, issue 25 item 5).

Runs the shipped two-response spec ``models/lucas_county_price_value.toml`` (log_price, then
avalue given it; 25,357 sales, NNGP, L = 50) with one ``[risk.targets]`` written in
(within 10 %, ``record_threshold = 0.05``, ``max_share_above = 0.05``, ``on_risk_failure =
"warn"``), once per at-risk rule (``[model] at_risk = "spatial"`` and ``"both"``). Prints and
records, per response: the at-risk records (by location, by risk), the share of records with
a_i possibly above the threshold (point, lower and upper Monte Carlo bound) and the verdict;
then the release's verdict and the joint count over responses; the run's seconds and peak
memory (of the process: run one rule per process for each rule's own peak). Writes one record
per rule via ``_record.py`` (``SYNTHGEO_BENCH_RESULTS`` names
another folder: the page ``docs/performance.md`` is made from every record in
``benchmarks/results/``).

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_several_targets.py spatial
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_several_targets.py both
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _record import ROOT, Record  # noqa: E402

from synthgeo.config import RiskTarget, load_spec  # noqa: E402
from synthgeo.pipeline import run_release  # noqa: E402

SPEC = "models/lucas_county_price_value.toml"
RULES = ("spatial", "both")
TARGET = dict(measure="rel:0.1", record_threshold=0.05, max_share_above=0.05)


def measure(rule: str) -> Path:
    """Run the spec under one at-risk rule, print the verdicts and write the record."""
    rec = Record.start("bench_several_targets", case=rule)
    spec = load_spec(ROOT / SPEC)
    spec = (spec.replace("risk", targets=[RiskTarget(**TARGET)], on_risk_failure="warn")
            .replace("model", at_risk=rule))
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = run_release(spec)
    wall = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows = []
    for r in res.responses:
        check = r.risk_scores.verdict.checks[0]
        rows.append({
            "response": r.name, "n_at_risk": int(r.at_risk.n_at_risk),
            "n_spatial": int(r.at_risk_choice.spatial.sum()),
            "n_by_risk": int(r.at_risk_choice.by_risk.sum()),
            "share_above": check.value, "share_certain": check.lower,
            "share_possible": check.upper, "n_possible": check.n_possible,
            "status": r.risk_scores.verdict.status})
    joint = res.risk_joint.to_dict()
    print(f"\n{SPEC}, at_risk = {rule!r}, target {TARGET} (upper Monte Carlo bound):")
    print(f"{'response':<10} {'at risk':>8} {'spatial':>8} {'by risk':>8} {'above':>7} "
          f"{'certain':>8} {'possible':>9} verdict")
    for x in rows:
        print(f"{x['response']:<10} {x['n_at_risk']:8d} {x['n_spatial']:8d} "
              f"{x['n_by_risk']:8d} {x['share_above']:7.4f} {x['share_certain']:8.4f} "
              f"{x['share_possible']:9.4f} {x['status']}")
    print(f"release: {res.risk_status}; joint over responses {joint['n_joint']} of "
          f"{joint['n_records']} ({joint['n_above']} possibly above in a response); "
          f"run {wall:.0f} s, peak {peak_mb:.0f} MB")
    for x in rows:
        rec.figure(f"{x['response']}: share possibly above a_i 0.05 (upper bound), at_risk "
                   f"{rule}", round(x["share_possible"], 4), "")
        rec.figure(f"{x['response']}: at-risk records, at_risk {rule}", x["n_at_risk"],
                   "records")
    rec.figure(f"joint over responses, at_risk {rule}", joint["n_joint"], "records")
    rec.figure("run", round(wall, 1), "s")
    rec.figure("peak memory", round(peak_mb), "MB")
    return rec.finish(detail={"spec": SPEC, "rule": rule, "target": TARGET, "rows": rows,
                              "release": res.risk_status, "joint": joint,
                              "stage_seconds": dict(res.seconds), "run_seconds": wall,
                              "peak_mb": peak_mb})


def main() -> None:
    """Run the rules asked for (default: both), one after the other."""
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rules", nargs="*", help=f"any of {list(RULES)} (default: both)")
    a = ap.parse_args()
    unknown = sorted(set(a.rules) - set(RULES))
    if unknown:
        ap.error(f"unknown rule(s) {unknown}; choose from {list(RULES)}")
    for rule in a.rules or RULES:
        print(f"wrote {measure(rule)}")


if __name__ == "__main__":
    main()
