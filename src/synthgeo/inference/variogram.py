"""A first grid box from an empirical semivariogram of the OLS residuals (issue 13, item 7).

The grid's first stage spans the whole prior box of (log range, logit nugget share); a
weighted least-squares fit of the exponential semivariogram

    γ(h) = τ² + σ² (1 − exp(−3h / range))

to the binned residual semivariogram (Cressie 1985, Math. Geology 17(5),
doi:10.1007/BF01032109: weights N_h / γ(h)²) gives a point estimate, and a box around it can
replace that first stage. The quadrature widens the box where the posterior reaches its edges,
so a poor estimate costs grids, not correctness. ``benchmarks/bench_nngp.py start`` measures
whether it pays. Method: ``docs/inference.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares
from scipy.special import logit

from synthgeo.model.kernels import Sites

__all__ = ["VariogramFit", "fit_variogram", "start_box"]


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

    Examples
    --------
    >>> from synthgeo.testing import simulate_gp
    >>> from synthgeo.model.kernels import make_sites
    >>> sim = simulate_gp(200, sigma2=1.0, nugget=0.1, phi_per_m=3 / 300, random_seed=1)
    >>> v = fit_variogram(sim["y"], sim["X"], make_sites(sim["coords_m"]), range_min_m=10,
    ...                   range_max_m=2000)
    >>> bool(100 < v.range_m < 900)
    True
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
