"""NNGP vs exact: cost per grid cell (the crossover), effect-draw solvers, accuracy.

    python benchmarks/bench_nngp.py crossover   # seconds per grid cell, exact vs NNGP (m = 15)
    python benchmarks/bench_nngp.py solvers     # w draws at 25,357 Lucas sites: sparse LU vs CG
    python benchmarks/bench_nngp.py accuracy    # NNGP − exact on the paper design and Lucas 1,000

The grid route evaluates ~500–850 cells per fit, so seconds per cell x ~700 is the fit's cost.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from synthgeo.inference.grid_posterior import ExactCovariance, NNGPCovariance
from synthgeo.inference.nngp_effects import NNGPEffects
from synthgeo.model.kernels import make_sites

HERE = Path(__file__).resolve().parent
LUCAS = HERE.parent.parent / "shared" / "data" / "lucas_oh_house_sales.csv"


def crossover() -> None:
    rng = np.random.default_rng(0)
    print("records   exact s/cell   nngp s/cell (m=15)")
    for n in (250, 500, 1000, 2000, 4000):
        xy = rng.uniform(0, 20_000, (n, 2))
        X = np.column_stack([np.ones(n), rng.standard_normal(n)])
        y = rng.standard_normal(n)
        sites = make_sites(xy)
        d = np.ones(n)
        out = []
        with threadpool_limits(1):
            for cls in (ExactCovariance, NNGPCovariance):
                b = cls(y, X, sites, d)
                reps = 3 if n <= 2000 else 1
                t = time.perf_counter()
                for _ in range(reps):
                    b.stats(0.5, 0.2)
                out.append((time.perf_counter() - t) / reps)
        print(f"{n:7d}   {out[0]:12.4f}   {out[1]:12.4f}")


def solvers(n_draws: int = 20) -> None:
    fr = pd.read_csv(LUCAS)
    sites = make_sites(fr[["x_m", "y_m"]].to_numpy())
    X = np.column_stack([np.ones(len(fr)), fr[["TLA", "age", "beds"]].to_numpy()])
    y = fr["log_price"].to_numpy()
    beta = np.linalg.lstsq(X, y, rcond=None)[0]
    draws = {"sigma2": np.full(n_draws, 0.27), "alpha": np.full(n_draws, 0.21),
             "phi_km": np.full(n_draws, 3 / 4.2), "beta": np.tile(beta, (n_draws, 1)),
             "cell": np.zeros(n_draws, int)}
    spread = dict(draws, cell=np.arange(n_draws),
                  phi_km=3 / np.linspace(3.8, 4.6, n_draws))
    with threadpool_limits(1):
        for label, dr in (("one grid cell", draws), (f"{n_draws} grid cells", spread)):
            for solver in ("splu", "cg"):
                eff = NNGPEffects(y, X, sites, np.ones(sites.n_sites), solver=solver)
                t = time.perf_counter()
                eff.draw(dr, np.random.default_rng(1))
                s = time.perf_counter() - t
                extra = (f", CG iterations median {np.median(eff.cg_iterations):.0f}"
                         if eff.cg_iterations else "")
                print(f"{solver}: {n_draws} draws of w at {sites.n_sites:,} sites, {label}: "
                      f"{s:.1f} s ({s / n_draws:.2f} s/draw{extra})")


def accuracy() -> None:
    sys.path.insert(0, str(HERE))
    from _engines import compare, run_engine

    from synthgeo.studies.simulation import simulate_paper_design

    cases = [("paper design N=500", simulate_paper_design(2018), "log_income", [],
              "EPSG:4087")]
    if LUCAS.exists():
        cases.append(("Lucas 1,000", pd.read_csv(LUCAS).sample(1000, random_state=1),
                      "log_price", ["TLA", "age", "beds"], "EPSG:2834"))
    for name, frame, resp, cov, crs in cases:
        kw = dict(response=resp, covariates=cov, crs=crs)
        t = time.perf_counter()
        ex = run_engine(frame, gp="exact", **kw)
        t1 = time.perf_counter()
        nn = run_engine(frame, gp="nngp", **kw)
        t2 = time.perf_counter()
        print(f"\n{name}: exact {t1 - t:.1f} s, NNGP {t2 - t1:.1f} s (whole pipeline, L = 100)")
        for k, v in compare(ex, nn).items():
            print(f"  {k:32s} {v if isinstance(v, tuple) else round(v, 4)}")


if __name__ == "__main__":
    what = sys.argv[1:] or ["crossover", "solvers", "accuracy"]
    for w in what:
        globals()[w]()
