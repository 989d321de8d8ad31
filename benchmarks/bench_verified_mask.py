"""Time a verified donut mask and measure the verified k of unverified masks (issue 12, item 7).

Layout: 100,000 households in a city-like pattern (70% in 20 Gaussian clusters of sd 500 m,
the rest uniform on a 50 km square; ``synthgeo.testing.clustered_points``), 5,000 cases drawn
from them (each case's own household is in the layer). For k = 5 and 20 it prints the verified
k of an unverified ``mask_to_k`` (median, share below k: the k an attacker with the household
layer faces) and the wall time of ``mask_to_k(..., verify=True)`` (median of --repeat runs,
GeoDataFrame validation, KD-tree, r_k and redraws included) with its redraw count.
Target: the verified mask at k = 20 in <= 0.5 s on 2 cores.

Usage: python benchmarks/bench_verified_mask.py [--cases N] [--households N] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import time

import geopandas
import numpy as np

import synthgeo as sg
from synthgeo.testing import clustered_points


def main() -> None:
    """Run the benchmark and print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=5_000, help="cases (default: 5000)")
    ap.add_argument("--households", type=int, default=100_000,
                    help="households (default: 100000)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs (default: 5)")
    args = ap.parse_args()
    hh_xy = clustered_points(args.households, random_seed=12)
    rng = np.random.default_rng(13)
    cases_xy = hh_xy[rng.choice(len(hh_xy), args.cases, replace=False)]
    crs = "EPSG:32615"
    households = geopandas.GeoSeries(geopandas.points_from_xy(*hh_xy.T), crs=crs)
    cases = geopandas.GeoDataFrame({"id": np.arange(args.cases)},
                                   geometry=geopandas.points_from_xy(*cases_xy.T), crs=crs)
    print(f"{args.cases:,} cases among {args.households:,} households; "
          f"{os.cpu_count()} CPUs visible; load average {os.getloadavg()[0]:.1f}")
    for k in (5, 20):
        plain = sg.mask(cases, households, k=k, random_seed=1)
        vk = plain.verified_k
        print(f"k = {k:2d} unverified: verified k median {np.median(vk):.0f}, "
              f"{np.mean(vk < k):.0%} of cases below k, min {vk.min():.0f}")
        times, cpu = [], []
        for r in range(args.repeat):
            t, c = time.perf_counter(), time.process_time()
            m = sg.mask(cases, households, k=k, random_seed=100 + r, verify=True)
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        v = m.verification
        t_plain = []
        for r in range(args.repeat):
            t = time.perf_counter()
            sg.mask(cases, households, k=k, random_seed=100 + r)
            t_plain.append(time.perf_counter() - t)
        print(f"k = {k:2d} verified:   {np.median(times):.3f} s wall, {np.median(cpu):.3f} s CPU "
              f"(median of {args.repeat}; "
              f"unverified {np.median(t_plain):.3f} s wall); {v['n_redraws']:,} redraws "
              f"({v['n_redraws'] / args.cases:.1f} per case, {v['rounds']} rounds), "
              f"{v['n_widened']} annuli widened (up to x{v['max_annulus_scale']:.2f}); "
              f"verified k min "
              f"{m.verified_k.min():.0f}, median {np.median(m.verified_k):.0f}; median "
              f"displacement {np.median(m.displacement_m):.0f} m vs "
              f"{np.median(plain.displacement_m):.0f} m unverified")


if __name__ == "__main__":
    main()
