"""K⁻¹ products per (φ, α) for the conjugate grid: dense Cholesky or Vecchia/NNGP.

With α = τ²/σ² and K(φ, α) = A D R(φ) D Aᵀ + α I (``docs/inference.md``), every grid cell and
every posterior draw of the grid route needs log|K| and the products XᵀK⁻¹X, XᵀK⁻¹y, yᵀK⁻¹y.
The two engines differ only in how K⁻¹ is applied: :class:`ExactCovariance` (dense Cholesky,
O(N³)) and :class:`NNGPCovariance` (response-form NNGP over records, O(N m³); Datta et al. 2016,
JASA 111(514), doi:10.1080/01621459.2015.1044091; Finley et al. 2019, JCGS 28(2),
doi:10.1080/10618600.2018.1537924).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synthgeo.inference.factor import cho_factor, cho_solve
from synthgeo.model.kernels import METRES_PER_KM, Sites, exponential_correlation
from synthgeo.model.smoothing import Smoothing, scale_function
from synthgeo.model.vecchia import (
    LATENT_JITTER,
    NeighbourGraph,
    VecchiaFactors,
    ordered_neighbours,
    vecchia_factors,
)

__all__ = ["CellStats", "ExactCovariance", "NNGPCovariance", "make_covariance"]


@dataclass(frozen=True)
class CellStats:
    """log|K| and the K⁻¹ products of one (φ, α) (units of σ²)."""

    logdet: float
    XtKX: np.ndarray
    XtKy: np.ndarray
    ytKy: float


class ExactCovariance:
    """K⁻¹ products by dense Cholesky: O(N³) per evaluation.

    Parameters
    ----------
    y : ndarray of shape (N,)
    X : ndarray of shape (N, p)
    sites : Sites
    scale : ndarray of shape (S,) or Smoothing
        D's diagonal per site, or a :class:`~synthgeo.model.smoothing.Smoothing` whose D
        depends on α = τ²/σ² (γ = "auto": K is rebuilt with d(α) at every (φ, α), so the
        smoothing enters the likelihood exactly).
    extra : ndarray of shape (N,), optional
        Extra diagonal of K in units of σ² (``[model] at_risk_nugget = "marginal"``:
        1 at at-risk records; :meth:`synthgeo.model.smoothing.Smoothing.extra_variance`).
    nugget_weight : ndarray of shape (N,), optional
        ω_i: record i's nugget is α ω_i, K = A D R D Aᵀ + α diag(ω) (the pseudo-likelihood,
        ω_i = 1/α_i; :meth:`synthgeo.model.smoothing.Smoothing.noise_weight`).
    """

    name = "exact"

    def __init__(self, y: np.ndarray, X: np.ndarray, sites: Sites, scale,
                 extra: np.ndarray | None = None, nugget_weight: np.ndarray | None = None):
        self.y, self.X = y, X
        self.nugget_weight = (None if nugget_weight is None
                              else np.asarray(nugget_weight, float))
        self.dist_km = sites.distance_km()
        self.idx = sites.site_index
        self.d_of = scale_function(scale, sites.n_sites)
        self.extra = None if extra is None else np.asarray(extra, float)
        self._one_record_per_site = sites.one_record_per_site

    def stats(self, phi_km: float, alpha: float) -> CellStats:
        """Return log|K| and the K⁻¹ products at decay ``phi_km`` (1/km) and ratio ``alpha``."""
        return self.stats_row(phi_km, [alpha])[0]

    def stats_row(self, phi_km: float, alphas) -> list[CellStats]:
        """:meth:`stats` at one ``phi_km`` and several ``alphas``: R(φ) is computed once.

        A grid's cells come in rows of one φ and many α; the exponential of the S² distances
        costs nearly as much as the Cholesky at 500 records. One N × N work array serves the
        whole row (the last α factorises R's own memory): at 500 records a fresh array per
        cell cost more in page faults than its Cholesky.
        """
        R = exponential_correlation(self.dist_km, phi_km)
        alphas = [float(a) for a in alphas]
        work = None
        out = []
        for i, a in enumerate(alphas):
            if self._one_record_per_site and i == len(alphas) - 1:
                K = R  # R is not needed after the last α
            elif self._one_record_per_site:
                if work is None:
                    work = np.empty_like(R)
                np.copyto(work, R)
                K = work
            else:
                K = R[np.ix_(self.idx, self.idx)]
            out.append(self._stats(K, a))
        return out

    def _stats(self, K: np.ndarray, alpha: float) -> CellStats:
        """log|K| and the products from K = A R Aᵀ (records' correlations), overwritten."""
        n = self.y.shape[0]
        d = self.d_of(alpha)[self.idx]
        if np.any(d != 1.0):
            K *= np.outer(d, d)
        K[np.diag_indices(n)] += (alpha if self.nugget_weight is None
                                  else alpha * self.nugget_weight)
        if self.extra is not None:
            K[np.diag_indices(n)] += self.extra
        # in place, without the GIL: the grid's threads run in parallel
        cf = cho_factor(K, check_finite=False)
        Z = cho_solve(cf, np.column_stack([self.X, self.y]))
        p = self.X.shape[1]
        return CellStats(
            logdet=2.0 * float(np.log(np.diag(cf[0])).sum()),
            XtKX=self.X.T @ Z[:, :p], XtKy=self.X.T @ Z[:, p], ytKy=float(self.y @ Z[:, p]),
        )


class NNGPCovariance:
    """K⁻¹ products by the response-form NNGP over records: O(N m³) per evaluation.

    Parameters
    ----------
    y, X, sites, scale
        As :class:`ExactCovariance` (the neighbour graph uses the sites that are active for
        every α; with γ = "auto" the factors are rebuilt with d(α) per evaluation).
    n_neighbors : int
        m (default 15).
    ordering : {"coord", "maxmin"}
        Order of the records (see :func:`synthgeo.model.vecchia.ordered_neighbours`).
    extra : ndarray of shape (N,), optional
        As :class:`ExactCovariance`; only at records with d = 0, which are nobody's neighbour
        and have no neighbour of their own, so adding it to their conditional variance F_i is
        exact.
    nugget_weight : ndarray of shape (N,), optional
        As :class:`ExactCovariance`: the response-form NNGP of K = A D R D Aᵀ + α diag(ω)
        (each neighbour block carries its points' own nuggets).
    """

    name = "nngp"

    def __init__(self, y: np.ndarray, X: np.ndarray, sites: Sites, scale,
                 n_neighbors: int = 15, ordering: str = "coord",
                 extra: np.ndarray | None = None, nugget_weight: np.ndarray | None = None):
        self.nugget_weight = (None if nugget_weight is None
                              else np.asarray(nugget_weight, float))
        self.d_of = scale_function(scale, sites.n_sites)
        self.site_index = sites.site_index
        active = (scale.active if isinstance(scale, Smoothing)
                  else self.d_of(None) > 0)[sites.site_index]
        coords_km = sites.coords_m[sites.site_index] / METRES_PER_KM
        self.graph: NeighbourGraph = ordered_neighbours(coords_km, n_neighbors,
                                                        eligible=active, ordering=ordering)
        o = self.graph.order
        self.Xy = np.column_stack([X, y])[o]
        self.p = X.shape[1]
        self.extra = None if extra is None else np.asarray(extra, float)[o]
        if self.extra is not None and np.any(self.extra[active[o]] != 0):
            raise ValueError("an extra variance is allowed only at records with d = 0")

    def stats(self, phi_km: float, alpha: float) -> CellStats:
        """Return log|K̃| and the K̃⁻¹ products at (``phi_km``, ``alpha``)."""
        return self.stats_row(phi_km, [alpha])[0]

    def stats_row(self, phi_km: float, alphas) -> list[CellStats]:
        """:meth:`stats` at one ``phi_km`` and several ``alphas``, in one compiled pass.

        Each neighbour block's correlations are computed once for the row and each α costs
        a small Cholesky per record (:func:`~synthgeo.model.vecchia_kernel.row_statistics`:
        no (N, m) or (N, m, m) arrays). A block that is not numerically positive definite
        sends the row to the two-step route (:func:`~synthgeo.model.vecchia.vecchia_factors`,
        LU for such a block, then the products). Both agree to round-off (test).
        """
        from synthgeo.model.vecchia_kernel import row_statistics  # numba: on first use

        alphas = [float(a) for a in alphas]
        g = self.graph
        D = np.stack([self.d_of(a)[self.site_index][g.order] for a in alphas])
        om = np.ones(g.n) if self.nugget_weight is None else self.nugget_weight[g.order]
        extra = np.zeros(g.n) if self.extra is None else self.extra
        out = row_statistics(g.points, g.neighbours, D, om, extra,
                             np.array([a if a > 0 else LATENT_JITTER for a in alphas]),
                             float(phi_km), self.Xy)
        if out is None:
            return [self._stats(vecchia_factors(g, phi_km, a, self.d_of(a)[self.site_index],
                                                nugget_weight=self.nugget_weight))
                    for a in alphas]
        p = self.p
        return [CellStats(logdet=float(ld), XtKX=G[:p, :p], XtKy=G[:p, p], ytKy=float(G[p, p]))
                for ld, G in zip(*out)]

    def _stats(self, f: VecchiaFactors) -> CellStats:
        if self.extra is not None:
            f = VecchiaFactors(graph=f.graph, b=f.b, F=f.F + self.extra)
        G = f.gram(self.Xy)
        p = self.p
        return CellStats(logdet=f.logdet, XtKX=G[:p, :p], XtKy=G[:p, p], ytKy=float(G[p, p]))


def make_covariance(gp: str, y: np.ndarray, X: np.ndarray, sites: Sites, scale, *,
                    n_neighbors: int = 15, ordering: str = "coord",
                    extra: np.ndarray | None = None, nugget_weight: np.ndarray | None = None):
    """Return the backend named by ``gp`` ("exact" or "nngp"); ValueError for another name.

    ``extra``: extra diagonal of K in units of σ²; ``nugget_weight``: ω_i of the nugget α ω_i
    (see :class:`ExactCovariance`).
    """
    if gp == "exact":
        return ExactCovariance(y, X, sites, scale, extra=extra, nugget_weight=nugget_weight)
    if gp == "nngp":
        return NNGPCovariance(y, X, sites, scale, n_neighbors=n_neighbors, ordering=ordering,
                              extra=extra, nugget_weight=nugget_weight)
    raise ValueError(f"`gp` must be 'exact' or 'nngp', got {gp!r}")
