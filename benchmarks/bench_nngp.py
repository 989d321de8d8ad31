"""NNGP vs exact: cost per grid cell (the crossover), effect-draw solvers, accuracy.

    python benchmarks/bench_nngp.py crossover   # seconds per grid cell, exact vs NNGP (m = 15)
    python benchmarks/bench_nngp.py solvers     # w draws at 25,357 Lucas sites: sparse LU vs CG
    python benchmarks/bench_nngp.py accuracy    # NNGP − exact on the paper design and Lucas 1,000
    python benchmarks/bench_nngp.py factors     # one (φ, α) at 10⁵ points: compiled vs NumPy
    python benchmarks/bench_nngp.py cg_scaling  # CG iterations per w draw at 10⁵ and 3 × 10⁵

``factors`` and ``cg_scaling`` write a record in ``benchmarks/results/`` (``_record.py``).

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
sys.path.insert(0, str(HERE))


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


def factors(n: int = 100_000, m: int = 15, reps: int = 3) -> None:
    """Seconds of one (φ, α) at n points, m neighbours: the pieces of a grid cell.

    The compiled Vecchia factors (:mod:`synthgeo.model.vecchia_kernel`) against the NumPy
    route they replaced (an (n, m, m) array of exponentials and a batched LU solve), the
    compiled one-pass Gram against whitening in NumPy, the whole NNGP grid cell, and a batched
    eigendecomposition of the blocks (what a grid row shared before the kernel). One thread;
    the median of ``reps``. The design is the simulated paper-style one (clustered points).
    """
    from _record import Record

    from synthgeo.model.vecchia import _solve_rows, ordered_neighbours, vecchia_factors
    from synthgeo.testing import clustered_points

    rec = Record.start("bench_nngp", case=f"factors-n{n}")
    rng = np.random.default_rng(1)
    xy_m = clustered_points(n, n_clusters=30, cluster_sd_m=800.0, clustered_share=0.9,
                            extent_m=30_000.0, random_seed=rng)
    g = ordered_neighbours(xy_m / 1000.0, m)
    X = np.column_stack([np.ones(n), rng.standard_normal(n)])
    y = rng.standard_normal(n)
    cov = NNGPCovariance(y, X, make_sites(xy_m), np.ones(n), n_neighbors=m)
    phi, alpha, ones = 1.5, 0.0156, np.ones(n)
    row = list(np.exp(np.linspace(np.log(0.005), np.log(0.05), 14)))  # a grid row's α values

    def timed(fn) -> float:
        out = []
        for _ in range(reps):
            t = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t)
        return float(np.median(out))

    with threadpool_limits(1):
        t0 = time.perf_counter()
        f = vecchia_factors(g, phi, alpha)  # compiles, or loads numba's cache
        first = time.perf_counter() - t0
        v = np.column_stack([X, y])[g.order]
        rows = {
            "Vecchia factors, compiled Cholesky": timed(lambda: vecchia_factors(g, phi, alpha)),
            "Vecchia factors, NumPy batched LU": timed(
                lambda: _solve_rows(g, np.arange(n), phi, alpha, ones, ones)),
            "vᵀC̃⁻¹v, compiled one pass": timed(lambda: f.gram(v)),
            "vᵀC̃⁻¹v, NumPy whitening": timed(lambda: f.whiten(v).T @ f.whiten(v)),
            "NNGP grid cell (factors + products)": timed(lambda: cov.stats(phi, alpha)),
            "grid row of 14 nugget shares, one pass": timed(lambda: cov.stats_row(phi, row)),
            "grid row of 14 nugget shares, cell by cell": timed(
                lambda: [cov._stats(vecchia_factors(g, phi, a)) for a in row]),
            "eigendecomposition of the blocks": timed(lambda: np.linalg.eigh(
                np.exp(-phi * g.distances(np.flatnonzero(g.neighbours[:, -1] >= 0))[0]))),
        }
    b, F = _solve_rows(g, np.arange(n), phi, alpha, ones, ones)
    diff_b = float(np.abs(f.b - b).max())
    diff_F = float(np.abs(f.F / F - 1.0).max())
    print(f"{n:,} points, m = {m}, one thread (median of {reps}); first call {first:.2f} s "
          "(compilation or numba's cache)")
    for name, sec in rows.items():
        print(f"  {name:40s} {sec:7.3f} s")
        rec.figure(f"{name}, {n:,} points, m = {m}", round(sec, 3), "s")
    print(f"  compiled vs LU: max |Δb| {diff_b:.1e}, max relative ΔF {diff_F:.1e}")
    rec.figure("compiled vs LU: largest |Δb|", float(f"{diff_b:.2g}"), "")
    rec.figure("compiled vs LU: largest relative ΔF", float(f"{diff_F:.2g}"), "")
    rec.finish(detail={"first_call_s": round(first, 2), "phi_per_km": phi, "alpha": alpha})


def cg_scaling(sizes=(100_000, 300_000), n_draws: int = 4) -> None:
    """CG iterations and seconds per w draw on the simulated design at each size (issue 28).

    The design of ``simulate_design.py`` (fixed 30 km area: more records are denser records),
    its unrestricted grid fit as ``synthgeo run`` makes it, then ``n_draws`` posterior draws of
    w at every site with the default solver (Jacobi-preconditioned CG, relative tolerance
    1e-8): does the iteration count grow with N?
    """
    import subprocess
    import tempfile

    from _record import Record

    from synthgeo.config import load_spec
    from synthgeo.pipeline.data import prepare_data
    from synthgeo.pipeline.run import make_fitter

    rec = Record.start("bench_nngp", case="cg_scaling-" + "-".join(f"n{n}" for n in sizes))
    rows = []
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([sys.executable, str(HERE / "simulate_design.py"), "--n", str(n),
                            "--out", tmp], check=True, capture_output=True)
            spec = load_spec(Path(tmp) / "spec.toml")
            data = prepare_data(spec)
        post = make_fitter(spec, data)(random_seed=1, label="unrestricted").posterior
        sig = post["sigma2"].values.ravel()[:n_draws]
        draws = {"sigma2": sig, "alpha": post["nugget"].values.ravel()[:n_draws] / sig,
                 "phi_km": post["phi"].values.ravel()[:n_draws] * 1000.0,
                 "beta": post["beta"].values.reshape(-1, post["beta"].shape[-1])[:n_draws],
                 "cell": np.arange(n_draws)}
        eff = NNGPEffects(data.y, data.X, data.sites, None, n_neighbors=15, solver="cg")
        t = time.perf_counter()
        eff.draw(draws, 1)
        per_draw = (time.perf_counter() - t) / n_draws
        its = float(np.median(eff.cg_iterations))
        print(f"n = {n:,}: CG iterations per draw {eff.cg_iterations} (median {its:.0f}), "
              f"{per_draw:.2f} s per draw", flush=True)
        rec.figure(f"n = {n:,}: CG iterations per w draw, median", its, "")
        rec.figure(f"n = {n:,}: seconds per w draw", round(per_draw, 2), "s")
        rows.append({"n": n, "iterations": eff.cg_iterations, "s_per_draw": per_draw})
    rec.finish(detail={"rows": rows, "n_draws": n_draws, "cg_rtol": 1e-8})


if __name__ == "__main__":
    what = sys.argv[1:] or ["crossover", "solvers", "accuracy"]
    for w in what:
        globals()[w]()
