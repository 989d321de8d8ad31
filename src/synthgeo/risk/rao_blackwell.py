r"""Exact within-ε probabilities of normal guesses, and the Rao-Blackwellised per-record risk.

The realised share r_i = L⁻¹ Σ_ℓ 1{|g(Y†_i^(ℓ)) − g(y_i)| ≤ tol} is a Monte Carlo estimate: with
L = 100 its sd reaches 0.05, so over 25,000 records the largest share is ≈ 0.2 with no real
risk. Given the draw ℓ, Y†_i^(ℓ) ~ N(μ_iℓ, τ²_ℓ) with μ_iℓ = x_iβ^(ℓ) + d_s w_s^(ℓ), so its
conditional expectation is exact (Rao-Blackwell):

.. math::

    \tilde r_i = \frac1L \sum_\ell P\bigl(lo_i \le N(\mu_{i\ell}, \tau^2_\ell) \le hi_i\bigr)
             = \frac1L \sum_\ell \Bigl[\Phi\Bigl(\frac{hi_i - \mu_{i\ell}}{\tau_\ell}\Bigr)
               - \Phi\Bigl(\frac{lo_i - \mu_{i\ell}}{\tau_\ell}\Bigr)\Bigr],

with [lo_i, hi_i] the model-scale interval of values within the tolerance of y_i
(:func:`synthgeo.model.transform.tolerance_bounds`), and E[r_i | draws] = r̃_i. The same
probability scores the baselines' normal guesses (:mod:`synthgeo.risk.loo`,
:mod:`synthgeo.risk.baselines`). Source: docs/risk-and-utility.md; the Rao-Blackwell theorem
(Casella & Robert 1996, Biometrika 83(1), doi:10.1093/biomet/83.1.81, for its use on Monte Carlo
averages).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr

from synthgeo.model.transform import tolerance_bounds
from synthgeo.risk.measure import Measure
from synthgeo.risk.predictive import Predictive

__all__ = ["normal_interval_probability", "within_probability", "rb_risk"]


def normal_interval_probability(mean: np.ndarray, sd: np.ndarray, lo: np.ndarray,
                                hi: np.ndarray) -> np.ndarray:
    """P(lo ≤ Y ≤ hi) for Y ~ N(mean, sd²), without cancellation in the upper tail.

    Parameters
    ----------
    mean, sd, lo, hi : array-like
        Broadcast together; ``sd`` ≥ 0 (0 is a point mass: the probability is 1 or 0);
        ``lo`` may be −inf.

    Returns
    -------
    ndarray
        In [0, 1].

    Notes
    -----
    Φ(z_hi) − Φ(z_lo) loses every digit when both z are large and positive (1 − 1); there the
    equal Φ(−z_lo) − Φ(−z_hi) is used.

    Examples
    --------
    >>> round(float(normal_interval_probability(0.0, 1.0, -1.96, 1.96)), 4)
    0.95
    >>> f"{float(normal_interval_probability(0.0, 1.0, 8.0, 9.0)):.3g}"  # not 1 - 1 = 0
    '6.22e-16'
    >>> float(normal_interval_probability(2.0, 0.0, 1.0, 3.0))
    1.0
    """
    mean, sd = np.asarray(mean, float), np.asarray(sd, float)
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    shape = np.broadcast_shapes(mean.shape, sd.shape, lo.shape, hi.shape)
    if len(shape) < 2 or shape[0] <= _ROWS:
        return _interval_probability(mean, sd, lo, hi)
    out = np.empty(shape)
    for a in range(0, shape[0], _ROWS):  # blocks of rows: temporaries that stay in cache
        rows = slice(a, a + _ROWS)
        out[rows] = _interval_probability(*(_rows_of(v, rows, len(shape))
                                            for v in (mean, sd, lo, hi)))
    return out


#: Rows (implicates) per block of :func:`normal_interval_probability`.
_ROWS = 8


def _rows_of(v: np.ndarray, rows: slice, ndim: int) -> np.ndarray:
    """Rows ``rows`` of ``v`` broadcast to ``ndim`` dimensions (a size-1 first axis stays)."""
    v = v.reshape((1,) * (ndim - v.ndim) + v.shape)
    return v if v.shape[0] == 1 else v[rows]


def _interval_probability(mean, sd, lo, hi) -> np.ndarray:
    """:func:`normal_interval_probability` on one block: each Φ evaluated once per element.

    Where z_lo > 0 the pair is (−z_lo, −z_hi), elsewhere (z_hi, z_lo); P = Φ(first) −
    Φ(second). The same values as evaluating both branches and choosing (negation is exact).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        zl, zh = (lo - mean) / sd, (hi - mean) / sd
        upper = zl > 0
        p = ndtr(np.where(upper, -zl, zh))
        p -= ndtr(np.where(upper, -zh, zl))
    point = (lo <= mean) & (mean <= hi)
    return np.clip(np.where(sd > 0, p, point.astype(float)), 0.0, 1.0)


def within_probability(pred: Predictive, truth: np.ndarray, measure: Measure,
                       g: str = "exp") -> np.ndarray:
    """Per implicate, the exact probability that a draw of ``pred`` lies within ``measure``.

    Parameters
    ----------
    pred : Predictive
        N(mean, sd²) per (implicate, record), model scale.
    truth : ndarray of shape (n_records,)
        y, model scale.
    measure : Measure
    g : {"exp", "identity"}, default="exp"
        Map to the person's scale (:mod:`synthgeo.model.transform`).

    Returns
    -------
    ndarray of shape (n_implicates, n_records)

    Raises
    ------
    ValueError
        If ``truth`` does not hold one finite value per record.

    Examples
    --------
    >>> pred = Predictive(mean=np.log([[100_000.0]]), sd=np.array([[0.05]]))
    >>> p = within_probability(pred, np.log([100_000.0]), Measure.parse("rel:0.1"))
    >>> round(float(p[0, 0]), 3)  # P(log 0.9 <= 0.05 Z <= log 1.1)
    0.954
    """
    y = _check_truth(truth, pred.n_records)
    lo, hi = tolerance_bounds(y, measure.kind, measure.tol, g)
    return normal_interval_probability(pred.mean, pred.sd, lo[None, :], hi[None, :])


def rb_risk(pred: Predictive, truth: np.ndarray, measure: Measure, g: str = "exp") -> np.ndarray:
    r"""Rao-Blackwellised per-record risk: the mean over implicates of the exact probability.

    Parameters
    ----------
    pred : Predictive
        For the release: :func:`~synthgeo.risk.predictive.release_predictive`; for a baseline,
        its predictive (the same formula gives the baseline's risk).
    truth : ndarray of shape (n_records,)
        y, model scale.
    measure : Measure
    g : {"exp", "identity"}, default="exp"

    Returns
    -------
    ndarray of shape (n_records,)
        r̃_i in [0, 1] (module docstring); the expectation of the realised share given the draws.

    Examples
    --------
    >>> pred = Predictive(mean=np.array([[0.0, 5.0], [0.0, 0.0]]), sd=np.ones((2, 2)))
    >>> rb_risk(pred, np.zeros(2), Measure(kind="abs", tol=1.0), g="identity").round(4).tolist()
    [0.6827, 0.3414]
    """
    return within_probability(pred, truth, measure, g).mean(axis=0)


def _check_truth(truth, n: int) -> np.ndarray:
    y = np.asarray(truth, dtype=float)
    if y.shape != (n,):
        raise ValueError(f"`truth` must have shape (n_records,) = ({n},), got {y.shape}.")
    if not np.all(np.isfinite(y)):
        raise ValueError(f"`truth` holds {int(np.sum(~np.isfinite(y)))} NaN or infinite "
                         "value(s); drop those records.")
    return y
