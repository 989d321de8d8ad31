"""Time ``synthgeo compare`` and the risk-utility frontier on the paper's simulated design.

Three fits, L implicates, risk, Reiter, spatial utility; prints the figures to set beside the
paper's.

    python benchmarks/bench_compare.py [--frontier] [--spec models/paper_simulation.toml]

Engine: the conjugate grid route with the exact GP (models/paper_simulation.toml); BLAS is
limited to one thread per process inside the fits, the grid evaluates two cells at a time.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from synthgeo.config import load_spec
from synthgeo.studies.compare import compare_models

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    """Run and print."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", default=str(ROOT / "models" / "paper_simulation.toml"))
    ap.add_argument("--frontier", action="store_true")
    args = ap.parse_args()
    spec = load_spec(args.spec)
    print(f"spec {args.spec}; cores visible: {os.cpu_count()}; L = "
          f"{spec.synthesis.n_implicates}; engine {spec.sampling.sampler}/{spec.model.gp}")
    t = time.perf_counter()
    r = compare_models(spec)
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
