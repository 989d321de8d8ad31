"""The release attacker (the neighbour signal) on the shipped data sets, and input noise (issue 25).

Per data set, whole runs with the spec's seed under the issue's targets (within 10 %, share
attack, ``record_threshold = 0.10``), judged against the leave-out posterior's baseline:

- ``calibrated cross-fit``: ``predictive = "cross_fit"``, ``cross_fit_calibration =
  "covariates_loo"`` (protect's round 2), no input noise;
- ``+ input noise auto``: the same with ``[synthesis] input_noise = "auto"``;
- ``+ mean noise auto``: the same with ``[synthesis] mean_noise = "auto"``.

Printed per run: the own-value verdict (the per-record measure), the release attacker's
largest and mean attributable risk at the release's L, records above 0.10, the smallest
implicate budget (pooled implicates at which a record first passes 0.10), under input noise κ
and the largest attributable risk for any number of pooled implicates, the smallest Reiter
CI overlap and the run time. Aggregates only. A record is written (benchmarks/_record.py).

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_release_attacker.py [--data NAME ...]
"""

from __future__ import annotations

import argparse

from _record import Record
from bench_cross_fit import _run  # a whole run_release, timed, its warnings silenced
from bench_protect import DATA, ISSUE_TARGET

from synthgeo.config import load_spec
from synthgeo.config.risk import RiskTarget


def _overlap(res) -> float:
    """Smallest Reiter CI overlap of the released model."""
    u = res.utility
    return float(u.loc[u["model"] == "restricted", "ci_overlap"].min())


def _status(res, attacker: str) -> str:
    """The verdict on one attacker's criteria (FAIL if any fails)."""
    st = {c.status for c in res.risk_scores.verdict.checks if c.attacker == attacker}
    return "FAIL" if "FAIL" in st else "PASS" if "PASS" in st else "NOT ASSESSED"


def measure(name: str) -> list[dict]:
    """Both runs of one data set."""
    spec = load_spec(DATA[name])
    base = spec.replace("risk", targets=[RiskTarget(**ISSUE_TARGET)], on_risk_failure="warn",
                        protect="none")
    cf = base.replace("synthesis", predictive="cross_fit",
                      cross_fit_calibration="covariates_loo")
    rows = []
    for variant, s in (("calibrated cross-fit", cf),
                       ("+ input noise auto", cf.replace("synthesis", input_noise="auto")),
                       ("+ mean noise auto", cf.replace("synthesis", mean_noise="auto"))):
        res, secs = _run(s)
        a = res.release_attack.summary()
        row = {"data": name, "variant": variant, "n_records": int(res.data.n_records),
               "own_value_verdict": _status(res, "own_values"),
               "release_attacker_verdict": _status(res, "release_attacker"), "seconds": secs,
               "min_overlap": _overlap(res), **{f"release_attacker_{k}": v for k, v in a.items()}}
        rows.append(row)
        print(f"{name:18s} {variant:22s} own-value {row['own_value_verdict']:4s}  release "
              f"attacker {row['release_attacker_verdict']:4s} largest {a['largest_attributable']:.3f} mean "
              f"{a['mean_attributable']:.3f} above 0.10 {a['n_records_above_threshold']:>6d}"
              f" of {a['n_records']}  budget {a['smallest_implicate_budget']}  kappa "
              f"{a['input_noise_sd']:g}  mean-noise sd {a['mean_noise_sd']:.3g}  any-L {a['largest_attributable_any_implicates']}  "
              f"overlap {row['min_overlap']:.3f}  {secs:.0f} s", flush=True)
    return rows


def main(argv=None) -> None:
    """Run the data sets asked for and write the record."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=["sacramento_2bed", "paper_simulation",
                                                   "sacramento_all", "lucas_county"],
                    choices=[k for k in DATA if k != "lucas_county_price_value"])
    args = ap.parse_args(argv)
    rec = Record.start("bench_release_attacker", case="+".join(args.data))
    rows = []
    for name in args.data:
        for row in measure(name):
            rows.append(row)
            key = f"{name}/{row['variant']}"
            rec.figure(f"{key}/largest_attributable",
                       row["release_attacker_largest_attributable"], "probability")
            rec.figure(f"{key}/min_overlap", row["min_overlap"], "overlap")
            rec.figure(f"{key}/seconds", row["seconds"], "s")
    print(rec.finish({"rows": rows}))


if __name__ == "__main__":
    main()
