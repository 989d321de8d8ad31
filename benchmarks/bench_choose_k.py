"""Time the full default choose-k sweep on the Chorley larynx cases (issue: rare-disease releases).

Prints the wall time of loading the inputs and of ``choose_k`` with the spec's defaults
(k grid 5, 10, 15, 20, 30, 50; 200 replicate masks per k; attacker knows 30% of the cases;
excess within 2 km of the incinerator; study-region redraws), the sweep table and the finding.
Target: the whole `synthgeo choose-k` run in <= 2 minutes on 2 cores.

Also times the command line end to end (a fresh process: imports, loading, sweep, writing the
table, record and plot) and, with ``--scale N``, a simulated layer of N cases among 20·N
households to show how the vectorised sweep grows.

Usage: python benchmarks/bench_choose_k.py [--replicates N] [--repeat R] [--scale N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

import geopandas
import numpy as np

import synthgeo as sg
from synthgeo.masking import ExcessNearSource  # not public yet: choose_k's utility test
from synthgeo.masking.inputs import load_masking_inputs  # not public yet


def main() -> None:
    """Run the benchmark and print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=200, help="masks per k (default: 200)")
    ap.add_argument("--repeat", type=int, default=3, help="timed sweeps (default: 3)")
    ap.add_argument("--scale", type=int, default=0, metavar="N",
                    help="also time N simulated cases among 20·N households (default: skip)")
    args = ap.parse_args()
    data = resources.files("synthgeo") / "data"
    t0 = time.perf_counter()
    inputs = load_masking_inputs(
        data / "chorley_ribble_cancer.csv", households_path=data / "chorley_ribble_cancer.csv",
        x="x_km", y="y_km", crs="EPSG:27700", coord_unit_m=1000, id_column="id",
        cases_query="cancer == 'larynx'", households_query="cancer == 'lung'",
        region_path=data / "chorley_ribble_window.csv")
    utility = ExcessNearSource.from_households(
        inputs.households, source_xy_m=inputs.point_m((354.5, 413.6)), radius_m=2000)
    t_load = time.perf_counter() - t0
    times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        result = sg.choose_k(inputs.cases, inputs.households, utility=utility, region=inputs.region,
                          n_replicates=args.replicates, random_seed=1, progressbar=False)
        times.append(time.perf_counter() - t)
    print(f"cpus available: {len(os.sched_getaffinity(0))}")
    print(f"load inputs: {t_load:.2f} s")
    print(f"choose_k, {len(inputs.cases)} cases, {len(inputs.households)} households, "
          f"{len(result.table)} k x {args.replicates} masks: "
          + ", ".join(f"{s:.2f}" for s in times) + " s (min "
          f"{min(times):.2f} s)")
    print(result.table[["k", "attacker_success", "detection_rate",
                        "median_displacement_m"]].to_string(index=False))
    print(result.finding)

    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "synthgeo", "--quiet", "choose-k",
               "synthgeo:chorley_ribble_cancer.csv",
               "--households", "synthgeo:chorley_ribble_cancer.csv", "--x", "x_km", "--y", "y_km",
               "--crs", "EPSG:27700", "--coord-unit-m", "1000", "--id-col", "id",
               "--cases-query", "cancer == 'larynx'", "--households-query", "cancer == 'lung'",
               "--region", "synthgeo:chorley_ribble_window.csv", "--source", "354.5,413.6",
               "--radius-m", "2000", "--replicates", str(args.replicates),
               "--out", str(Path(tmp) / "out")]
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        print(f"`synthgeo choose-k` on Chorley, {args.replicates} replicates, whole process: "
              f"{time.perf_counter() - t:.1f} s")

    if args.scale:
        rng = np.random.default_rng(0)
        n = args.scale
        side = 1000.0 * np.sqrt(n)  # about one case per km²

        def layer(m: int) -> geopandas.GeoSeries:
            xy = rng.uniform(0, side, (m, 2))
            return geopandas.GeoSeries(geopandas.points_from_xy(xy[:, 0], xy[:, 1]),
                                       crs="EPSG:27700")

        cases, households = layer(n), layer(20 * n)
        # a utility function that always passes on the truth: the mean location moves < 1 km
        truth = np.column_stack([cases.x, cases.y]).mean(axis=0)

        def mean_within_1km(xy: np.ndarray) -> np.ndarray:
            return np.hypot(*(xy.mean(axis=1) - truth).T) < 1000

        t = time.perf_counter()
        big = sg.choose_k(cases, households, utility=mean_within_1km,
                       n_replicates=args.replicates, random_seed=1, progressbar=False)
        print(f"choose_k, {n} simulated cases, {20 * n} households, {len(big.table)} k x "
              f"{args.replicates} masks: {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
