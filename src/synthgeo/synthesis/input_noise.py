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
its leave-one-out predictive N(μ_i, s_i²) with y*_i ~ N(y_i, κ²)
(:func:`synthgeo.risk.release_attacker.unlimited_bound`);
κ is the smallest value on a grid of 2 significant figures at which every record's
attributable risk under that posterior stays within the target: a bound that holds for any
number of later draws. κ is a function of the confidential data (one number, released in
release.json as every published parameter is).
"""

from __future__ import annotations

import numpy as np

__all__ = ["INPUT_NOISE_KEY", "noisy_response", "choose_kappa", "smallest_sd"]

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


def choose_kappa(bound_of, threshold: float, *, largest: float = 10.0) -> float:
    """Return the smallest κ (2 significant figures) whose unlimited bound is within threshold.

    Parameters
    ----------
    bound_of : callable
        ``κ -> ndarray (n,)``: each record's attributable risk for any number of pooled
        implicates (:func:`unlimited_bound`).
    threshold : float
        The largest attributable risk allowed for any record.
    largest : float, default=10.0
        κ searched up to this (model scale).

    Returns
    -------
    float
        κ; ``largest`` when even that is not enough (the verdict then says FAIL).

    Examples
    --------
    >>> bound = lambda k: np.array([0.3 / (1.0 + 10.0 * k ** 2)])  # falls as κ grows
    >>> choose_kappa(bound, 0.10)
    0.45
    """
    def ok(k: float) -> bool:
        return bool(np.max(bound_of(k)) <= threshold)

    if not ok(float(largest)):
        return float(largest)
    return smallest_sd(ok, largest)


def smallest_sd(ok, largest: float) -> float:
    """Return the smallest sd in (0, ``largest``] with ``ok(sd)``, to 2 significant figures.

    Bisection on a criterion that holds from some sd upwards (the attacker's figure falls as the
    noise grows), then rounded *up* to 2 significant figures, stepping once more where a flat
    criterion needs it; never above ``largest``. The noise choosers' one search
    (:func:`choose_kappa`, :func:`synthgeo.synthesis.mean_noise.choose_mean_noise`).

    Parameters
    ----------
    ok : callable
        ``sd -> bool``, true at ``largest``.
    largest : float

    Returns
    -------
    float

    Examples
    --------
    >>> smallest_sd(lambda s: s >= 0.123456, 10.0)
    0.13
    """
    lo, hi = 0.0, float(largest)
    for _ in range(60):  # bisection; the criterion holds above some sd
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
        if hi - lo < 1e-4 * hi:
            break
    step = 10.0 ** (np.floor(np.log10(hi)) - 1)  # 2 significant figures, rounded up
    k = float(np.round(np.ceil(hi / step - 1e-9) * step, 12))
    while k < largest and not ok(k):  # the rounding is upwards; a flat bound may need a step
        k = float(np.round(k + step, 12))
    return min(k, float(largest))
