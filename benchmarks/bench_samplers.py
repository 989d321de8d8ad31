"""Measure the sampler routes for the collapsed exact-GP model (issue: main job, engine).

Prints wall time (compile + sampling), min bulk/tail ESS, max R-hat and divergences for each
route on a seeded simulated GP (the paper's parameters on a 1 km square) of size N.

Usage: python benchmarks/bench_samplers.py [N ...] [--routes nutpie-numba,pymc-c]
"""

from __future__ import annotations

import argparse
import time

import arviz as az
import numpy as np
import pymc as pm

from synthgeo.model.kernels import make_sites
from synthgeo.model.restricted_gp import build_model, default_priors
from synthgeo.testing import simulate_gp

ROUTES = ("nutpie-numba", "nutpie-jax", "pymc-c", "pymc-numba")  # each with ":ridge" or ":natural"


def run(route: str, model: pm.Model, draws: int, tune: int, seed: int) -> tuple[float, az.InferenceData]:
    t0 = time.perf_counter()
    if route.startswith("nutpie"):
        import nutpie

        backend = route.split("-")[1]
        kw = {"gradient_backend": "jax"} if backend == "jax" else {}
        compiled = nutpie.compile_pymc_model(model, backend=backend, **kw)
        idata = nutpie.sample(compiled, chains=2, draws=draws, tune=tune, seed=seed,
                              progress_bar=False, cores=2)
    else:
        mode = "NUMBA" if route == "pymc-numba" else None
        idata = pm.sample(draws=draws, tune=tune, chains=2, cores=2, random_seed=seed,
                          model=model, progressbar=False, compile_kwargs={"mode": mode} if mode else None)
    return time.perf_counter() - t0, idata


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("sizes", nargs="*", type=int, default=[140, 500])
    ap.add_argument("--routes", default="nutpie-numba,pymc-c")
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--tune", type=int, default=500)
    args = ap.parse_args()
    print(f"{'N':>5} {'route':>13} {'wall_s':>8} {'ess_bulk':>9} {'ess_tail':>9} {'rhat':>6} {'div':>4}")
    for n in args.sizes:
        sim = simulate_gp(n, random_seed=1)
        sites = make_sites(sim["coords_m"])
        priors = default_priors(sim["y"], sim["X"], sites)
        for spec in args.routes.split(","):
            route, _, par = spec.partition(":")
            model = build_model(sim["y"], sim["X"], sites, priors=priors,
                                parametrization=par or "ridge")
            route = spec
            try:
                wall, idata = run(route.split(":")[0], model, args.draws, args.tune, seed=1)
            except Exception as exc:  # report and continue with the next route
                print(f"{n:>5} {route:>13} failed: {type(exc).__name__}: {exc}")
                continue
            s = az.summary(idata, var_names=["sigma2", "nugget", "range_km"])
            div = int(idata.sample_stats["diverging"].sum())
            print(f"{n:>5} {route:>13} {wall:8.1f} {s['ess_bulk'].min():9.0f} "
                  f"{s['ess_tail'].min():9.0f} {s['r_hat'].max():6.3f} {div:4d}", flush=True)
            print(s[["mean", "sd", "hdi_3%", "hdi_97%"]].to_string())


if __name__ == "__main__":
    main()
