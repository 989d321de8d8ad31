"""Time ``synthgeo compare`` and the risk-utility frontier on the paper's simulated design.

Three fits, L implicates, risk, Reiter, spatial utility; prints the figures to set beside the
paper's.

    python benchmarks/bench_compare.py [--frontier] [--spec models/paper_simulation.toml]
    python benchmarks/bench_compare.py --cli 5   # the command as a user runs it, 5 times

``--cli N`` runs ``synthgeo compare SPEC`` in N fresh processes (imports included, as issue
13's target "≤ 10 s" is stated) and prints each one's wall time, CPU (user, system) and minor
page faults, then the median wall time and the load average.

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

import synthgeo as sg

ROOT = Path(__file__).resolve().parents[1]


def time_cli(spec: str, repeat: int) -> None:
    """Run ``synthgeo compare spec`` ``repeat`` times in fresh processes; print the figures."""
    exe = Path(sys.executable).with_name("synthgeo")
    walls = []
    for i in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run([str(exe), "compare", spec], check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        walls.append(wall)
        print(f"run {i + 1}: {wall:5.2f} s wall, user {after.ru_utime - before.ru_utime:5.2f} s, "
              f"system {after.ru_stime - before.ru_stime:4.2f} s, minor page faults "
              f"{after.ru_minflt - before.ru_minflt:,}", flush=True)
    print(f"median {statistics.median(walls):.2f} s, min {min(walls):.2f} s, max "
          f"{max(walls):.2f} s over {repeat} runs; load average {os.getloadavg()[0]:.2f}; "
          f"cores {os.cpu_count()}")


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
    spec = sg.load_spec(args.spec)
    print(f"spec {args.spec}; cores visible: {os.cpu_count()}; L = "
          f"{spec.synthesis.n_implicates}; engine {spec.sampling.sampler}/{spec.model.gp}")
    t = time.perf_counter()
    r = sg.compare(spec)
    print(f"compare: {time.perf_counter() - t:.1f} s  stages "
          + ", ".join(f"{k} {v:.1f}" for k, v in r.seconds.items()))
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
        print(f"frontier (20 settings): {time.perf_counter() - t:.1f} s")
        print(fr.table.round(3).to_string(index=False))


if __name__ == "__main__":
    main()
