r"""The differentially private release of verification measures: subsample and aggregate.

Barrientos, Bolton, Balmat, Reiter, de Figueiredo, Machanavajjhala, Chen, Kneifel & DeLong
(2018) verify an analyst's coefficients on confidential data with the *subsample and aggregate*
idea (Nissim, Raskhodnikova & Smith 2007; Barrientos, Reiter, Machanavajjhala & Chen 2019):
split the confidential records at random into M disjoint subsets, compute the statistic in
each, and release a noisy aggregate. What is implemented here (docs/risk-and-utility.md,
"Verification"):

- each of the M subsets gives, per coefficient, a value in [0, 1] for each measure;
- the released value is the mean over the subsets plus Laplace noise, clipped to [0, 1]
  (clipping is post-processing and costs no privacy);
- one record lies in exactly one subset, so adding, removing or changing it moves each mean by
  at most 1/M, and the vector of the d = (number of measures × number of coefficients) means
  by at most Δ₁ = d/M in L1 norm. Laplace noise of scale b = Δ₁/ε = d/(M ε) on each gives
  ε-differential privacy (Dwork, McSherry, Nissim & Smith 2006; Dwork & Roth 2014, Thm 3.6).

The partition is drawn from a seeded generator; the seed is never written to an output (whoever
knows it could remove the noise).
"""

from __future__ import annotations

import numpy as np

__all__ = ["partition", "laplace_scale", "release_means"]


def partition(n_records: int, n_subsets: int, rng: np.random.Generator) -> np.ndarray:
    """Assign each record to one of ``n_subsets`` disjoint subsets of near-equal size.

    Parameters
    ----------
    n_records, n_subsets : int
        N and M, with 2 ≤ M ≤ N.
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of int of shape (n_records,)
        The subset of each record, 0 … M − 1; sizes differ by at most one.

    Examples
    --------
    >>> np.bincount(partition(10, 3, np.random.default_rng(0))).tolist()
    [4, 3, 3]
    """
    if not 2 <= n_subsets <= n_records:
        raise ValueError(f"`n_subsets` must be in [2, {n_records}], got {n_subsets!r}")
    return rng.permutation(np.arange(n_records) % n_subsets)


def laplace_scale(n_values: int, n_subsets: int, epsilon: float) -> float:
    """Return b = Δ₁/ε = n_values/(M ε), the noise scale of :func:`release_means`.

    Examples
    --------
    >>> laplace_scale(6, 5, 1.0)
    1.2
    """
    if not (np.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"`epsilon` must be a positive finite number, got {epsilon!r}")
    return n_values / (n_subsets * float(epsilon))


def release_means(per_subset: np.ndarray, epsilon: float,
                  rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """Release the means over subsets of values in [0, 1] with ε-DP Laplace noise.

    Parameters
    ----------
    per_subset : ndarray of shape (M, d)
        Each subset's d values, each in [0, 1] (a subset whose fit failed holds 0: a fixed
        value, so the sensitivity is unchanged).
    epsilon : float
        The privacy loss of the whole vector (ε > 0).
    rng : numpy.random.Generator

    Returns
    -------
    released : ndarray of shape (d,)
        mean + Laplace(0, b), clipped to [0, 1].
    scale : float
        b = d/(M ε).

    Examples
    --------
    >>> vals = np.ones((50, 2))
    >>> out, b = release_means(vals, 1e6, np.random.default_rng(0))
    >>> np.round(out, 3).tolist(), b
    ([1.0, 1.0], 4e-08)
    """
    vals = np.asarray(per_subset, dtype=float)
    if vals.ndim != 2 or np.any(~np.isfinite(vals)) or np.any((vals < 0) | (vals > 1)):
        raise ValueError("`per_subset` must be an (M, d) array of values in [0, 1]")
    m, d = vals.shape
    b = laplace_scale(d, m, epsilon)
    noisy = vals.mean(axis=0) + rng.laplace(0.0, b, size=d)
    return np.clip(noisy, 0.0, 1.0), b
