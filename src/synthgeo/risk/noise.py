r"""Decisions on Monte Carlo estimates: bounds, counts above a threshold, the largest, rises.

Every per-record risk of synthgeo is a mean over L implicates (or posterior draws), so it has a
Monte Carlo standard error (:mod:`synthgeo.risk.records`; docs/risk-and-utility.md, "Monte Carlo
error and the decisions taken on it"). The rules here take the estimate *with* its error, at the
board's level ``[risk] confidence`` = 1 − α (default 0.95), one-sided quantiles z_q of the
Student t distribution with L − 1 degrees of freedom (the se is estimated from the same L
values; Student 1908; the normal quantile Φ⁻¹(q) when L is not given). At L = 50 and
n = 10⁵ records the familywise quantile is t_{49} = 5.6 against Φ⁻¹ = 4.9; the normal one
would count several rises beyond noise between identical models:

- **per record**: upper bound a_i + z_{1−α} se_i, lower bound a_i − z_{1−α} se_i. A record is
  *possibly above* a threshold t when its upper bound exceeds t (used for **protection**: the
  risk rule's flags, and the conservative count of the verdict's share above), *certainly
  above* when its lower bound does;
- **the largest of n** (the verdict's ``max_attributable_record``): the largest of n noisy
  estimates is biased upwards, and a per-record bound does not cover a maximum. The
  simultaneous (Bonferroni) bounds with z_{1−α/n} hold for all n records at once with
  probability ≥ 1 − α, so max_i(a_i + z_{1−α/n} se_i) is an upper and max_i(a_i − z_{1−α/n}
  se_i) a lower (1 − α) bound on max_i of the true a_i (Bonferroni 1936; e.g. Hochberg &
  Tamhane 1987, *Multiple Comparison Procedures*, §2.2). PASS needs the upper bound within
  the limit;
- **a rise** (the neighbour check): d_i = r̃ʳ_i − r̃ᵘ_i with se from the per-implicate paired
  differences; it counts only when d_i > z_{1−α/n} se(d_i), the familywise level over the n
  records checked, so that with no real change the count is 0 with probability ≥ 1 − α.

A record with se = 0 (L = 1, or an exact figure) is judged on its point value.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri, stdtrit

__all__ = ["z_value", "familywise_z", "ThresholdCounts", "threshold_counts", "max_bounds",
           "rise_beyond_noise", "paired_se"]


def _check_confidence(confidence: float) -> float:
    c = float(confidence)
    if not 0.5 <= c < 1.0:
        raise ValueError(f"`confidence` must be in [0.5, 1), got {confidence!r}.")
    return c


def _quantile(q: float, n_rows: int | None) -> float:
    if n_rows is None or int(n_rows) < 2:
        return float(ndtri(q))
    return float(stdtrit(int(n_rows) - 1, q))


def z_value(confidence: float, n_rows: int | None = None) -> float:
    """One-sided quantile for a per-record bound: t_{L−1}(confidence), or Φ⁻¹ without L.

    Parameters
    ----------
    confidence : float
        1 − α, in [0.5, 1).
    n_rows : int, optional
        L, the values the se was estimated from (None or < 2: the normal quantile).

    Examples
    --------
    >>> round(z_value(0.95), 4), round(z_value(0.95, 50), 4)
    (1.6449, 1.6766)
    """
    return _quantile(_check_confidence(confidence), n_rows)


def familywise_z(confidence: float, n: int, n_rows: int | None = None) -> float:
    """One-sided Bonferroni quantile at 1 − α/n over ``n`` records (t_{L−1} or normal).

    Examples
    --------
    >>> round(familywise_z(0.95, 1), 4), round(familywise_z(0.95, 100_000), 2)
    (1.6449, 4.89)
    >>> round(familywise_z(0.95, 100_000, n_rows=50), 2)
    5.59
    """
    alpha = 1.0 - _check_confidence(confidence)
    return _quantile(1.0 - alpha / max(int(n), 1), n_rows)


def _arrays(estimate, se) -> tuple[np.ndarray, np.ndarray]:
    a, s = np.asarray(estimate, dtype=float), np.asarray(se, dtype=float)
    if a.shape != s.shape or a.ndim != 1:
        raise ValueError(f"`estimate` and `se` must be 1-D of one shape, got {a.shape}, "
                         f"{s.shape}.")
    if np.any(s < 0) or not np.all(np.isfinite(s)):
        raise ValueError("`se` must be finite and non-negative.")
    return a, s


class ThresholdCounts(dict):
    """Counts of records above a threshold: ``n_point``, ``n_certain``, ``n_possible``, ``n``.

    A dict (JSON-ready); see :func:`threshold_counts`.
    """


def threshold_counts(estimate, se, threshold: float, confidence: float = 0.95,
                     n_rows: int | None = None,
                     ) -> tuple[ThresholdCounts, np.ndarray, np.ndarray]:
    """Count records above ``threshold``: by the point estimate, certainly, and possibly.

    Parameters
    ----------
    estimate, se : ndarray of shape (n_records,)
        a_i and its Monte Carlo standard error.
    threshold : float
    confidence : float, default=0.95
        1 − α; z = :func:`z_value` per record (module docstring).
    n_rows : int, optional
        L behind each se (the t quantile's degrees of freedom + 1).

    Returns
    -------
    counts : ThresholdCounts
        ``n``, ``n_point`` (a_i > t), ``n_certain`` (a_i − z se_i > t), ``n_possible``
        (a_i + z se_i > t).
    certain, possible : ndarray of bool, shape (n_records,)

    Examples
    --------
    >>> c, _, possible = threshold_counts([0.11, 0.30, 0.05], [0.05, 0.01, 0.04], 0.10)
    >>> dict(c), possible.tolist()
    ({'n': 3, 'n_point': 2, 'n_certain': 1, 'n_possible': 3}, [True, True, True])
    """
    a, s = _arrays(estimate, se)
    z = z_value(confidence, n_rows)
    certain, possible = a - z * s > threshold, a + z * s > threshold
    counts = ThresholdCounts(n=int(a.size), n_point=int((a > threshold).sum()),
                             n_certain=int(certain.sum()), n_possible=int(possible.sum()))
    return counts, certain, possible


def max_bounds(estimate, se, confidence: float = 0.95,
               n_rows: int | None = None) -> dict[str, float]:
    """Return the largest a_i with simultaneous (Bonferroni) bounds over the n records.

    Parameters
    ----------
    estimate, se : ndarray of shape (n_records,)
    confidence : float, default=0.95
    n_rows : int, optional
        L behind each se.

    Returns
    -------
    dict
        ``point`` (max_i a_i, biased upwards), ``lower`` (max_i(a_i − z se_i)), ``upper``
        (max_i(a_i + z se_i)), ``z`` (:func:`familywise_z`).

    Examples
    --------
    >>> b = max_bounds([0.12, 0.05], [0.05, 0.0])
    >>> round(b["point"], 2), round(b["upper"], 3), round(b["lower"], 3)
    (0.12, 0.218, 0.05)
    """
    a, s = _arrays(estimate, se)
    if a.size == 0:
        nan = float("nan")
        return {"point": nan, "lower": nan, "upper": nan, "z": nan}
    z = familywise_z(confidence, a.size, n_rows)
    return {"point": float(a.max()), "lower": float((a - z * s).max()),
            "upper": float((a + z * s).max()), "z": z}


def paired_se(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    r"""Monte Carlo se of mean(second) − mean(first) over implicates, per record.

    Paired by implicate index when both have L rows (sd of the L differences / √L, which keeps
    the correlation common random numbers give); otherwise the two means are independent:
    √(s²₁/L₁ + s²₂/L₂).

    Parameters
    ----------
    first, second : ndarray of shape (L₁, n_records), (L₂, n_records)
        Per-implicate values (e.g. exact probabilities p_iℓ of two models).

    Returns
    -------
    ndarray of shape (n_records,)
        0 where a side has a single row and the other too (no variance to estimate).

    Examples
    --------
    >>> p = np.array([[0.1, 0.5], [0.3, 0.5]])
    >>> paired_se(p, p + 0.1).round(3).tolist(), paired_se(p, p[::-1]).round(3).tolist()
    ([0.0, 0.0], [0.2, 0.0])
    """
    u, r = np.asarray(first, float), np.asarray(second, float)
    if u.ndim != 2 or r.ndim != 2 or u.shape[1] != r.shape[1]:
        raise ValueError(f"need (L, n) arrays over the same records, got {u.shape}, {r.shape}.")
    if u.shape[0] == r.shape[0]:
        return _var(r - u) ** 0.5 / np.sqrt(u.shape[0])
    return np.sqrt(_var(u) / u.shape[0] + _var(r) / r.shape[0])


def _var(x: np.ndarray) -> np.ndarray:
    """Sample variance over axis 0 (ddof = 1); 0 with a single row."""
    return x.var(axis=0, ddof=1) if x.shape[0] > 1 else np.zeros(x.shape[1])


def rise_beyond_noise(rise, se, confidence: float = 0.95,
                      n_rows: int | None = None) -> tuple[np.ndarray, float]:
    """Which rises exceed their Monte Carlo noise at the familywise level over the records.

    Parameters
    ----------
    rise, se : ndarray of shape (n_records,)
        d_i = r̃ʳ_i − r̃ᵘ_i and its se (:func:`paired_se`).
    confidence : float, default=0.95
    n_rows : int, optional
        L behind each se (paired differences).

    Returns
    -------
    beyond : ndarray of bool
        d_i > z se_i with z = :func:`familywise_z` over the n records (and d_i > 0).
    z : float

    Examples
    --------
    >>> beyond, z = rise_beyond_noise([0.02, 0.30, -0.5], [0.02, 0.01, 0.0])
    >>> beyond.tolist(), round(z, 3)
    ([False, True, False], 2.128)
    """
    d, s = _arrays(rise, se)
    z = familywise_z(confidence, d.size, n_rows)
    return (d > z * s) & (d > 0), z
