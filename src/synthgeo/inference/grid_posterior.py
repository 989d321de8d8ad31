"""Conjugate grid posterior of the GP regression: β and σ² integrated out, (φ, τ²/σ²) on a grid.

Inference design (docs/inference.md, "Route 2: the conjugate grid"). With α = τ²/σ² and
K(φ, α) = A D R(φ) D Aᵀ + α I, the model

    Y | β, σ², φ, α ~ MVN(Xβ, σ² K),   β | σ² ~ N(μ_β, σ² V),   σ² ~ InverseGamma(a, b)

is Normal–inverse-gamma conjugate given (φ, α) (Finley et al. 2019, JCGS, "conjugate NNGP";
Banerjee, Carlin & Gelfand 2014, *Hierarchical Modeling and Analysis for Spatial Data*, 2nd ed.,
Sect. 6.1). With M = V⁻¹ + XᵀK⁻¹X, m = M⁻¹(V⁻¹μ_β + XᵀK⁻¹y),
Q = yᵀK⁻¹y + μ_βᵀV⁻¹μ_β − mᵀMm::

    log p(y | φ, α) = −½ log|K| − ½ log|V| − ½ log|M| + a log b − (a + N/2) log(b + Q/2)
                      + lgamma(a + N/2) − lgamma(a) − (N/2) log 2π
    σ² | y, φ, α ~ InverseGamma(a + N/2, b + Q/2),   β | σ², y, φ, α ~ N(m, σ² M⁻¹)

so the posterior of (φ, α) is two-dimensional and is evaluated on a grid (log effective range ×
logit nugget share ν = α/(1 + α)), refined around its mass; draws are then *independent*:
a grid cell from the normalised weights, σ², β from their exact conditionals. There is no Markov
chain, hence no burn-in, autocorrelation or divergences; the grid's own checks (posterior mass
at the edge of the refined box, largest single-cell mass) take the place of R-hat.

K⁻¹ is applied by a dense Cholesky (``covariance="exact"``) or by the Vecchia/NNGP factors
(``covariance="nngp"``, response form, :mod:`synthgeo.model.vecchia`), the only difference
between the two engines.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.linalg import cho_factor, cho_solve
from scipy.special import gammaln

from synthgeo.model.kernels import METRES_PER_KM, Sites
from synthgeo.model.smoothing import Smoothing, scale_function
from synthgeo.model.vecchia import NeighbourGraph, ordered_neighbours, vecchia_factors

__all__ = ["GridSettings", "GridPosterior", "ExactCovariance", "NNGPCovariance",
           "grid_posterior"]

_LOG_2PI = float(np.log(2.0 * np.pi))


@dataclass(frozen=True, kw_only=True)
class GridSettings:
    """How the (range, nugget share) grid is laid out and refined.

    Attributes
    ----------
    n_coarse : int
        Points per axis of the first grid, over the whole prior support.
    n_fine : int
        Points per axis of each refined grid (the box holding all cells within
        ``log_drop`` of the largest log weight, one cell of margin).
    log_drop : float
        Cells more than this below the maximum log weight (e^-12 ≈ 6e-6) are outside the box.
    max_stages : int
        Grids evaluated at most (the first included).
    max_cell_mass : float
        A grid whose largest cell holds more posterior mass than this is refined again.
    max_edge_mass : float
        Mass allowed on the refined box's edges (where they are not the prior's bounds).
    nugget_share_min, nugget_share_max : float
        Support of ν = τ²/(σ² + τ²) on the grid (prior: ν ~ Uniform(0, 1), truncated here).
    """

    n_coarse: int = 14
    n_fine: int = 18
    log_drop: float = 12.0
    max_stages: int = 4
    max_cell_mass: float = 0.2
    max_edge_mass: float = 0.01
    nugget_share_min: float = 1e-4
    nugget_share_max: float = 0.999


@dataclass(frozen=True)
class _CellStats:
    logdet: float
    XtKX: np.ndarray
    XtKy: np.ndarray
    ytKy: float


class ExactCovariance:
    """K⁻¹ products by dense Cholesky: O(N³) per grid cell.

    Parameters
    ----------
    y : ndarray of shape (N,)
    X : ndarray of shape (N, p)
    sites : Sites
    scale : ndarray of shape (S,) or Smoothing
        D's diagonal per site, or a :class:`~synthgeo.model.smoothing.Smoothing` whose D
        depends on the cell's α = τ²/σ² (γ = "auto": K is rebuilt with d(α) in every cell,
        so the smoothing enters the likelihood exactly).
    """

    name = "exact"

    def __init__(self, y: np.ndarray, X: np.ndarray, sites: Sites, scale):
        self.y, self.X = y, X
        self.dist_km = sites.distance_km()
        self.idx = sites.site_index
        self.d_of = scale_function(scale, sites.n_sites)

    def stats(self, phi_km: float, alpha: float) -> _CellStats:
        """Return log|K| and the K⁻¹ products for one cell."""
        n = self.y.shape[0]
        d = self.d_of(alpha)
        R = np.exp(-phi_km * self.dist_km) * np.outer(d, d)
        K = R[np.ix_(self.idx, self.idx)]
        K[np.diag_indices(n)] += alpha
        cf = cho_factor(K, lower=True, check_finite=False)
        Z = cho_solve(cf, np.column_stack([self.X, self.y]), check_finite=False)
        p = self.X.shape[1]
        return _CellStats(
            logdet=2.0 * float(np.log(np.diag(cf[0])).sum()),
            XtKX=self.X.T @ Z[:, :p], XtKy=self.X.T @ Z[:, p], ytKy=float(self.y @ Z[:, p]),
        )


class NNGPCovariance:
    """K⁻¹ products by the response-form NNGP over records: O(N m³) per grid cell.

    Parameters
    ----------
    y, X, sites, scale
        As :class:`ExactCovariance` (the neighbour graph uses the sites that are active for
        every α; with γ = "auto" the factors are rebuilt with d(α) per cell).
    n_neighbors : int
        m (default 15).
    """

    name = "nngp"

    def __init__(self, y: np.ndarray, X: np.ndarray, sites: Sites, scale,
                 n_neighbors: int = 15):
        self.d_of = scale_function(scale, sites.n_sites)
        self.site_index = sites.site_index
        active = (scale.active if isinstance(scale, Smoothing)
                  else self.d_of(None) > 0)[sites.site_index]
        coords_km = sites.coords_m[sites.site_index] / METRES_PER_KM
        self.graph: NeighbourGraph = ordered_neighbours(coords_km, n_neighbors,
                                                        eligible=active)
        o = self.graph.order
        self.Xy = np.column_stack([X, y])[o]
        self.p = X.shape[1]

    def stats(self, phi_km: float, alpha: float) -> _CellStats:
        """Return log|K̃| and the K̃⁻¹ products for one cell."""
        f = vecchia_factors(self.graph, phi_km, alpha, self.d_of(alpha)[self.site_index])
        W = f.whiten(self.Xy)
        G = W.T @ W
        p = self.p
        return _CellStats(logdet=f.logdet, XtKX=G[:p, :p], XtKy=G[:p, p], ytKy=float(G[p, p]))


@dataclass(frozen=True, kw_only=True)
class GridPosterior:
    """Normalised posterior over the final grid of (effective range, nugget ratio).

    Attributes
    ----------
    cells : pandas.DataFrame
        One row per cell of the final grid: ``range_m``, ``phi_per_m``, ``nugget_ratio`` (α),
        ``log_marginal``, ``weight`` (posterior probability), and the conjugate quantities
        per cell (``a_post``, ``b_post``; ``m`` and ``M`` kept in arrays below).
    m : ndarray of shape (n_cells, p)
    M_inv : ndarray of shape (n_cells, p, p)
    stages : list of dict
        Each grid evaluated: bounds, size, largest cell mass, edge mass.
    problems : list of str
        Grid checks that failed (empty when the grid resolved the posterior).
    n_evaluations : int
        K⁻¹ evaluations (grid cells) in all.
    """

    cells: pd.DataFrame
    m: np.ndarray
    M_inv: np.ndarray
    stages: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    n_evaluations: int = 0

    def draw(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Independent posterior draws.

        Returns
        -------
        dict
            ``cell`` (n,), ``sigma2`` (n,), ``alpha`` (n,), ``phi_km`` (n,), ``beta`` (n, p).
        """
        w = self.cells["weight"].to_numpy()
        cell = rng.choice(w.size, size=n, p=w / w.sum())
        a = self.cells["a_post"].to_numpy()[cell]
        b = self.cells["b_post"].to_numpy()[cell]
        sigma2 = b / rng.gamma(a)
        L = np.linalg.cholesky(self.M_inv)[cell]  # one factor per cell, (n, p, p)
        z = rng.standard_normal((n, self.m.shape[1]))
        beta = self.m[cell] + np.sqrt(sigma2)[:, None] * np.einsum("npq,nq->np", L, z)
        return {
            "cell": cell, "sigma2": sigma2,
            "alpha": self.cells["nugget_ratio"].to_numpy()[cell],
            "phi_km": self.cells["phi_per_m"].to_numpy()[cell] * METRES_PER_KM,
            "beta": beta,
        }


def _logit(x):
    return np.log(x) - np.log1p(-x)


def _expit(x):
    return 1.0 / (1.0 + np.exp(-x))


def grid_posterior(
    backend,
    *,
    n: int,
    beta_mean: np.ndarray,
    V: np.ndarray,
    sigma2_shape: float,
    sigma2_scale: float,
    range_min_m: float,
    range_max_m: float,
    settings: GridSettings | None = None,
    n_threads: int = 2,
) -> GridPosterior:
    """Evaluate and refine the grid posterior of (effective range, nugget ratio).

    Parameters
    ----------
    backend : ExactCovariance or NNGPCovariance
        Supplies log|K| and the K⁻¹ products per (φ, α).
    n : int
        Number of records N.
    beta_mean : ndarray of shape (p,)
        μ_β.
    V : ndarray of shape (p, p)
        Prior covariance of β in units of σ².
    sigma2_shape, sigma2_scale : float
        a, b of σ² ~ InverseGamma(a, b).
    range_min_m, range_max_m : float
        Support of the effective range 3/φ (metres); prior uniform on it.
    settings : GridSettings, optional
    n_threads : int, default=2
        Cells evaluated concurrently (LAPACK releases the GIL).

    Returns
    -------
    GridPosterior
    """
    s = settings or GridSettings()
    V_inv = np.linalg.inv(V)
    _, logdet_V = np.linalg.slogdet(V)
    mu = np.asarray(beta_mean, float)
    a0, b0 = float(sigma2_shape), float(sigma2_scale)
    a_post = a0 + n / 2.0
    const = (-0.5 * logdet_V + a0 * np.log(b0) + gammaln(a_post) - gammaln(a0)
             - 0.5 * n * _LOG_2PI)
    u_lo, u_hi = np.log(range_min_m), np.log(range_max_m)
    v_lo, v_hi = _logit(s.nugget_share_min), _logit(s.nugget_share_max)

    cache: dict[tuple[float, float], tuple] = {}

    def evaluate(uv):
        u, v = uv
        range_m = float(np.exp(u))
        nu = float(_expit(v))
        alpha = nu / (1.0 - nu)
        phi_km = 3.0 / (range_m / METRES_PER_KM)
        st = backend.stats(phi_km, alpha)
        M = V_inv + st.XtKX
        rhs = V_inv @ mu + st.XtKy
        Lm = np.linalg.cholesky(M)
        m = np.linalg.solve(M, rhs)
        Q = st.ytKy + mu @ V_inv @ mu - m @ M @ m
        logdet_M = 2.0 * np.log(np.diag(Lm)).sum()
        lml = const - 0.5 * st.logdet - 0.5 * logdet_M - a_post * np.log(b0 + Q / 2.0)
        # prior density in (u, v): range uniform → ∝ e^u; ν uniform → ∝ ν(1 − ν)
        log_prior = u + np.log(nu) + np.log1p(-nu)
        return (range_m, alpha, lml, lml + log_prior, b0 + Q / 2.0, m, np.linalg.inv(M))

    def run_grid(us, vs):
        pts = [(float(u), float(v)) for u in us for v in vs]
        todo = [p for p in pts if p not in cache]
        with ThreadPoolExecutor(max_workers=max(1, n_threads)) as ex:
            for p, res in zip(todo, ex.map(evaluate, todo)):
                cache[p] = res
        return pts

    stages: list[dict] = []
    problems: list[str] = []
    bounds = (u_lo, u_hi, v_lo, v_hi)
    size = s.n_coarse
    for stage in range(s.max_stages):
        ul, uh, vl, vh = bounds
        us, vs = np.linspace(ul, uh, size), np.linspace(vl, vh, size)
        pts = run_grid(us, vs)
        lp = np.array([cache[p][3] for p in pts]).reshape(size, size)
        w = np.exp(lp - lp.max())
        w /= w.sum()
        edge = np.zeros_like(w, bool)
        if ul > u_lo + 1e-9:
            edge[0, :] = True
        if uh < u_hi - 1e-9:
            edge[-1, :] = True
        if vl > v_lo + 1e-9:
            edge[:, 0] = True
        if vh < v_hi - 1e-9:
            edge[:, -1] = True
        info = {"stage": stage + 1, "n_per_axis": size,
                "range_m": [float(np.exp(ul)), float(np.exp(uh))],
                "nugget_share": [float(_expit(vl)), float(_expit(vh))],
                "max_cell_mass": float(w.max()), "edge_mass": float(w[edge].sum())}
        stages.append(info)
        keep = lp >= lp.max() - s.log_drop
        iu, iv = np.nonzero(keep)
        du, dv = us[1] - us[0], vs[1] - vs[0]
        new = (max(u_lo, us[iu.min()] - du), min(u_hi, us[iu.max()] + du),
               max(v_lo, vs[iv.min()] - dv), min(v_hi, vs[iv.max()] + dv))
        good = (stage > 0 and info["max_cell_mass"] <= s.max_cell_mass
                and info["edge_mass"] <= s.max_edge_mass)
        if good or stage == s.max_stages - 1:
            break
        bounds, size = new, s.n_fine
    if info["max_cell_mass"] > s.max_cell_mass:
        problems.append(f"grid too coarse: one cell holds {info['max_cell_mass']:.2f} of the "
                        f"posterior (> {s.max_cell_mass}) after {len(stages)} grids")
    if info["edge_mass"] > s.max_edge_mass:
        problems.append(f"posterior mass {info['edge_mass']:.3f} on the grid's edge "
                        f"(> {s.max_edge_mass})")
    res = [cache[p] for p in pts]
    cells = pd.DataFrame({
        "range_m": [r[0] for r in res],
        "phi_per_m": [3.0 / r[0] for r in res],
        "nugget_ratio": [r[1] for r in res],
        "log_marginal": [r[2] for r in res],
        "weight": w.ravel(),
        "a_post": a_post,
        "b_post": [r[4] for r in res],
    })
    return GridPosterior(
        cells=cells, m=np.array([r[5] for r in res]), M_inv=np.array([r[6] for r in res]),
        stages=stages, problems=problems, n_evaluations=len(cache),
    )
