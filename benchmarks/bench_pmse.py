"""General utility at scale: pMSE of every implicate at 10⁵ records and L = 100 (issue 27).

Simulates a partially synthetic file of ``--n`` records (default 100,000) with a response
(log-dollars), two numeric covariates and a text covariate at clustered locations (metres),
and ``--implicates`` synthetic responses (default 100) drawn from a model that keeps the
covariates' effects but loses the spatial field (so pMSE has something to find). Scores one
model's implicates with the spec defaults (``[utility] pmse_terms = "main"``,
``pmse_coordinates = "spline"``, ``pmse_spline_df = 4``, ``pmse_permutations = 20``,
``pmse_null_max_pairs = 5000``: the paired null on a random subset of 5,000 pairs per
implicate) and the per-region breakdown, timing the call (wall, and the CPU time of all its
threads, which a shared machine's load does not inflate) — the issue's goal is ≤ 30 s on 2
cores for every implicate. Then times the per-variable breakdown on the first 10
implicates separately (the stage runs it too), and the paired null's calibration on 100
small files whose synthesis is exchangeable with the confidential values (:func:`calibration`).
Writes a record via ``_record.py``.

Usage::

    python benchmarks/bench_pmse.py [--n 100000] [--implicates 100] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _record import Record  # noqa: E402

from synthgeo.pipeline.general_utility import BREAKDOWN_IMPLICATES, REGION_CELLS  # noqa: E402
from synthgeo.utility.pmse import grid_regions, pmse_by_variable, pmse_scores  # noqa: E402

GOAL_S = 30.0


def simulate(n: int, n_implicates: int, seed: int = 27):
    """Confidential frame, (L, n) synthetic responses and coordinates (metres)."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0, 40_000, size=(40, 2))
    xy = centres[rng.integers(0, 40, n)] + rng.normal(scale=1500.0, size=(n, 2))
    sqft = rng.lognormal(7.2, 0.35, n)
    age = rng.uniform(0, 80, n)
    kind = rng.choice(["house", "condo", "multi"], size=n, p=[0.7, 0.2, 0.1])
    field = 0.25 * np.sin(xy[:, 0] / 6000.0) + 0.2 * np.cos(xy[:, 1] / 9000.0)
    mean = 9.0 + 0.8 * np.log(sqft) - 0.002 * age + field
    y = mean + rng.normal(scale=0.25, size=n)
    conf = pd.DataFrame({"log_price": y, "sqft": sqft, "age": age, "kind": kind})
    # the synthesis keeps the covariates' effects and the noise, but not the spatial field
    syn = (mean - field + field.mean())[None, :] + rng.normal(scale=0.3, size=(n_implicates, n))
    return conf, syn, xy


def calibration(n_files: int = 100, n: int = 1000) -> dict:
    """Ratio and S_pMSE of exchangeable syntheses: the paired null's calibration.

    Each of ``n_files`` simulated files (``n`` records, a covariate and a spatial field) gets one
    implicate drawn from the confidential values' own model, so each pair is exchangeable and
    the observed pMSE is a draw from the paired null: the ratio should average 1 and S_pMSE
    have mean 0 and sd about 1. Spec defaults (main effects, spline coordinates).
    """
    ratios, s = [], []
    for seed in range(n_files):
        rng = np.random.default_rng(10_000 + seed)
        xy = rng.uniform(0, 10_000, size=(n, 2))
        x = rng.normal(size=n)
        mean = 0.5 * x + 0.4 * np.sin(xy[:, 0] / 2000.0)
        conf = pd.DataFrame({"y": mean + rng.normal(scale=0.5, size=n), "x": x})
        syn = mean + rng.normal(scale=0.5, size=(1, n))
        r = pmse_scores(conf, syn, synthesized=["y"], coords_m=xy, coordinates="spline",
                        n_permutations=20, random_seed=seed).by_implicate.iloc[0]
        ratios.append(float(r["ratio"]))
        s.append(float(r["s_pmse"]))
    return {"n_files": n_files, "n_records": n, "ratio_mean": float(np.mean(ratios)),
            "ratio_se": float(np.std(ratios, ddof=1) / np.sqrt(n_files)),
            "s_pmse_mean": float(np.mean(s)), "s_pmse_sd": float(np.std(s, ddof=1))}


def main(argv=None) -> None:
    """Simulate, time and record (module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--implicates", type=int, default=100)
    ap.add_argument("--threads", type=int, default=None, help="default: the CPU count")
    args = ap.parse_args(argv)
    rec = Record.start("bench_pmse", case=f"n{args.n}-L{args.implicates}")
    conf, syn, xy = simulate(args.n, args.implicates)
    labels, _ = grid_regions(xy, n_cells=REGION_CELLS, min_records=10)
    t0, c0 = time.perf_counter(), time.process_time()
    r = pmse_scores(conf, syn, synthesized=["log_price"], coords_m=xy, terms="main",
                    coordinates="spline", spline_df=4, n_permutations=20, null_max_pairs=5000,
                    regions=labels, random_seed=1, n_threads=args.threads)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    t1 = time.perf_counter()
    by_var = pmse_by_variable(conf, syn[:BREAKDOWN_IMPLICATES], synthesized=["log_price"],
                              coords_m=xy, coordinates="spline", spline_df=4,
                              n_permutations=20, null_max_pairs=5000, random_seed=2,
                              n_threads=args.threads)
    wall_var = time.perf_counter() - t1
    pooled = r.pooled()
    threads = args.threads or os.cpu_count()
    print(f"{args.n:,} records, L = {args.implicates}, {r.n_params} propensity columns, "
          f"null: {r.n_permutations} permutations on {r.n_null_pairs:,} pairs per implicate, "
          f"{threads} thread(s)")
    print(f"every implicate (with the per-region breakdown): {wall:.1f} s wall "
          f"({wall / args.implicates * 1000:.0f} ms per implicate); goal ≤ {GOAL_S:g} s; "
          f"CPU time {cpu:.1f} s over all threads (so at least {cpu / threads:.0f} s of wall "
          f"on {threads} idle cores)")
    print(f"per-variable breakdown, first {BREAKDOWN_IMPLICATES} implicates: {wall_var:.1f} s")
    print(f"pooled: pMSE {pooled['pmse']:.3g}, ratio {pooled['ratio']:.3g}, "
          f"S_pMSE {pooled['s_pmse']:.3g}, SPECKS {pooled['specks']:.3g}")
    print(by_var[["variable", "ratio", "s_pmse"]].to_string(index=False))
    cal = calibration()
    print(f"calibration ({cal['n_files']} exchangeable files of {cal['n_records']} records): "
          f"ratio {cal['ratio_mean']:.3f} ± {cal['ratio_se']:.3f}, S_pMSE mean "
          f"{cal['s_pmse_mean']:.2f}, sd {cal['s_pmse_sd']:.2f}")
    rec.figure("pMSE of every implicate, wall", round(wall, 2), "s", goal_max=GOAL_S)
    rec.figure("per implicate", round(wall / args.implicates * 1000, 1), "ms")
    rec.figure("CPU time of every implicate (all threads)", round(cpu, 2), "s")
    rec.figure("per-variable breakdown (10 implicates), wall", round(wall_var, 2), "s")
    rec.finish(detail={
        "n_records": args.n, "n_implicates": args.implicates, "threads": threads,
        "n_params": r.n_params, "formula": r.formula, "n_permutations": r.n_permutations,
        "n_null_pairs": r.n_null_pairs, "pooled": pooled,
        "by_variable": by_var.drop(columns="formula").to_dict("records"),
        "seconds_breakdown": wall_var, "calibration": cal})


if __name__ == "__main__":
    main()
