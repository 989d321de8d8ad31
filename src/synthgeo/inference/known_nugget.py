"""A known part of the nugget: the grid posterior of y* = y + e, e ~ N(0, κ² I), κ known.

Input noise (:mod:`synthgeo.pipeline.synthesis_noise`) releases only what a fit of
y* = y + e gives. With κ known, y*'s model is y's model with one more, known, nugget term::

    Y* | β, σ², φ, α ~ MVN(Xβ, σ² (R(φ) + α I) + κ² I)

and the priors are y's (ν = α/(1 + α) ~ Uniform(ν_min, ν_max), σ² ~ InverseGamma(a, b),
β | σ² ~ N(μ_β, σ² V)). Written with y*'s own nugget ratio α* = α + κ²/σ², the likelihood is
the conjugate grid's at (φ, α*), and the Jacobian of (α, σ²) → (α*, σ²) is 1, so on the grid's
axis v* = log α* (the logit of ν* = α*/(1 + α*)) the prior at fixed σ² is::

    p(v* | σ²) = 1{ν ∈ [ν_min, ν_max]} / (ν_max − ν_min) · α* / (1 + α)²,  α = α* − κ²/σ²

(at κ = 0 this is the grid's ν*(1 − ν*)/(ν_max − ν_min)). σ² no longer separates from α in
the prior, but it still does in the likelihood: with β integrated out, σ² | y*, φ, α* is the
conjugate InverseGamma(a_N, b_N) times this factor, so a cell's log density is the conjugate
one plus log E[p(v* | σ²)] under InverseGamma(a_N, b_N), a one-dimensional integral over
t = 1/σ² ~ Gamma(a_N, rate b_N) restricted to α ∈ [α_min, α_max]: the interval's probability
(regularised incomplete gamma functions, read on the tail the interval lies in) times the
mean of α*/(1 + α)² over it (Gauss–Legendre in t, weighted by the Gamma density). σ² is
drawn from the same tilted distribution by inversion and rejection (the tilt 1/(1 + α)² is
largest at α = α_min).

This is the model the noise actually follows (the nugget of y* is at least κ²); fitting y* with
a free nugget and subtracting κ² afterwards let a spatial term of short range take the noise,
left y's nugget at its floor and made the cross-fitted means krig too closely (Sacramento all,
2026-12-03: y*'s nugget ratio 0.76 against 1.15 for y). docs/inference.md, "A known part of
the nugget".
"""

from __future__ import annotations

import numpy as np
from numpy.polynomial.legendre import leggauss
from scipy.special import gammainc, gammaincc, gammainccinv, gammaincinv

__all__ = ["log_prior_mean", "draw_sigma2"]

#: Gauss–Legendre nodes for the mean of the tilt over a cell's σ² interval.
N_NODES = 48
_X, _W = leggauss(N_NODES)


def _interval(alpha_star, a, b, c, alpha_min, alpha_max):
    """Return the t = 1/σ² interval where α = α* − c t lies in [α_min, α_max], as probabilities.

    Returns (upper, p_lo, p_hi): ``upper`` True where the interval is read on the survival
    side (its lower end above the Gamma's mean), p_lo ≤ p_hi the interval's ends as
    probabilities on that side (the mass is p_hi − p_lo).
    """
    t_lo = np.maximum((alpha_star - alpha_max) / c, 0.0)
    t_hi = np.maximum((alpha_star - alpha_min) / c, 0.0)
    x_lo, x_hi = b * t_lo, b * t_hi
    upper = x_lo > a
    p_lo = np.where(upper, gammaincc(a, x_hi), gammainc(a, x_lo))
    p_hi = np.where(upper, gammaincc(a, x_lo), gammainc(a, x_hi))
    return upper, p_lo, p_hi


def _t_at(p, upper, a, b):
    """Return t = 1/σ² at probability ``p`` (survival side where ``upper``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(upper, gammainccinv(a, p), gammaincinv(a, p)) / b


def log_prior_mean(alpha_star: np.ndarray, a: float, b: np.ndarray, c: float, *,
                   alpha_min: float, alpha_max: float, nu_width: float) -> np.ndarray:
    """Return log E[p(v* | σ²)] under σ² ~ InverseGamma(a, b), per cell (module docstring).

    Parameters
    ----------
    alpha_star : ndarray of shape (k,)
        y*'s nugget ratio α* = e^{v*} at each cell.
    a : float
        Posterior shape a_N of σ² (shared by the cells).
    b : ndarray of shape (k,)
        Posterior scale b_N of σ² at each cell.
    c : float
        κ², the known nugget (model-scale variance, > 0).
    alpha_min, alpha_max : float
        The prior's support of y's nugget ratio α (ν_min/(1 − ν_min), ν_max/(1 − ν_max)).
    nu_width : float
        ν_max − ν_min.

    Returns
    -------
    ndarray of shape (k,)
        −inf where no σ² puts α in its support (or the interval's probability underflows).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.integrate import quad
    >>> from scipy.stats import invgamma
    >>> a, b, c = 20.0, 10.0, 0.3
    >>> def tilt(s2):
    ...     al = 1.5 - c / s2
    ...     return 1.5 / (1 + al) ** 2 / 0.9989 if 1e-4 <= al <= 999 else 0.0
    >>> brute = quad(lambda s2: invgamma.pdf(s2, a, scale=b) * tilt(s2), c / (1.5 - 1e-4),
    ...              np.inf, limit=500)[0]
    >>> got = log_prior_mean(np.array([1.5]), a, np.array([b]), c, alpha_min=1e-4,
    ...                      alpha_max=999.0, nu_width=0.9989)
    >>> bool(abs(np.exp(got[0]) / brute - 1) < 1e-10)
    True
    """
    alpha_star = np.asarray(alpha_star, float)
    b = np.asarray(b, float)
    upper, p_lo, p_hi = _interval(alpha_star, a, b, c, alpha_min, alpha_max)
    mass = p_hi - p_lo
    # the tilt's mean over the interval: Gauss–Legendre in t on the interval within 12 sd of
    # the Gamma's mean (all of it where it lies further out), weighted by the Gamma density
    # (its normalisation cancels in the ratio; the interval's mass above is exact)
    t_lo = np.maximum((alpha_star - alpha_max) / c, 0.0)
    t_hi = np.maximum((alpha_star - alpha_min) / c, 0.0)
    mean, sd = a / b, np.sqrt(a) / b
    lo, hi = np.maximum(t_lo, mean - 12 * sd), np.minimum(t_hi, mean + 12 * sd)
    outside = lo >= hi
    lo, hi = np.where(outside, t_lo, lo), np.where(outside, t_hi, hi)
    t = lo[:, None] + 0.5 * (_X[None, :] + 1.0) * (hi - lo)[:, None]  # (k, nodes)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_dens = (a - 1.0) * np.log(t) - b[:, None] * t + np.log(_W)[None, :]
        log_dens -= np.max(log_dens, axis=1, keepdims=True)
        weight = np.exp(log_dens)
        alpha = np.clip(alpha_star[:, None] - c * t, alpha_min, alpha_max)
        mean_tilt = (weight / (1.0 + alpha) ** 2).sum(axis=1) / weight.sum(axis=1)
        out = np.log(mass) + np.log(mean_tilt) + np.log(alpha_star) - np.log(nu_width)
    return np.where((mass > 0) & np.isfinite(out), out, -np.inf)


def draw_sigma2(alpha_star: np.ndarray, a: float, b: np.ndarray, c: float, *,
                alpha_min: float, alpha_max: float, rng: np.random.Generator,
                max_rounds: int = 10_000) -> np.ndarray:
    """One σ² per entry from InverseGamma(a, b) tilted by the prior of α = α* − c/σ².

    Inversion on the interval where α ∈ [α_min, α_max] (module docstring), then rejection by
    the tilt (1 + α_min)²/(1 + α)² ∈ (0, 1].

    Parameters
    ----------
    alpha_star, b : ndarray of shape (n,)
        Each draw's cell: y*'s nugget ratio and σ²'s posterior scale.
    a, c : float
        σ²'s posterior shape; κ² (> 0).
    alpha_min, alpha_max : float
    rng : numpy.random.Generator
    max_rounds : int
        Rejection rounds before giving up.

    Returns
    -------
    ndarray of shape (n,)
        σ² draws, each with α = α* − c/σ² in [α_min, α_max].

    Raises
    ------
    ValueError
        When a draw's interval has no mass, or rejection has not finished in ``max_rounds``.

    Examples
    --------
    >>> import numpy as np
    >>> s2 = draw_sigma2(np.full(4, 1.5), 20.0, np.full(4, 10.0), 0.3, alpha_min=1e-4,
    ...                  alpha_max=999.0, rng=np.random.default_rng(0))
    >>> bool(np.all(1.5 - 0.3 / s2 >= 1e-4))
    True
    """
    alpha_star = np.asarray(alpha_star, float)
    b = np.asarray(b, float)
    upper, p_lo, p_hi = _interval(alpha_star, a, b, c, alpha_min, alpha_max)
    if np.any(p_hi - p_lo <= 0):
        raise ValueError("a draw's cell puts no prior mass on the nugget ratio of y "
                         "(alpha* below alpha_min + kappa^2/sigma2 for every sigma2)")
    out = np.empty(alpha_star.size)
    todo = np.arange(alpha_star.size)
    for _ in range(max_rounds):
        if todo.size == 0:
            return out
        u = rng.random(todo.size)
        p = p_lo[todo] + u * (p_hi[todo] - p_lo[todo])
        t = _t_at(p, upper[todo], a, b[todo])
        alpha = alpha_star[todo] - c * t
        keep = (rng.random(todo.size) * (1.0 + alpha) ** 2 <= (1.0 + alpha_min) ** 2) & (
            t > 0) & np.isfinite(t)
        out[todo[keep]] = 1.0 / t[keep]
        todo = todo[~keep]
    raise ValueError(f"the known-nugget draws of sigma2 did not finish in {max_rounds} "
                     "rejection rounds")
