r"""Input noise: the cross-fit synthesises from y* = y + e, so no release says more than y*_i.

``[synthesis] input_noise`` (docs/risk-and-utility.md, "The release attacker"). The release
attacker (:mod:`synthgeo.risk.release_attacker`) reads a record's value off every record's
implicate means; its information grows with the implicates pooled, without limit. With
e ~ N(0, κ² I) drawn once (from the release's seed, kept with the synthesiser so every later
draw reuses it) and every released value computed from y* = y + e and the posterior draws,
the release is a randomised function of (y*, θ-draws): by the data-processing inequality
(Cover & Thomas 2006, *Elements of Information Theory*, 2nd ed., Thm 2.8.1) an attacker who
knows every other record's value learns no more about y_i than y*_i tells, whatever it does
and however many implicates it pools: its information is at most 1/κ². This is the Gaussian
mechanism applied to the inputs (Dwork & Roth 2014, *The Algorithmic Foundations of
Differential Privacy*, Sect. 3.5.3 and App. A), judged here with synthgeo's own risk measure
rather than an (ε, δ) budget. What it does not cover: the posterior draws θ_ℓ were fitted on
y (a few parameters from n records; scored by the per-record measure against the leave-out
posterior).

**Synthesis under the noise.** Given θ_ℓ the model for y* is the GP with nugget τ² + κ²; the
cross-fitted predictive of y*_i from y*_−B(i) is computed with α' = α_ℓ + κ²/σ̄² (σ̄² the
median of the implicates' σ²: one precision per (φ, α) cell, as without noise), and y_i =
y*_i − e_i has the same mean and variance σ²_ℓ v'_i − κ²σ²_ℓ/σ̄² (e_i is independent of
y*_−B(i)): the released values keep y's spread, not y*'s. The covariate calibration is made to
y*'s OLS (to y's it would publish y's regression, which an attacker who knows the others
inverts as L grows).

**Choosing κ ("auto").** With unlimited implicates the attacker's posterior for y_i combines
its leave-one-out predictive N(μ_i, s_i²) with y*_i ~ N(y_i, κ²) (:func:`unlimited_bound`);
κ is the smallest value on a grid of 2 significant figures at which every record's
attributable risk under that posterior stays within the target: a bound that holds for any
number of later draws. κ is a function of the confidential data (one number, released in
release.json as every published parameter is).
"""

from __future__ import annotations

import numpy as np

from synthgeo.risk.predictive import Predictive
from synthgeo.risk.release_attacker import attacker_predictive

__all__ = ["INPUT_NOISE_KEY", "noisy_response", "choose_kappa", "unlimited_bound"]

#: The key of the input noise's seed among the release seed's children
#: (:func:`synthgeo._seed.keyed_seeds`), apart from the implicates' 0 … L − 1.
INPUT_NOISE_KEY = 1_000_000_007


def noisy_response(y: np.ndarray, kappa: float, seed) -> np.ndarray:
    """Return y* = y + κ z, z standard normal from ``numpy.random.default_rng(seed)``.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Confidential response, model scale.
    kappa : float
        κ ≥ 0, model scale.
    seed : int or SeedSequence
        The input noise's own seed (:func:`synthgeo._seed.keyed_seeds` of the release's).

    Returns
    -------
    ndarray of shape (n,)

    Examples
    --------
    >>> noisy_response(np.zeros(3), 0.0, 1).tolist()
    [0.0, 0.0, 0.0]
    >>> bool(np.allclose(noisy_response(np.zeros(2), 0.1, 1), noisy_response(np.zeros(2), 0.1, 1)))
    True
    """
    y = np.asarray(y, float)
    if kappa == 0:
        return y.copy()
    return y + float(kappa) * np.random.default_rng(seed).standard_normal(y.size)


def unlimited_bound(loo: Predictive, y: np.ndarray, kappa: float, risk_of) -> np.ndarray:
    """Per record: the attributable risk of an attacker who knows y*_i exactly (any L).

    Parameters
    ----------
    loo : Predictive
        The leave-one-out baseline, (L, n), model scale.
    y : ndarray of shape (n,)
    kappa : float
        κ > 0.
    risk_of : callable
        ``Predictive -> ndarray (n,)``: the Rao-Blackwellised risk of the judged measure.

    Returns
    -------
    ndarray of shape (n,)
        risk(attacker with information 1/κ²) − risk(baseline).

    Examples
    --------
    >>> from synthgeo.risk.rao_blackwell import rb_risk
    >>> from synthgeo.config.measure import Measure
    >>> loo = Predictive(mean=np.zeros((1, 1)), sd=np.full((1, 1), 0.3))
    >>> f = lambda p: rb_risk(p, np.zeros(1), Measure.parse("rel:0.1"))
    >>> float(unlimited_bound(loo, np.zeros(1), 0.3, f)[0].round(3))
    0.039
    """
    info = np.full(np.asarray(y).size, np.inf)
    return risk_of(attacker_predictive(loo, y, info, kappa=kappa)) - risk_of(loo)


def choose_kappa(loo: Predictive, y: np.ndarray, threshold: float, risk_of, *,
                 largest: float = 10.0) -> float:
    """Return the smallest κ (2 significant figures) whose unlimited bound is within threshold.

    Parameters
    ----------
    loo, y, risk_of
        As :func:`unlimited_bound`.
    threshold : float
        The largest attributable risk allowed for any record.
    largest : float, default=10.0
        κ searched up to this (model scale).

    Returns
    -------
    float
        κ; ``largest`` when even that is not enough (the caller reports it).

    Examples
    --------
    >>> from synthgeo.risk.rao_blackwell import rb_risk
    >>> from synthgeo.config.measure import Measure
    >>> loo = Predictive(mean=np.zeros((1, 1)), sd=np.full((1, 1), 0.3))
    >>> f = lambda p: rb_risk(p, np.zeros(1), Measure.parse("rel:0.1"))
    >>> choose_kappa(loo, np.zeros(1), 0.10, f)
    0.2
    """
    def ok(k: float) -> bool:
        return bool(unlimited_bound(loo, y, k, risk_of).max() <= threshold)

    lo, hi = 0.0, float(largest)
    if not ok(hi):
        return hi
    for _ in range(60):  # bisection; the bound falls as κ grows
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
        if hi - lo < 1e-4 * hi:
            break
    step = 10.0 ** (np.floor(np.log10(hi)) - 1)  # 2 significant figures, rounded up
    k = float(np.round(np.ceil(hi / step - 1e-9) * step, 12))
    while not ok(k):  # the rounding is upwards; a flat bound can still need a step more
        k = float(np.round(k + step, 12))
    return k
