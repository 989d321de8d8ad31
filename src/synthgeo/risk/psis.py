r"""Pareto-smoothed importance sampling (PSIS) of log weights, per record.

Vehtari, Simpson, Gelman, Yao & Gabry (2024), *Pareto smoothed importance sampling*, JMLR
25(72), 1–58 (Sect. 3; Algorithm 1): per row of S log weights, the largest
M = ⌈min(S/5, 3 √(S / r_eff))⌉ raw weights are replaced by the expected order statistics of a
generalised Pareto distribution fitted to them (the empirical-Bayes estimate of Zhang &
Stephens 2009, *Technometrics* 51(3), 316–325, with the weakly informative prior on k of
Vehtari et al. 2024, Appendix C), truncated at the largest raw weight and normalised; k̂ is
the fitted shape (k̂ > 0.7: the importance-sampling estimate is not reliable).

This is ArviZ 0.23's ``psislw`` (``arviz/stats/stats.py``: ``psislw``, ``_psislw``,
``_gpdfit``, ``_gpinv``; Apache License 2.0), the same operations in the same order on numpy
arrays, so its output is the same to the last bit (tests/test_psis.py compares the two). It is
kept here because importing ArviZ costs about 1.5 s (numba compiles its kernels at import),
a third of the time ``synthgeo draw`` is allowed (issue 27), for a function of forty lines.
"""

from __future__ import annotations

import numpy as np

__all__ = ["psislw"]


def psislw(log_weights: np.ndarray, reff: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Pareto-smoothed, truncated and normalised log weights, row by row.

    Parameters
    ----------
    log_weights : array_like of shape (..., S)
        Raw log importance weights; the last axis holds the S draws.
    reff : float, default=1.0
        Relative efficiency of the draws (ESS / S); 1 for independent draws.

    Returns
    -------
    lw : ndarray of shape (..., S)
        Smoothed log weights; ``exp(lw)`` sums to 1 along the last axis.
    k : ndarray of shape (...)
        The fitted Pareto shape k̂ of each row (``inf`` when the tail has 4 or fewer draws).

    Raises
    ------
    ValueError
        If ``log_weights`` has no axis or ``reff`` is not positive.

    Examples
    --------
    >>> lw, k = psislw(np.zeros((2, 10)))
    >>> np.exp(lw).sum(axis=1).round(12).tolist(), k.tolist()
    ([1.0, 1.0], [inf, inf])
    """
    lw = np.array(log_weights, dtype=float)  # a copy: the rows are smoothed in place
    if lw.ndim < 1:
        raise ValueError("`log_weights` must have at least one axis (the draws, last)")
    if not reff > 0:
        raise ValueError(f"`reff` must be positive (got {reff!r})")
    n_samples = lw.shape[-1]
    cutoff_ind = -int(np.ceil(min(n_samples / 5.0, 3 * (n_samples / reff) ** 0.5))) - 1
    cutoffmin = np.log(np.finfo(float).tiny)
    k = np.empty(lw.shape[:-1])
    for idx in np.ndindex(lw.shape[:-1]):
        lw[idx], k[idx] = _psislw(lw[idx], cutoff_ind, cutoffmin)
    return lw, k


def _psislw(x: np.ndarray, cutoff_ind: int, cutoffmin: float) -> tuple[np.ndarray, float]:
    """PSIS of one row ``x`` (modified in place): smoothed normalised log weights and k̂."""
    max_x = np.max(x)
    x -= max_x  # numerical accuracy
    x_sort_ind = np.argsort(x)
    xcutoff = max(x[x_sort_ind[cutoff_ind]], cutoffmin)  # body and right tail
    expxcutoff = np.exp(xcutoff)
    (tailinds,) = np.where(x > xcutoff)
    x_tail = x[tailinds]
    tail_len = len(x_tail)
    if tail_len <= 4:  # too few tail draws to fit a generalised Pareto
        k = np.inf
    else:
        x_tail_si = np.argsort(x_tail)
        x_tail = np.exp(x_tail) - expxcutoff
        k, sigma = _gpdfit(x_tail[x_tail_si])
        if np.isfinite(k):  # no smoothing when the fit failed
            sti = np.arange(0.5, tail_len) / tail_len
            smoothed_tail = np.log(_gpinv(sti, k, sigma) + expxcutoff)
            x[tailinds[x_tail_si]] = smoothed_tail
            x[x > 0] = 0  # truncate at the largest raw weight
    x -= _logsumexp(x)
    return x, k


def _logsumexp(x: np.ndarray) -> float:
    """Return log Σ exp(x) of a 1-d array, as ArviZ's ``logsumexp`` computes it (max shifted)."""
    m = x.max()
    return float(np.log(np.exp(x - m).sum()) + m)


def _gpdfit(ary: np.ndarray) -> tuple[float, float]:
    """Empirical-Bayes (k, σ) of a generalised Pareto fitted to the sorted 1-d ``ary``.

    Zhang & Stephens (2009), with the prior on k of Vehtari et al. (2024): ``prior_k`` = 10
    pseudo-observations at k = 1/2.
    """
    prior_bs = 3
    prior_k = 10
    n = len(ary)
    m_est = 30 + int(n ** 0.5)
    b_ary = 1 - np.sqrt(m_est / (np.arange(1, m_est + 1, dtype=float) - 0.5))
    b_ary /= prior_bs * ary[int(n / 4 + 0.5) - 1]
    b_ary += 1 / ary[-1]
    k_ary = np.log1p(-b_ary[:, None] * ary).mean(axis=1)
    len_scale = n * (np.log(-(b_ary / k_ary)) - k_ary - 1)
    weights = 1 / np.exp(len_scale - len_scale[:, None]).sum(axis=1)
    real_idxs = weights >= 10 * np.finfo(float).eps  # drop negligible weights
    if not np.all(real_idxs):
        weights = weights[real_idxs]
        b_ary = b_ary[real_idxs]
    weights /= weights.sum()
    b_post = np.sum(b_ary * weights)  # posterior mean of b
    k_post = np.log1p(-b_post * ary).mean()
    sigma = -k_post / b_post
    k_post = (n * k_post + prior_k * 0.5) / (n + prior_k)
    return k_post, sigma


def _gpinv(probs: np.ndarray, kappa: float, sigma: float) -> np.ndarray:
    """Quantile function of a generalised Pareto (shape ``kappa``, scale ``sigma``)."""
    x = np.full_like(probs, np.nan)
    if sigma <= 0:
        return x
    ok = (probs > 0) & (probs < 1)
    if np.all(ok):
        if np.abs(kappa) < np.finfo(float).eps:
            x = -np.log1p(-probs)
        else:
            x = np.expm1(-kappa * np.log1p(-probs)) / kappa
        x *= sigma
    else:
        if np.abs(kappa) < np.finfo(float).eps:
            x[ok] = -np.log1p(-probs[ok])
        else:
            x[ok] = np.expm1(-kappa * np.log1p(-probs[ok])) / kappa
        x *= sigma
        x[probs == 0] = 0
        x[probs == 1] = np.inf if kappa >= 0 else -sigma / kappa
    return x
