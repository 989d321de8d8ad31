r"""Verification measures per coefficient: CI overlap, sign agreement, significance agreement.

The synthetic side is what the analyst computes on the public file: the model fitted to each
released implicate and combined by Reiter's (2003) rules for partially synthetic data
(:func:`synthgeo.utility.reiter.reiter_ols`, :func:`synthgeo.utility.reiter.combine_reiter`).
The confidential side is fitted either to all records (the agency's non-private mode,
:func:`exact_measures`) or to each of M disjoint subsets (:func:`subset_measures`, the input of
the differentially private release, :mod:`synthgeo.verification.privacy`).

In a subset of about N/M records the standard error is about √M times the full-data one, so
the two sides are put on one scale before they are compared. Per subset m and coefficient:

- CI overlap (Karr et al. 2006), clipped to [0, 1], between the subset's own (1 − α) interval
  and the Reiter interval widened to the subset's size, q̄_m ± √M·(upper − lower)/2 (both
  intervals then have about one width; the subset's sampling error lowers the overlap, so the
  noise-free share is below the full-data overlap: benchmarks/bench_verify.py measures it);
- sign agreement: 1 if β̂_m has the sign of q̄_m;
- significance agreement: 1 if "significant at α" is the same for both, the subset's judged on
  the full-data scale, |β̂_m|/(se_m/√M) > c, c the (1 − α/2) quantile of t on the full data's
  residual df (OLS) or of the normal (logistic).

A subset whose fit fails scores 0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

from synthgeo.model.glm import fit_glm
from synthgeo.utility.reiter import (
    CombinedEstimate,
    ci_overlap,
    combine_reiter,
    fit_ols,
    reiter_ols,
)
from synthgeo.verification.analysis import Analysis, design

__all__ = ["MEASURES", "synthetic_estimate", "fit_confidential", "exact_measures",
           "subset_measures"]

#: The verification measures, in the order of the output's columns.
MEASURES = ("ci_overlap", "sign_agreement", "significance_agreement")


def synthetic_estimate(analysis: Analysis, implicates: list[pd.DataFrame], *,
                       response: str) -> CombinedEstimate:
    """Fit the analyst's model to each released implicate and combine by Reiter's rules.

    Parameters
    ----------
    analysis : Analysis
    implicates : list of pandas.DataFrame
        The released implicates (m ≥ 2), each with the released covariates and ``response``,
        the records in one order.
    response : str
        The released response column.

    Returns
    -------
    CombinedEstimate
    """
    if analysis.family == "gaussian":
        values = np.stack([f[response].to_numpy(dtype=float) for f in implicates])
        synthetic = xr.DataArray(values, dims=("implicate", "record"))
        return reiter_ols(analysis.formula, synthetic, implicates[0], response=response,
                          alpha=_alpha(analysis))
    q, u, terms = [], [], None
    for frame in implicates:
        fit = fit_glm(analysis.formula, frame, family=analysis.family)
        terms = list(fit.params.index) if terms is None else terms
        q.append(fit.params.reindex(terms).to_numpy())
        u.append(fit.bse.reindex(terms).to_numpy() ** 2)
    return combine_reiter(np.array(q), np.array(u), names=terms, alpha=_alpha(analysis))


def fit_confidential(analysis: Analysis, frame: pd.DataFrame) -> pd.DataFrame:
    """Fit the analyst's model to records: ``estimate, se, lower, upper`` by term (confidential).

    Also ``df_resid`` (the residual df; inf for the logistic model). Confidential: never
    released; only :func:`exact_measures` or :func:`subset_measures` read it.
    """
    if analysis.family == "gaussian":
        fit = fit_ols(analysis.formula, frame, alpha=_alpha(analysis))
        out = fit.to_dataframe()
        out["df_resid"] = fit.df_resid
        return out
    fit = fit_glm(analysis.formula, frame, family=analysis.family)
    ci = fit.conf_int(alpha=_alpha(analysis))
    return pd.DataFrame({"estimate": fit.params, "se": fit.bse, "lower": ci[0],
                         "upper": ci[1], "df_resid": np.inf}).rename_axis("term")


def _alpha(analysis: Analysis) -> float:
    """Return the analysis's α (0.05 when it defers to a release and none was given)."""
    return 0.05 if analysis.alpha is None else float(analysis.alpha)


def _significant(lower, upper) -> np.ndarray:
    return (np.asarray(lower) > 0) | (np.asarray(upper) < 0)


def exact_measures(confidential: pd.DataFrame, synthetic: CombinedEstimate) -> pd.DataFrame:
    """Return the measures from the fit on all confidential records (the non-private mode).

    Parameters
    ----------
    confidential : pandas.DataFrame
        :func:`fit_confidential` on all records.
    synthetic : CombinedEstimate

    Returns
    -------
    pandas.DataFrame
        Index ``term``; ``ci_overlap`` (Karr et al. 2006, unclamped), ``sign_agreement`` and
        ``significance_agreement`` (0 or 1). No confidential estimate or se.

    Examples
    --------
    >>> conf = pd.DataFrame({"estimate": [1.0], "se": [0.5], "lower": [0.0], "upper": [2.0]},
    ...                     index=pd.Index(["x"], name="term"))
    >>> syn = combine_reiter([[0.9], [1.1]], [[0.25], [0.25]], names=["x"])
    >>> exact_measures(conf, syn)[["sign_agreement", "significance_agreement"]].values.tolist()
    [[1.0, 1.0]]
    """
    conf = confidential.reindex(list(synthetic.names))
    overlap = ci_overlap(conf["lower"], conf["upper"], synthetic.lower, synthetic.upper)
    sign = np.sign(conf["estimate"].to_numpy()) == np.sign(synthetic.q_bar)
    signif = _significant(conf["lower"], conf["upper"]) == _significant(synthetic.lower,
                                                                      synthetic.upper)
    return pd.DataFrame({"ci_overlap": overlap, "sign_agreement": sign.astype(float),
                         "significance_agreement": signif.astype(float)},
                        index=pd.Index(list(synthetic.names), name="term"))


def subset_measures(analysis: Analysis, frame: pd.DataFrame, groups: np.ndarray,
                    synthetic: CombinedEstimate, *, n_coef: int) -> np.ndarray:
    """Each subset's measures, on the full-data scale, each in [0, 1].

    Parameters
    ----------
    analysis : Analysis
    frame : pandas.DataFrame
        The confidential records (covariates and the response column).
    groups : ndarray of int of shape (n_records,)
        Subset of each record (:func:`synthgeo.verification.privacy.partition`), 0 … M − 1.
    synthetic : CombinedEstimate
    n_coef : int
        Number of coefficients p of the full design (for the t quantile's df, N − p).

    Returns
    -------
    ndarray of shape (M, 3 k)
        Per subset: the k CI overlaps (subset scale, clipped to [0, 1]), the k sign
        agreements, the k significance agreements (the order of :data:`MEASURES`, coefficients in
        ``synthetic.names`` order); a subset whose fit fails or lacks a term holds 0.
    """
    terms = list(synthetic.names)
    k, n_sub, n = len(terms), int(groups.max()) + 1, len(frame)
    crit = (stats.t.ppf(1 - _alpha(analysis) / 2, n - n_coef) if analysis.family == "gaussian"
            else stats.norm.ppf(1 - _alpha(analysis) / 2))
    syn_sig = _significant(synthetic.lower, synthetic.upper)
    half = np.sqrt(n_sub) * (synthetic.upper - synthetic.lower) / 2  # widened to a subset's size
    syn_lo, syn_hi = synthetic.q_bar - half, synthetic.q_bar + half
    out = np.zeros((n_sub, 3 * k))
    for m in range(n_sub):
        sub = frame.iloc[np.flatnonzero(groups == m)].reset_index(drop=True)
        try:
            x_sub, _ = design(analysis, sub)
            if x_sub.shape[1] != n_coef or np.linalg.matrix_rank(x_sub) < n_coef:
                continue  # a level absent or collinear terms here: not identified, scores 0
            fit = fit_confidential(analysis, sub).reindex(terms)
        except Exception:  # noqa: BLE001 - a singular or separated subset scores 0
            continue
        est, lo, hi = (fit[c].to_numpy() for c in ("estimate", "lower", "upper"))
        se = fit["se"].to_numpy() / np.sqrt(n_sub)  # on the full data's scale
        ok = np.isfinite(est) & np.isfinite(se) & (se > 0) & (hi > lo)
        if not ok.all():
            continue
        out[m, :k] = np.clip(ci_overlap(lo, hi, syn_lo, syn_hi), 0.0, 1.0)
        out[m, k:2 * k] = np.sign(est) == np.sign(synthetic.q_bar)
        out[m, 2 * k:] = (np.abs(est / se) > crit) == syn_sig
    return out
