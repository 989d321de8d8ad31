"""Spatial utility: residual semivariogram and Moran's I, confidential vs implicates.

docs/risk-and-utility.md, "Spatial utility". The analyst's OLS ignores space, so the question is
whether the implicates keep the spatial structure of the confidential data: the empirical
semivariogram of the analyst's OLS residuals and Moran's I of the response, computed on the
confidential values and on every implicate (summarised over implicates).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
import statsmodels.formula.api as smf
from scipy.spatial import cKDTree

__all__ = ["semivariogram", "lag_pairs", "LagPairs", "morans_i", "knn_weights", "ols_residuals",
           "local_means", "spatial_utility_tables"]


def ols_residuals(formula: str, frame: pd.DataFrame, values: np.ndarray) -> np.ndarray:
    """OLS residuals of the analyst's model for each row of ``values``.

    Parameters
    ----------
    formula : str
        Analyst's formula (its left side is replaced by each row of ``values``).
    frame : pandas.DataFrame with n_records rows
        Covariates (and the response column, any values).
    values : ndarray of shape (L, n_records)
        Response values (confidential or implicates).

    Returns
    -------
    ndarray of shape (L, n_records)
    """
    X = np.asarray(smf.ols(formula, data=frame).exog, dtype=float)
    Y = np.atleast_2d(np.asarray(values, dtype=float))
    coef, *_ = np.linalg.lstsq(X, Y.T, rcond=None)
    return Y - (X @ coef).T


@dataclass(frozen=True, kw_only=True)
class LagPairs:
    """The record pairs of a binned semivariogram, found once for many value vectors.

    Attributes
    ----------
    n_records : int
    i, j : ndarray of int, shape (P,)
        Pairs i < j at a distance in (0, max_lag_m] (coincident pairs are left out).
    bin : ndarray of int, shape (P,)
        Lag bin of each pair.
    edges_m : ndarray of shape (n_bins + 1,)
        Bin edges, metres (equal width on [0, max_lag_m]).
    n_pairs : ndarray of int, shape (n_bins,)
    lag_sum_m : ndarray of shape (n_bins,)
        Sum of the pair distances in each bin, metres.
    """

    n_records: int
    i: np.ndarray
    j: np.ndarray
    bin: np.ndarray
    edges_m: np.ndarray
    n_pairs: np.ndarray
    lag_sum_m: np.ndarray


def lag_pairs(coords_m: np.ndarray, *, max_lag_m: float, n_bins: int = 12) -> LagPairs:
    """Find the pairs within ``max_lag_m`` and their lag bins (:meth:`cKDTree.query_pairs`).

    Parameters
    ----------
    coords_m : ndarray of shape (n_records, 2)
        Coordinates, metres.
    max_lag_m : float
        Largest lag, metres.
    n_bins : int, default=12
        Equal-width bins on (0, max_lag_m].

    Returns
    -------
    LagPairs
    """
    coords_m = np.asarray(coords_m, dtype=float)
    ij = cKDTree(coords_m).query_pairs(max_lag_m, output_type="ndarray")
    i, j = ij[:, 0], ij[:, 1]
    dx, dy = (coords_m[i] - coords_m[j]).T
    h = np.sqrt(dx * dx + dy * dy)  # as scipy's cdist
    keep = (h > 0) & (h <= max_lag_m)
    i, j, h = i[keep], j[keep], h[keep]
    edges = np.linspace(0.0, max_lag_m, n_bins + 1)
    b = np.clip(np.digitize(h, edges[1:-1]), 0, n_bins - 1)
    return LagPairs(n_records=coords_m.shape[0], i=i, j=j, bin=b, edges_m=edges,
                    n_pairs=np.bincount(b, minlength=n_bins),
                    lag_sum_m=np.bincount(b, weights=h, minlength=n_bins))


def _binned_squared_differences(pairs: LagPairs, Z: np.ndarray) -> np.ndarray:
    """Σ over the pairs of each bin of (z_i − z_j)², for every row of Z: shape (L, n_bins).

    Uses Σ_b (z_i − z_j)² = Σ_i deg_b(i) z_i² − 2 zᵀ A_b z with A_b the bin's pairs as a
    sparse matrix, so memory is O(n_records · L) rather than O(pairs · L).
    """
    n, n_bins = pairs.n_records, pairs.n_pairs.size
    Z = Z - Z.mean(axis=1, keepdims=True)  # shift-invariant; keeps the cancellation small
    ZT = np.ascontiguousarray(Z.T)  # (n, L)
    deg = (np.bincount(pairs.bin * n + pairs.i, minlength=n_bins * n)
           + np.bincount(pairs.bin * n + pairs.j, minlength=n_bins * n)).reshape(n_bins, n)
    out = (Z * Z) @ deg.T.astype(float)  # (L, n_bins)
    for b in np.flatnonzero(pairs.n_pairs):
        sel = pairs.bin == b
        A = sp.csr_matrix((np.ones(int(sel.sum())), (pairs.i[sel], pairs.j[sel])),
                          shape=(n, n))
        out[:, b] -= 2.0 * np.einsum("nl,nl->l", A @ ZT, ZT)
    return np.maximum(out, 0.0)


def semivariogram(
    coords_m: np.ndarray, values: np.ndarray, *, max_lag_m: float, n_bins: int = 12,
    pairs: LagPairs | None = None,
) -> pd.DataFrame:
    """Binned empirical (Matheron) semivariogram of one or many value vectors.

    Parameters
    ----------
    coords_m : ndarray of shape (n_records, 2)
        Coordinates, metres.
    values : ndarray of shape (n_records,) or (L, n_records)
        Values (e.g. OLS residuals) per record; several rows are handled at once.
    max_lag_m : float
        Largest lag, metres; pairs farther apart are ignored.
    n_bins : int, default=12
        Equal-width lag bins on (0, max_lag_m]; coincident pairs (lag 0) are left out.
    pairs : LagPairs, optional
        :func:`lag_pairs` of these coordinates, lag and bins, when already found.

    Returns
    -------
    pandas.DataFrame
        One row per bin: ``bin`` (index), ``bin_upper_m`` (upper edge, metres), ``lag_m``
        (mean pair distance, metres), ``n_pairs`` and ``gamma``
        (shape (L,) per row as columns ``gamma_0 ... gamma_{L-1}``; a single vector gives one
        column ``gamma``). Empty bins are dropped.

    Notes
    -----
    γ̂(h) = 1 / (2 |N(h)|) Σ_{(i,j) ∈ N(h)} (z_i − z_j)², N(h) the pairs whose distance falls
    in the bin (Matheron 1962; Cressie 1993, *Statistics for Spatial Data*, eq. 2.4.2). The
    sums are taken as quadratic forms over the bins' pair matrices, never as an
    (L, pairs) array: memory grows with L · n_records, not with L · pairs.

    Examples
    --------
    >>> xy = np.array([[0.0, 0.0], [0.5, 0.0], [2.0, 0.0]])  # lags 0.5, 1.5 and 2 m
    >>> sv = semivariogram(xy, np.array([0.0, 1.0, 3.0]), max_lag_m=1.8, n_bins=2)
    >>> sv["gamma"].round(12).tolist()
    [0.5, 2.0]
    """
    Z = np.atleast_2d(np.asarray(values, dtype=float))
    if pairs is None:
        pairs = lag_pairs(coords_m, max_lag_m=max_lag_m, n_bins=n_bins)
    sums = _binned_squared_differences(pairs, Z)
    n_pairs = pairs.n_pairs
    ok = n_pairs > 0
    gamma = sums[:, ok] / (2.0 * n_pairs[ok])
    cols = {"bin": np.flatnonzero(ok), "bin_upper_m": pairs.edges_m[1:][ok],
            "lag_m": pairs.lag_sum_m[ok] / n_pairs[ok], "n_pairs": n_pairs[ok]}
    if Z.shape[0] == 1 and np.ndim(values) == 1:
        cols["gamma"] = gamma[0]
    else:
        cols.update({f"gamma_{k}": gamma[k] for k in range(Z.shape[0])})
    return pd.DataFrame(cols)


def knn_weights(coords_m: np.ndarray, k: int = 8) -> sp.csr_matrix:
    """Row-standardised k-nearest-neighbour spatial weights W (n x n, sparse).

    Parameters
    ----------
    coords_m : ndarray of shape (n_records, 2)
        Coordinates, metres.
    k : int, default=8
        Neighbours per record (the record itself excluded; coincident records count).

    Returns
    -------
    scipy.sparse.csr_matrix of shape (n_records, n_records)
        w_ij = 1/k for the k nearest j ≠ i.
    """
    coords_m = np.asarray(coords_m, dtype=float)
    n = coords_m.shape[0]
    k = min(int(k), n - 1)
    _, j = cKDTree(coords_m).query(coords_m, k=k + 1, workers=-1)
    rows, cols = [], []
    for i in range(n):  # drop the self match (which may sit anywhere among distance-0 ties)
        nb = j[i][j[i] != i][:k]
        rows.append(np.full(nb.size, i))
        cols.append(nb)
    r, c = np.concatenate(rows), np.concatenate(cols)
    return sp.csr_matrix((np.full(r.size, 1.0 / k), (r, c)), shape=(n, n))


def morans_i(values: np.ndarray, W: sp.spmatrix) -> np.ndarray:
    """Moran's I of one or many value vectors under weights W.

    Parameters
    ----------
    values : ndarray of shape (n_records,) or (L, n_records)
    W : scipy.sparse matrix of shape (n_records, n_records)
        Spatial weights (e.g. :func:`knn_weights`).

    Returns
    -------
    float or ndarray of shape (L,)

    Notes
    -----
    I = (n / S₀) · zᵀ W z / zᵀ z, z the deviations from the mean, S₀ = Σ_ij w_ij (Moran 1950;
    Cliff & Ord 1981, eq. 1.38). Under no autocorrelation E[I] = −1/(n − 1).
    """
    Z = np.atleast_2d(np.asarray(values, dtype=float))
    Z = Z - Z.mean(axis=1, keepdims=True)
    n, s0 = Z.shape[1], float(W.sum())
    num = np.einsum("ln,ln->l", Z, (W @ Z.T).T)
    out = n / s0 * num / np.einsum("ln,ln->l", Z, Z)
    return float(out[0]) if np.ndim(values) == 1 else out


def local_means(
    coords_m: np.ndarray, values: np.ndarray, *, cell_m: float, min_records: int = 5,
    origin_m: tuple[float, float] | None = None,
) -> pd.DataFrame:
    """Mean of one or many value vectors in square grid cells.

    Parameters
    ----------
    coords_m : ndarray of shape (n_records, 2)
        Coordinates, metres.
    values : ndarray of shape (n_records,) or (L, n_records)
    cell_m : float
        Cell side, metres.
    min_records : int, default=5
        Cells with fewer records are left out (their means are too noisy to compare, and small
        cells are a disclosure risk of their own).
    origin_m : (float, float), optional
        Lower-left corner of the grid (default: the smallest coordinates).

    Returns
    -------
    pandas.DataFrame
        One row per cell kept: ``cell_x``, ``cell_y`` (integer cell indices), ``n_records`` and
        ``mean`` (one vector) or ``mean_0 ... mean_{L-1}``.
    """
    coords_m = np.asarray(coords_m, dtype=float)
    Z = np.atleast_2d(np.asarray(values, dtype=float))
    o = coords_m.min(axis=0) if origin_m is None else np.asarray(origin_m, float)
    ij = np.floor((coords_m - o) / float(cell_m)).astype(np.int64)
    cells, inv, counts = np.unique(ij, axis=0, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    sums = np.stack([np.bincount(inv, weights=z, minlength=len(cells)) for z in Z])
    keep = counts >= min_records
    means = sums[:, keep] / counts[keep]
    cols = {"cell_x": cells[keep, 0], "cell_y": cells[keep, 1], "n_records": counts[keep]}
    if np.ndim(values) == 1:
        cols["mean"] = means[0]
    else:
        cols.update({f"mean_{k}": means[k] for k in range(Z.shape[0])})
    return pd.DataFrame(cols)


def spatial_utility_tables(
    formula: str,
    frame: pd.DataFrame,
    response: str,
    coords_m: np.ndarray,
    truth: np.ndarray,
    synthetic: dict[str, tuple[np.ndarray, np.ndarray]],
    *,
    max_lag_m: float,
    n_bins: int = 12,
    k: int = 8,
    cell_m: float | None = None,
    min_records: int = 5,
) -> dict[str, pd.DataFrame]:
    """Residual semivariogram and Moran's I, confidential vs each model's implicates.

    Parameters
    ----------
    formula : str
        Analyst's formula.
    frame : pandas.DataFrame with n_records rows
        Covariates and the response column.
    response : str
        Response column name.
    coords_m : ndarray of shape (n_records, 2)
        Coordinates, metres.
    truth : ndarray of shape (n_records,)
        Confidential response.
    synthetic : dict of str to (ndarray of bool of shape (n_records,), ndarray of shape (L, n))
        Per model: the records it releases (all, or the kept ones for the suppressed baseline)
        and its implicates on those records.
    max_lag_m : float
        Largest semivariogram lag, metres.
    n_bins : int, default=12
    k : int, default=8
        Neighbours in Moran's I weights.
    cell_m : float, optional
        Side of the local-means grid cells, metres (default: a tenth of the larger extent).
    min_records : int, default=5
        Cells with fewer confidential records are left out of the local means.

    Returns
    -------
    dict
        ``semivariogram``: one row per model × lag bin, columns ``model, bin_upper_m, lag_m,
        n_pairs,
        gamma`` (confidential value, or the mean over implicates), ``gamma_q05``,
        ``gamma_q95`` (5%/95% over implicates; NaN for the confidential row);
        ``morans_i``: one row per model, columns ``model, n_records, morans_i`` (mean over
        implicates), ``q05``, ``q95``, ``confidential`` (I of the confidential values on the
        same records); ``local_means``: one row per model, columns ``model, cell_m, n_cells,
        rmse`` (root mean square difference between an implicate's and the confidential cell
        means, averaged over implicates; log-scale for a log response), ``rmse_q95``,
        ``max_abs_diff`` (largest cell difference over cells and implicates).
    """
    coords_m = np.asarray(coords_m, dtype=float)
    truth = np.asarray(truth, dtype=float)
    sv_rows, mi_rows = [], []
    all_rec = np.ones(truth.size, bool)
    found: dict[bytes, LagPairs] = {}  # pairs of one set of records, found once
    for model, (keep, values) in {"confidential": (all_rec, truth[None, :]),
                                  **synthetic}.items():
        keep = np.asarray(keep, bool)
        sub = frame.loc[keep].reset_index(drop=True)
        resid = ols_residuals(formula, sub, values)
        key = np.packbits(keep).tobytes()
        if key not in found:
            found[key] = lag_pairs(coords_m[keep], max_lag_m=max_lag_m, n_bins=n_bins)
        sv = semivariogram(coords_m[keep], resid, max_lag_m=max_lag_m, n_bins=n_bins,
                           pairs=found[key])
        g = sv.filter(like="gamma_").to_numpy()
        sv_rows.append(pd.DataFrame({
            "model": model, "bin_upper_m": sv["bin_upper_m"], "lag_m": sv["lag_m"],
            "n_pairs": sv["n_pairs"],
            "gamma": g.mean(axis=1),
            "gamma_q05": np.quantile(g, 0.05, axis=1) if model != "confidential" else np.nan,
            "gamma_q95": np.quantile(g, 0.95, axis=1) if model != "confidential" else np.nan,
        }))
        W = knn_weights(coords_m[keep], k)
        mi = morans_i(values, W)
        mi_rows.append({
            "model": model, "n_records": int(keep.sum()), "morans_i": float(mi.mean()),
            "q05": float(np.quantile(mi, 0.05)) if model != "confidential" else np.nan,
            "q95": float(np.quantile(mi, 0.95)) if model != "confidential" else np.nan,
            "confidential": float(morans_i(truth[keep], W)),
        })
    if cell_m is None:
        cell_m = float(np.ptp(coords_m, axis=0).max()) / 10.0
    origin = tuple(coords_m.min(axis=0))
    lm_rows = []
    for model, (keep, values) in synthetic.items():
        ref = local_means(coords_m[keep], truth[keep], cell_m=cell_m, min_records=min_records,
                          origin_m=origin)
        syn = local_means(coords_m[keep], values, cell_m=cell_m, min_records=min_records,
                          origin_m=origin)
        diff = syn.filter(like="mean_").to_numpy() - ref["mean"].to_numpy()[:, None]
        if diff.size == 0:  # no cell holds min_records records (small files): nothing to compare
            lm_rows.append({"model": model, "cell_m": cell_m, "n_cells": 0, "rmse": np.nan,
                            "rmse_q95": np.nan, "max_abs_diff": np.nan})
            continue
        rmse = np.sqrt((diff**2).mean(axis=0))
        lm_rows.append({"model": model, "cell_m": cell_m, "n_cells": len(ref),
                        "rmse": float(rmse.mean()), "rmse_q95": float(np.quantile(rmse, 0.95)),
                        "max_abs_diff": float(np.abs(diff).max())})
    return {"semivariogram": pd.concat(sv_rows, ignore_index=True),
            "morans_i": pd.DataFrame(mi_rows), "local_means": pd.DataFrame(lm_rows)}
