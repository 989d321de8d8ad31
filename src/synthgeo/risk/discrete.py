r"""Disclosure risk of yes/no and count responses, and jointly across several responses.

Per record i with true value y_i and implicates y†(1..L) (docs/risk-and-utility.md,
"Discrete responses"):

- ``share_equal``: the share of implicates equal to the truth (yes/no and counts);
- ``share_within1``: the share within ±1 (counts);
- ``majority``: the attacker guesses the most frequent implicate value (yes/no: the majority;
  ties go to the smaller value) — 1 when that equals y_i;
- ``mean``: the attacker guesses the implicate average, rounded — 1 when it equals y_i (for
  yes/no the same as the majority but for ties).

The **public baseline** is what the released covariates alone give: the analyst's GLM
(logistic / Poisson, statsmodels) of the released synthetic response on the released
covariates, fitted per implicate, predicts P(Y = y_i | x_i) (averaged over implicates), the
analogue of the continuous baseline (:mod:`synthgeo.risk.baselines`). The baseline attack
guesses the most probable value. **Attributable** risk is the release's share minus the
baseline's. Tables are by true class (yes/no; counts 0, 1, 2, 3+) and by at-risk group, both
models beside each other. Per-record values are confidential (``confidential/``).

**Joint risk**: a record counts as disclosed in an implicate when every one of its responses is
matched within tolerance (discrete: equal; gaussian: within the first ``[risk] eps`` on the
back-transformed scale); the joint share is the share of implicates where that holds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

__all__ = ["discrete_risk", "glm_baseline", "summarise_discrete", "joint_match_share",
           "true_class"]


def _check(y_syn, truth) -> tuple[np.ndarray, np.ndarray]:
    ys, t = np.asarray(y_syn, float), np.asarray(truth, float)
    if ys.ndim != 2 or ys.shape[1] != t.shape[0]:
        raise ValueError(f"`y_syn` must have shape (L, {t.shape[0]}), got {ys.shape}")
    return ys, t


def discrete_risk(y_syn, truth, *, family: str) -> pd.DataFrame:
    """Per-record shares of implicates matching the truth and the two attacks.

    Parameters
    ----------
    y_syn : array-like of shape (L, n_records)
        Synthetic values (0/1 or counts).
    truth : array-like of shape (n_records,)
    family : {"bernoulli", "poisson"}

    Returns
    -------
    pandas.DataFrame
        ``share_equal``, ``majority``, ``mean`` (0/1 flags) and, for counts,
        ``share_within1``, ``majority_within1``, ``mean_within1``; one row per record.

    Examples
    --------
    >>> r = discrete_risk([[1, 0], [1, 1], [0, 1]], [1, 0], family="bernoulli")
    >>> r["share_equal"].round(3).tolist(), r["majority"].tolist()
    ([0.667, 0.333], [1, 0])
    """
    ys, t = _check(y_syn, truth)
    out = {"share_equal": (ys == t).mean(axis=0)}
    if family == "bernoulli":
        frac = ys.mean(axis=0)
        guess = (frac > 0.5).astype(float)
        out["majority"] = (guess == t).astype(int)
        out["mean"] = (np.round(frac) == t).astype(int)  # numpy rounds 0.5 to 0
        return pd.DataFrame(out)
    mode = stats.mode(ys, axis=0, keepdims=False).mode
    mean = np.round(ys.mean(axis=0))
    out["share_within1"] = (np.abs(ys - t) <= 1).mean(axis=0)
    out["majority"] = (mode == t).astype(int)
    out["mean"] = (mean == t).astype(int)
    out["majority_within1"] = (np.abs(mode - t) <= 1).astype(int)
    out["mean_within1"] = (np.abs(mean - t) <= 1).astype(int)
    return pd.DataFrame(out)


def glm_baseline(formula: str, y_syn, frame: pd.DataFrame, truth, *, response: str,
                 family: str) -> pd.DataFrame:
    """Public baseline per record: the analyst's GLM on the released data predicts the truth.

    Parameters
    ----------
    formula : str
        ``response ~ released covariates``.
    y_syn : array-like of shape (L, n_records)
        Released synthetic values (the GLM is fitted to each implicate).
    frame : pandas.DataFrame
        Released covariates, n_records rows.
    truth : array-like of shape (n_records,)
    response : str
    family : {"bernoulli", "poisson"}

    Returns
    -------
    pandas.DataFrame
        ``share_equal`` (P(Y = y_i | x_i), averaged over implicates), ``majority`` and
        ``mean`` (the most probable value, resp. the rounded predicted mean, equals y_i), and
        for counts ``share_within1`` (P(|Y − y_i| ≤ 1)), ``majority_within1``,
        ``mean_within1``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x": rng.normal(size=100)})
    >>> y = (rng.random(100) < 0.3).astype(float)
    >>> b = glm_baseline("y ~ x", y[None], df, y, response="y", family="bernoulli")
    >>> b.shape
    (100, 3)
    """
    from synthgeo.model.glm import fit_glm

    ys, t = _check(y_syn, truth)
    data = frame.copy()
    mus = []
    for row in ys:
        data[response] = row
        mus.append(np.asarray(fit_glm(formula, data, family=family).fittedvalues, float))
    mu = np.mean(mus, axis=0)
    if family == "bernoulli":
        p_eq = np.where(t == 1, mu, 1 - mu)
        guess = (mu > 0.5).astype(float)
        return pd.DataFrame({"share_equal": p_eq, "majority": (guess == t).astype(int),
                             "mean": (guess == t).astype(int)})
    pmf = np.mean([stats.poisson.pmf(t, m) for m in mus], axis=0)
    within = np.mean([stats.poisson.cdf(t + 1, m) - stats.poisson.cdf(t - 2, m)
                      for m in mus], axis=0)
    mode = np.floor(mu)
    mean = np.round(mu)
    return pd.DataFrame({
        "share_equal": pmf, "share_within1": within, "majority": (mode == t).astype(int),
        "mean": (mean == t).astype(int), "majority_within1": (np.abs(mode - t) <= 1).astype(int),
        "mean_within1": (np.abs(mean - t) <= 1).astype(int)})


def true_class(truth, family: str) -> np.ndarray:
    """Class label per record: "no"/"yes" (bernoulli) or "0", "1", "2", "3+" (counts).

    Examples
    --------
    >>> true_class([0, 1, 5], "poisson").tolist()
    ['0', '1', '3+']
    """
    t = np.asarray(truth, float)
    if family == "bernoulli":
        return np.where(t == 1, "yes", "no")
    return np.where(t >= 3, "3+", t.astype(int).astype(str))


def summarise_discrete(per_model: dict[str, pd.DataFrame], baseline: pd.DataFrame, truth,
                       at_risk, *, family: str) -> pd.DataFrame:
    """Mean risk by true class and at-risk group, both models, baseline and attributable.

    Parameters
    ----------
    per_model : dict of str to pandas.DataFrame
        :func:`discrete_risk` of ``"unrestricted"`` and ``"restricted"``.
    baseline : pandas.DataFrame
        :func:`glm_baseline`.
    truth : array-like of shape (n_records,)
    at_risk : array-like of bool, shape (n_records,)
    family : {"bernoulli", "poisson"}

    Returns
    -------
    pandas.DataFrame
        One row per (measure, class, group): ``measure`` (``share_equal``, ``majority``,
        ``mean``, and the ``*_within1`` ones for counts), ``class`` (the true class or "all"),
        ``group`` ("at risk", "other", "all"), ``n_records``, ``unrestricted``,
        ``restricted``, ``baseline``, ``attributable_unrestricted``,
        ``attributable_restricted`` (model minus baseline).
    """
    cls = true_class(truth, family)
    ar = np.asarray(at_risk, bool)
    rows = []
    for measure in baseline.columns:
        for c in ["all", *sorted(set(cls))]:
            in_c = np.ones(len(cls), bool) if c == "all" else cls == c
            for g, mask in (("at risk", ar), ("other", ~ar), ("all", np.ones_like(ar))):
                m = in_c & mask
                if not m.any():
                    continue
                row = {"measure": measure, "class": c, "group": g, "n_records": int(m.sum())}
                base = float(baseline[measure].to_numpy()[m].mean())
                for name in ("unrestricted", "restricted"):
                    row[name] = float(per_model[name][measure].to_numpy()[m].mean())
                row["baseline"] = base
                for name in ("unrestricted", "restricted"):
                    row[f"attributable_{name}"] = row[name] - base
                rows.append(row)
    return pd.DataFrame(rows)


def joint_match_share(matches: list[np.ndarray]) -> np.ndarray:
    """Per-record share of implicates in which every response is matched within tolerance.

    Parameters
    ----------
    matches : list of bool ndarray of shape (L, n_records)
        One per response: implicate ℓ matches record i's value within tolerance.

    Returns
    -------
    ndarray of shape (n_records,)

    Examples
    --------
    >>> a = np.array([[True, True], [False, True]]); b = np.array([[True, False], [True, True]])
    >>> joint_match_share([a, b]).tolist()
    [0.5, 0.5]
    """
    allm = np.logical_and.reduce([np.asarray(m, bool) for m in matches])
    return allm.mean(axis=0)
