"""Issue 13, item 7: max-min NNGP ordering and a variogram first box — does either help?

    python benchmarks/bench_grid_start.py loglik    # |log p(y|θ) NNGP − exact|, Lucas 2,000
    python benchmarks/bench_grid_start.py fits      # grid fits on Lucas 5,000 and all 25,357

``loglik``: the NNGP's error in the log marginal likelihood (the grid's log density) against
the exact GP at 5 (range, nugget share) points around the posterior, coordinate-sum ordering
(spNNGP's default) vs max-min (Guinness 2018), m = 5, 10, 15.
``fits``: unrestricted grid fits (spec priors, 2 x 1000 draws) with each variant: seconds
(neighbour search, grid, draws), cells evaluated, and the 2.5/50/97.5 % quantiles of range and
nugget share, as differences from the reference variant (coord, m = 15, prior box) in
posterior sd.
"""

from __future__ import annotations

import logging
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from synthgeo.config import SamplerConfig
from synthgeo.inference.covariance import ExactCovariance, NNGPCovariance
from synthgeo.inference.grid import conjugate_prior, fit_gp_grid
from synthgeo.inference.grid_posterior import GridModel, evaluate_cells
from synthgeo.inference.variogram import fit_variogram, start_box
from synthgeo.model.kernels import make_sites
from synthgeo.model.restricted_gp import default_priors

HERE = Path(__file__).resolve().parent
LUCAS = HERE.parent.parent / "shared" / "data" / "lucas_oh_house_sales.csv"
COV = ["TLA", "age", "beds"]


def _data(n: int | None, seed: int = 1):
    fr = pd.read_csv(LUCAS)
    if n is not None:
        fr = fr.sample(n, random_state=seed)
    y = fr["log_price"].to_numpy(float)
    X = np.column_stack([np.ones(len(fr)), fr[COV].to_numpy(float)])
    return y, X, make_sites(fr[["x_m", "y_m"]].to_numpy(float))


def loglik(n: int = 2000) -> None:
    y, X, sites = _data(n)
    pri = conjugate_prior(default_priors(y, X, sites), X.shape[1])
    d = np.ones(sites.n_sites)
    pts = np.array([[np.log(r), np.log(s / (1 - s))] for r, s in
                    ((1500, 0.3), (3000, 0.3), (6000, 0.3), (3000, 0.1), (3000, 0.6))])
    with threadpool_limits(1):
        exact = evaluate_cells(GridModel(backend=ExactCovariance(y, X, sites, d), prior=pri,
                                         n=y.size), pts).log_marginal
        print(f"Lucas {n}: |log-lik NNGP − exact| at (range m, nugget share) points")
        print(f"{'ordering':<9}{'m':>4}{'setup s':>9}" + "".join(
            f"{f'{int(np.exp(u))}/{1 / (1 + np.exp(-v)):.1f}':>12}" for u, v in pts))
        for ordering in ("coord", "maxmin"):
            for m in (5, 10, 15):
                t = time.perf_counter()
                be = NNGPCovariance(y, X, sites, d, n_neighbors=m, ordering=ordering)
                t_set = time.perf_counter() - t
                nn = evaluate_cells(GridModel(backend=be, prior=pri, n=y.size), pts).log_marginal
                print(f"{ordering:<9}{m:>4}{t_set:>9.2f}"
                      + "".join(f"{abs(a - b):>12.3f}" for a, b in zip(nn, exact)))


VARIANTS = [("coord", 15, False), ("maxmin", 15, False), ("maxmin", 10, False),
            ("coord", 15, True), ("maxmin", 10, True)]


def fits(sizes=(5000, None)) -> None:
    cfg = SamplerConfig(draws=1000, seed=3)
    qs = [0.025, 0.5, 0.975]
    for n in sizes:
        y, X, sites = _data(n)
        priors = default_priors(y, X, sites)
        print(f"\nLucas {y.size} records, NNGP grid fits (unrestricted)")
        print(f"{'ordering':<9}{'m':>4}{'start':>10}{'setup s':>9}{'grid s':>8}{'draws s':>8}"
              f"{'cells':>7}  quantile differences from the reference, posterior sd: "
              f"range (2.5/50/97.5 %), nugget share")
        ref = None
        for ordering, m, use_start in VARIANTS:
            t = time.perf_counter()
            start = None
            if use_start:
                vf = fit_variogram(y, X, sites, range_min_m=priors.range_min_m,
                                   range_max_m=priors.range_max_m)
                model_axes = GridModel(backend=None, prior=conjugate_prior(priors, 4),
                                       n=y.size).axes()
                start = start_box(vf, model_axes)
            t_v = time.perf_counter() - t
            fit = fit_gp_grid(y, X, sites, priors=priors, coef_names=["a", "b", "c", "d"],
                              config=cfg, gp="nngp", n_neighbors=m, ordering=ordering,
                              start=start)
            g = fit.grid
            qr, qn = g.quantiles("range_m", qs), g.quantiles("nugget_share", qs)
            post = fit.idata.posterior
            sd_r = float(post["range"].std())
            sd_n = float((post["nugget"] / (post["sigma2"] + post["nugget"])).std())
            if ref is None:
                ref = (qr, qn, sd_r, sd_n)
            dr = (qr - ref[0]) / ref[2]
            dn = (qn - ref[1]) / ref[3]
            s = fit.seconds
            label = f"vario+{t_v:.1f}s" if use_start else "prior"
            print(f"{ordering:<9}{m:>4}{label:>10}{s['setup']:>9.1f}{s['grid']:>8.1f}"
                  f"{s['draws']:>8.1f}{fit.engine['grid_evaluations']:>7}  "
                  + " ".join(f"{v:+.3f}" for v in dr) + "   " + " ".join(f"{v:+.3f}" for v in dn)
                  + f"   (range median {qr[1]:,.0f} m, share {qn[1]:.3f})")


if __name__ == "__main__":
    logging.getLogger("synthgeo").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    what = sys.argv[1:] or ["loglik", "fits"]
    if "loglik" in what:
        loglik()
    if "fits" in what:
        fits()
