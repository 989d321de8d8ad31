"""Posterior mean surface of the spatial effect w(s) on a grid, kriged from the site effects.

For each retained posterior draw θ = (φ, ...) and site effects w_S, the GP gives

    E[w(s₀) | w_S, θ] = r₀(φ)ᵀ R(φ)⁻¹ w_S

(σ² cancels), and since the data depend on w only through w_S, averaging this over posterior
draws is the posterior mean E[w(s₀) | y] (a Rao–Blackwellised Monte Carlo estimate; the same
identity spBayes' ``spPredict`` uses draw by draw). This holds for the restricted model too:
there w at an at-risk site with D_ss = 0 follows its prior given the other sites, so the
surface near it is the neighbourhood's level and the "ring" around the outlier is gone.
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from synthgeo.model.kriging import krige

__all__ = ["grid_over", "posterior_mean_surface", "MAX_SITES_EXACT"]

#: Above this many sites, kriging uses the ``n_neighbors`` nearest sites of each grid point
#: (a nearest-neighbour predictive mean, as NNGP prediction does) instead of all sites.
MAX_SITES_EXACT = 1500


def grid_over(
    coords_m: np.ndarray, *, n_cells: int = 80, pad: float = 0.05
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Regular grid of cell centres over the bounding box of ``coords_m``.

    Parameters
    ----------
    coords_m : ndarray of shape (n_points, 2)
        Projected coordinates in metres.
    n_cells : int, default=80
        Cells along the longer side of the box; the shorter side gets as many as keep the cells
        square (at least 2).
    pad : float, default=0.05
        Margin added on each side, as a fraction of the longer side.

    Returns
    -------
    xs : ndarray of shape (n_x,)
        Cell-centre eastings in metres.
    ys : ndarray of shape (n_y,)
        Cell-centre northings in metres.
    grid : ndarray of shape (n_y * n_x, 2)
        All cell centres, row-major (northing slowest), metres.

    Raises
    ------
    ValueError
        If ``coords_m`` is not (n, 2) with finite values, or ``n_cells`` < 2.
    """
    coords_m = np.asarray(coords_m, dtype=float)
    if coords_m.ndim != 2 or coords_m.shape[1] != 2 or not np.all(np.isfinite(coords_m)):
        raise ValueError(f"`coords_m` must be a finite array of shape (n, 2), got "
                         f"{coords_m.shape!r}")
    if not (isinstance(n_cells, (int, np.integer)) and n_cells >= 2):
        raise ValueError(f"`n_cells` must be an integer >= 2, got {n_cells!r}")
    lo, hi = coords_m.min(axis=0), coords_m.max(axis=0)
    span = float(max(np.max(hi - lo), 1.0))
    lo, hi = lo - pad * span, hi + pad * span
    cell = (span * (1 + 2 * pad)) / n_cells
    nx, ny = (max(2, int(np.ceil((hi[j] - lo[j]) / cell))) for j in (0, 1))
    xs = lo[0] + (np.arange(nx) + 0.5) * (hi[0] - lo[0]) / nx
    ys = lo[1] + (np.arange(ny) + 0.5) * (hi[1] - lo[1]) / ny
    gx, gy = np.meshgrid(xs, ys)
    return xs, ys, np.column_stack([gx.ravel(), gy.ravel()])


def _draw_index(n_total: int, max_draws: int) -> np.ndarray:
    """Evenly spaced indices into ``n_total`` flattened draws, at most ``max_draws``."""
    if n_total <= max_draws:
        return np.arange(n_total)
    return np.unique(np.round(np.linspace(0, n_total - 1, max_draws)).astype(int))


def posterior_mean_surface(
    site_coords_m: np.ndarray,
    w: np.ndarray,
    phi_per_m: np.ndarray,
    grid_m: np.ndarray,
    *,
    max_draws: int = 200,
    n_neighbors: int = 30,
) -> np.ndarray:
    r"""Posterior mean E[w(s) | y] at grid points, kriged from the site effects draw by draw.

    Parameters
    ----------
    site_coords_m : ndarray of shape (n_sites, 2)
        Site coordinates in metres (projected CRS).
    w : ndarray of shape (n_draws, n_sites)
        Posterior draws of the spatial effect at the sites (model scale, before any D
        scaling), chains and draws flattened.
    phi_per_m : ndarray of shape (n_draws,)
        Matching draws of the exponential decay φ in 1/metre (R = exp(−φ d)).
    grid_m : ndarray of shape (n_grid, 2)
        Prediction points in metres.
    max_draws : int, default=200
        Use at most this many draws, evenly spaced over the flattened sample (deterministic;
        the Monte Carlo error of the mean is then about sd(w)/√max_draws).
    n_neighbors : int, default=30
        With more than :data:`MAX_SITES_EXACT` sites, krige each grid point from its
        ``n_neighbors`` nearest sites only (nearest-neighbour predictive mean).

    Returns
    -------
    ndarray of shape (n_grid,)
        Posterior mean of w at each grid point, response (model) units.

    Raises
    ------
    ValueError
        If shapes disagree, φ is not positive or values are not finite.

    Notes
    -----
    Per draw, with R_SS = exp(−φ D_SS) + 10⁻⁸ I and r₀ = exp(−φ d(s₀, S)),

    .. math:: \hat w(s_0) = \frac1K \sum_{k=1}^K r_0(\phi_k)^\top R_{SS}(\phi_k)^{-1} w_S^{(k)},

    the Monte Carlo form of :math:`E[w(s_0)\mid y] = E_{\theta, w_S \mid y}
    [E(w(s_0) \mid w_S, \theta)]`, valid because y depends on w only through w_S.

    References
    ----------
    .. [1] Banerjee, S., Carlin, B. P., & Gelfand, A. E. (2014). Hierarchical Modeling and
       Analysis for Spatial Data, 2nd ed., Sect. 6.1 (Bayesian kriging), CRC Press.
    .. [2] Quick, H., Holan, S. H., & Wikle, C. K. (2018). JRSS A 181(3), 649-661, Figs 1-2.
       doi:10.1111/rssa.12360
    """
    sites = np.asarray(site_coords_m, dtype=float)
    w = np.asarray(w, dtype=float)
    phi = np.asarray(phi_per_m, dtype=float).ravel()
    grid = np.asarray(grid_m, dtype=float)
    if sites.ndim != 2 or sites.shape[1] != 2 or grid.ndim != 2 or grid.shape[1] != 2:
        raise ValueError("`site_coords_m` and `grid_m` must have shape (n, 2)")
    if w.ndim != 2 or w.shape[1] != sites.shape[0] or w.shape[0] != phi.shape[0]:
        raise ValueError(f"`w` must have shape (n_draws, n_sites) = ({phi.shape[0]}, "
                         f"{sites.shape[0]}), got {w.shape!r}")
    if not (all(np.isfinite(row).all() for row in w)  # a draw at a time: no (L, n) mask
            and np.all(np.isfinite(phi)) and np.all(phi > 0)):
        raise ValueError("`w` must be finite and `phi_per_m` finite and positive")
    take = _draw_index(len(phi), max_draws)
    # every draw, in order: w itself (krige reads it), not a copy of (L, n_sites)
    w_take = w if np.array_equal(take, np.arange(len(phi))) else w[take]
    # one BLAS thread: multi-threaded OpenBLAS on these small factorisations was measured
    # more than 10x slower on 2 shared cores (as in synthgeo.inference.nuts)
    m = None if sites.shape[0] <= MAX_SITES_EXACT else min(n_neighbors, sites.shape[0])
    with threadpool_limits(limits=1):
        return krige(sites, w_take, phi[take], grid, n_neighbors=m, n_threads=2).mean(axis=0)
