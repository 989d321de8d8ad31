r"""General utility: the propensity-score mean squared error (pMSE) against a paired null.

docs/risk-and-utility.md, "General utility: pMSE". The confidential rows and one implicate's
rows are stacked (N = 2n rows, the synthetic share c = 1/2), a logistic *propensity model*
predicts which rows are synthetic, and

.. math:: \mathrm{pMSE} = \frac{1}{N} \sum_{i=1}^{N} (\hat p_i - c)^2

(Woo, Reiter, Oganian & Karr 2009, J. Privacy and Confidentiality 1(1), Sect. 3). pMSE is 0 when
the model cannot tell the two files apart and 1/4 when it separates them.

**Paired null.** The rows are paired: in a partially synthetic file each synthetic row shares
its covariates and location with one confidential row. The null distribution of pMSE therefore
comes from permuting the confidential/synthetic label *within* each pair (each pair's two labels
swapped with probability 1/2) and refitting the propensity model, as in the permutation
approach of Snoke, Raab, Nowok, Dibben & Slavković (2018, JRSS-A 181(3), Sect. 3), with the
permutation restricted to the pairs. The independent-sample expectation
:math:`(k-1)(1-c)^2 c / N` (Snoke et al. 2018, Sect. 3) assumes two independent samples and does
not hold for paired rows (the hand-worked fixture in tests/test_pmse.py has 1/64 from the formula
and 1/32 from the paired null). From the permutation values :math:`\mathrm{pMSE}^{(b)}`,

.. math:: \text{ratio} = \frac{\mathrm{pMSE}}{\overline{\mathrm{pMSE}^{(b)}}}, \qquad
          S_\mathrm{pMSE} = \frac{\mathrm{pMSE} - \overline{\mathrm{pMSE}^{(b)}}}
                                 {\mathrm{sd}(\mathrm{pMSE}^{(b)})}

(Snoke et al. 2018, Sect. 3; R synthpop's ``utility.gen``): ratio ≈ 1 and S_pMSE ≈ 0 when
the implicate is as good as a relabelled confidential file.

On a large file the null is computed on a random subset of ``null_max_pairs`` pairs and scaled
by m/n (m pairs of n): the null pMSE of a logistic model is a sum of per-row leverages over
N (first order), so it scales as 1/N for a random subset; the subset is stated in the result.

**SPECKS** is the Kolmogorov–Smirnov distance between the propensity scores of the synthetic
and of the confidential rows (Bowen, Liu & Su 2021, "Differentially private data release via
statistical election to partition sequentially", Metron 79; ONS synthgauge's ``specks``).

The logistic model is fitted by Newton–Raphson (iteratively reweighted least squares) with
step-halving, in numpy: the null needs thousands of fits, and a statsmodels ``Logit`` call costs
more in set-up than the fit (the tests compare both fits).
"""

from __future__ import annotations

import itertools
import os
import queue
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd
import patsy
import scipy.linalg as sla
from scipy.special import expit
from scipy.stats import ks_2samp
from threadpoolctl import threadpool_limits

from synthgeo.config import PMSE_COORDINATES, PMSE_TERMS

__all__ = ["TERMS", "COORDINATES", "propensity_formula", "fit_logistic", "pmse",
           "PMSEResult", "pmse_scores", "pmse_by_variable", "grid_regions"]

#: ``[utility] pmse_terms``: main effects, or main effects and every two-way interaction.
TERMS = PMSE_TERMS
#: ``[utility] pmse_coordinates``: no coordinate term, linear, or a B-spline of each axis.
COORDINATES = PMSE_COORDINATES
#: Elements of the batched null fit's work array (float32: 32 MB); more permutations are
#: fitted in turn.
_BATCH_ELEMENTS = 8_000_000
#: Elements of the null's design (2m × columns) from which its permutations are fitted one
#: after another and the implicates scored in threads by default; below it a fit is numpy
#: calls under the GIL: its permutations are fitted in batches (:func:`_newton_batch`), and
#: threads cost CPU time without saving wall time (bundled file, 280 × 19: 0.25 s of CPU in 2
#: threads against 0.17 s in one for 50 implicates, the same wall time; 10⁵ records:
#: 10,000 × 22, threaded, one fit after another).
_THREADED_ELEMENTS = 100_000
#: Elements per block where a large design is worked on a block of rows at a time (the
#: single-precision cast of the Newton steps, an implicate's design columns): the same values
#: as the whole at once, with a block's temporaries (2^17 elements: 1 MiB in double precision;
#: 6,898 rows of 19 columns).
_BLOCK_ELEMENTS = 2**17


def _block_rows(k: int) -> int:
    """Return the rows of a block of a design with ``k`` columns (:data:`_BLOCK_ELEMENTS`)."""
    return max(1, _BLOCK_ELEMENTS // max(1, int(k)))
#: Names of the coordinate columns inside the propensity frame (metres).
_X, _Y = "__easting_m", "__northing_m"


def _q(name: str) -> str:
    return f"Q({name!r})"


def _coordinate_terms(coordinates: str, spline_df: int) -> list[str]:
    if coordinates == "none":
        return []
    if coordinates == "linear":
        return [_q(_X), _q(_Y)]
    return [f"bs({_q(_X)}, df={int(spline_df)})", f"bs({_q(_Y)}, df={int(spline_df)})"]


def propensity_formula(variables: Sequence[str], synthesized: Sequence[str], *,
                       terms: str = "main", coordinates: str = "none",
                       spline_df: int = 4) -> str:
    """Return the right-hand side of the propensity model (patsy; the intercept is implied).

    Parameters
    ----------
    variables : sequence of str
        Every released variable (the synthesized ones and those released unchanged).
    synthesized : sequence of str
        The synthesized variables (a subset of ``variables``).
    terms : {"main", "interactions"}, default="main"
        Main effects, or main effects and every two-way interaction (R synthpop's
        ``utility.gen(maxorder = 1)``).
    coordinates : {"none", "linear", "spline"}, default="none"
        Coordinate terms (metres): none, linear, or a B-spline of each axis (patsy ``bs``, with
        ``spline_df`` degrees of freedom), each as a main effect and interacting with every
        synthesized variable. Coordinates are identical within a pair, so only their
        interaction with a synthesized variable can tell the rows apart: it lets the model
        find where the synthesized values differ.
    spline_df : int, default=4

    Returns
    -------
    str

    Examples
    --------
    >>> propensity_formula(["y", "x"], ["y"])
    "Q('y') + Q('x')"
    >>> f = propensity_formula(["y", "x"], ["y"], terms="interactions", coordinates="linear")
    >>> f.split(" + Q('__easting_m')")[0]
    "(Q('y') + Q('x'))**2"
    """
    mains = " + ".join(_q(v) for v in variables)
    rhs = [mains if terms == "main" or len(variables) < 2 else f"({mains})**2"]
    coord = _coordinate_terms(coordinates, spline_df)
    if coord:
        rhs += coord
        rhs += [f"{_q(s)}:({' + '.join(coord)})" for s in synthesized]
    return " + ".join(rhs)


def fit_logistic(X: np.ndarray, t: np.ndarray, *, max_iter: int = 30,
                 tol: float = 1e-8, start: np.ndarray | None = None) -> np.ndarray:
    """Fitted probabilities of a logistic regression of ``t`` on ``X`` (maximum likelihood).

    Newton–Raphson with step-halving on the deviance; the Hessian XᵀWX is accumulated in
    single precision (it only sets the step: the gradient, and so the maximum, is computed in
    double precision; the tests compare the fit with statsmodels). Under (quasi-)separation the
    coefficients diverge; the fit stops after ``max_iter`` steps with the probabilities near 0
    and 1, which is the limit pMSE needs (it tends to 1/4 for a perfect separation).

    Parameters
    ----------
    X : ndarray of shape (N, k)
        Design matrix with an intercept column; a rank-deficient X is handled by a
        least-squares Newton step.
    t : ndarray of shape (N,)
        0/1 labels.
    max_iter : int, default=30
    tol : float, default=1e-8
        Stop when the largest change of a coefficient is below ``tol``.
    start : ndarray of shape (k,), optional
        Starting coefficients (default 0); the maximum does not depend on it.

    Returns
    -------
    ndarray of shape (N,)
        p̂.

    Examples
    --------
    >>> X = np.column_stack([np.ones(4), [1.0, 1.0, 0.0, 0.0]])
    >>> fit_logistic(X, np.array([1.0, 0.0, 0.0, 0.0])).round(3).tolist()
    [0.5, 0.5, 0.0, 0.0]
    """
    return _newton(X, t, max_iter=max_iter, tol=tol, start=start)[0]


def _newton(X, t, *, max_iter: int = 30, tol: float = 1e-8, start=None, X32=None,
            work=None) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(p̂, β̂)`` of :func:`fit_logistic`.

    ``X32``: X in single precision and ``work``: a float32 array of X's shape, when the caller
    holds them (a fresh large array costs page faults; the stage reuses its buffers). With
    ``work`` and no ``X32``, X is cast to single precision a block of rows at a time
    (:func:`_scaled_rows32`: the same products, without holding X32).
    """
    X = np.asarray(X, float)
    if X32 is None and work is None:  # the Hessian only steers the steps: single precision
        X32 = X.astype(np.float32)  # halves its cost; the gradient, and so the fixed point,
    A = np.empty(X.shape, np.float32) if work is None else work  # is float64
    t = np.asarray(t, float)
    beta = np.zeros(X.shape[1]) if start is None else np.asarray(start, float).copy()
    eta = X @ beta
    dev = _deviance(eta, t)
    for _ in range(max_iter):
        p = expit(eta)
        root_w = np.sqrt(p * (1.0 - p)).astype(np.float32)[:, None]
        if X32 is None:
            _scaled_rows32(X, root_w, out=A)
        else:
            np.multiply(X32, root_w, out=A)
        H = (A.T @ A).astype(float)  # XᵀWX = (W½X)ᵀ(W½X)
        g = X.T @ (t - p)
        try:
            with warnings.catch_warnings():  # near separation H is ill-conditioned: expected
                warnings.simplefilter("ignore", sla.LinAlgWarning)
                step = sla.solve(H, g, assume_a="pos", check_finite=False)
        except (sla.LinAlgError, ValueError):
            step = np.linalg.lstsq(H, g, rcond=None)[0]
        if not np.all(np.isfinite(step)):
            step = np.linalg.lstsq(H, g, rcond=None)[0]
        for _half in range(30):  # step-halving: the deviance must not rise
            new_eta = X @ (beta + step)
            new_dev = _deviance(new_eta, t)
            if new_dev <= dev + 1e-10 * (1.0 + abs(dev)):
                break
            step = step / 2.0
        beta, eta = beta + step, new_eta
        converged = (np.max(np.abs(step)) < tol
                     or abs(dev - new_dev) < 1e-12 * (1.0 + abs(dev)))
        dev = new_dev
        if converged:
            break
    return expit(eta), beta


def _scaled_rows32(X: np.ndarray, root_w: np.ndarray, *, out: np.ndarray) -> np.ndarray:
    """Write ``float32(X) * root_w`` (single precision) into ``out``, a block of rows at a time.

    The same values as ``X.astype(np.float32) * root_w`` (each double rounded to single, then
    the single-precision product) with one block's copy in single precision instead of X's.
    """
    rows = _block_rows(X.shape[1])
    tmp = np.empty((min(rows, len(X)), X.shape[1]), np.float32)
    for lo in range(0, len(X), rows):
        hi = min(lo + rows, len(X))
        t = tmp[:hi - lo]
        t[...] = X[lo:hi]
        np.multiply(t, root_w[lo:hi], out=out[lo:hi])
    return out


def _newton_batch(X: np.ndarray, T: np.ndarray, *, X32: np.ndarray, max_iter: int = 30,
                  tol: float = 1e-8) -> np.ndarray:
    """:func:`_newton`'s fits of every label vector in ``T`` (B, N) on one design X (N, k).

    The paired null refits one design under B relabellings; on a small file a fit costs more
    in numpy calls than in arithmetic, so the B fits take each Newton step together (batched
    products and solves; each fit's step-halving and convergence test its own, as in
    :func:`_newton`, which a fit whose Hessian cannot be factorised falls back to). Returns
    p̂ of shape (B, N).
    """
    B, N = T.shape
    k = X.shape[1]
    iu, ju = np.triu_indices(k)
    # XᵀWX of every fit at once: W (B, N) times the products of X's column pairs (N, k(k+1)/2),
    # one matrix product, when those products are small enough to hold; else per fit
    pairs = X[:, iu] * X[:, ju] if N * iu.size <= _BATCH_ELEMENTS // 2 else None
    beta = np.zeros((B, k))
    eta = np.zeros((B, N))
    dev = _deviance_rows(eta, T)
    active = np.ones(B, bool)
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        t, e = T[idx], eta[idx]
        p = expit(e)
        if pairs is not None:
            H = np.empty((idx.size, k, k))
            H[:, iu, ju] = H[:, ju, iu] = (p * (1.0 - p)) @ pairs
        else:
            A = X32[None, :, :] * np.sqrt(p * (1.0 - p)).astype(np.float32)[:, :, None]
            H = np.matmul(A.transpose(0, 2, 1), A).astype(float)
        g = (t - p) @ X
        try:
            step = np.linalg.solve(H, g[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            step = np.full_like(g, np.nan)
        for r in np.flatnonzero(~np.all(np.isfinite(step), axis=1)):  # singular: as _newton
            step[r] = np.linalg.lstsq(H[r], g[r], rcond=None)[0]
        new_eta = (beta[idx] + step) @ X.T
        new_dev = _deviance_rows(new_eta, t)
        rising = new_dev > dev[idx] + 1e-10 * (1.0 + np.abs(dev[idx]))
        for _half in range(30):  # step-halving, per fit: its deviance must not rise
            if not rising.any():
                break
            step[rising] /= 2.0
            new_eta[rising] = (beta[idx[rising]] + step[rising]) @ X.T
            new_dev[rising] = _deviance_rows(new_eta[rising], t[rising])
            rising &= new_dev > dev[idx] + 1e-10 * (1.0 + np.abs(dev[idx]))
        beta[idx] += step
        eta[idx] = new_eta
        converged = ((np.max(np.abs(step), axis=1) < tol)
                     | (np.abs(dev[idx] - new_dev) < 1e-12 * (1.0 + np.abs(dev[idx]))))
        dev[idx] = new_dev
        active[idx[converged]] = False
    return expit(eta)


def _deviance_rows(eta: np.ndarray, t: np.ndarray) -> np.ndarray:
    """:func:`_deviance` of each row of ``eta`` (B, N) against the labels ``t`` (B, N)."""
    return 2.0 * np.sum(np.logaddexp(0.0, eta) - t * eta, axis=1)


def _deviance(eta: np.ndarray, t: np.ndarray) -> float:
    """−2 log-likelihood of a logistic model at linear predictor ``eta`` (stable form)."""
    return float(2.0 * np.sum(np.logaddexp(0.0, eta) - t * eta))


def pmse(p_hat: np.ndarray, c: float = 0.5) -> float:
    r"""Return the mean of :math:`(\hat p_i - c)^2`, the pMSE (Woo et al. 2009).

    Parameters
    ----------
    p_hat : ndarray of shape (N,)
        Propensity scores of the stacked rows.
    c : float, default=0.5
        The synthetic share n_syn / N (1/2 for paired rows).

    Returns
    -------
    float

    Examples
    --------
    >>> pmse(np.array([0.25, 0.25, 0.75, 0.75]))
    0.0625
    """
    d = np.asarray(p_hat, float) - c
    return float(np.mean(d * d))


def grid_regions(coords_m: np.ndarray, *, n_cells: int = 6,
                 min_records: int = 10) -> tuple[np.ndarray, pd.DataFrame]:
    """Label records by the cell of an ``n_cells`` × ``n_cells`` grid over their extent.

    Parameters
    ----------
    coords_m : ndarray of shape (n_records, 2)
        Coordinates, metres.
    n_cells : int, default=6
        Cells per axis (equal width over the bounding box, snapped outwards to a tenth of the
        extent's power of ten, so that the published bounds do not give away the outermost
        records' coordinates).
    min_records : int, default=10
        Cells with fewer records are labelled −1 (not reported: a small cell's figure is
        noise, and close to a single record's).

    Returns
    -------
    labels : ndarray of int, shape (n_records,)
        Region of each record, −1 when its cell is too small.
    cells : pandas.DataFrame
        One row per reported region: ``region, x_min_m, x_max_m, y_min_m, y_max_m,
        n_records``.

    Examples
    --------
    >>> xy = np.array([[0.0, 0.0], [1.0, 1.0], [0.1, 0.1]])
    >>> labels, cells = grid_regions(xy, n_cells=2, min_records=2)
    >>> labels.tolist(), cells["n_records"].tolist(), cells["x_max_m"].tolist()
    ([0, -1, 0], [2], [0.5])
    """
    xy = np.asarray(coords_m, float)
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    # snap the extent outwards to a round step (a tenth of the extent's order of magnitude):
    # the cell bounds are published and must not give away the outermost records' coordinates
    extent = float(np.max(hi - lo))
    if extent > 0:
        step = 10.0 ** np.floor(np.log10(extent / 10.0))
        lo, hi = np.floor(lo / step) * step, np.ceil(hi / step) * step
        hi = np.where(hi > lo, hi, lo + step)
    width = np.where(hi > lo, (hi - lo) / n_cells, 1.0)
    ij = np.clip(((xy - lo) / width).astype(int), 0, n_cells - 1)
    cell = ij[:, 1] * n_cells + ij[:, 0]
    counts = np.bincount(cell, minlength=n_cells * n_cells)
    keep = np.flatnonzero(counts >= min_records)
    region_of = np.full(n_cells * n_cells, -1)
    region_of[keep] = np.arange(keep.size)
    cells = pd.DataFrame({
        "region": np.arange(keep.size),
        "x_min_m": lo[0] + (keep % n_cells) * width[0],
        "x_max_m": lo[0] + (keep % n_cells + 1) * width[0],
        "y_min_m": lo[1] + (keep // n_cells) * width[1],
        "y_max_m": lo[1] + (keep // n_cells + 1) * width[1],
        "n_records": counts[keep]})
    return region_of[cell], cells


@dataclass(frozen=True, kw_only=True, eq=False)
class PMSEResult:
    """pMSE, its paired null and SPECKS of every implicate of one model.

    Attributes
    ----------
    by_implicate : pandas.DataFrame
        One row per implicate: ``implicate, pmse, null_mean, null_sd, ratio, s_pmse, specks``.
    by_region : pandas.DataFrame or None
        With ``regions``: one row per region, over the implicates: ``region, n_records,
        pmse, null_mean, ratio`` (``pmse`` the mean over implicates of the region's mean of
        (p̂ − c)² over its rows, ``null_mean`` likewise under the paired null; ``ratio`` their
        quotient; NaN where no null row fell in the region).
    formula : str
        The propensity model's right-hand side (patsy).
    n_params : int
        Columns of the propensity design.
    n_pairs : int
    n_null_pairs : int
        Pairs in the null's random subset (``n_pairs`` when not subsampled).
    n_permutations : int
    """

    by_implicate: pd.DataFrame
    by_region: pd.DataFrame | None
    formula: str
    n_params: int
    n_pairs: int
    n_null_pairs: int
    n_permutations: int

    def __repr__(self) -> str:
        """Summary figures only."""
        return (f"PMSEResult(n_implicates={len(self.by_implicate)}, "
                f"ratio={self.pooled()['ratio']:.3g}, n_pairs={self.n_pairs}, "
                f"n_null_pairs={self.n_null_pairs}, n_permutations={self.n_permutations})")

    def pooled(self) -> dict[str, float]:
        """Mean over implicates of ``pmse, null_mean, null_sd, ratio, s_pmse, specks``."""
        cols = ["pmse", "null_mean", "null_sd", "ratio", "s_pmse", "specks"]
        return {c: float(self.by_implicate[c].mean()) for c in cols}


def _frames(confidential: pd.DataFrame, synthetic, synthesized: Sequence[str]):
    """Check and return (confidential, [each implicate's synthesized values]).

    An implicate is read as a dict of each synthesized column to its values (only those
    differ from the confidential file: its other columns are the confidential ones), from a
    DataFrame, a mapping of the synthesized columns, or the one synthesized variable's vector.
    """
    if not isinstance(confidential, pd.DataFrame):
        raise TypeError("`confidential` must be a pandas DataFrame (one column per variable)")
    missing = [s for s in synthesized if s not in confidential.columns]
    if not synthesized or missing:
        raise ValueError(f"`synthesized` must name columns of `confidential` (not found: "
                         f"{missing or 'none given'})")
    if isinstance(synthetic, (pd.DataFrame, Mapping)):
        synthetic = [synthetic]
    n = len(confidential)
    values = []
    for i, s in enumerate(synthetic):
        if isinstance(s, pd.DataFrame):
            if len(s) != n or any(v not in s.columns for v in synthesized):
                raise ValueError(f"`synthetic` implicate {i} must have one value per "
                                 f"confidential record ({n}) and no missing value")
            s = {v: s[v].reset_index(drop=True) for v in synthesized}  # dtype kept
        elif isinstance(s, Mapping):
            s = {v: np.asarray(s[v]) if v in s else None for v in synthesized}
        else:  # one synthesized variable as a vector
            if len(synthesized) != 1:
                raise ValueError("`synthetic` as arrays needs exactly one `synthesized` "
                                 "variable; give DataFrames for several")
            a = np.asarray(s, float)
            if a.shape != (n,):
                raise ValueError(f"`synthetic` implicate {i} must have one value per "
                                 f"confidential record ({n}); got shape {a.shape}")
            s = {synthesized[0]: a}
        if any(a is None or a.shape != (n,) or pd.isna(a).any() for a in s.values()):
            raise ValueError(f"`synthetic` implicate {i} must have one value per confidential "
                             f"record ({n}) and no missing value")
        values.append(s)
    if not values:
        raise ValueError("`synthetic` holds no implicate")
    return confidential.reset_index(drop=True), values


def pmse_scores(
    confidential: pd.DataFrame, synthetic, *, synthesized: Sequence[str],
    coords_m: np.ndarray | None = None, terms: str = "main", coordinates: str = "none",
    spline_df: int = 4, n_permutations: int = 20, null_max_pairs: int = 5000,
    regions: np.ndarray | None = None, random_seed=None, n_threads: int | None = None,
) -> PMSEResult:
    """pMSE, pMSE ratio and S_pMSE against the paired permutation null, and SPECKS.

    Parameters
    ----------
    confidential : pandas.DataFrame with n_records rows
        The released variables as in the confidential file (text columns are treatment coded).
    synthetic : sequence of pandas.DataFrame or of dict, or ndarray of shape (L, n_records)
        Each implicate, row i paired with confidential row i: DataFrames (the synthesized
        columns are read, the others taken from ``confidential``), dicts of the synthesized
        columns' values (n_records each), or the values of the one synthesized variable.
    synthesized : sequence of str
        The synthesized columns.
    coords_m : ndarray of shape (n_records, 2), optional
        Record coordinates, metres; needed unless ``coordinates = "none"``.
    terms : {"main", "interactions"}, default="main"
    coordinates : {"none", "linear", "spline"}, default="none"
        See :func:`propensity_formula`.
    spline_df : int, default=4
    n_permutations : int, default=20
        Label permutations within pairs (refits) per implicate for the null.
    null_max_pairs : int, default=5000
        The null is computed on at most this many pairs (a random subset, scaled by m/n).
    regions : ndarray of int, shape (n_records,), optional
        Region of each record (−1: none) for the per-region breakdown (see
        :func:`grid_regions`).
    random_seed : int or numpy.random.SeedSequence, optional
        Each implicate's null draws its permutations from its own child stream, so the
        result does not depend on ``n_threads``.
    n_threads : int, optional
        Implicates scored at once (threads, each with a single-threaded BLAS); default: the
        CPU count when the null's design has at least 100,000 elements (2m × columns), else
        1 (a small fit is numpy calls under the GIL: threads cost CPU and save no time).

    Returns
    -------
    PMSEResult

    Raises
    ------
    ValueError
        A bad option, fewer than 2 records, misaligned implicates, or coordinates missing.

    Examples
    --------
    >>> conf = pd.DataFrame({"x": [1.0, 1.0, 1.0, 0.0]})
    >>> r = pmse_scores(conf, [np.array([1.0, 0.0, 0.0, 0.0])], synthesized=["x"],
    ...                 n_permutations=200, random_seed=1)
    >>> round(r.by_implicate["pmse"].item(), 9), r.by_implicate["specks"].item()
    (0.0625, 0.5)
    """
    _check_options(terms, coordinates, spline_df, n_permutations, null_max_pairs)
    conf, frames = _frames(confidential, synthetic, synthesized)
    n = len(conf)
    if n < 2:
        raise ValueError(f"pMSE needs at least 2 records (got {n})")
    if coordinates != "none":
        if coords_m is None or np.shape(coords_m) != (n, 2):
            raise ValueError(f'`coords_m` of shape ({n}, 2) is needed with coordinates = '
                             f'"{coordinates}" (or give coordinates = "none")')
        xy = np.asarray(coords_m, float)
        conf = conf.assign(**{_X: xy[:, 0], _Y: xy[:, 1]})
    variables = [c for c in confidential.columns]
    formula = propensity_formula(variables, synthesized, terms=terms, coordinates=coordinates,
                                 spline_df=spline_df)
    dm = patsy.dmatrix(formula, conf, return_type="matrix")
    info, X_conf = dm.design_info, np.asarray(dm, dtype=float)
    del dm
    mu, scale = _column_scale(X_conf)
    design = _ImplicateDesign(info, conf, synthesized, X_conf)
    cols = design.cols
    seeds = _seed_sequence(random_seed).spawn(len(frames))
    m = min(n, int(null_max_pairs))
    k = X_conf.shape[1]
    # a small design's permutations are fitted in batches (numpy calls dominate its fits), a
    # large one's one after another (arithmetic dominates: the batch's double-precision XᵀWX
    # cost 50 % more CPU at 10⁵ records); a batch's (B, 2m, k) work array within ~32 MB
    small = 2 * m * k < _THREADED_ELEMENTS
    batch = max(1, min(int(n_permutations), _BATCH_ELEMENTS // (2 * m * k)))
    reg = None if regions is None else np.asarray(regions, int)
    n_reg = 0 if reg is None or not np.any(reg >= 0) else int(reg.max()) + 1
    if n_threads is None:
        n_threads = (os.cpu_count() or 1) if 2 * m * k >= _THREADED_ELEMENTS else 1
    n_threads = max(1, int(n_threads))
    # one set of arrays per implicate in flight (the first implicate alone, then n_threads at
    # once), made here: the stacked design X (its confidential rows, and the implicate rows'
    # columns that no implicate changes, filled once) and the Newton steps' float32 work array
    X0 = np.empty((2 * n, k))
    np.subtract(X_conf, mu, out=X0[:n])
    np.divide(X0[:n], scale, out=X0[:n])
    rest = np.setdiff1d(np.arange(k), cols)
    rows = _block_rows(k)
    for lo in range(0, n, rows):
        hi = min(lo + rows, n)
        X0[n + lo:n + hi, rest] = (design.constant(X_conf, lo, hi) - mu[rest]) / scale[rest]
    del X_conf  # the confidential design lives on in X0 only
    pool = queue.SimpleQueue()
    for j in range(max(1, min(n_threads, len(frames) - 1))):
        pool.put({"X": X0 if j == 0 else X0.copy(), "A": np.empty((2 * n, k), np.float32),
                  "Xs": np.empty((2 * m, k)), "Xs32": np.empty((2 * m, k), np.float32),
                  "As": None if small else np.empty((2 * m, k), np.float32)})
    del X0
    t = np.r_[np.zeros(n), np.ones(n)]

    def fill(X: np.ndarray, values: Mapping) -> None:
        """Write implicate ``values``' rows of the standardised design into ``X[n:]``."""
        if design.patsy:
            D = design.values(values)
            np.subtract(D, mu, out=D)
            np.divide(D, scale, out=D)
            X[n:] = D
            return
        values = {v: np.asarray(a, dtype=float) for v, a in values.items()}
        for lo in range(0, n, rows):  # the varying columns, a block of rows at a time
            hi = min(lo + rows, n)
            D = design.values(values, lo, hi)
            np.subtract(D, mu[cols], out=D)
            np.divide(D, scale[cols], out=D)
            X[n + lo:n + hi, cols] = D

    def one(i: int, start=None) -> tuple:
        b = pool.get()  # a set of arrays no other implicate in flight uses
        try:
            return score(b, i, start)
        finally:
            pool.put(b)

    def score(b: dict, i: int, start) -> tuple:
        X = b["X"]
        fill(X, frames[i])
        p, beta = _newton(X, t, start=start, work=b["A"])
        obs = pmse(p)
        specks = float(ks_2samp(p[n:], p[:n]).statistic)
        rng = np.random.default_rng(seeds[i])
        sub = np.sort(rng.choice(n, size=m, replace=False)) if m < n else np.arange(n)
        Xs, Xs32 = b["Xs"], b["Xs32"]
        np.take(X, np.r_[sub, n + sub], axis=0, out=Xs)
        Xs32[:] = Xs
        null, null_rows = np.empty(n_permutations), np.zeros(2 * m)
        if small:  # B permutations fitted together; each pair's two labels swapped or not
            for j0 in range(0, n_permutations, batch):
                swap = rng.random((min(batch, n_permutations - j0), m)) < 0.5
                pb = _newton_batch(Xs, np.hstack([swap, ~swap]).astype(float), X32=Xs32)
                d2 = (pb - 0.5) ** 2
                null[j0:j0 + len(pb)] = d2.mean(axis=1) * m / n
                null_rows += d2.sum(axis=0)
        else:  # a large design: one fit after another (BLAS-bound, single-precision XᵀWX)
            for j in range(n_permutations):
                swap = rng.random(m) < 0.5  # within each pair, swap the two labels
                pb = _newton(Xs, np.r_[swap, ~swap].astype(float), X32=Xs32, work=b["As"])[0]
                null[j] = pmse(pb) * m / n
                null_rows += (pb - 0.5) ** 2
        mean = float(null.mean())
        sd = float(null.std(ddof=1))
        row = {"implicate": i, "pmse": obs, "null_mean": mean, "null_sd": sd,
               "ratio": obs / mean if mean > 0 else np.nan,
               "s_pmse": (obs - mean) / sd if sd > 0 else np.nan, "specks": specks}
        if not n_reg:
            return row, np.zeros(0), np.zeros(0), np.zeros(0), beta
        r2 = np.r_[reg, reg]
        ok = r2 >= 0
        obs_r = (np.bincount(r2[ok], weights=((p - 0.5) ** 2)[ok], minlength=n_reg)
                 / np.maximum(np.bincount(r2[ok], minlength=n_reg), 1))
        rs = np.r_[reg[sub], reg[sub]]
        oks = rs >= 0
        null_sum = np.bincount(rs[oks], weights=null_rows[oks] / n_permutations * m / n,
                               minlength=n_reg)
        return (row, obs_r, null_sum, np.bincount(rs[oks], minlength=n_reg).astype(float),
                beta)

    # the first implicate's coefficients start the others' fits (the implicates are alike, so
    # this saves Newton steps; the maximum, and so every figure, does not depend on the start)
    with threadpool_limits(limits=1), ThreadPoolExecutor(max_workers=n_threads) as ex:
        first = one(0)
        out = [first, *ex.map(lambda i: one(i, first[4]), range(1, len(frames)))]
    by_region = None
    if n_reg:
        obs_r = np.mean([o[1] for o in out], axis=0)
        null_sum, null_cnt = sum(o[2] for o in out), sum(o[3] for o in out)
        with np.errstate(invalid="ignore", divide="ignore"):
            null_r = np.where(null_cnt > 0, null_sum / null_cnt, np.nan)
            by_region = pd.DataFrame({
                "region": np.arange(n_reg),
                "n_records": np.bincount(reg[reg >= 0], minlength=n_reg),
                "pmse": obs_r, "null_mean": null_r, "ratio": obs_r / null_r})
    return PMSEResult(by_implicate=pd.DataFrame([o[0] for o in out]), by_region=by_region,
                      formula=formula, n_params=k, n_pairs=n, n_null_pairs=m,
                      n_permutations=int(n_permutations))


def pmse_by_variable(
    confidential: pd.DataFrame, synthetic, *, synthesized: Sequence[str],
    coords_m: np.ndarray | None = None, coordinates: str = "none", spline_df: int = 4,
    n_permutations: int = 20, null_max_pairs: int = 5000, random_seed=None,
    n_threads: int | None = None,
) -> pd.DataFrame:
    """Per-variable breakdown: the pMSE ratio of a propensity model on one variable at a time.

    For a synthesized variable the model has its main effect alone; for a variable released
    unchanged, the synthesized variables, that variable and their interactions (its relation
    to the synthesized values is what can differ: alone it is identical within each pair);
    with coordinates, a row ``"location"`` does the same with the coordinate terms.

    Parameters
    ----------
    confidential, synthetic, synthesized, coords_m, coordinates, spline_df, n_permutations,
    null_max_pairs, random_seed, n_threads
        As :func:`pmse_scores`.

    Returns
    -------
    pandas.DataFrame
        One row per variable: ``variable, synthesized, formula, pmse, null_mean, ratio,
        s_pmse, specks`` (means over the implicates given).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> conf = pd.DataFrame({"y": rng.normal(size=200), "x": rng.normal(size=200)})
    >>> t = pmse_by_variable(conf, [rng.normal(size=200)], synthesized=["y"],
    ...                      n_permutations=5, random_seed=2)
    >>> t["variable"].tolist()
    ['y', 'x']
    """
    conf, frames = _frames(confidential, synthetic, synthesized)
    seeds = _seed_sequence(random_seed).spawn(len(conf.columns) + 1)
    rows = []
    cases = [(v, [v]) for v in conf.columns]
    if coordinates != "none":
        cases.append(("location", []))
    for (name, extra), ss in zip(cases, seeds):
        is_syn = name in synthesized
        cols = list(dict.fromkeys([*synthesized, *extra])) if not is_syn else [name]
        sub = conf[cols]
        syn = [{v: f[v] for v in cols if v in f} for f in frames]
        which = [s for s in synthesized if s in cols]
        terms = "main" if is_syn else "interactions"
        coord = coordinates if name == "location" else "none"
        r = pmse_scores(sub, syn, synthesized=which, coords_m=coords_m, terms=terms,
                        coordinates=coord, spline_df=spline_df,
                        n_permutations=n_permutations, null_max_pairs=null_max_pairs,
                        random_seed=ss, n_threads=n_threads)
        pooled = r.pooled()
        rows.append({"variable": name, "synthesized": bool(is_syn), "formula": r.formula,
                     **{k: pooled[k] for k in ("pmse", "null_mean", "ratio", "s_pmse",
                                               "specks")}})
    return pd.DataFrame(rows)


def _check_options(terms, coordinates, spline_df, n_permutations, null_max_pairs) -> None:
    if terms not in TERMS:
        raise ValueError(f"`terms` must be one of {TERMS} (got {terms!r})")
    if coordinates not in COORDINATES:
        raise ValueError(f"`coordinates` must be one of {COORDINATES} (got {coordinates!r})")
    if isinstance(spline_df, bool) or not isinstance(spline_df, (int, np.integer)) \
            or spline_df < 3:
        raise ValueError(f"`spline_df` must be an integer ≥ 3 (got {spline_df!r})")
    for key, v, lo in (("n_permutations", n_permutations, 2),
                       ("null_max_pairs", null_max_pairs, 10)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"`{key}` must be an integer ≥ {lo} (got {v!r})")


def _seed_sequence(random_seed) -> np.random.SeedSequence:
    if isinstance(random_seed, np.random.SeedSequence):
        return random_seed
    return np.random.SeedSequence(random_seed)


def _column_scale(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centre and scale of each column (the intercept and constant columns: 0 and 1).

    The logistic fit is invariant to an affine map of the non-intercept columns; the map only
    improves the conditioning of XᵀWX.
    """
    sd = X.std(axis=0)
    varying = sd > 0
    return np.where(varying, X.mean(axis=0), 0.0), np.where(varying, sd, 1.0)


class _ImplicateDesign:
    """An implicate's rows of the propensity design: the columns that depend on its values.

    Numeric synthesized variables enter the propensity formulas multilinearly (main effects
    and products with other terms), so the design is Σ_S C_S Π_{v∈S} y_v over the subsets S
    of the synthesized variables, with C_S found once from the design at the 0/1 corners
    (Möbius inversion). That costs a few multiply-adds per implicate instead of a patsy
    evaluation; it is checked against patsy on the confidential rows, and patsy is used
    whenever the check fails or a synthesized variable is not numeric.

    Only the columns ``cols`` that differ between the corners are held (n × |cols|) and
    computed per implicate; every other column is the confidential design's, the same in
    every implicate (:meth:`constant`). Built a corner at a time, and checked a block of rows
    at a time: the values are those of the whole design computed at once.

    Parameters
    ----------
    info : patsy.DesignInfo
    conf : pandas.DataFrame
        The confidential rows (with the coordinate columns when the formula has them).
    synthesized : sequence of str
    X_conf : ndarray of shape (n, k)
        The confidential rows' design.
    """

    def __init__(self, info, conf: pd.DataFrame, synthesized: Sequence[str], X_conf) -> None:
        self._info, self._conf, self._syn = info, conf, list(synthesized)
        self.n, self.k = X_conf.shape
        self.patsy = (len(self._syn) > 3 or not all(pd.api.types.is_numeric_dtype(conf[v])
                                                    for v in self._syn))
        if not self.patsy:
            self._multilinear(X_conf)
        if self.patsy:  # every column from patsy, per implicate
            self.cols = np.arange(self.k)

    def _multilinear(self, X_conf) -> None:
        """Find the corners' coefficients C_S of the varying columns, and check them."""
        syn = self._syn
        corners, cols = {}, np.zeros(self.k, bool)
        for bits in itertools.product((0, 1), repeat=len(syn)):
            C = _design(self._info, self._conf.assign(**{v: float(b)
                                                         for v, b in zip(syn, bits)}))
            cols |= np.any(~(C == X_conf) | ~np.isfinite(C), axis=0)  # differs, or not finite
            corners[bits] = C[:, cols] if np.all(cols) else C
            for T in corners:  # the earlier corners' columns as they now stand
                if corners[T].shape[1] != cols.sum():
                    corners[T] = _design(self._info, self._conf.assign(
                        **{v: float(b) for v, b in zip(syn, T)}))[:, cols]
            del C
        self.cols = np.flatnonzero(cols)
        coef = {}
        for S in corners:
            coef[S] = sum((-1.0) ** (sum(S) - sum(T)) * corners[T] for T in corners
                          if all(t <= s for t, s in zip(T, S)))
        del corners
        self._coef = coef
        # within cols, only those that depend on a synthesized variable change between
        # implicates
        self._varying = {S: np.flatnonzero(np.any(C != 0, axis=0)) for S, C in coef.items()
                         if any(S)}
        scale = np.maximum(np.abs(X_conf).max(axis=0), 1.0)
        values = {v: np.asarray(self._conf[v], dtype=float) for v in syn}
        rows = _block_rows(self.k)
        block = np.empty((min(rows, self.n), self.k))
        for lo in range(0, self.n, rows):  # the design of the confidential values
            hi = min(lo + rows, self.n)
            b = block[:hi - lo]
            np.add(X_conf[lo:hi], 0, out=b)  # a column no corner changes: 0 + X_conf, as C_0
            b[:, self.cols] = self.values(values, lo, hi)
            if not np.allclose(b / scale, X_conf[lo:hi] / scale, rtol=0, atol=1e-9):
                self.patsy, self._coef = True, None
                return

    def constant(self, X_conf: np.ndarray, lo: int, hi: int) -> np.ndarray:
        """Return rows ``lo:hi`` of the implicate design's constant columns (those not in cols).

        ``0 + X_conf`` there, as the Möbius sum gives them (−0.0 becomes 0.0).
        """
        rest = np.setdiff1d(np.arange(self.k), self.cols)
        return np.add(X_conf[lo:hi][:, rest], 0)

    def values(self, values: Mapping, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Return rows ``lo:hi`` of the design's columns ``cols`` at ``values`` (unscaled)."""
        hi = self.n if hi is None else hi
        if self.patsy:  # the whole design at once (patsy's transforms see every row)
            if (lo, hi) != (0, self.n):
                raise ValueError("a patsy design is built for every row at once")
            return _design(self._info, self._conf.assign(**values))
        syn = self._syn
        vals = [np.asarray(values[v], dtype=float)[lo:hi] for v in syn]
        X = self._coef[(0,) * len(syn)][lo:hi].copy()
        for S, c in self._varying.items():
            w = np.prod([vals[j] for j, b in enumerate(S) if b], axis=0)
            X[:, c] += self._coef[S][lo:hi][:, c] * w[:, None]
        return X


def _design(info, frame: pd.DataFrame) -> np.ndarray:
    return np.asarray(patsy.build_design_matrices([info], frame)[0], dtype=float)
