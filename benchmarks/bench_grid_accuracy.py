"""Accuracy of the grid posterior against a 200 x 200 brute-force integration.

For each data set (two seeded simulations, N = 150, the bundled Sacramento example and the
paper's simulated design, N = 500) the
same log posterior of (log range, logit nugget share) is integrated by brute force (200 x 200
midpoint cells over the whole prior box, 40,000 exact evaluations) and by the grid route. The
2.5 / 50 / 97.5 % quantiles of the range, the nugget share and M = −log(0.2)·range/3 are
compared, as errors in posterior standard deviations (brute force's): the grid's continuous
quadrature quantiles, the quantiles of its 2,000 draws, and the old rule ("lattice": nodes on
the prior bounds with full weight, draws at nodes). Also prints the distinct range values in
2,000 draws, and the cells, time and largest quantile error of the grid started on the Laplace
box (mode ± 5 sd) instead of the whole prior box. These alternative rows are information (the
verdict is on the default grid): the Laplace box is the default from 10,000 records only,
because at these sizes the posterior is far from Gaussian in (log range, logit share) and the
box can cut off mass (up to 0.15 sd here).

Usage: python benchmarks/bench_grid_accuracy.py [--brute 200] [--draws 2000]
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.special import expit

from synthgeo.config import bundled_spec_path, load_spec
from synthgeo.inference.covariance import ExactCovariance
from synthgeo.inference.grid import conjugate_prior
from synthgeo.inference.grid_posterior import GridModel, GridSettings, grid_posterior, log_target
from synthgeo.inference.quadrature import evaluate_points, thread_map
from synthgeo.model.kernels import make_sites
from synthgeo.model.restricted_gp import default_priors
from synthgeo.testing import simulate_gp

M_PER_RANGE = -np.log(0.2) / 3.0  # M = −log ρ₀ / φ = −log ρ₀ · range / 3


def datasets():
    """(name, y, X, sites) of the data sets compared."""
    out = []
    for seed, kw in ((1, {}), (2, {"nugget": 0.5, "phi_per_m": 3 / 400.0})):
        sim = simulate_gp(150, random_seed=seed, **kw)
        out.append((f"simulated seed {seed}", sim["y"], sim["X"], make_sites(sim["coords_m"])))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from synthgeo.pipeline import prepare_data

        data = prepare_data(load_spec(bundled_spec_path()))
        paper = prepare_data(load_spec(Path(__file__).parents[1] / "models"
                                       / "paper_simulation.toml"))
    out.append(("bundled Sacramento", data.y, data.X, data.sites))
    out.append(("paper simulation", paper.y, paper.X, paper.sites))
    return out


def brute_force(model: GridModel, n: int):
    """Marginal CDFs of u and v on an n x n midpoint grid over the prior box."""
    ax = model.axes()
    edges = [np.linspace(a.lower, a.upper, n + 1) for a in ax]
    mids = [0.5 * (e[1:] + e[:-1]) for e in edges]
    uu, vv = np.meshgrid(*mids, indexing="ij")
    fn = _Bound(model)
    lp = np.concatenate(evaluate_points(fn, np.column_stack([uu.ravel(), vv.ravel()]),
                                        batch_size=200, map_batches=thread_map(2)))
    w = np.exp(lp - lp.max()).reshape(n, n)
    w /= w.sum()
    return edges, mids, w.sum(axis=1), w.sum(axis=0)


class _Bound:
    def __init__(self, model):
        self.model = model

    def __call__(self, pts):
        return log_target(self.model, pts)


def _q(edges, marg, q):
    cdf = np.concatenate([[0.0], np.cumsum(marg)])
    return np.interp(q, cdf, edges)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--brute", type=int, default=200)
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--settings", default="",
                    help="comma-separated n_coarse/n_fine pairs to compare, e.g. 14/18,10/14")
    args = ap.parse_args()
    layouts = [tuple(int(v) for v in p.split("/")) for p in args.settings.split(",") if p]
    qs = np.array([0.025, 0.5, 0.975])
    worst = 0.0
    for name, y, X, sites in datasets():
        priors = default_priors(y, X, sites)
        model = GridModel(backend=ExactCovariance(y, X, sites, np.ones(sites.n_sites)),
                          prior=conjugate_prior(priors, X.shape[1]), n=y.size)
        t = time.perf_counter()
        edges, mids, mu, mv = brute_force(model, args.brute)
        t_brute = time.perf_counter() - t
        ref = {"range_m": np.exp(_q(edges[0], mu, qs)),
               "nugget_share": expit(_q(edges[1], mv, qs))}
        sd = {"range_m": _sd(np.exp(mids[0]), mu), "nugget_share": _sd(expit(mids[1]), mv)}
        t = time.perf_counter()
        new = grid_posterior(model)
        t_grid = time.perf_counter() - t
        t = time.perf_counter()
        dr = new.draw(args.draws, np.random.default_rng(1)).as_dict()
        t_draw = time.perf_counter() - t
        old = grid_posterior(model, settings=GridSettings(rule="lattice", n_coarse=14,
                                                          n_fine=18))
        od = old.draw(args.draws, np.random.default_rng(1)).as_dict()
        print(f"\n{name}: N = {y.size}; brute force {args.brute}² cells {t_brute:.0f} s; grid "
              f"{new.quadrature.n_evaluations} cells {t_grid:.1f} s, {args.draws} draws "
              f"{t_draw:.1f} s (importance ESS {new.draw(500, np.random.default_rng(2)).importance.ess:.0f}/500)")
        print(f"  distinct range values in {args.draws} draws: new {np.unique(dr['range_m']).size}"
              f", old {np.unique(od['range_m']).size}")
        print(f"  {'quantity':<13}{'q':>6}{'brute':>11}{'grid':>11}{'draws':>11}{'old':>11}"
              f"{'err grid':>10}{'err draws':>10}{'err old':>9}  (errors in posterior sd)")
        draws_of = {"range_m": dr["range_m"], "nugget_share": dr["alpha"] / (1 + dr["alpha"])}
        old_of = {"range_m": od["range_m"], "nugget_share": od["alpha"] / (1 + od["alpha"])}
        for key, scale in (("range_m", 1.0), ("nugget_share", 1.0), ("M_m", M_PER_RANGE)):
            base = "range_m" if key == "M_m" else key
            g = new.quantiles(base, qs) * scale
            d = np.quantile(draws_of[base], qs) * scale
            o = np.quantile(old_of[base], qs) * scale
            r = ref[base] * scale
            s = sd[base] * scale
            for j, q in enumerate(qs):
                e = [(v[j] - r[j]) / s for v in (g, d, o)]
                worst = max(worst, abs(e[0]))
                print(f"  {key:<13}{q:>6.3f}{r[j]:>11.4g}{g[j]:>11.4g}{d[j]:>11.4g}{o[j]:>11.4g}"
                      f"{e[0]:>10.3f}{e[1]:>10.3f}{e[2]:>9.3f}")
        alts = [(f"layout {nc}/{nf}", GridSettings(n_coarse=nc, n_fine=nf))
                for nc, nf in layouts]  # other grid layouts: cells and the largest error
        alts.append(("Laplace first box", GridSettings(laplace_start_min_records=1)))
        for label, alt_settings in alts:
            t = time.perf_counter()
            alt = grid_posterior(model, settings=alt_settings)
            t_alt = time.perf_counter() - t
            err = max(float(np.max(np.abs(alt.quantiles(b, qs) - ref[b]) / sd[b]))
                      for b in ("range_m", "nugget_share"))
            print(f"  {label}: {alt.quadrature.n_evaluations} cells {t_alt:.1f} s, largest "
                  f"quantile error {err:.4f} sd, problems {alt.problems or 'none'}")
    print(f"\nlargest |error| of the grid's quantiles: {worst:.3f} posterior sd "
          f"(target <= 0.05): {'PASS' if worst <= 0.05 else 'FAIL'}")


def _sd(x, w):
    m = np.sum(w * x)
    return float(np.sqrt(np.sum(w * (x - m) ** 2)))


if __name__ == "__main__":
    main()
