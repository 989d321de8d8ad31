"""Areal mask and the method-aware attacker (issue 23): timing, and both attackers per method.

1. Timing: ``mask_to_k(method="areal")`` for 5,000 cases among 100,000 households (70 % in 20
   Gaussian clusters, ``synthgeo.testing.clustered_points``; each case's household in the
   layer), end to end (validation, r_k, partition, draws; verified by construction: every area
   holds >= k households), median of --repeat runs. Target: <= 0.5 s.
2. Chorley (58 larynx cases, 978 lung cases as households): for the donut, the verified donut
   and the areal mask at k = 5, 10, 20, 30, 50, the success of the naive attacker (nearest
   known case household), the issue's "ratio" attacker (known case whose distance / r_k is
   closest to 0.79; donut only), the method-aware attacker knowing the same 30 % of cases and
   the method-aware attacker over all households, on --replicates masks.
3. Simulation: the same table from ``choose_k`` (both methods, both attackers) on
   --sim-cases cases among 100,000 households.

Usage: python benchmarks/bench_areal_mask.py [--repeat R] [--replicates N] [--sim-cases N]
"""

from __future__ import annotations

import argparse
import os
import time
from importlib.resources import files

import geopandas
import numpy as np
import pandas as pd

from synthgeo.masking import choose_k, mask_to_k
from synthgeo.masking.areal import draw_in_areas, household_partition
from synthgeo.masking.attacker import NearestHouseholdAttacker
from synthgeo.masking.bayes import MethodAwareAttacker, mask_law
from synthgeo.masking.donut import _draw_donut, _kth_distance
from synthgeo.masking.verify import HouseholdIndex, redraw_until_verified
from synthgeo.testing import clustered_points

CHORLEY = str(files("synthgeo") / "data" / "chorley_ribble_cancer.csv")  # shipped copy


def _gs(xy, crs="EPSG:32615"):
    return geopandas.GeoSeries(geopandas.points_from_xy(*xy.T), crs=crs)


def timing(repeat: int) -> None:
    """Print the areal mask's wall time at 5,000 / 100,000."""
    hh = clustered_points(100_000, random_seed=12)
    cases = hh[np.random.default_rng(13).choice(len(hh), 5_000, replace=False)]
    c, h = _gs(cases), _gs(hh)
    for k in (5, 20, 50):
        times, part_times = [], []
        for i in range(repeat):
            t = time.perf_counter()
            m = mask_to_k(c, h, k=k, method="areal", random_seed=i)
            times.append(time.perf_counter() - t)
            t = time.perf_counter()
            household_partition(hh, k)
            part_times.append(time.perf_counter() - t)
        print(f"areal mask k = {k}: {np.median(times):.3f} s (median of {repeat}; partition "
              f"alone {np.median(part_times):.3f} s), {m.verification['n_areas']} areas, "
              f"fewest households in an area {m.verification['min_households_in_area']:g}, "
              f"verified k min {m.verified_k.min():g}")


def _ratio(xy, masked, r, n_known, seed):
    rng = np.random.default_rng(seed)
    known = np.argsort(rng.random((masked.shape[0], len(xy))), axis=1)[:, :n_known]
    out = []
    for j in range(masked.shape[0]):
        kk = known[j]
        d = np.linalg.norm(masked[j, kk][:, None] - xy[kk][None], axis=-1)
        out.append(np.mean(np.abs(d / r[kk][None] - 0.79).argmin(axis=1) == np.arange(len(kk))))
    return float(np.mean(out))


def chorley(replicates: int) -> None:
    """Print both attackers per method and k on Chorley."""
    d = pd.read_csv(CHORLEY)
    xy = d.loc[d.cancer == "larynx", ["x_km", "y_km"]].to_numpy() * 1000.0
    hxy = d.loc[d.cancer == "lung", ["x_km", "y_km"]].to_numpy() * 1000.0
    index = HouseholdIndex(hxy)
    att = MethodAwareAttacker()
    n_known = att.n_known(len(xy))
    rows = []
    for k in (5, 10, 20, 30, 50):
        r = _kth_distance(xy, hxy, np.array([k]), None)[:, 0]
        for method in ("donut", "donut-verified", "areal"):
            rng = np.random.default_rng(5)
            if method == "areal":
                part = household_partition(hxy, k)
                bounds = part.bounds[part.locate(xy)]
                masked = np.stack([draw_in_areas(bounds, rng) for _ in range(replicates)])
                law = mask_law("areal", index, k)
            else:
                masked, dist, _ = _draw_donut(xy, r, replicates, rng)
                if method == "donut-verified":
                    def draw(case, scale, rng=rng, r=r):
                        p, dd, nr = _draw_donut(xy[case], r[case] * scale, 1, rng)
                        return p[0], dd[0], nr

                    redraw_until_verified(masked, dist, xy, k=k, index=index, draw=draw,
                                          max_redraws=200)
                law = mask_law("donut", index, k, verified=method == "donut-verified")
            naive = NearestHouseholdAttacker().success(xy, masked, random_seed=1).mean()
            aware = att.success(xy, masked, law=law, random_seed=1).mean()
            hh = MethodAwareAttacker(prior="households").success(
                xy, masked[:min(replicates, 20)], law=law).mean()
            ratio = _ratio(xy, masked, r, n_known, 1) if method != "areal" else float("nan")
            rows.append({"method": method, "k": k, "naive": naive, "ratio_0.79": ratio,
                         "aware_known_cases": aware, "aware_households": hh,
                         "floor": max(1 / k, 1 / n_known)})
    with pd.option_context("display.width", 140, "display.float_format", "{:.3f}".format):
        print(f"\nChorley, {replicates} masks per row, attacker knows {n_known} of {len(xy)} "
              "cases:")
        print(pd.DataFrame(rows).to_string(index=False))


def simulation(n_cases: int, replicates: int) -> None:
    """Print choose-k's table (both methods, both attackers) on a 100,000-household layer."""
    hh = clustered_points(100_000, random_seed=12)
    cases = hh[np.random.default_rng(14).choice(len(hh), n_cases, replace=False)]
    t = time.perf_counter()
    res = choose_k(_gs(cases), _gs(hh), utility=None, k_grid=(5, 20, 50),
                   n_replicates=replicates, random_seed=1, progressbar=False,
                   households_masks=2)
    cols = ["method", "k", "attacker_success_naive", "attacker_success_aware",
            "attacker_success_aware_households", "guess_floor", "attacker_success",
            "median_displacement_m", "verified_k_median", "meets_attacker_target"]
    with pd.option_context("display.width", 160, "display.float_format", "{:.3f}".format):
        print(f"\nSimulation: {n_cases} cases among 100,000 households, {replicates} masks per "
              f"row ({time.perf_counter() - t:.0f} s):")
        print(res.table[cols].to_string(index=False))
    print(res.finding)


def main() -> None:
    """Run the benchmark and print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="timed runs (default: 5)")
    ap.add_argument("--replicates", type=int, default=100,
                    help="masks per row on Chorley (default: 100)")
    ap.add_argument("--sim-cases", type=int, default=1_000,
                    help="cases in the 100,000-household simulation (default: 1000; 0 skips)")
    ap.add_argument("--sim-replicates", type=int, default=5,
                    help="masks per row in the simulation (default: 5)")
    args = ap.parse_args()
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}")
    timing(args.repeat)
    chorley(args.replicates)
    if args.sim_cases:
        simulation(args.sim_cases, args.sim_replicates)


if __name__ == "__main__":
    main()
