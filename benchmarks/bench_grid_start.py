"""Issue 13, item 7: max-min NNGP ordering and a variogram first box — does either help?

    python benchmarks/bench_grid_start.py loglik    # |log p(y|θ) NNGP − exact|, Lucas 2,000
    python benchmarks/bench_grid_start.py exact     # NNGP grid posteriors vs exact, Lucas 2,000
    python benchmarks/bench_grid_start.py fits      # grid fits on Lucas 5,000 (+ variogram box)
    python benchmarks/bench_grid_start.py full      # grid fits on all 25,357 Lucas records

``loglik``: the NNGP's error in the log marginal likelihood (the grid's log density) against
the exact GP at 5 (range, nugget share) points around the posterior, coordinate-sum ordering
(spNNGP's default) vs max-min (Guinness 2018), m = 5, 10, 15.
``exact``/``fits``/``full``: unrestricted grid fits (spec priors, 2 x 1000 draws) with each
variant: seconds (neighbour search, grid, draws), cells evaluated, and the 2.5/50/97.5 %
quantiles of range and nugget share, as differences from the reference (the exact GP at 2,000
records; coord, m = 15, prior box at 5,000 and 25,357) in the reference's posterior sd.
``fits`` adds a first box from a variogram fit (:func:`fit_variogram` below).
"""

from __future__ import annotations

import logging
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares
from scipy.special import logit
from threadpoolctl import threadpool_limits

from synthgeo.config import SamplingConfig
from synthgeo.inference.covariance import ExactCovariance, NNGPCovariance
from synthgeo.inference.grid import conjugate_prior, fit_gp_grid
from synthgeo.inference.grid_posterior import GridModel, evaluate_cells
from synthgeo.model.kernels import Sites, make_sites
from synthgeo.model.restricted_gp import default_priors

# --- a first grid box from an empirical semivariogram (measured here; not kept in synthgeo:
# it did not reduce the cells evaluated, see README) ------------------------------------------
# WLS fit of γ(h) = τ² + σ²(1 − exp(−3h/range)) to the binned semivariogram of the OLS
# residuals (Cressie 1985, Math. Geology 17(5), doi:10.1007/BF01032109: weights N_h / γ(h)²).

@dataclass(frozen=True, kw_only=True)
class VariogramFit:
    """WLS exponential semivariogram fit: ``range_m`` (metres), ``sigma2``, ``nugget``."""

    range_m: float
    sigma2: float
    nugget: float
    n_pairs: int

    @property
    def nugget_share(self) -> float:
        """τ² / (σ² + τ²)."""
        return self.nugget / (self.sigma2 + self.nugget)


def fit_variogram(y: np.ndarray, X: np.ndarray, sites: Sites, *, range_min_m: float,
                  range_max_m: float, n_bins: int = 15, max_pairs: int = 200_000,
                  seed: int = 0) -> VariogramFit:
    """Fit the exponential semivariogram to the OLS residuals' binned semivariogram.

    Parameters
    ----------
    y, X
        Response and design (intercept included).
    sites : Sites
        Record locations (metres) through ``site_index``.
    range_min_m, range_max_m : float
        Bounds of the fitted effective range (the prior's).
    n_bins : int
        Equal-width distance bins up to half the largest pair distance.
    max_pairs : int
        Pairs used at most (a seeded random sample beyond it).
    seed : int

    Returns
    -------
    VariogramFit

    """
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    r = y - X @ coef
    xy = sites.coords_m[sites.site_index]
    n = len(r)
    rng = np.random.default_rng(seed)
    if n * (n - 1) // 2 <= max_pairs:
        i, j = np.triu_indices(n, k=1)
    else:
        i, j = rng.integers(0, n, size=(2, max_pairs))
        keep = i != j
        i, j = i[keep], j[keep]
    h = np.linalg.norm(xy[i] - xy[j], axis=1)
    g = 0.5 * (r[i] - r[j]) ** 2
    edges = np.linspace(0.0, 0.5 * h.max(), n_bins + 1)
    b = np.digitize(h, edges) - 1
    ok = (b >= 0) & (b < n_bins)
    count = np.bincount(b[ok], minlength=n_bins)
    hm = np.bincount(b[ok], weights=h[ok], minlength=n_bins)
    gm = np.bincount(b[ok], weights=g[ok], minlength=n_bins)
    use = count > 0
    hm, gm, count = hm[use] / count[use], gm[use] / count[use], count[use]
    total = float(np.var(r))

    def resid(p):
        tau2, s2, rg = np.exp(p)
        model = tau2 + s2 * (1.0 - np.exp(-3.0 * hm / rg))
        return np.sqrt(count) * (gm - model) / model

    lo = [np.log(total * 1e-4), np.log(total * 1e-4), np.log(range_min_m)]
    hi = [np.log(total * 10), np.log(total * 10), np.log(range_max_m)]
    x0 = np.clip([np.log(0.2 * total), np.log(0.8 * total),
                  np.log(np.sqrt(range_min_m * range_max_m))], lo, hi)
    fit = least_squares(resid, x0, bounds=(lo, hi))
    tau2, s2, rg = np.exp(fit.x)
    return VariogramFit(range_m=float(rg), sigma2=float(s2), nugget=float(tau2),
                        n_pairs=int(ok.sum()))


def start_box(fit: VariogramFit, axes, *, half_width_u: float = 1.5,
              half_width_v: float = 3.0) -> np.ndarray:
    """First grid box around the variogram estimate, (2, 2) in (log range m, logit share).

    ``axes`` are the grid's (:meth:`synthgeo.inference.grid_posterior.GridModel.axes`); the box
    is clipped to them.
    """
    centre = [np.log(fit.range_m), float(logit(np.clip(fit.nugget_share, 1e-4, 0.999)))]
    half = [half_width_u, half_width_v]
    return np.array([[max(a.lower, c - w), min(a.upper, c + w)]
                     for a, c, w in zip(axes, centre, half)])


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


def fits(sizes=(5000,), variants=VARIANTS) -> None:
    cfg = SamplingConfig(draws=1000, seed=3)
    qs = [0.025, 0.5, 0.975]
    for n in sizes:
        y, X, sites = _data(n)
        priors = default_priors(y, X, sites)
        print(f"\nLucas {y.size} records, NNGP grid fits (unrestricted)")
        print(f"{'ordering':<9}{'m':>4}{'start':>10}{'setup s':>9}{'grid s':>8}{'draws s':>8}"
              f"{'cells':>7}  quantile differences from the reference, posterior sd: "
              f"range (2.5/50/97.5 %), nugget share")
        ref = None
        for ordering, m, use_start in variants:
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
                              config=cfg, gp="exact" if ordering == "exact" else "nngp",
                              n_neighbors=m, ordering=ordering, start=start)
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
    if "exact" in what:
        fits((2000,), [("exact", 0, False), ("coord", 15, False), ("maxmin", 15, False),
                       ("coord", 10, False), ("maxmin", 10, False)])
    if "fits" in what:
        fits()
    if "full" in what:
        fits((None,), VARIANTS[:3])
