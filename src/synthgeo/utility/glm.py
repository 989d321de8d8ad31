"""Utility for yes/no and count responses: the analyst's GLM on each implicate, Reiter-combined.

The analyst fits a logistic (bernoulli) or Poisson (log link) GLM by statsmodels to each
implicate; the estimates are combined by Reiter's (2003) rules for partially synthetic data
(:func:`synthgeo.utility.reiter.combine_reiter`, the one home of the combining rules) and
compared with the fit on the confidential data by the CI overlap of Karr et al. (2006)
(:func:`synthgeo.utility.reiter.ci_overlap`). Also the correlation matrix of the synthetic and
the confidential responses (docs/risk-and-utility.md, "Several responses").
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from synthgeo.model.glm import fit_glm
from synthgeo.utility.reiter import ci_overlap, combine_reiter

__all__ = ["fit_glm", "compare_glm_to_confidential", "response_correlations"]


def compare_glm_to_confidential(
    formula: str, synthetic_by_model: Mapping[str, np.ndarray], frame: pd.DataFrame, *,
    response: str, truth, family: str, alpha: float = 0.05,
) -> pd.DataFrame:
    r"""Reiter-combined GLM fits on the implicates beside the confidential GLM fit.

    Parameters
    ----------
    formula : str
        Analyst's formula; its left side is ``response``.
    synthetic_by_model : dict of str to ndarray of shape (L, n_records)
        Synthetic responses of each model (0/1 or counts).
    frame : pandas.DataFrame with n_records rows
        Covariates, in record order (text columns are treatment coded by patsy).
    response : str
    truth : array-like of shape (n_records,)
    family : {"bernoulli", "poisson", "gaussian"}
    alpha : float, default=0.05

    Returns
    -------
    pandas.DataFrame
        The columns of :func:`synthgeo.utility.reiter.compare_to_confidential`: ``model, term,
        estimate, se, lower, upper, df, b_m, u_bar, ci_overlap, std_diff`` (confidential rows
        first; for them ``df`` is the residual df and ``b_m``, ``u_bar``, ``ci_overlap`` NaN).

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> df = pd.DataFrame({"x": rng.normal(size=300)})
    >>> y = (rng.random(300) < 0.4).astype(float)
    >>> syn = (rng.random((3, 300)) < 0.4).astype(float)
    >>> t = compare_glm_to_confidential("y ~ x", {"restricted": syn}, df, response="y",
    ...                                 truth=y, family="bernoulli")
    >>> t["model"].unique().tolist()
    ['confidential', 'restricted']
    """
    data = frame.copy()
    data[response] = np.asarray(truth, float)
    conf = fit_glm(formula, data, family=family)
    terms = list(conf.params.index)
    ci = conf.conf_int(alpha=alpha)
    q0, se0 = conf.params.to_numpy(), conf.bse.to_numpy()
    lo0, hi0 = ci[0].to_numpy(), ci[1].to_numpy()
    nan = np.nan
    tables = [pd.DataFrame({
        "model": "confidential", "term": terms, "estimate": q0, "se": se0, "lower": lo0,
        "upper": hi0, "df": float(conf.df_resid), "b_m": nan, "u_bar": nan, "ci_overlap": nan,
        "std_diff": 0.0})]
    for model, syn in synthetic_by_model.items():
        syn = np.asarray(syn, float)
        q, u = [], []
        for row in syn:
            data[response] = row
            f = fit_glm(formula, data, family=family)
            q.append(f.params.reindex(terms).to_numpy())
            u.append(f.bse.reindex(terms).to_numpy() ** 2)
        est = combine_reiter(np.array(q), np.array(u), names=terms, alpha=alpha)
        tables.append(pd.DataFrame({
            "model": str(model), "term": terms, "estimate": est.q_bar, "se": est.se,
            "lower": est.lower, "upper": est.upper, "df": est.df, "b_m": est.b_m,
            "u_bar": est.u_bar, "ci_overlap": ci_overlap(lo0, hi0, est.lower, est.upper),
            "std_diff": (est.q_bar - q0) / se0}))
    return pd.concat(tables, ignore_index=True)


def response_correlations(truth: Mapping[str, np.ndarray],
                          synthetic: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """Correlation matrices of the confidential and the synthetic responses, side by side.

    Parameters
    ----------
    truth : dict of str to ndarray of shape (n_records,)
        Confidential responses (model scale) by name.
    synthetic : dict of str to ndarray of shape (L, n_records)
        Synthetic responses (released model) by name; the correlation is computed per
        implicate and averaged.

    Returns
    -------
    pandas.DataFrame
        Rows ``(a, b)`` for each pair a < b: ``confidential``, ``synthetic`` (mean over
        implicates), ``synthetic_min``, ``synthetic_max``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> a = rng.normal(size=100); b = a + rng.normal(size=100)
    >>> t = response_correlations({"a": a, "b": b}, {"a": a[None] + 0.0, "b": b[None] + 0.0})
    >>> bool(np.isclose(t["confidential"][0], t["synthetic"][0]))
    True
    """
    names = list(truth)
    rows = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            c0 = float(np.corrcoef(truth[a], truth[b])[0, 1])
            per = np.array([np.corrcoef(sa, sb)[0, 1]
                            for sa, sb in zip(np.asarray(synthetic[a], float),
                                              np.asarray(synthetic[b], float))])
            rows.append({"a": a, "b": b, "confidential": c0, "synthetic": float(np.mean(per)),
                         "synthetic_min": float(per.min()), "synthetic_max": float(per.max())})
    return pd.DataFrame(rows, columns=["a", "b", "confidential", "synthetic", "synthetic_min",
                                       "synthetic_max"])
