"""Can a protected record be told apart? A detector that sees only release/ (issue 25, item 4).

Kerckhoffs' principle: the attacker knows the published method — which mechanism protects
records, with which parameters — and sees only what release/ holds: the L implicates of every
record, the released covariates and the released locations. Any record-level treatment
(γ = ∞ differential smoothing at at-risk sites, a record drawn from its own leave-out
predictive, ...) may show in those files. If it does, *being treated* is itself a disclosure
(treatment is chosen from the true values), so a release that protects selectively must also
show that its protected records cannot be picked out.

This module builds that attacker, from release-visible arrays only (docs/risk-and-utility.md,
"Can a protected record be told apart?"):

1. **Features** per record (:func:`detector_features`; :data:`FEATURES` documents each);
2. a **classifier**: statsmodels ``Logit`` on the standardised features, with *cross-fitted*
   scores — stratified K-fold, seeded: each record is scored by a model fitted without its
   fold, so the score never saw the record's own label;
3. the **AUC** of telling protected from other records, in its Mann–Whitney form, computed
   within each fold and averaged (LeDell, Petersen & van der Laan 2015), with a confidence
   interval from DeLong's variance (DeLong, DeLong & Clarke-Pearson 1988, Biometrics 44(3),
   837–845, doi:10.2307/2531595; the placement-value algorithm of Sun & Xu 2014, IEEE Signal
   Processing Letters 21(11), 1389–1393).

The features are a generic attacker, not the strongest one: a detector that used the
mechanism's own likelihood could only do better, so an AUC near 0.5 here is necessary, not
sufficient, for undetectable treatment. The positive control (γ = ∞ on the same number of
records, which this detector must catch) shows that the features have power.

The labels (which records were protected) and the per-record scores are confidential: they
are never kept on the result, its ``repr`` or :meth:`DetectorResult.to_dict`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy import ndimage, stats
from scipy.spatial import cKDTree

from synthgeo._repr import confidential_repr

__all__ = ["FEATURES", "DetectorResult", "detector_features", "auc_mann_whitney",
           "delong_auc", "cross_validated_auc", "cross_fitted_scores", "detect_protected",
           "DETECTOR_SCHEMA", "MIN_PROTECTED", "MIN_PROTECTED_HARD", "release_block"]

#: Protected records below which the AUC is reported but flagged "too few protected records
#: to judge" (issue 25: the test uses ≥ 100 for the AUC to mean something; at 121 protected
#: among 811 others on the Sacramento file the interval around 0.5 is still about ±0.075).
MIN_PROTECTED = 100
#: Protected (and other) records below which no AUC is computed at all: each of the K folds
#: must hold at least 2 of each class for the cross-fitted classifier (ValueError).
MIN_PROTECTED_HARD = 2

#: The features, in order: name → (formula, why an attacker would use it). Notation: Y (L, n)
#: the released implicates on the model scale, m_i = mean_ℓ Y_i^(ℓ), s_i = sd_ℓ Y_i^(ℓ)
#: (ddof = 1), N(i) the k nearest *other* records (co-located records included), r_i =
#: m_i − x_i β̂ the residual of the OLS fit of the implicate means on the released covariates,
#: U^(ℓ) = Y^(ℓ) − X β̂^(ℓ) the per-implicate OLS residual.
FEATURES: dict[str, tuple[str, str]] = {
    "log_sd": (
        "log s_i",
        "a treated record's implicate spread differs from the model's: γ = ∞ removes the "
        "posterior variance of its spatial effect (narrower), a leave-out predictive adds the "
        "record's own uncertainty back (wider)"),
    "log_sd_vs_neighbours": (
        "log s_i − mean_{j∈N(i)} log s_j",
        "the same spread judged against what the model implies near the record: its "
        "neighbours share the posterior uncertainty of the local effect"),
    "log_covariate_distance": (
        "log(|r_i| + δ), δ = 0.01 sd(r)",
        "a record whose spatial effect was switched off is centred on the covariate-only "
        "fit: r_i ≈ 0"),
    "centring_ratio": (
        "log(|r_i| + δ) − log(|r_i − mean_{j∈N(i)} r_j| + δ)",
        "where the mean sits: on the covariate fit (negative) or on the spatial smooth of the "
        "other records' released values, the k-nearest-neighbour mean of their residuals "
        "(positive; an untreated record follows its neighbours)"),
    "plane_distance": (
        "log(|m_i − x_i β̃| + δ): β̃ the modal linear regression of m on X (Gaussian-weighted "
        "least squares around the densest residual, bandwidth annealed from 8 h to h; Yao & "
        "Li 2014), h = median_j s_j / √L (a record mean's standard error)",
        "records whose effect was removed all sit on one covariate plane x β, wherever the "
        "OLS fit of all records puts it: their residuals pile up within a standard error of "
        "each other, so the attacker finds that plane (the densest plane, not the OLS one) "
        "and measures each record's distance to it"),
    "neighbour_correlation": (
        "corr_ℓ(U_i^(ℓ) − Ū_i, mean_{j∈N(i)} (U_j^(ℓ) − Ū_j))",
        "implicate ℓ of an untreated record carries the same posterior draw of the spatial "
        "effect as its neighbours, so its deviations co-vary with theirs across ℓ; a record "
        "whose effect was removed (or drawn from its own predictive) does not"),
    "log_isolation": (
        "log(1 m + distance to the k-th nearest other record)",
        "at-risk rules flag isolated records; treatment chosen by isolation is read off the "
        "released locations"),
}

#: The JSON Schema of :meth:`DetectorResult.to_dict`.
_RESULT_SCHEMA: dict = {
    "type": "object",
    "description": (
        "Can a protected record be told apart from the release? AUC of a cross-fitted "
        "logistic detector on release-visible features (synthgeo.risk.detector; "
        "docs/risk-and-utility.md), fold-averaged, with a DeLong-based confidence interval. "
        "Counts and settings only."),
    "properties": {
        "auc": {"type": "number", "minimum": 0, "maximum": 1},
        "ci": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
        "level": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "se": {"type": "number", "minimum": 0},
        "ci_method": {"type": "string"},
        "se_delong": {"type": "number", "minimum": 0},
        "null_sd": {"type": ["number", "null"], "minimum": 0},
        "p_value": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
        "n_permutations": {"type": "integer", "minimum": 0},
        "n_protected": {"type": "integer", "minimum": 0},
        "n_other": {"type": "integer", "minimum": 0},
        "judged": {"type": "boolean"},
        "note": {"type": ["string", "null"]},
        "min_protected": {"type": "integer", "minimum": 1},
        "features": {"type": "array", "items": {"type": "string"}},
        "coefficients": {"type": "object",  # closed: one per feature (FEATURES)
                         "properties": {name: {"type": "number"} for name in FEATURES},
                         "additionalProperties": False},
        "classifier": {"type": "string"},
        "folds": {"type": "integer", "minimum": 2},
        "k_neighbours": {"type": "integer", "minimum": 1},
        "n_implicates": {"type": "integer", "minimum": 3},
        "seed": {"type": ["integer", "null"]},
        "penalised_folds": {"type": "integer", "minimum": 0},
        "applicable": {"const": True},
    },
    "required": ["auc", "ci", "level", "n_protected", "n_other", "judged", "features",
                 "classifier", "folds", "seed"],
    "additionalProperties": False,
}

#: The JSON Schema fragment of release.json's ``detector`` block (:func:`release_block`): the
#: detector's result, or why it did not run (no selective treatment: nothing to detect).
DETECTOR_SCHEMA: dict = {
    "oneOf": [
        _RESULT_SCHEMA,
        {"type": "object",
         "properties": {"applicable": {"const": False}, "reason": {"type": "string"}},
         "required": ["applicable", "reason"], "additionalProperties": False},
    ],
}

_CLASSIFIER = ("statsmodels Logit (maximum likelihood; L1-penalised, alpha = 1, where the "
               "folds separate perfectly) on features standardised within each training fold")


_CI_METHOD = ("fold-averaged AUC (LeDell et al. 2015); se = max(DeLong (1988) se of the "
              "fold average, sd of the AUC over seeded label permutations); Wald interval "
              "clipped to [0, 1]")


def _neighbours(coords_m: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Return indices and distances (n, k) of the k nearest *other* records (ties at 0 too)."""
    n = coords_m.shape[0]
    dist, idx = cKDTree(coords_m).query(coords_m, k=k + 1)
    self_hit = idx == np.arange(n)[:, None]
    # co-located records tie at distance 0: the record itself may be missed; drop the last
    missed = ~self_hit.any(axis=1)
    self_hit[missed, -1] = True
    keep = ~self_hit
    return idx[keep].reshape(n, k), dist[keep].reshape(n, k)


def _with_intercept(X: np.ndarray) -> np.ndarray:
    """X with a column of ones in front unless a non-zero constant column is already there."""
    if X.shape[1] and np.any(np.all(X == X[:1], axis=0) & (X[0] != 0)):
        return X
    return np.column_stack([np.ones(X.shape[0]), X])


def _check_arrays(implicates, X, coords_m) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    Y = np.asarray(implicates, dtype=float)
    if Y.ndim != 2 or Y.shape[0] < 3:
        raise ValueError(f"`implicates` must be (L, n_records) with L >= 3 implicates, got "
                         f"shape {Y.shape}; pass the release's implicates, one row per ℓ")
    n = Y.shape[1]
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    coords_m = np.asarray(coords_m, dtype=float)
    if X.shape[0] != n or coords_m.shape != (n, 2):
        raise ValueError(f"`X` must be (n_records, p) and `coords_m` (n_records, 2) with "
                         f"n_records = {n} (columns of `implicates`), got {X.shape} and "
                         f"{coords_m.shape}")
    for name, a in (("implicates", Y), ("X", X), ("coords_m", coords_m)):
        if not np.all(np.isfinite(a)):
            raise ValueError(f"`{name}` holds non-finite values; the detector needs every "
                             "released value (drop the records with missing values first)")
    return Y, X, coords_m


def _mode(r: np.ndarray, bw: float) -> float:
    """Densest value of r: histogram of bin bw/4 smoothed by a Gaussian kernel of sd bw."""
    n_bins = int(min(200_000, np.ceil((r.max() - r.min()) / (bw / 4)) + 1))
    counts, edges = np.histogram(r, bins=max(n_bins, 1))
    dens = ndimage.gaussian_filter1d(counts.astype(float), sigma=bw / (edges[1] - edges[0])
                                     if edges[1] > edges[0] else 1.0, mode="constant")
    j = int(np.argmax(dens))
    return float((edges[j] + edges[j + 1]) / 2)


def _modal_plane_residual(m: np.ndarray, Xc: np.ndarray, r: np.ndarray, h: float
                          ) -> np.ndarray:
    """Return m − X β̃, β̃ the modal linear regression of m on X.

    Modal linear regression (Yao & Li 2014, Scand. J. Statist. 41(3), 656–671): Gaussian-
    weighted least squares around the densest residual, with the bandwidth annealed
    8h → 4h → 2h → h → h (a wide start finds the densest plane, the narrow end fits it).
    """
    beta = np.linalg.lstsq(Xc, m, rcond=None)[0]
    res = r
    for bw in (8 * h, 4 * h, 2 * h, h, h):
        wts = np.exp(-0.5 * ((res - _mode(res, bw)) / bw) ** 2)
        if np.count_nonzero(wts > 1e-3) < Xc.shape[1] + 2:
            break
        sw = np.sqrt(wts)
        beta = np.linalg.lstsq(Xc * sw[:, None], m * sw, rcond=None)[0]
        res = m - Xc @ beta
    return res


def detector_features(implicates: np.ndarray, X: np.ndarray, coords_m: np.ndarray, *,
                      k: int = 15) -> dict[str, np.ndarray]:
    """Release-visible features of each record (:data:`FEATURES` gives formulas and reasons).

    Parameters
    ----------
    implicates : array-like of shape (L, n_records)
        The released implicates on the model scale (for a log-normal release, the log of the
        released values: the published back-transform is public). L ≥ 3.
    X : array-like of shape (n_records, p)
        The released covariates (an intercept column is added unless one is there).
    coords_m : array-like of shape (n_records, 2)
        The released locations, metres (a projected CRS).
    k : int, default=15
        Neighbours N(i): the k nearest other records (co-located records count, at 0 m).

    Returns
    -------
    dict of str to ndarray of shape (n_records,)
        One entry per name of :data:`FEATURES`, in that order.

    Raises
    ------
    ValueError
        For mismatched shapes, non-finite values, L < 3, or k outside 1 .. n_records − 1.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> f = detector_features(rng.normal(size=(20, 30)), rng.normal(size=(30, 1)),
    ...                       rng.uniform(0, 1000, size=(30, 2)), k=4)
    >>> list(f) == list(FEATURES), f["log_sd"].shape
    (True, (30,))
    """
    Y, X, coords_m = _check_arrays(implicates, X, coords_m)
    L, n = Y.shape
    if not 1 <= k <= n - 1:
        raise ValueError(f"`k` (neighbours) must be between 1 and n_records - 1 = {n - 1}, "
                         f"got {k!r}")
    nb, dist = _neighbours(coords_m, k)
    Xc = _with_intercept(X)
    tiny = np.finfo(float).tiny

    m = Y.mean(axis=0)
    log_s = np.log(np.maximum(Y.std(axis=0, ddof=1), tiny))
    r = m - Xc @ np.linalg.lstsq(Xc, m, rcond=None)[0]
    delta = max(0.01 * float(r.std()), tiny)
    log_cov = np.log(np.abs(r) + delta)
    r_nb = r[nb].mean(axis=1)
    plane = _modal_plane_residual(m, Xc, r, max(float(np.median(np.exp(log_s))) / np.sqrt(L),
                                                 tiny))
    plane_delta = max(0.01 * float(plane.std()), tiny)

    U = Y - (Xc @ np.linalg.lstsq(Xc, Y.T, rcond=None)[0]).T  # (L, n)
    D = U - U.mean(axis=0)
    Dn = np.zeros_like(D)
    for c in range(k):  # column by column: (L, n) at a time, not (L, n, k)
        Dn += D[:, nb[:, c]]
    Dn /= k
    den = np.sqrt((D * D).sum(axis=0) * (Dn * Dn).sum(axis=0))
    corr = np.divide((D * Dn).sum(axis=0), den, out=np.zeros(n), where=den > 0)

    return {
        "log_sd": log_s,
        "log_sd_vs_neighbours": log_s - log_s[nb].mean(axis=1),
        "log_covariate_distance": log_cov,
        "centring_ratio": log_cov - np.log(np.abs(r - r_nb) + delta),
        "plane_distance": np.log(np.abs(plane) + plane_delta),
        "neighbour_correlation": corr,
        "log_isolation": np.log1p(dist[:, -1]),
    }


def _labels(protected, n: int) -> np.ndarray:
    """Boolean mask (n,) from a boolean mask or from integer record indices."""
    lab = np.asarray(protected)
    if lab.dtype == bool:
        if lab.shape != (n,):
            raise ValueError(f"`protected` as a boolean mask must have shape ({n},), got "
                             f"{lab.shape}")
        return lab
    if lab.ndim != 1 or (lab.size and not np.issubdtype(lab.dtype, np.integer)):
        raise ValueError("`protected` must be a boolean mask or 1-d integer record indices, "
                         f"got dtype {lab.dtype} and shape {lab.shape}")
    if lab.size and (lab.min() < 0 or lab.max() >= n):
        raise ValueError(f"`protected` indices must lie in 0 .. {n - 1}")
    if np.unique(lab).size != lab.size:
        raise ValueError("`protected` indices repeat (a 0/1 integer mask?): pass a boolean "
                         "mask of shape (n_records,) or distinct record indices")
    mask = np.zeros(n, dtype=bool)
    mask[lab] = True
    return mask


def auc_mann_whitney(scores: np.ndarray, labels: np.ndarray) -> float:
    """AUC as the Mann–Whitney probability P(score of a positive > score of a negative).

    ``AUC = (R₁ − n₁(n₁ + 1)/2) / (n₁ n₀)`` with R₁ the sum of the positives' mid-ranks among
    all scores: ties count one half (Hanley & McNeil 1982, Radiology 143(1), 29–36).

    Parameters
    ----------
    scores : array-like of shape (n,)
        Higher = more likely positive.
    labels : array-like of bool, shape (n,)
        True for the positives (protected records).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        When either class is empty or the shapes differ.

    Examples
    --------
    >>> auc_mann_whitney([0.1, 0.4, 0.35, 0.8], [False, False, True, True])
    0.75
    """
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=bool)
    if s.shape != y.shape or s.ndim != 1:
        raise ValueError(f"`scores` and `labels` must be 1-d of one length, got {s.shape} "
                         f"and {y.shape}")
    n1, n0 = int(y.sum()), int((~y).sum())
    if n1 == 0 or n0 == 0:
        raise ValueError(f"the AUC needs both classes, got {n1} positives and {n0} negatives")
    r1 = stats.rankdata(s)[y].sum()
    return float((r1 - n1 * (n1 + 1) / 2) / (n1 * n0))


def delong_auc(scores: np.ndarray, labels: np.ndarray, *, level: float = 0.95
               ) -> tuple[float, float, tuple[float, float]]:
    """AUC with DeLong's variance and its Wald interval (clipped to [0, 1]).

    Placement values (DeLong, DeLong & Clarke-Pearson 1988, Biometrics 44(3), 837–845;
    ranks as in Sun & Xu 2014, IEEE Signal Process. Lett. 21(11), 1389–1393):
    V₁₀(i) = P̂(positive i beats a negative) = (rank_all(i) − rank_pos(i)) / n₀ and
    V₀₁(j) = P̂(negative j loses to a positive) = 1 − (rank_all(j) − rank_neg(j)) / n₁, with
    mid-ranks (ties count one half). ``Var(AUC) = S₁₀/n₁ + S₀₁/n₀`` with S the sample
    variances (ddof = 1) of the placement values; interval ``AUC ± z_{(1+level)/2} √Var``.

    Parameters
    ----------
    scores, labels : array-like of shape (n,)
        As :func:`auc_mann_whitney`; each class needs ≥ 2 members.
    level : float, default=0.95

    Returns
    -------
    auc : float
    se : float
    ci : tuple of float
        (lower, upper), clipped to [0, 1].

    Raises
    ------
    ValueError
        For fewer than 2 members in a class or a level outside (0, 1).

    Examples
    --------
    >>> auc, se, (lo, hi) = delong_auc([0.1, 0.4, 0.35, 0.8, 0.2, 0.9],
    ...                                [False, False, True, True, False, True])
    >>> round(auc, 4), lo < auc < hi
    (0.8889, True)
    """
    if not 0 < level < 1:
        raise ValueError(f"`level` must lie in (0, 1), got {level!r}")
    auc, var = _delong(scores, labels)
    return auc, float(np.sqrt(var)), _wald(auc, float(np.sqrt(var)), level)


def _wald(auc: float, se: float, level: float) -> tuple[float, float]:
    z = float(stats.norm.ppf(0.5 + level / 2))
    return max(0.0, auc - z * se), min(1.0, auc + z * se)


def _delong(scores, labels) -> tuple[float, float]:
    """AUC and DeLong's variance of it (placement values by mid-ranks)."""
    auc = auc_mann_whitney(scores, labels)
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=bool)
    n1, n0 = int(y.sum()), int((~y).sum())
    if n1 < 2 or n0 < 2:
        raise ValueError(f"DeLong's variance needs >= 2 of each class, got {n1} positives "
                         f"and {n0} negatives")
    r_all = stats.rankdata(s)
    v10 = (r_all[y] - stats.rankdata(s[y])) / n0
    v01 = 1.0 - (r_all[~y] - stats.rankdata(s[~y])) / n1
    return auc, float(v10.var(ddof=1) / n1 + v01.var(ddof=1) / n0)


def cross_validated_auc(scores: np.ndarray, labels: np.ndarray, fold: np.ndarray, *,
                        level: float = 0.95) -> tuple[float, float, tuple[float, float]]:
    """Fold-averaged AUC of cross-fitted scores, with its DeLong-based interval.

    ``AUC_cv = (1/K) Σ_f AUC_f``, each AUC_f computed *within* fold f, whose scores all come
    from one model fitted without that fold; ``Var(AUC_cv) = (1/K²) Σ_f Var_DeLong(AUC_f)``
    (folds treated as independent: the influence-curve interval of LeDell, Petersen & van der
    Laan 2015, Electron. J. Statist. 9, 1583–1607, doi:10.1214/15-EJS1035, in DeLong's
    placement-value form). Comparing scores *across* folds (one AUC of the pooled scores)
    would compare different models: under no signal, each fold's model leans away from its
    held-out class means, which biases the pooled AUC below 0.5; within a fold the held-out
    labels are exchangeable given the model, so E[AUC_f] = 0.5 exactly under no signal.

    Parameters
    ----------
    scores, labels : array-like of shape (n,)
    fold : array-like of int, shape (n,)
        Fold of each record; each fold needs ≥ 2 of each class.
    level : float, default=0.95

    Returns
    -------
    auc, se : float
    ci : tuple of float
        Wald interval, clipped to [0, 1].

    Examples
    --------
    >>> s = np.array([0.1, 0.4, 0.35, 0.8, 0.2, 0.9, 0.3, 0.5])
    >>> y = np.array([0, 0, 1, 1, 0, 1, 1, 0], bool)
    >>> auc, se, ci = cross_validated_auc(s, y, np.array([0, 0, 0, 0, 1, 1, 1, 1]))
    >>> auc == (auc_mann_whitney(s[:4], y[:4]) + auc_mann_whitney(s[4:], y[4:])) / 2
    True
    """
    if not 0 < level < 1:
        raise ValueError(f"`level` must lie in (0, 1), got {level!r}")
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=bool)
    fold = np.asarray(fold)
    if fold.shape != s.shape:
        raise ValueError(f"`fold` must have the shape of `scores` {s.shape}, got {fold.shape}")
    parts = [_delong(s[fold == f], y[fold == f]) for f in np.unique(fold)]
    K = len(parts)
    auc = float(np.mean([p[0] for p in parts]))
    se = float(np.sqrt(sum(p[1] for p in parts)) / K)
    return auc, se, _wald(auc, se, level)


def _stratified_folds(labels: np.ndarray, folds: int, seed) -> np.ndarray:
    """Fold of each record: each class shuffled (seeded) and dealt round the folds."""
    rng = np.random.default_rng(seed)
    fold = np.empty(labels.size, dtype=int)
    offset = 0
    for cls in (True, False):
        idx = rng.permutation(np.flatnonzero(labels == cls))
        fold[idx] = (np.arange(idx.size) + offset) % folds
        offset += idx.size  # the second class continues where the first stopped
    return fold


def _fit_logit(Z: np.ndarray, y: np.ndarray):
    """Logit MLE; L1-penalised (alpha = 1) where the fold separates or does not converge."""
    import statsmodels.api as sm
    from statsmodels.tools.sm_exceptions import ConvergenceWarning, PerfectSeparationWarning

    A = sm.add_constant(Z, has_constant="add")
    model = sm.Logit(y.astype(float), A)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = model.fit(disp=0, method="newton", maxiter=100)
            ok = bool(res.mle_retvals.get("converged", True)) and np.all(np.isfinite(res.params))
        except (np.linalg.LinAlgError, ValueError):
            ok, res = False, None
    bad = (PerfectSeparationWarning, ConvergenceWarning)
    if ok and not any(issubclass(w.category, bad) for w in caught):
        return np.asarray(res.params), False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = model.fit_regularized(method="l1", alpha=1.0, disp=0)
    return np.asarray(res.params), True


def cross_fitted_scores(features: np.ndarray, labels: np.ndarray, *, folds: int = 5,
                        seed: int | None = 0
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Out-of-fold linear predictors of a Logit of ``labels`` on standardised ``features``.

    Stratified K-fold (:func:`_stratified_folds`, seeded): for each fold the features are
    standardised with the *training* folds' mean and sd, a Logit is fitted there and the
    held-out fold is scored by its linear predictor (monotone in the fitted probability, and
    free of the ties a saturated probability would make).

    Parameters
    ----------
    features : ndarray of shape (n, q)
    labels : ndarray of bool, shape (n,)
    folds : int, default=5
    seed : int, Generator or None, default=0
        Seed of the fold assignment.

    Returns
    -------
    scores : ndarray of shape (n,)
    fold : ndarray of int, shape (n,)
        The fold that scored each record (for :func:`cross_validated_auc`).
    coefficients : ndarray of shape (q,)
        Mean over folds of the standardised slopes (which feature the detector leans on).
    penalised : int
        Folds fitted with the L1 fallback (perfect separation: a sign of a strong signal).

    Raises
    ------
    ValueError
        When a class has fewer than 2 members per fold.
    """
    F = np.asarray(features, dtype=float)
    y = np.asarray(labels, dtype=bool)
    n1, n0 = int(y.sum()), int((~y).sum())
    if folds < 2 or min(n1, n0) < MIN_PROTECTED_HARD * folds:
        raise ValueError(f"cross-fitting with {folds} folds needs >= 2 folds and >= "
                         f"{MIN_PROTECTED_HARD * folds} records of each class, got {n1} "
                         f"protected and {n0} others; lower `folds` or protect more records")
    fold = _stratified_folds(y, folds, seed)
    scores, coefs, penalised = _cross_fit(F, y, fold, folds)
    return scores, fold, coefs, penalised


def _cross_fit(F: np.ndarray, y: np.ndarray, fold: np.ndarray, folds: int
               ) -> tuple[np.ndarray, np.ndarray, int]:
    """Scores, mean slopes and penalised folds of :func:`cross_fitted_scores` given the folds."""
    scores = np.empty(y.size)
    coefs = np.zeros((folds, F.shape[1]))
    penalised = 0
    for f in range(folds):
        test, train = fold == f, fold != f
        mu, sd = F[train].mean(axis=0), F[train].std(axis=0)
        use = sd > 0  # a constant column would be collinear with the intercept
        Z = (F[:, use] - mu[use]) / sd[use]
        params, pen = _fit_logit(Z[train], y[train])
        penalised += pen
        scores[test] = params[0] + Z[test] @ params[1:]
        coefs[f, use] = params[1:]
    return scores, coefs.mean(axis=0), penalised


#: From this many records × permutations the permutations run in worker processes
#: (:func:`_null_aucs`); below it a process start costs more than it saves.
PARALLEL_MIN_WORK = 2_000_000
_NULL_STATE: dict = {}


def _null_auc(task: tuple) -> float:
    """Return the cross-fitted AUC of one permutation (labels, folds).

    The features are in ``_NULL_STATE``, set before the workers fork.
    """
    y_b, f_b = task
    F, folds = _NULL_STATE["F"], _NULL_STATE["folds"]
    f_b = f_b.astype(np.int64)
    scores = _cross_fit(F, y_b, f_b, folds)[0]
    return cross_validated_auc(scores, y_b, f_b)[0]


def _null_aucs(F: np.ndarray, y: np.ndarray, folds: int, rng: np.random.Generator,
               n_permutations: int, n_workers: int) -> np.ndarray:
    """AUC under each of ``n_permutations`` label permutations, the same with any workers.

    The permutations and their folds are drawn first, in the order of the sequential loop
    (permutation b, then its folds, from the one generator), so the null is identical
    whether the fits then run here or in ``n_workers`` forked processes (each fit is
    deterministic; processes, not threads, because the Logit fit's warning capture is
    process-global state).
    """
    tasks = []
    for _ in range(n_permutations):
        y_b = rng.permutation(y)
        tasks.append((y_b, _stratified_folds(y_b, folds, rng).astype(np.int8)))
    _NULL_STATE.update(F=F, folds=folds)
    try:
        import multiprocessing as mp

        ctx = (mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None)
        if n_workers > 1 and ctx is not None and y.size * n_permutations >= PARALLEL_MIN_WORK:
            pool = ctx.Pool(n_workers, initializer=_worker_signals)
            try:
                null = np.array(pool.map(_null_auc, tasks, chunksize=1))
            except BaseException:
                pool.terminate()
                pool.join()
                raise
            pool.close()  # the workers finish their queue and exit
            pool.join()
            return null
        return np.array([_null_auc(t) for t in tasks])
    finally:
        _NULL_STATE.clear()


def _worker_signals() -> None:
    """Give a forked worker SIGTERM's default action (the CLI's handler is the parent's)."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@dataclass(repr=False)
class DetectorResult:
    """The detector's AUC, its interval and its settings (no label, no per-record score).

    Attributes
    ----------
    auc : float
        Cross-fitted AUC (Mann–Whitney) of protected vs other records; 0.5 = chance.
    se : float
        The standard error the interval uses: max(``se_delong``, ``null_sd``).
    ci : tuple of float
        Wald interval ``auc ± z se`` at ``level``, clipped to [0, 1].
    level : float
    se_delong : float
        Fold-averaged DeLong standard error (:func:`cross_validated_auc`).
    null_sd : float or None
        SD of the AUC over ``n_permutations`` label permutations (the statistic's spread when
        nothing can be detected); None when not computed.
    p_value : float or None
        Permutation p-value of "the detector does better than chance":
        (1 + #{AUC_perm ≥ AUC}) / (1 + B).
    n_permutations : int
    n_protected, n_other : int
    judged : bool
        False when ``n_protected < min_protected``: the AUC is shown, with ``note`` saying
        "too few protected records to judge".
    note : str or None
    min_protected : int
    features : tuple of str
    coefficients : dict of str to float
        Mean standardised Logit slope per feature over the folds.
    folds, k_neighbours, n_implicates : int
    seed : int or None
    penalised_folds : int
    """

    auc: float
    se: float
    ci: tuple[float, float]
    level: float
    se_delong: float
    null_sd: float | None
    p_value: float | None
    n_permutations: int
    n_protected: int
    n_other: int
    judged: bool
    note: str | None
    min_protected: int
    features: tuple[str, ...]
    coefficients: dict[str, float] = field(default_factory=dict)
    folds: int = 5
    k_neighbours: int = 15
    n_implicates: int = 0
    seed: int | None = 0
    penalised_folds: int = 0

    def __repr__(self) -> str:
        """Show counts and the AUC only (no label, no score)."""
        return confidential_repr(self, n_protected=self.n_protected, n_other=self.n_other,
                                 auc=round(self.auc, 3),
                                 ci=(round(self.ci[0], 3), round(self.ci[1], 3)))

    @property
    def upper(self) -> float:
        """The interval's upper bound (the figure a target such as AUC ≤ 0.60 is judged on)."""
        return self.ci[1]

    def to_dict(self) -> dict:
        """Return the ``detector`` block of release.json (schema: :data:`DETECTOR_SCHEMA`)."""
        return {
            "applicable": True, "auc": self.auc, "ci": [self.ci[0], self.ci[1]],
            "level": self.level,
            "se": self.se, "se_delong": self.se_delong, "null_sd": self.null_sd,
            "p_value": self.p_value, "n_permutations": self.n_permutations,
            "ci_method": _CI_METHOD,
            "n_protected": self.n_protected, "n_other": self.n_other, "judged": self.judged,
            "note": self.note, "min_protected": self.min_protected,
            "features": list(self.features), "coefficients": dict(self.coefficients),
            "classifier": _CLASSIFIER, "folds": self.folds, "k_neighbours": self.k_neighbours,
            "n_implicates": self.n_implicates, "seed": self.seed,
            "penalised_folds": self.penalised_folds,
        }


def detect_protected(implicates: np.ndarray, X: np.ndarray, coords_m: np.ndarray,
                     protected: np.ndarray, *, k: int = 15, folds: int = 5,
                     seed: int | None = 0, features: tuple[str, ...] | None = None,
                     level: float = 0.95, min_protected: int = MIN_PROTECTED,
                     n_permutations: int = 100, n_workers: int = 2) -> DetectorResult:
    """How well an attacker who sees only release/ tells protected records from the rest.

    Features (:func:`detector_features`) → cross-fitted Logit scores
    (:func:`cross_fitted_scores`) → fold-averaged AUC with its DeLong-based interval
    (:func:`cross_validated_auc`).

    Parameters
    ----------
    implicates : array-like of shape (L, n_records)
        Released implicates, model scale (L ≥ 3).
    X : array-like of shape (n_records, p)
        Released covariates.
    coords_m : array-like of shape (n_records, 2)
        Released locations, metres.
    protected : array-like
        Boolean mask (n_records,) or indices of the records the mechanism treated
        (confidential: used to score the detector, never stored).
    k : int, default=15
        Neighbours of each record (15: the best of 4, 8, 15 and 25 for the γ = ∞ control on
        the Sacramento file; more neighbours average the neighbours' own noise away in the
        correlation and centring features).
    folds : int, default=5
        K of the stratified cross-fitting.
    seed : int or None, default=0
        Seed of the fold assignments and of the label permutations.
    features : tuple of str, optional
        A subset of :data:`FEATURES` (default: all).
    level : float, default=0.95
    min_protected : int, default=MIN_PROTECTED
        Below this many protected records the AUC is still computed and returned, with
        ``judged = False`` and the note "too few protected records to judge" (hiding a
        wide interval would hide what little it says).
    n_permutations : int, default=100
        B: label permutations (seeded) that give the AUC's spread under no signal and a
        permutation p-value. DeLong's variance treats the fitted classifier as fixed; near
        AUC = 0.5 the classifier's own fitting noise adds spread that it misses (on the real
        Sacramento file, 40 random labellings of 121 records: SD 0.046 against a mean DeLong
        SE of 0.028, 82 % coverage of 0.5; benchmarks/bench_detector.py), so the interval
        uses the larger of the two. Each permutation costs one
        cross-fit (about 0.01-0.05 s at 1,000 records); 0 skips them (DeLong only).
    n_workers : int, default=2
        Processes the permutations' fits run in (forked, where the platform forks) from
        :data:`PARALLEL_MIN_WORK` records × permutations; the result is the same for any
        value (the permutations are drawn first, in order).

    Returns
    -------
    DetectorResult

    Raises
    ------
    ValueError
        For bad arrays (see :func:`detector_features`), an unknown feature name, or fewer
        than ``2 × folds`` records in either class (no cross-fitted AUC is possible; with no
        protected record at all — treatment of every record, or none — there is nothing to
        detect).

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> n = 300
    >>> Y = rng.normal(size=(30, n))
    >>> Y[:, :60] *= 0.3  # a treatment that narrows 60 records' spread
    >>> res = detect_protected(Y, rng.normal(size=(n, 1)), rng.uniform(0, 1e3, (n, 2)),
    ...                        np.arange(60), k=5, seed=2, n_permutations=0)
    >>> res.auc > 0.95, res.judged
    (True, False)
    """
    if n_permutations < 0 or min_protected < 1:
        raise ValueError(f"`n_permutations` must be >= 0 and `min_protected` >= 1, got "
                         f"{n_permutations!r} and {min_protected!r}")
    feats = detector_features(implicates, X, coords_m, k=k)
    names = tuple(FEATURES) if features is None else tuple(features)
    unknown = sorted(set(names) - set(FEATURES))
    if unknown or not names:
        raise ValueError(f"`features` must be a non-empty subset of {list(FEATURES)}, got "
                         f"unknown {unknown}")
    n = feats["log_sd"].size
    y = _labels(protected, n)
    n1, n0 = int(y.sum()), int((~y).sum())
    if n1 < MIN_PROTECTED_HARD * folds or n0 < MIN_PROTECTED_HARD * folds:
        raise ValueError(f"the detector needs >= {MIN_PROTECTED_HARD * folds} protected and "
                         f">= {MIN_PROTECTED_HARD * folds} other records for {folds}-fold "
                         f"cross-fitting, got {n1} protected and {n0} others; with no "
                         "selective treatment there is nothing to detect")
    F = np.column_stack([feats[name] for name in names])
    scores, fold, coefs, penalised = cross_fitted_scores(F, y, folds=folds, seed=seed)
    auc, se_delong, _ = cross_validated_auc(scores, y, fold, level=level)
    null_sd = p_value = None
    if n_permutations > 0:
        rng = np.random.default_rng(None if seed is None else [int(seed), 1])
        null = _null_aucs(F, y, folds, rng, n_permutations, n_workers)
        null_sd = float(null.std(ddof=1)) if n_permutations > 1 else None
        p_value = float((1 + np.sum(null >= auc)) / (1 + n_permutations))
    se = max(se_delong, null_sd or 0.0)
    ci = _wald(auc, se, level)
    judged = n1 >= min_protected
    return DetectorResult(
        auc=auc, se=se, ci=ci, level=level, se_delong=se_delong, null_sd=null_sd,
        p_value=p_value, n_permutations=int(n_permutations), n_protected=n1, n_other=n0,
        judged=judged,
        note=None if judged else (f"too few protected records to judge ({n1} < "
                                  f"{min_protected}): the interval is wide"),
        min_protected=int(min_protected), features=names,
        coefficients={nm: float(c) for nm, c in zip(names, coefs)}, folds=folds,
        k_neighbours=k, n_implicates=int(np.shape(implicates)[0]),
        seed=None if seed is None else int(seed), penalised_folds=penalised)


def release_block(result: DetectorResult | None, *, reason: str | None = None) -> dict:
    """Return release.json's ``detector`` block (schema: :data:`DETECTOR_SCHEMA`).

    Parameters
    ----------
    result : DetectorResult or None
        The detector's result; None where it did not run.
    reason : str, optional
        Why it did not run (required with ``result = None``), e.g. "every record is
        cross-fitted: no selective treatment to detect" or "no record at risk".

    Returns
    -------
    dict

    Raises
    ------
    ValueError
        For ``result = None`` without a reason.

    Examples
    --------
    >>> release_block(None, reason="no record at risk")
    {'applicable': False, 'reason': 'no record at risk'}
    """
    if result is not None:
        return result.to_dict()
    if not reason:
        raise ValueError("`reason` is required when the detector did not run (result=None): "
                         "say why there is nothing to detect")
    return {"applicable": False, "reason": str(reason)}
