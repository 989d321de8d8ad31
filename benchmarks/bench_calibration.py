"""Simulation-based calibration of the grid route: new (midpoint) vs old (lattice) weights.

For each of ``--reps`` prior draws (fixed priors, ``_sbc.PRIORS``; ``--records`` sites on a
1 km square) the grid is fitted with each rule on the same data set, and the rank of the truth
among ``--draws`` posterior draws is recorded for σ², τ², range, nugget share, β₀ and β₁.
Pearson's χ² on 20 equal rank bins per parameter; Bonferroni over the 6; pass at adjusted
p > 0.01. Grid-check failures (cell or edge mass) are counted and kept in the ranks.

Usage: python benchmarks/bench_calibration.py [--reps 500] [--records 60] [--draws 199]
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

from _sbc import PARAMETERS, PRIORS, sbc, verdict


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--records", type=int, default=60)
    ap.add_argument("--draws", type=int, default=199)
    ap.add_argument("--seed", type=int, default=2018)
    args = ap.parse_args()
    logging.getLogger("synthgeo").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    logging.getLogger("arviz").setLevel(logging.ERROR)
    print(f"SBC: {args.reps} prior draws, N = {args.records}, {args.draws} draws per fit, "
          f"seed {args.seed}; fixed priors {PRIORS.to_dict()}")
    print(f"{'rule':<10}" + "".join(f"{k:>14}" for k in PARAMETERS)
          + f"{'passed':>8}{'grid fail':>11}{'seconds':>9}")
    for rule in ("midpoint", "lattice"):
        t = time.perf_counter()
        v = verdict(sbc(args.reps, n_records=args.records, n_draws=args.draws, rule=rule,
                        seed=args.seed))
        print(f"{rule:<10}" + "".join(f"{v['p'][k]:>14.4g}" for k in PARAMETERS)
              + f"{str(v['passed']):>8}{v['grid_failures']:>11}"
              f"{time.perf_counter() - t:>9.0f}")
    print("(χ² p-values on 20 rank bins; pass = every Bonferroni-adjusted p (6 p) > 0.01; "
          "'lattice' = the pre-issue-13 rule: nodes on the prior bounds with full weight)")


if __name__ == "__main__":
    main()
