"""The restricted (differentially smoothed) Gaussian-process regression as a PyMC model.

Model (Quick, Holan & Wikle 2018, JRSS-A 181(3), doi:10.1111/rssa.12360; docs/model.md)::

    Y = X β + A D w + e,   e ~ N(0, τ² I),   w ~ MVN(0, σ² R(φ)),  R_st = exp(−φ d_st)
    D = diag(d_s),  d_s = (1 + γ a_s)^(-1/2)

``D = I`` is the unrestricted model; ``d_s = 0`` at at-risk sites is the paper's restricted
model (γ = ∞). The scaling form is our formulation; it reduces exactly to the paper's restricted
model at γ = ∞ and to the unrestricted model at γ = 0.

Inference design: the PyMC model is the *collapsed* posterior of (σ², τ², range). Both w and β
are integrated out analytically, so one log-density evaluation costs one N x N Cholesky plus a
p x p one. With β ~ N(μ_β, V_β)::

    Y | θ ~ MVN(X μ_β, Σ + X V_β Xᵀ),   Σ = σ² A D R D Aᵀ + τ² I

evaluated through the Woodbury identity so the vague V_β never enters the N x N factor.
β and w are then drawn exactly from their Gaussian full conditionals per retained draw
(:mod:`synthgeo.inference.conditionals`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from synthgeo._errors import SpecError
from synthgeo.model.kernels import METRES_PER_KM, Sites, exponential_correlation
from synthgeo.model.smoothing import smoothing_scale

if TYPE_CHECKING:  # PyMC is imported only where a model is built (it costs seconds)
    import pymc as pm

__all__ = ["GPPriors", "default_priors", "build_model", "smoothing_scale"]

_LOG_2PI = float(np.log(2.0 * np.pi))


@dataclass(frozen=True, kw_only=True)
class GPPriors:
    """Prior distributions of the GP regression (recorded in the release record).

    Attributes
    ----------
    beta_mean : float
        Prior mean of every regression coefficient (response units per covariate unit).
    beta_sd : float
        Prior standard deviation of every coefficient; β ~ N(beta_mean, beta_sd² I).
    sigma2_shape, sigma2_scale : float
        σ² (partial sill, response units²) ~ InverseGamma(shape, scale).
    nugget_sd_scale : float
        √τ² (nugget standard deviation, response units) ~ HalfNormal(nugget_sd_scale). Its
        density is flat near zero, so a small nugget is not pushed up (an InverseGamma(2, b)
        prior has almost no mass below b/10 and biased τ² upwards in our recovery tests).
    range_min_m, range_max_m : float
        Effective range 3/φ (metres) ~ Uniform(range_min_m, range_max_m).
    """

    beta_mean: float = 0.0
    beta_sd: float = 100.0
    sigma2_shape: float = 2.0
    sigma2_scale: float
    nugget_sd_scale: float
    range_min_m: float
    range_max_m: float

    def __post_init__(self) -> None:
        """Refuse non-positive scales and an empty range interval with a SpecError."""
        for name in ("beta_sd", "sigma2_shape", "sigma2_scale", "nugget_sd_scale"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v > 0):
                raise SpecError(f"prior `{name}` must be a positive number, got {v!r}")
        if not (0 < self.range_min_m < self.range_max_m < np.inf):
            raise SpecError(
                "prior range bounds must satisfy 0 < `range_min_m` < `range_max_m`, got "
                f"{self.range_min_m!r}, {self.range_max_m!r}"
            )

    def to_dict(self) -> dict[str, float]:
        """Plain dict of the prior parameters (JSON-serialisable)."""
        return {k: float(v) for k, v in asdict(self).items()}

    def beta_v_scale(self) -> float:
        """V of the conjugate β prior N(μ, σ² v I): beta_sd² / E[σ²] (E[σ²] = b/(a − 1))."""
        a, b = self.sigma2_shape, self.sigma2_scale
        return self.beta_sd**2 / (b / (a - 1.0) if a > 1 else b)


def default_priors(
    y: np.ndarray, X: np.ndarray, sites: Sites, **overrides: float | None
) -> GPPriors:
    """Data-scaled default priors.

    σ² ~ InverseGamma(2, s²/2): infinite variance, prior mean half the OLS residual variance s².
    √τ² ~ HalfNormal(s): flat near zero, 95% below 2s. The effective range is
    uniform between the median positive nearest-site distance and the maximum inter-site distance
    (docs/model.md). β ~ N(0, 100² I).

    Parameters
    ----------
    y : ndarray of shape (n_records,)
        Response on the model scale.
    X : ndarray of shape (n_records, n_coef)
        Design matrix, intercept included.
    sites : Sites
        Unique sites (metres).
    **overrides
        Any :class:`GPPriors` field; ``None`` keeps the default. A given ``sigma2_scale``
        (spec: ``[model.priors] sigma2_scale``) fixes σ²'s prior instead of scaling it from the
        data, as simulation-based calibration needs (``benchmarks/bench_calibration.py``); the
        spec as run in release.json records the override.

    Returns
    -------
    GPPriors
    """
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    s2 = float(np.sum((y - X @ coef) ** 2) / max(len(y) - X.shape[1], 1))
    nn = sites.nearest_site_distance_m()
    nn = nn[np.isfinite(nn) & (nn > 0)]
    diag = float(np.hypot(*np.ptp(sites.coords_m, axis=0)))
    lo = float(np.median(nn)) if nn.size else diag / 100.0
    vals: dict[str, float] = dict(
        sigma2_scale=s2 / 2.0, nugget_sd_scale=float(np.sqrt(s2)), range_min_m=lo,
        range_max_m=diag
    )
    vals.update({k: v for k, v in overrides.items() if v is not None})
    return GPPriors(**vals)


def build_model(
    y: np.ndarray,
    X: np.ndarray,
    sites: Sites,
    *,
    scale: np.ndarray | None = None,
    priors: GPPriors,
    coef_names: list[str] | None = None,
    parametrization: str = "ridge",
    prior_form: str = "independent",
) -> pm.Model:
    """Collapsed restricted-GP regression: free variables σ², τ² (``nugget``) and range.

    Parameters
    ----------
    y : ndarray of shape (n_records,)
        Response on the model scale (e.g. log-dollars).
    X : ndarray of shape (n_records, n_coef)
        Design matrix, intercept included.
    sites : Sites
        Sites in metres; internally kilometres are used for conditioning.
    scale : ndarray of shape (n_sites,), optional
        Diagonal of D (1 = unrestricted, 0 = effect removed). Default all ones.
    priors : GPPriors
        Prior distributions.
    coef_names : list of str, optional
        Names for the ``coef`` coordinate (stored for later β recovery).
    parametrization : {"natural", "ridge"}, default="ridge"
        ``"natural"`` samples (σ², τ², range) on their default unconstrained transforms.
        ``"ridge"`` samples u = log(σ²/range) (the well-identified direction: under infill only
        σ²φ = 3σ²/range is identified, Zhang 2004, doi:10.1198/016214504000000241) and
        v = log(range) instead, with the Jacobian added, so the prior is unchanged; NUTS then
        moves along the σ²–φ ridge with far fewer leapfrog steps.
    prior_form : {"independent", "conjugate"}, default="independent"
        ``"independent"``: β ~ N(beta_mean, beta_sd² I), √τ² ~ HalfNormal(nugget_sd_scale).
        ``"conjugate"``: the grid route's priors (:mod:`synthgeo.inference.grid`),
        β | σ² ~ N(beta_mean, σ² v I) with v = :meth:`GPPriors.beta_v_scale` and the nugget share
        τ²/(σ² + τ²) ~ Uniform(1e-4, 0.999), so NUTS and the grid can be compared
        (``benchmarks/bench_grid_vs_nuts.py``).

    Returns
    -------
    pymc.Model
        ``sigma2``, ``nugget`` and ``range_km`` (free or deterministic by parametrization); the
        marginal log-likelihood enters as the potential ``loglik_marginal``.

    Raises
    ------
    SpecError
        For an unknown ``parametrization`` or ``prior_form``.

    Notes
    -----
    log p(y | θ) = −½[log|Σ| + log|V_β| + log|V_β⁻¹ + XᵀΣ⁻¹X| + rᵀΣ⁻¹r − bᵀ(V_β⁻¹ + XᵀΣ⁻¹X)⁻¹b
    + N log 2π], r = y − Xμ_β, b = XᵀΣ⁻¹r (matrix determinant lemma and Woodbury identity).
    """
    import pymc as pm
    import pytensor.tensor as pt

    if parametrization not in ("ridge", "natural"):
        raise SpecError(
            f"`parametrization` must be one of {{'ridge', 'natural'}}, got {parametrization!r}"
        )
    if prior_form not in ("independent", "conjugate"):
        raise SpecError(f"`prior_form` must be 'independent' or 'conjugate', got {prior_form!r}")
    y = np.asarray(y, dtype=float)
    X = np.asarray(X, dtype=float)
    p = X.shape[1]
    d = np.ones(sites.n_sites) if scale is None else np.asarray(scale, dtype=float)
    idx = sites.site_index
    # record-level constants (N x N): distances and D-products expanded through A
    dist_rec = sites.distance_km()[np.ix_(idx, idx)]
    dd_rec = np.outer(d, d)[np.ix_(idx, idx)]
    coords = {"coef": coef_names or [f"x{j}" for j in range(p)]}
    with pm.Model(coords=coords) as model:
        sigma2, range_km = _sigma2_and_range(pm, pt, priors, parametrization)
        if prior_form == "conjugate":
            share = pm.Uniform("nugget_share", lower=1e-4, upper=0.999)
            nugget = pm.Deterministic("nugget", sigma2 * share / (1.0 - share))
            v_beta = sigma2 * priors.beta_v_scale()
        else:
            nugget_sd = pm.HalfNormal("nugget_sd", sigma=priors.nugget_sd_scale)
            nugget = pm.Deterministic("nugget", nugget_sd**2)
            v_beta = pt.as_tensor(priors.beta_sd**2)
        R = exponential_correlation(pt.as_tensor(dist_rec), 3.0 / range_km, exp=pt.exp)
        cov = sigma2 * pt.as_tensor(dd_rec) * R + nugget * pt.eye(y.size)
        r = y - X @ np.full(p, priors.beta_mean)
        pm.Potential("loglik_marginal", _collapsed_loglik(pt, cov, r, X, v_beta))
    return model


def _sigma2_and_range(pm, pt, priors: GPPriors, parametrization: str):
    """σ² and the effective range (km) with their priors, by parametrization."""
    lo_km = priors.range_min_m / METRES_PER_KM
    hi_km = priors.range_max_m / METRES_PER_KM
    if parametrization == "natural":
        sigma2 = pm.InverseGamma("sigma2", alpha=priors.sigma2_shape, beta=priors.sigma2_scale)
        return sigma2, pm.Uniform("range_km", lower=lo_km, upper=hi_km)
    # v = log(range) uniform on (log lo, log hi) has density ∝ 1; the uniform prior on range
    # needs the Jacobian |d range / dv| = range. u = log σ² − v is flat; σ²'s InverseGamma
    # prior needs |dσ²/du| = σ².
    v = pm.Uniform("log_range_km", lower=np.log(lo_km), upper=np.log(hi_km))
    u = pm.Flat("log_sigma2_per_range")
    range_km = pm.Deterministic("range_km", pt.exp(v))
    sigma2 = pm.Deterministic("sigma2", pt.exp(u + v))
    ig = pm.InverseGamma.dist(alpha=priors.sigma2_shape, beta=priors.sigma2_scale)
    pm.Potential("prior_sigma2_range", pm.logp(ig, sigma2) + (u + v) + v)
    return sigma2, range_km


def _collapsed_loglik(pt, cov, r: np.ndarray, X: np.ndarray, v_beta):
    """Log N(r | 0, cov + v_beta X Xᵀ) by the Woodbury identity (see build_model's Notes)."""
    from pytensor.tensor.slinalg import cholesky, solve_triangular

    n, p = X.shape
    chol = cholesky(cov)
    z = solve_triangular(chol, pt.as_tensor(np.column_stack([r, X])), lower=True)
    zr, zx = z[:, 0], z[:, 1:]
    prec_beta = pt.eye(p) / v_beta + zx.T @ zx
    chol_b = cholesky(prec_beta)
    c = solve_triangular(chol_b, zx.T @ zr, lower=True)
    logdet = (2.0 * pt.sum(pt.log(pt.diag(chol))) + 2.0 * pt.sum(pt.log(pt.diag(chol_b)))
              + p * pt.log(v_beta))
    quad = pt.sum(zr**2) - pt.sum(c**2)
    return -0.5 * (logdet + quad + n * _LOG_2PI)
