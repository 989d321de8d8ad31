r"""Risk-weighted pseudo-likelihood: record weights α_i and their Lipschitz bound.

Hu, Savitsky & Williams (2022, *J. Survey Statistics and Methodology* 10(5),
arXiv:1908.07639, "Risk-efficient Bayesian pseudo posterior data synthesis for privacy
protection") raise each record's likelihood contribution to a weight α_i ∈ [0, 1] that is lower
for riskier records; Savitsky, Williams & Hu (2022, *JMLR* 23(69), "Bayesian pseudo posterior
mechanism under asymptotic differential privacy") bound the mechanism by the largest weighted
log-likelihood over the parameter draws::

    Δ_α = sup_θ max_i α_i |log p(y_i | θ)|,    ε = 2 Δ_α.

**Weights** (:func:`pseudo_weights`). Their marginal weights are α_i = c (1 − r_i) + g with
r_i ∈ [0, 1] the record's risk and (c, g) = (1, 0) the untuned form. synthgeo's record risk is
the Rao-Blackwellised attributable risk a_i under the *unrestricted* fit, scored by the risk
rule (:mod:`synthgeo.pipeline.at_risk_rule`; share attack, at its selection draws), which lies
in [−1, 1] with most records near 0. It is normalised to [0, 1] by the largest positive one,
per target measure, and the largest over the measures taken::

    r̃_i = max_t  max(a_ti, 0) / max_j max(a_tj, 0),    α_i = max(1 − r̃_i, α_min)

so the riskiest record gets the floor α_min = :data:`ALPHA_FLOOR` (in effect left out of the
fit), a record with no attributable risk keeps weight 1, and a measure on which no record has
a positive a_i leaves every weight at 1. The floor keeps K finite (a weight of 10⁻⁴ is a
record's noise variance τ²·10⁴).

**The Gaussian GP** (docs/model.md, "Risk-weighted pseudo-likelihood"): given w,
N(y_i; x_iβ + w_i, τ²)^{α_i} = N(y_i; x_iβ + w_i, τ²/α_i) · (2πτ²)^{(1−α_i)/2} α_i^{−1/2}.
As a function of (β, w) it is the GP with the heteroscedastic nugget τ²/α_i; the factor
(τ²)^{(1−α_i)/2} is *kept* (the pseudo-posterior is exact, not the heteroscedastic model's
posterior): with τ² = α σ² it turns σ²'s conjugate shape a + N/2 into a + Σα_i/2 (the
effective number of records) and multiplies the nugget ratio's density by
α^{Σ(1−α_i)/2} (:mod:`synthgeo.inference.grid_posterior`). Synthesis draws from the model's own
likelihood, N(x_iβ + w_i, τ²), at the pseudo-posterior draws (their mechanism).
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

__all__ = ["ALPHA_FLOOR", "pseudo_weights", "lipschitz_bound"]

#: Smallest weight α_i: the riskiest record's likelihood is raised to it (in effect left out).
ALPHA_FLOOR = 1e-4


def pseudo_weights(attributable: np.ndarray, *, floor: float = ALPHA_FLOOR) -> np.ndarray:
    """Record weights α_i = max(1 − r̃_i, floor) from attributable risks (module docstring).

    Parameters
    ----------
    attributable : ndarray of shape (n_measures, n_records) or (n_records,)
        Attributable risk a_i per target measure (probabilities' difference, in [−1, 1]).
    floor : float, default=ALPHA_FLOOR
        Smallest weight, in (0, 1].

    Returns
    -------
    ndarray of shape (n_records,)
        α_i in [floor, 1].

    Raises
    ------
    ValueError
        If a value is not finite or ``floor`` is outside (0, 1].

    Examples
    --------
    >>> pseudo_weights(np.array([0.2, 0.05, -0.1, 0.0])).round(4).tolist()
    [0.0001, 0.75, 1.0, 1.0]
    """
    a = np.atleast_2d(np.asarray(attributable, dtype=float))
    if not np.all(np.isfinite(a)):
        raise ValueError("`attributable` must be finite")
    if not 0 < floor <= 1:
        raise ValueError(f"`floor` must lie in (0, 1], got {floor!r}")
    pos = np.maximum(a, 0.0)
    top = pos.max(axis=1, keepdims=True)
    r = np.divide(pos, top, out=np.zeros_like(pos), where=top > 0).max(axis=0)
    return np.maximum(1.0 - r, floor)


def lipschitz_bound(y: np.ndarray, mean: np.ndarray, sd: np.ndarray,
                    weights: np.ndarray | None = None) -> dict:
    """Δ_α = max over draws and records of α_i |log N(y_i; mean, sd²)|, and ε = 2Δ_α.

    Savitsky, Williams & Hu (2022, JMLR): the sup over the parameter space is taken over the
    posterior draws given (the released implicates' draws), so it is the bound *of this
    database*, not a worst case over databases (their asymptotic DP).

    Parameters
    ----------
    y : ndarray of shape (n_records,)
        Confidential response, model scale.
    mean, sd : ndarray of shape (n_draws, n_records)
        The likelihood's mean x_iβ + w_i and sd τ at each draw (model scale).
    weights : ndarray of shape (n_records,), optional
        α_i (default 1: the unweighted bound).

    Returns
    -------
    dict
        ``delta`` (Δ_α, nats of the model-scale density), ``epsilon`` (2Δ_α), ``n_draws``.

    Examples
    --------
    >>> b = lipschitz_bound(np.zeros(2), np.zeros((1, 2)), np.ones((1, 2)), np.array([1.0, 0.5]))
    >>> round(b["delta"], 4), round(b["epsilon"], 4)
    (0.9189, 1.8379)
    """
    logp = norm.logpdf(np.asarray(y, float)[None, :], np.asarray(mean, float),
                       np.asarray(sd, float))
    w = np.ones(logp.shape[1]) if weights is None else np.asarray(weights, float)
    delta = float(np.max(w[None, :] * np.abs(logp)))
    return {"delta": delta, "epsilon": 2.0 * delta, "n_draws": int(logp.shape[0])}
