"""Differential smoothing D = diag(d_s), d_s = (1 + γ a_s)^(-1/2), with γ fixed or per draw.

docs/model.md, "The restricted model". The scaling form is synthgeo's formulation of Quick, Holan &
Wikle (2018, JRSS-A 181(3), doi:10.1111/rssa.12360): at γ = ∞ it is exactly the paper's
restricted model (d_s = 0 wherever a_s > 0, the spatial effect removed there), at γ = 0 the
unrestricted model (D = I). Two finite forms:

- a fixed γ ≥ 0 from the spec;
- ``gamma = "auto"``: γ = max(0, σ²/τ² − 1) = max(0, 1/α − 1) with α = τ²/σ², the paper's
  future-work suggestion. It is evaluated *inside* the model: D depends on α, so the likelihood,
  the grid posterior and the effect draws use d(α) of each grid cell / posterior draw (not a
  plug-in from a point estimate). With a_s = 1 the site's spatial variance d_s² σ² then equals
  τ² (for σ² ≥ τ²), so its residual is split half and half between effect and noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Smoothing", "smoothing_scale", "scale_function"]


def smoothing_scale(a: np.ndarray, gamma: float) -> np.ndarray:
    """Differential-smoothing scale ``d_s = (1 + γ a_s)^(-1/2)`` per site.

    Parameters
    ----------
    a : ndarray of shape (n_sites,)
        At-risk weight in [0, 1] (1 = at risk, 0 = not; continuous weights allowed).
    gamma : float
        Smoothing strength γ ≥ 0; ``numpy.inf`` gives d_s = 0 wherever a_s > 0.

    Returns
    -------
    ndarray of shape (n_sites,)
        Diagonal of D in [0, 1].

    Raises
    ------
    ValueError
        If γ < 0 or a is outside [0, 1].
    """
    a = np.asarray(a, dtype=float)
    if np.any((a < 0) | (a > 1)) or not np.all(np.isfinite(a)):
        raise ValueError("at-risk weights `a` must lie in [0, 1]")
    if not gamma >= 0:
        raise ValueError(f"`gamma` must be >= 0 (or inf), got {gamma!r}")
    if np.isinf(gamma):
        return np.where(a > 0, 0.0, 1.0)
    return 1.0 / np.sqrt(1.0 + gamma * a)


@dataclass(frozen=True, kw_only=True, eq=False)
class Smoothing:
    """At-risk weights and smoothing strength: D as a function of the nugget ratio α = τ²/σ².

    Attributes
    ----------
    a : ndarray of shape (n_sites,)
        At-risk weight per site in [0, 1] (binary rule: 0/1; continuous rule: graded).
    gamma : float or "auto"
        γ ≥ 0 (``numpy.inf`` for the paper's restricted model) or ``"auto"`` for
        γ = max(0, σ²/τ² − 1) per posterior draw.
    at_risk_nugget : {"shared", "marginal"}, default="shared"
        ``"marginal"`` (binary weights, γ = ∞ only): records at sites with d_s = 0 get
        variance σ² + τ² in the likelihood and the synthesis, not τ² (docs/model.md,
        "At-risk variance"); see :meth:`extra_variance`.
    likelihood_weight : ndarray of shape (n_records,), optional
        Pseudo-likelihood weight α_i in (0, 1] per record (``[model] at_risk_weight =
        "pseudo_likelihood"``, :mod:`synthgeo.model.pseudo_likelihood`): record i's noise
        variance in the fit is τ²/α_i; see :meth:`noise_weight`. Only with D = I (γ = 0 or
        no site at risk) and the shared nugget.

    Raises
    ------
    ValueError
        For a bad ``gamma`` or ``a``, an unknown ``at_risk_nugget``, or ``"marginal"`` with a
        finite γ or graded weights.

    Examples
    --------
    >>> s = Smoothing(a=np.array([0.0, 1.0]), gamma=np.inf, at_risk_nugget="marginal")
    >>> s.extra_variance(np.array([0, 1, 1])).tolist()
    [0.0, 1.0, 1.0]
    """

    a: np.ndarray
    gamma: float | str
    at_risk_nugget: str = "shared"
    likelihood_weight: np.ndarray | None = None

    def __post_init__(self) -> None:
        """Check ``a`` and ``gamma`` (raises ValueError)."""
        if not (self.gamma == "auto" or (isinstance(self.gamma, (int, float))
                                         and self.gamma >= 0)):
            raise ValueError(f"`gamma` must be a number >= 0, inf or 'auto', got {self.gamma!r}")
        smoothing_scale(self.a, 0.0)  # checks a
        if self.at_risk_nugget not in ("shared", "marginal"):
            raise ValueError("`at_risk_nugget` must be 'shared' or 'marginal', got "
                             f"{self.at_risk_nugget!r}")
        if self.at_risk_nugget == "marginal" and not (
                self.gamma != "auto" and np.isinf(self.gamma)
                and np.all(np.isin(np.asarray(self.a), (0.0, 1.0)))):
            raise ValueError("at_risk_nugget = 'marginal' needs binary weights and gamma = inf")
        if self.likelihood_weight is not None:
            w = np.asarray(self.likelihood_weight, float)
            if w.ndim != 1 or not np.all((w > 0) & (w <= 1)):
                raise ValueError("`likelihood_weight` must be a 1-d array of values in (0, 1]")
            if self.at_risk_nugget != "shared" or self.gamma == "auto" or np.any(
                    smoothing_scale(self.a, float(self.gamma)) != 1.0):
                raise ValueError("`likelihood_weight` needs D = I and the shared nugget")

    def noise_weight(self) -> np.ndarray | None:
        """Per-record multiplier ω_i = 1/α_i of the nugget (None without weights).

        Returns
        -------
        ndarray of shape (n_records,) or None
            The fit's noise variance at record i is τ² ω_i (the pseudo-likelihood's
            heteroscedastic nugget); the synthesis keeps τ².
        """
        if self.likelihood_weight is None:
            return None
        return 1.0 / np.asarray(self.likelihood_weight, float)

    def extra_variance(self, site_index: np.ndarray) -> np.ndarray | None:
        """Per-record extra variance in units of σ² (None under ``"shared"``).

        Parameters
        ----------
        site_index : ndarray of int, shape (n_records,)

        Returns
        -------
        ndarray of shape (n_records,) or None
            1 at records of at-risk sites (d_s = 0), 0 elsewhere: the covariance of y becomes
            σ²(A D R D Aᵀ + α I + diag(extra)), so an at-risk record's variance is σ² + τ².
        """
        if self.at_risk_nugget != "marginal":
            return None
        return (np.asarray(self.a) > 0)[np.asarray(site_index)].astype(float)

    @property
    def depends_on_nugget(self) -> bool:
        """Whether D varies with α (γ = "auto" and some a_s > 0)."""
        return self.gamma == "auto" and bool(np.any(np.asarray(self.a) > 0))

    @property
    def active(self) -> np.ndarray:
        """Sites whose d_s > 0 for every α, bool of shape (n_sites,)."""
        if self.gamma == "auto":
            return np.ones(np.shape(self.a), bool)
        return smoothing_scale(self.a, float(self.gamma)) > 0

    def gamma_at(self, alpha: float) -> float:
        """γ at nugget ratio α = τ²/σ² (the fixed γ, or max(0, 1/α − 1) for "auto")."""
        if self.gamma == "auto":
            return max(0.0, 1.0 / float(alpha) - 1.0)
        return float(self.gamma)

    def scale(self, alpha: float | None = None) -> np.ndarray:
        """D's diagonal at nugget ratio α (α is needed only for γ = "auto").

        Parameters
        ----------
        alpha : float, optional
            τ²/σ² (dimensionless).

        Returns
        -------
        ndarray of shape (n_sites,)

        Raises
        ------
        ValueError
            If γ = "auto", some a_s > 0 and ``alpha`` is not given.
        """
        if self.gamma == "auto" and alpha is None:
            if not self.depends_on_nugget:  # no site at risk: D = I whatever γ
                return np.ones(np.shape(self.a))
            raise ValueError("`alpha` (tau2/sigma2) is needed when gamma = 'auto'")
        return smoothing_scale(self.a, self.gamma_at(alpha if alpha is not None else 1.0))


def scale_function(scale, n_sites: int):
    """Return ``d(alpha) -> ndarray (n_sites,)`` for a fixed scale, a Smoothing, or None.

    Parameters
    ----------
    scale : None, ndarray of shape (n_sites,) or Smoothing
        None = unrestricted (D = I).
    n_sites : int

    Returns
    -------
    callable
        ``d(alpha)``; for a fixed scale it ignores α.
    """
    if isinstance(scale, Smoothing):
        return scale.scale
    d = np.ones(n_sites) if scale is None else np.asarray(scale, dtype=float)
    return lambda alpha=None: d
