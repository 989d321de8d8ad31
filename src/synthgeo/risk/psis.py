"""Pareto-smoothed importance sampling for many records at once: ArviZ's ``psislw``, by rows.

PSIS (Vehtari, Gelman & Gabry 2017, *Statistics and Computing* 27, 1413–1432; Vehtari et al.
2024, JMLR 25(72)) smooths each record's largest importance weights by the quantiles of a
generalised Pareto distribution fitted to them (Zhang & Stephens 2009, *Technometrics* 51(3),
316–325, the empirical-Bayes fit). ``arviz.psislw`` does it one record at a time in Python
(``arviz.stats.stats._psislw``, ``_gpdfit``, ``_gpinv``): ~0.3 ms a record, ~30 s for the 10⁵
records of a city-size release. :func:`psislw_rows` is the same algorithm, step for step and
with the same constants, on all records whose tails have the same length at once (with L
draws all records but those with tied weights at the cut share one length). A record whose
fit drops negligible grid weights (rare) is done one row at a time by :func:`psislw`, ArviZ
0.23's ``psislw`` ported operation for operation (Apache License 2.0), so that nothing here
imports ArviZ (its import compiles numba kernels: ~1.5 s of a ``synthgeo draw``). Results equal
ArviZ's bit for bit on the tests' arrays (``tests/test_psis.py``, ``tests/test_loo_posterior.py``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["psislw", "psislw_rows"]

_PRIOR_BS, _PRIOR_K = 3, 10  # ArviZ's _gpdfit constants

#: Records fitted together: the fit's (rows, m, m) arrays (m = 30 + √tail, 34 at L = 100)
#: stay ~40 MB (all 10⁵ records at once took 1.2 GB more peak memory).
CHUNK_ROWS = 4096


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


def psislw_rows(log_weights: np.ndarray, reff: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Return ``arviz.psislw(log_weights, reff)`` for a 2-D array: (smoothed, normalised, k̂).

    Parameters
    ----------
    log_weights : ndarray of shape (n_records, S)
        Raw log importance weights, one row per record (not changed).
    reff : float, default=1.0
        Relative efficiency of the S draws.

    Returns
    -------
    lw : ndarray of shape (n_records, S)
        Pareto-smoothed log weights, normalised per row (log-sum-exp 0).
    k : ndarray of shape (n_records,)
        Estimated Pareto shape k̂ per row (inf where the tail had 4 draws or fewer).

    Raises
    ------
    ValueError
        If ``log_weights`` is not 2-D or ``reff`` is not positive.

    Examples
    --------
    >>> import arviz as az
    >>> rng = np.random.default_rng(0)
    >>> raw = rng.standard_t(3, (5, 100))
    >>> lw, k = psislw_rows(raw)
    >>> lw_az, k_az = az.psislw(raw.copy())
    >>> bool(np.allclose(lw, lw_az, rtol=0, atol=1e-12) and np.allclose(k, k_az))
    True
    """
    x = np.array(log_weights, dtype=float)  # a copy
    if x.ndim != 2:
        raise ValueError(f"`log_weights` must be 2-D (n_records, S), got shape {x.shape}")
    if not (np.isfinite(reff) and reff > 0):
        raise ValueError(f"`reff` must be positive and finite, got {reff!r}")
    n_rows, S = x.shape
    cutoff_ind = -int(np.ceil(min(S / 5.0, 3 * (S / reff) ** 0.5))) - 1
    cutoffmin = np.log(np.finfo(float).tiny)
    k = np.full(n_rows, np.inf)
    x -= x.max(axis=1, keepdims=True)
    xcutoff = np.maximum(np.sort(x, axis=1)[:, cutoff_ind], cutoffmin)
    tail = x > xcutoff[:, None]
    tail_len = tail.sum(axis=1)
    by_hand = np.zeros(n_rows, bool)
    groups = [np.flatnonzero(tail_len == t) for t in np.unique(tail_len[tail_len > 4])]
    for rows in (g[i:i + CHUNK_ROWS] for g in groups for i in range(0, g.size, CHUNK_ROWS)):
        t = int(tail_len[rows[0]])
        tail_idx = np.nonzero(tail[rows])[1].reshape(rows.size, t)  # ascending, as np.where
        x_tail = np.take_along_axis(x[rows], tail_idx, axis=1)
        order = np.argsort(x_tail, axis=1)  # the same 1-D sort of each row as ArviZ's
        expcut = np.exp(xcutoff[rows])
        ary = np.take_along_axis(np.exp(x_tail) - expcut[:, None], order, axis=1)
        kk, sigma, dropped = _gpdfit_rows(ary)
        by_hand[rows[dropped]] = True
        keep = ~dropped
        k[rows[keep]] = kk[keep]
        smooth = keep & np.isfinite(kk)
        if smooth.any():
            r = rows[smooth]
            sti = np.arange(0.5, t) / t
            tail_x = np.log(_gpinv_rows(sti, kk[smooth], sigma[smooth]) + expcut[smooth, None])
            cols = np.take_along_axis(tail_idx[smooth], order[smooth], axis=1)
            x[r[:, None], cols] = tail_x
            xr = x[r]
            xr[xr > 0] = 0
            x[r] = xr
    m = x.max(axis=1, keepdims=True)  # ArviZ's logsumexp, row by row (max shifted)
    x -= np.log(np.exp(x - m).sum(axis=1, keepdims=True)) + m
    for i in np.flatnonzero(by_hand):  # the one-row algorithm for these rows
        x[i], k[i] = _psislw(np.array(log_weights[i], dtype=float), cutoff_ind, cutoffmin)
    return x, k


def _gpdfit_rows(ary: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ArviZ's ``_gpdfit`` on each sorted row of ``ary`` (g, n): k̂, σ and the rows it skips.

    A row whose weights over the b grid fall below 10ε somewhere (ArviZ then drops those grid
    points) is flagged and left to ArviZ.
    """
    g, n = ary.shape
    m_est = 30 + int(n**0.5)
    b_ary = 1 - np.sqrt(m_est / (np.arange(1, m_est + 1, dtype=float) - 0.5))
    b_ary = b_ary[None, :] / (_PRIOR_BS * ary[:, int(n / 4 + 0.5) - 1])[:, None]
    b_ary += (1 / ary[:, -1])[:, None]
    k_ary = np.log1p(-b_ary[:, :, None] * ary[:, None, :]).mean(axis=2)
    len_scale = n * (np.log(-(b_ary / k_ary)) - k_ary - 1)
    weights = 1 / np.exp(len_scale[:, None, :] - len_scale[:, :, None]).sum(axis=2)
    dropped = ~np.all(weights >= 10 * np.finfo(float).eps, axis=1)
    weights /= weights.sum(axis=1, keepdims=True)
    b_post = np.sum(b_ary * weights, axis=1)
    k_post = np.log1p(-b_post[:, None] * ary).mean(axis=1)
    sigma = -k_post / b_post
    k_post = (n * k_post + _PRIOR_K * 0.5) / (n + _PRIOR_K)
    return k_post, sigma, dropped


def _gpinv_rows(probs: np.ndarray, kappa: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """ArviZ's ``_gpinv`` for probabilities in (0, 1), one (κ, σ) per row: (g, len(probs))."""
    kap = kappa[:, None]
    small = np.abs(kap) < np.finfo(float).eps
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(small, -np.log1p(-probs)[None, :],
                     np.expm1(-kap * np.log1p(-probs)[None, :]) / np.where(small, 1.0, kap))
    x = x * sigma[:, None]
    return np.where(sigma[:, None] <= 0, np.nan, x)
