"""Priors of the spatial GLMM (bernoulli / poisson) on the hyper-parameter axes.

The hyper-parameters θ are integrated numerically on the axes

    θ = (logit_range, log σ² [, log τ²]),   logit_range = logit((range_m − r_min)/(r_max − r_min))

(range = effective range 3/φ in metres, σ² the partial sill of the GP on the linear predictor,
τ² the overdispersion nugget on the log scale, poisson only). Priors, all fixed (not scaled from
the data, so simulation-based calibration is valid; see issue 13):

- range ~ Uniform(range_min_m, range_max_m), as the Gaussian grid route (docs/model.md). On
  the logit axis its density is q (1 − q), q = expit(logit_range): it vanishes at both bounds,
  so the posterior of θ has an interior mode and smooth tails even when the data cannot bound
  the range (a log-range axis truncated at the bounds put the mode on a bound and left the
  Hessian there undefined; measured on simulated bernoulli data);
- σ ~ Exponential(λ_σ) with P(σ > sigma_upper) = sigma_alpha, a penalised-complexity prior
  (Simpson, Rue, Riebler, Martins & Sørbye 2017, Statistical Science 32(1),
  doi:10.1214/16-STS576): it shrinks towards no spatial effect and has a finite density at 0;
- τ ~ Exponential(λ_τ) with P(τ > tau_upper) = tau_alpha (same construction);
- β ~ N(beta_mean, beta_sd² I), part of the latent Gaussian field (not on the axes).

On a log-variance axis v = log σ², the density of the exponential prior on σ = e^(v/2) is
``log p(v) = log λ − λ σ + log σ − log 2`` (change of variables).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, log_expit

from synthgeo._errors import SpecError

__all__ = ["GLMMPriors"]


def _log_pc_on_log_variance(v: np.ndarray, upper: float, alpha: float) -> np.ndarray:
    lam = -np.log(alpha) / upper
    s = np.exp(0.5 * v)
    return np.log(lam) - lam * s + np.log(s) - np.log(2.0)


@dataclass(frozen=True, kw_only=True)
class GLMMPriors:
    """Priors of a bernoulli / poisson spatial GLMM (recorded in the release record).

    Attributes
    ----------
    range_min_m, range_max_m : float
        Effective range 3/φ (metres) ~ Uniform(range_min_m, range_max_m).
    sigma_upper, sigma_alpha : float
        σ (GP standard deviation on the logit / log scale) ~ Exponential with
        P(σ > sigma_upper) = sigma_alpha. Defaults 2 and 0.05: an odds ratio of e² ≈ 7.4
        between sites one sd apart is already unusual.
    tau_upper, tau_alpha : float
        τ (overdispersion sd on the log scale) ~ Exponential with P(τ > tau_upper) =
        tau_alpha. Defaults 1 and 0.05.
    beta_mean, beta_sd : float
        β ~ N(beta_mean, beta_sd² I) (logit / log units per covariate unit).

    Raises
    ------
    SpecError
        If a bound, scale or tail probability is out of range.

    Examples
    --------
    >>> import numpy as np
    >>> pri = GLMMPriors(range_min_m=100.0, range_max_m=10_000.0)
    >>> theta = np.array([[pri.axis_from_range_m(1000.0), 0.0]])   # range 1 km, σ² = 1
    >>> round(float(pri.range_m(theta[:, 0])[0]), 6)
    1000.0
    >>> round(float(pri.log_density(theta)[0]), 4)
    -4.2802
    """

    range_min_m: float
    range_max_m: float
    sigma_upper: float = 2.0
    sigma_alpha: float = 0.05
    tau_upper: float = 1.0
    tau_alpha: float = 0.05
    beta_mean: float = 0.0
    beta_sd: float = 10.0

    def __post_init__(self) -> None:
        """Refuse impossible values with a one-line SpecError."""
        if not (0 < self.range_min_m < self.range_max_m < np.inf):
            raise SpecError("prior range bounds must satisfy 0 < `range_min_m` < "
                            f"`range_max_m`, got {self.range_min_m!r}, {self.range_max_m!r}")
        for name in ("sigma_upper", "tau_upper", "beta_sd"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v > 0):
                raise SpecError(f"prior `{name}` must be a positive number, got {v!r}")
        for name in ("sigma_alpha", "tau_alpha"):
            v = getattr(self, name)
            if not 0 < v < 1:
                raise SpecError(f"prior `{name}` must lie in (0, 1), got {v!r}")
        if not np.isfinite(self.beta_mean):
            raise SpecError(f"prior `beta_mean` must be finite, got {self.beta_mean!r}")

    def log_density(self, theta: np.ndarray) -> np.ndarray:
        """Log prior density on the axes (logit_range, log σ² [, log τ²]).

        Parameters
        ----------
        theta : ndarray of shape (k, 2) or (k, 3)

        Returns
        -------
        ndarray of shape (k,)
        """
        theta = np.atleast_2d(np.asarray(theta, float))
        t = theta[:, 0]
        lp = log_expit(t) + log_expit(-t)
        lp = lp + _log_pc_on_log_variance(theta[:, 1], self.sigma_upper, self.sigma_alpha)
        if theta.shape[1] == 3:
            lp = lp + _log_pc_on_log_variance(theta[:, 2], self.tau_upper, self.tau_alpha)
        return lp

    def box(self, n_axes: int) -> np.ndarray:
        """Search box on the axes: ±8 on logit_range; 0.1 %, 99.9 % prior quantiles of σ², τ².

        Returns
        -------
        ndarray of shape (n_axes, 2)
            Lower and upper bound per axis.
        """
        def q(upper, alpha, p):  # quantile of the exponential on the sd, as log variance
            return 2.0 * np.log(-np.log1p(-p) * upper / -np.log(alpha))

        rows = [[-8.0, 8.0],
                [q(self.sigma_upper, self.sigma_alpha, 1e-3),
                 q(self.sigma_upper, self.sigma_alpha, 1 - 1e-3)]]
        if n_axes == 3:
            rows.append([q(self.tau_upper, self.tau_alpha, 1e-3),
                         q(self.tau_upper, self.tau_alpha, 1 - 1e-3)])
        return np.array(rows)

    def range_m(self, t) -> np.ndarray:
        """Effective range in metres at logit_range ``t`` (array_like)."""
        return self.range_min_m + (self.range_max_m - self.range_min_m) * expit(
            np.asarray(t, float))

    def axis_from_range_m(self, range_m) -> np.ndarray:
        """logit_range of an effective range in metres (inside the prior bounds)."""
        q = (np.asarray(range_m, float) - self.range_min_m) / (self.range_max_m
                                                                - self.range_min_m)
        return np.log(q) - np.log1p(-q)

    def to_dict(self) -> dict:
        """Plain description for release.json."""
        return {
            "range_m": f"Uniform({self.range_min_m:.6g}, {self.range_max_m:.6g})",
            "sigma": f"Exponential, P(sigma > {self.sigma_upper:g}) = {self.sigma_alpha:g}",
            "tau": f"Exponential, P(tau > {self.tau_upper:g}) = {self.tau_alpha:g}",
            "beta": f"N({self.beta_mean:g}, {self.beta_sd:g}^2 I)",
        }
