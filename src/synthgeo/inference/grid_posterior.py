"""Conjugate grid posterior of the GP regression: β and σ² integrated out, (φ, τ²/σ²) on a grid.

Inference design (``docs/inference.md``). With α = τ²/σ² and K(φ, α) = A D R(φ) D Aᵀ + α I,
the model

    Y | β, σ², φ, α ~ MVN(Xβ, σ² K),   β | σ² ~ N(μ_β, σ² V),   σ² ~ InverseGamma(a, b)

is Normal–inverse-gamma conjugate given (φ, α) (Finley et al. 2019, JCGS 28(2),
doi:10.1080/10618600.2018.1537924, "conjugate NNGP"; Banerjee, Carlin & Gelfand 2014,
*Hierarchical Modeling and Analysis for Spatial Data*, 2nd ed., Sect. 6.1). With
M = V⁻¹ + XᵀK⁻¹X, m = M⁻¹(V⁻¹μ_β + XᵀK⁻¹y), Q = yᵀK⁻¹y + μ_βᵀV⁻¹μ_β − mᵀMm::

    log p(y | φ, α) = −½ log|K| − ½ log|V| − ½ log|M| + a log b − (a + N/2) log(b + Q/2)
                      + lgamma(a + N/2) − lgamma(a) − (N/2) log 2π
    σ² | y, φ, α ~ InverseGamma(a + N/2, b + Q/2),   β | σ², y, φ, α ~ N(m, σ² M⁻¹)

The posterior of (u, v) = (log effective range in metres, logit nugget share ν = α/(1 + α)) is
two-dimensional; :mod:`synthgeo.inference.quadrature` integrates it (midpoint rule, refined
around its mass, spline-refined) and proposes *continuous* (u, v) points. The exact log density
and the exact conditionals of σ² and β are evaluated at every proposed point, the points are
importance-resampled, and σ², β are drawn from their conditionals *at each drawn* (φ, α).
There is no Markov chain: the grid's checks (largest cell mass, mass on the box edge) and the
Kish ESS of the importance weights take the place of R-hat.

Under the risk-weighted pseudo-likelihood (:mod:`synthgeo.model.pseudo_likelihood`) K carries
the nugget α/α_i at record i and the formula above holds with N replaced by N_eff = Σ α_i in
the σ² terms and the 2π constant, plus ((N − N_eff)/2) log α − ½ Σ log α_i (the kept factor
(τ²)^{(1−α_i)/2} α_i^{−1/2} of each weighted record); σ² | y, φ, α ~ InverseGamma(a + N_eff/2,
b + Q/2).

Prior on (u, v): range ~ Uniform(range_min_m, range_max_m) gives density ∝ eᵘ on u; ν ~
Uniform(ν_min, ν_max) gives ∝ ν(1 − ν) on v; both normalised, so the quadrature's
``log_integral`` is log p(y).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit, gammaln, logit

from synthgeo.inference.covariance import ExactCovariance, NNGPCovariance
from synthgeo.inference.importance import ImportanceSummary, importance_resample
from synthgeo.inference.known_nugget import draw_sigma2, log_prior_mean
from synthgeo.inference.quadrature import (
    Axis,
    MapBatches,
    Quadrature,
    QuadratureSettings,
    evaluate_points,
    integrate,
)
from synthgeo.model.kernels import METRES_PER_KM

__all__ = ["GridSettings", "ConjugatePrior", "GridModel", "CellBatch", "evaluate_cells",
           "to_natural", "log_target", "GridDraws", "GridPosterior", "grid_posterior",
           "ExactCovariance", "NNGPCovariance"]

_LOG_2PI = float(np.log(2.0 * np.pi))

#: Distinct (range, nugget share) points of the draws by default: about the grid's own cost,
#: and more effective draws of the range than NUTS gave the bundled example (ESS ~300–400).
THETA_DRAWS = 300
#: Distinct points of the draws from ``laplace_start_min_records`` records: each costs a
#: grid cell, which at city scale costs as much as a whole small fit.
THETA_DRAWS_LARGE = 100
#: Up to this many records (exact GP) every draw gets its own point.
ALL_DRAWS_MAX_RECORDS = 200
#: From this many records the first grid box is the Laplace box (mode ± 5 sd) instead of the
#: whole prior box (:func:`synthgeo.inference.quadrature.laplace_box`): below it results are
#: those of the prior-box grid.
LAPLACE_START_MIN_RECORDS = 10_000


@dataclass(frozen=True, kw_only=True)
class GridSettings(QuadratureSettings):
    """Quadrature settings plus the GP grid's own.

    Attributes
    ----------
    nugget_share_min, nugget_share_max : float
        Support of ν = τ²/(σ² + τ²) (prior: ν ~ Uniform on it).
    theta_draws : int or None
        Distinct (range, nugget share) points evaluated exactly for the draws (each costs one
        grid-cell evaluation); draws beyond it share points, each with its own σ², β and w.
        None: every draw its own point when the exact GP has at most
        :data:`ALL_DRAWS_MAX_RECORDS` records (an evaluation costs ~1 ms there),
        :data:`THETA_DRAWS_LARGE` from ``laplace_start_min_records`` records, else
        :data:`THETA_DRAWS`.
    laplace_start_min_records : int or None
        From this many records (and no ``start`` box given) the first box is the Laplace box
        (``start="laplace"`` of :func:`synthgeo.inference.quadrature.integrate`); None: never.
    """

    nugget_share_min: float = 1e-4
    nugget_share_max: float = 0.999
    theta_draws: int | None = None
    laplace_start_min_records: int | None = LAPLACE_START_MIN_RECORDS

    def theta_points(self, n_draws: int, n_records: int, engine: str) -> int:
        """Distinct (range, nugget share) points for ``n_draws`` draws (see ``theta_draws``)."""
        if self.theta_draws is not None:
            return min(n_draws, self.theta_draws)
        if engine == "exact" and n_records <= ALL_DRAWS_MAX_RECORDS:
            return n_draws
        if (self.laplace_start_min_records is not None
                and n_records >= self.laplace_start_min_records):
            return min(n_draws, THETA_DRAWS_LARGE)
        return min(n_draws, THETA_DRAWS)

    def __post_init__(self) -> None:
        """Refuse impossible settings (ValueError)."""
        super().__post_init__()
        if not 0 < self.nugget_share_min < self.nugget_share_max < 1:
            raise ValueError("need 0 < `nugget_share_min` < `nugget_share_max` < 1")
        if self.theta_draws is not None and self.theta_draws < 1:
            raise ValueError(f"`theta_draws` must be >= 1, got {self.theta_draws!r}")
        if self.laplace_start_min_records is not None and self.laplace_start_min_records < 1:
            raise ValueError("`laplace_start_min_records` must be >= 1 or None, got "
                             f"{self.laplace_start_min_records!r}")


@dataclass(frozen=True, kw_only=True, eq=False)
class ConjugatePrior:
    """β | σ² ~ N(μ_β, σ² V), σ² ~ IG(a, b), range and nugget share uniform.

    Attributes
    ----------
    beta_mean : ndarray of shape (p,)
    V : ndarray of shape (p, p)
        Prior covariance of β in units of σ².
    sigma2_shape, sigma2_scale : float
    range_min_m, range_max_m : float
        Support of the effective range 3/φ, metres.
    nugget_share_min, nugget_share_max : float
    """

    beta_mean: np.ndarray
    V: np.ndarray
    sigma2_shape: float
    sigma2_scale: float
    range_min_m: float
    range_max_m: float
    nugget_share_min: float = 1e-4
    nugget_share_max: float = 0.999

    def __post_init__(self) -> None:
        """Refuse non-positive scales or empty supports (ValueError)."""
        if not (self.sigma2_shape > 0 and self.sigma2_scale > 0):
            raise ValueError("σ² prior shape and scale must be > 0")
        if not 0 < self.range_min_m < self.range_max_m:
            raise ValueError("need 0 < range_min_m < range_max_m")


@dataclass(frozen=True, kw_only=True, eq=False)
class GridModel:
    """Everything a cell evaluation needs: the data (inside ``backend``), prior and N.

    ``likelihood_weight`` (N,), optional: the pseudo-likelihood's α_i
    (:mod:`synthgeo.model.pseudo_likelihood`); the backend then holds the nugget α/α_i, and
    the kept normalising factor Π (2πτ²)^{(1−α_i)/2} α_i^{−1/2} enters the marginal: with
    τ² = α σ², σ²'s shape becomes a + N_eff/2 (N_eff = Σ α_i) and the log density gains
    ((N − N_eff)/2) log α − ½ Σ log α_i (:func:`evaluate_cells`).

    ``known_nugget`` (κ², model-scale variance), optional: the response is y* = y + e with
    e ~ N(0, κ² I) and κ known; the grid's α is then y*'s nugget ratio α* = α + κ²/σ² and the
    prior is y's (:mod:`synthgeo.inference.known_nugget`).
    """

    backend: ExactCovariance | NNGPCovariance
    prior: ConjugatePrior
    n: int
    likelihood_weight: np.ndarray | None = None
    known_nugget: float = 0.0

    def __post_init__(self) -> None:
        """Refuse a known nugget that is negative or not finite (ValueError)."""
        if not (np.isfinite(self.known_nugget) and self.known_nugget >= 0):
            raise ValueError(f"`known_nugget` must be a finite variance >= 0, got "
                             f"{self.known_nugget!r}")
        if self.known_nugget > 0 and self.likelihood_weight is not None:
            raise ValueError("a known nugget and a pseudo-likelihood weight cannot be combined")

    def alpha_bounds(self) -> tuple[float, float]:
        """Return the prior's support of y's nugget ratio α = ν/(1 − ν)."""
        p = self.prior
        return (p.nugget_share_min / (1.0 - p.nugget_share_min),
                p.nugget_share_max / (1.0 - p.nugget_share_max))

    @property
    def n_eff(self) -> float:
        """N_eff = Σ α_i, the records' total weight (N without weights)."""
        if self.likelihood_weight is None:
            return float(self.n)
        return float(np.sum(self.likelihood_weight))

    def axes(self) -> tuple[Axis, Axis]:
        """(log effective range in metres, logit nugget share) with the prior's bounds."""
        p = self.prior
        return (Axis(name="log_range_m", lower=float(np.log(p.range_min_m)),
                     upper=float(np.log(p.range_max_m))),
                Axis(name="logit_nugget_share", lower=float(logit(p.nugget_share_min)),
                     upper=float(logit(p.nugget_share_max))))


@dataclass(frozen=True, kw_only=True)
class CellBatch:
    """Exact quantities at k points (u, v).

    Attributes
    ----------
    points : ndarray of shape (k, 2)
    log_marginal : ndarray of shape (k,)
        log p(y | φ, α).
    log_target : ndarray of shape (k,)
        log p(y | φ, α) + log prior density of (u, v).
    a_post : float
        Posterior shape a + N/2 of σ².
    b_post : ndarray of shape (k,)
        Posterior scale b + Q/2 of σ².
    m : ndarray of shape (k, p)
    M_inv : ndarray of shape (k, p, p)
    """

    points: np.ndarray
    log_marginal: np.ndarray
    log_target: np.ndarray
    a_post: float
    b_post: np.ndarray
    m: np.ndarray
    M_inv: np.ndarray

    @staticmethod
    def concat(batches: list[CellBatch]) -> CellBatch:
        """One batch from several (in order)."""
        return CellBatch(
            points=np.concatenate([b.points for b in batches]),
            log_marginal=np.concatenate([b.log_marginal for b in batches]),
            log_target=np.concatenate([b.log_target for b in batches]),
            a_post=batches[0].a_post,
            b_post=np.concatenate([b.b_post for b in batches]),
            m=np.concatenate([b.m for b in batches]),
            M_inv=np.concatenate([b.M_inv for b in batches]),
        )


def to_natural(points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(u, v) points → (range in metres, nugget ratio α = τ²/σ², φ in 1/km)."""
    points = np.atleast_2d(points)
    range_m = np.exp(points[:, 0])
    nu = expit(points[:, 1])
    return range_m, nu / (1.0 - nu), 3.0 / (range_m / METRES_PER_KM)


def evaluate_cells(model: GridModel, points: np.ndarray) -> CellBatch:
    """Exact log marginal, log target and σ², β conditionals at each (u, v) point.

    A pure function of (model, points): batches may be evaluated anywhere.

    Parameters
    ----------
    model : GridModel
    points : ndarray of shape (k, 2)
        (log effective range in metres, logit nugget share).

    Returns
    -------
    CellBatch
    """
    pr = model.prior
    points = np.atleast_2d(np.asarray(points, dtype=float))
    V_inv = np.linalg.inv(pr.V)
    mu = np.asarray(pr.beta_mean, float)
    a0, b0 = float(pr.sigma2_shape), float(pr.sigma2_scale)
    n_eff = model.n_eff  # Σ α_i under the pseudo-likelihood (kept normalising factor)
    a_post = a0 + n_eff / 2.0
    const = (-0.5 * np.linalg.slogdet(pr.V)[1] + a0 * np.log(b0) + gammaln(a_post)
             - gammaln(a0) - 0.5 * n_eff * _LOG_2PI)
    if model.likelihood_weight is not None:
        const -= 0.5 * float(np.log(model.likelihood_weight).sum())
    k, p = points.shape[0], mu.size
    lml, b_post = np.empty(k), np.empty(k)
    m_all, Minv_all = np.empty((k, p)), np.empty((k, p, p))
    _, alpha, phi_km = to_natural(points)
    # runs of one range (a grid row: meshgrid order) share the work that depends on φ only
    starts = np.flatnonzero(np.r_[True, points[1:, 0] != points[:-1, 0]])
    stats = [st for a, b in zip(starts, np.r_[starts[1:], k])
             for st in model.backend.stats_row(float(phi_km[a]), alpha[a:b])]
    for i, st in enumerate(stats):
        M = V_inv + st.XtKX
        Lm = np.linalg.cholesky(M)
        m = np.linalg.solve(M, V_inv @ mu + st.XtKy)
        Q = st.ytKy + mu @ V_inv @ mu - m @ M @ m
        b_post[i] = b0 + Q / 2.0
        if not b_post[i] > 0:  # Q ≥ 0 in exact arithmetic: only round-off takes it below -2b
            raise ValueError(
                f"the posterior scale of sigma2 is not positive (b + Q/2 = {b_post[i]:.3g}) at "
                f"range {np.exp(points[i, 0]):.4g} m: the response is numerically constant or "
                "fitted exactly by the covariates")
        lml[i] = (const - 0.5 * st.logdet - np.log(np.diag(Lm)).sum()
                  - a_post * np.log(b_post[i]))
        if model.likelihood_weight is not None:  # (τ²)^{Σ(1−α_i)/2}: its α part
            lml[i] += 0.5 * (model.n - n_eff) * np.log(alpha[i])
        m_all[i], Minv_all[i] = m, np.linalg.inv(M)
    nu = expit(points[:, 1])
    width = pr.nugget_share_max - pr.nugget_share_min
    if model.known_nugget > 0:  # y's prior on α = α* − κ²/σ², averaged over σ²'s conditional
        lo, hi = model.alpha_bounds()
        log_nu = log_prior_mean(alpha, a_post, b_post, model.known_nugget, alpha_min=lo,
                                alpha_max=hi, nu_width=width)
    else:
        log_nu = np.log(nu) + np.log1p(-nu) - np.log(width)
    log_prior = points[:, 0] - np.log(pr.range_max_m - pr.range_min_m) + log_nu
    return CellBatch(points=points, log_marginal=lml, log_target=lml + log_prior,
                     a_post=a_post, b_post=b_post, m=m_all, M_inv=Minv_all)


def log_target(model: GridModel, points: np.ndarray) -> np.ndarray:
    """Log p(y | φ, α) + log prior of (u, v) at each point: the quadrature's log density."""
    return evaluate_cells(model, points).log_target


class _Bound:
    """``log_target`` bound to a model: a picklable one-argument batch function."""

    def __init__(self, fn, model):
        self.fn, self.model = fn, model

    def __call__(self, points):
        return self.fn(self.model, points)


@dataclass(frozen=True, kw_only=True)
class GridDraws:
    """Posterior draws of the grid route.

    Attributes
    ----------
    theta_index : ndarray of int, shape (n,)
        Index of each draw's (u, v) point in ``cells``.
    cells : CellBatch
        The distinct proposal points and their exact conditionals.
    sigma2 : ndarray of shape (n,)
    beta : ndarray of shape (n, p)
    importance : ImportanceSummary
    """

    theta_index: np.ndarray
    cells: CellBatch
    sigma2: np.ndarray
    beta: np.ndarray
    importance: ImportanceSummary

    def as_dict(self) -> dict[str, np.ndarray]:
        """``cell`` (θ point), ``sigma2``, ``alpha``, ``phi_km``, ``range_m``, ``beta``."""
        range_m, alpha, phi_km = to_natural(self.cells.points[self.theta_index])
        return {"cell": self.theta_index, "sigma2": self.sigma2, "alpha": alpha,
                "phi_km": phi_km, "range_m": range_m, "beta": self.beta}


@dataclass(frozen=True, kw_only=True)
class GridPosterior:
    """The grid posterior of (range, nugget share) and the way to draw from it."""

    model: GridModel
    quadrature: Quadrature
    settings: GridSettings = field(default_factory=GridSettings)

    @property
    def problems(self) -> list[str]:
        """Grid checks that failed."""
        return self.quadrature.problems

    def quantiles(self, name: str, q) -> np.ndarray:
        """Continuous posterior quantiles of ``range_m``, ``phi_per_m`` or ``nugget_share``."""
        q = np.asarray(q, float)
        if name == "range_m":
            return np.exp(self.quadrature.quantile(0, q))
        if name == "phi_per_m":
            return 3.0 / np.exp(self.quadrature.quantile(0, 1.0 - q))
        if name == "nugget_share":
            return expit(self.quadrature.quantile(1, q))
        raise ValueError(f"unknown quantity {name!r}; use range_m, phi_per_m or nugget_share")

    def draw(self, n: int, rng: np.random.Generator, *, n_points: int | None = None,
             map_batches: MapBatches | None = None) -> GridDraws:
        """Draw n times: continuous (u, v), then σ² and β at each drawn point.

        ``n_points`` points (default: :meth:`GridSettings.theta_points`) are proposed from the
        spline posterior and evaluated exactly; n draws are importance-resampled from them.
        """
        if self.quadrature.rule == "lattice":
            k = n
        else:
            k = n_points or self.settings.theta_points(n, self.model.n,
                                                       self.model.backend.name)
        pts, log_q = self.quadrature.propose(k, rng)
        out = evaluate_points(_Bound(evaluate_cells, self.model), pts,
                              batch_size=self.settings.batch_size, map_batches=map_batches)
        cells = CellBatch.concat(out)
        idx, summary = importance_resample(cells.log_target, log_q, n, rng)
        if self.model.known_nugget > 0:  # σ²'s conditional tilted by y's prior on α
            lo, hi = self.model.alpha_bounds()
            sigma2 = draw_sigma2(to_natural(cells.points[idx])[1], cells.a_post,
                                 cells.b_post[idx], self.model.known_nugget, alpha_min=lo,
                                 alpha_max=hi, rng=rng)
        else:
            sigma2 = cells.b_post[idx] / rng.gamma(cells.a_post, size=n)
        chol = np.linalg.cholesky(cells.M_inv)  # one factor per point
        z = rng.standard_normal((n, cells.m.shape[1]))
        beta = cells.m[idx] + np.sqrt(sigma2)[:, None] * np.einsum("npq,nq->np", chol[idx], z)
        return GridDraws(theta_index=idx, cells=cells, sigma2=sigma2, beta=beta,
                         importance=summary)


def grid_posterior(
    model: GridModel,
    *,
    settings: GridSettings | None = None,
    start: np.ndarray | None = None,
    map_batches: MapBatches | None = None,
    mode_start: np.ndarray | None = None,
) -> GridPosterior:
    """Integrate the posterior of (log range, logit nugget share) on a refined grid.

    Parameters
    ----------
    model : GridModel
    settings : GridSettings, optional
    start : ndarray of shape (2, 2), optional
        First box in (u, v) (see :func:`synthgeo.inference.quadrature.integrate`); default the
        Laplace box from ``settings.laplace_start_min_records`` records, else the prior box.
    map_batches : callable, optional
        How batches of cells are evaluated (default: 2 threads).
    mode_start : ndarray of shape (2,), optional
        Where the Laplace start's mode search begins (the restricted fit: the unrestricted
        fit's mode); used only with the Laplace start.

    Returns
    -------
    GridPosterior
    """
    s = settings or GridSettings()
    if (start is None and s.laplace_start_min_records is not None
            and model.n >= s.laplace_start_min_records):
        start = "laplace"
    quad = integrate(_Bound(log_target, model), model.axes(), settings=s, start=start,
                     map_batches=map_batches,
                     mode_start=mode_start if isinstance(start, str) else None)
    return GridPosterior(model=model, quadrature=quad, settings=s)
