"""Time ``synthgeo compare`` and the risk-utility frontier on the paper's simulated design.

Three fits, L implicates, risk, Reiter, spatial utility; prints the figures to set beside the
paper's.

    python benchmarks/bench_compare.py [--frontier] [--spec models/paper_simulation.toml]
    python benchmarks/bench_compare.py --cli 5   # the command as a user runs it, 5 times

``--cli N`` runs ``synthgeo compare SPEC`` in N fresh processes (imports included, as issue
13's target "≤ 10 s" is stated) and prints each one's wall time, CPU (user, system) and minor
page faults, then the median wall time and the load average. Both modes write a record in
``benchmarks/results/`` (``_record.py``), from which ``make_performance.py`` makes
docs/performance.md.

Engine: the conjugate grid route with the exact GP (models/paper_simulation.toml); BLAS is
limited to one thread per process inside the fits, the grid evaluates two cells at a time.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _record import Record  # noqa: E402

import synthgeo as sg  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

#: issue 13's goal for the paper compare, seconds of wall time with imports
GOAL_S = 10


def _case(mode: str, spec: str) -> str:
    """Return the record's case: the mode, and the spec's name unless it is the paper's design."""
    stem = Path(spec).stem
    return mode if stem == "paper_simulation" else f"{mode}-{stem}"


def time_cli(spec: str, repeat: int) -> None:
    """Run ``synthgeo compare spec`` ``repeat`` times in fresh processes; print the figures."""
    exe = Path(sys.executable).with_name("synthgeo")
    rec = Record.start("bench_compare", case=_case("cli", spec))
    walls, runs = [], []
    for i in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run([str(exe), "compare", spec], check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        walls.append(wall)
        runs.append({"wall_s": round(wall, 2),
                     "user_s": round(after.ru_utime - before.ru_utime, 2),
                     "system_s": round(after.ru_stime - before.ru_stime, 2),
                     "minor_faults": after.ru_minflt - before.ru_minflt,
                     "load": round(os.getloadavg()[0], 2)})
        print(f"run {i + 1}: {wall:5.2f} s wall, user {after.ru_utime - before.ru_utime:5.2f} s, "
              f"system {after.ru_stime - before.ru_stime:4.2f} s, minor page faults "
              f"{after.ru_minflt - before.ru_minflt:,}", flush=True)
    print(f"median {statistics.median(walls):.2f} s, min {min(walls):.2f} s, max "
          f"{max(walls):.2f} s over {repeat} runs; load average {os.getloadavg()[0]:.2f}; "
          f"cores {os.cpu_count()}")
    rec.figure(f"wall time, median of {repeat} runs", round(statistics.median(walls), 1), "s",
               goal_max=GOAL_S)
    rec.figure("wall time, fastest run", round(min(walls), 1), "s")
    rec.figure("wall time, slowest run", round(max(walls), 1), "s")
    rec.figure("user CPU, median", round(statistics.median(r["user_s"] for r in runs), 1), "s")
    rec.figure("system CPU, median", round(statistics.median(r["system_s"] for r in runs), 1),
               "s")
    rec.figure("minor page faults, median",
               int(statistics.median(r["minor_faults"] for r in runs)), "")
    rec.finish(detail={"spec": str(Path(spec).resolve().relative_to(ROOT))
                       if Path(spec).resolve().is_relative_to(ROOT) else spec, "runs": runs})


def main() -> None:
    """Run and print."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", default=str(ROOT / "models" / "paper_simulation.toml"))
    ap.add_argument("--frontier", action="store_true")
    ap.add_argument("--cli", type=int, default=0, metavar="N",
                    help="time the `synthgeo compare` command N times instead")
    args = ap.parse_args()
    if args.cli:
        time_cli(args.spec, args.cli)
        return
    rec = Record.start("bench_compare", case=_case(
        "api-frontier" if args.frontier else "api", args.spec))
    spec = sg.load_spec(args.spec)
    print(f"spec {args.spec}; cores visible: {os.cpu_count()}; L = "
          f"{spec.synthesis.n_implicates}; engine {spec.sampling.sampler}/{spec.model.gp}")
    t = time.perf_counter()
    r = sg.compare(spec)
    wall = time.perf_counter() - t
    print(f"compare: {wall:.1f} s  stages "
          + ", ".join(f"{k} {v:.1f}" for k, v in r.seconds.items()))
    rec.figure("sg.compare wall time (imports excluded)", round(wall, 1), "s")
    post = r.posterior.set_index(["model", "parameter"])["mean"]
    for m in ("unrestricted", "restricted", "suppressed"):
        print(f"  {m:12s} beta0 {post[(m, 'beta[Intercept]')]:.2f}  sigma2 "
              f"{post[(m, 'sigma2')]:.2f}  tau2 {post[(m, 'tau2')]:.3f}  phi/km "
              f"{post[(m, 'phi_per_km')]:.1f}")
    print(r.at_risk_records.to_string(index=False))
    risk = r.risk.set_index(["group", "measure", "model"])
    for g in ("at_risk", "other"):
        for meas in risk.index.get_level_values("measure").unique():
            print(f"  reduction {g:8s} {meas:15s} restricted "
                  f"{risk.loc[(g, meas, 'restricted'), 'reduction']:.2f}")
    if args.frontier:
        from synthgeo.studies.frontier import risk_utility_frontier

        t = time.perf_counter()
        fr = risk_utility_frontier(spec)
        wall_fr = time.perf_counter() - t
        print(f"frontier (20 settings): {wall_fr:.1f} s")
        print(fr.table.round(3).to_string(index=False))
        rec.figure("risk-utility frontier (20 settings) wall time", round(wall_fr, 1), "s")
    rec.finish(detail={"stages_s": {k: round(v, 2) for k, v in r.seconds.items()}})


if __name__ == "__main__":
    main()
