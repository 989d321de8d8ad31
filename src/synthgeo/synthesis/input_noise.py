r"""Input noise: the cross-fit synthesises from y* = y + e, so no release says more than y*_i.

``[synthesis] input_noise`` (docs/risk-and-utility.md, "The release attacker"). The release
attacker (:mod:`synthgeo.risk.release_attacker`) reads a record's value off every record's
implicate means; its information grows with the implicates pooled, without limit. With
e ~ N(0, κ² I) drawn once (from the release's seed, kept with the synthesiser so every later
draw reuses it) and every released value computed from y* = y + e and the posterior draws,
the release is a randomised function of (y*, θ-draws): by the data-processing inequality
(Cover & Thomas 2006, *Elements of Information Theory*, 2nd ed., Thm 2.8.1) an attacker who
knows every other record's value learns no more about y_i than y*_i tells, whatever it does
and however many implicates it pools: its information is at most 1/κ². This is the Gaussian
mechanism applied to the inputs (Dwork & Roth 2014, *The Algorithmic Foundations of
Differential Privacy*, Sect. 3.5.3 and App. A), judged here with synthgeo's own risk measure
rather than an (ε, δ) budget. What it does not cover: the posterior draws θ_ℓ were fitted on
y (a few parameters from n records; scored by the per-record measure against the leave-out
posterior).

**Synthesis under the noise.** Record i's cross-fitted mean krigs y*_−B(i) with the draw's own
(φ, α), so over the noise it is centred where the cross-fit of y puts it; the noise moves it by
a variance v_i (:mod:`synthgeo.risk.noise_spread`), and its implicates are drawn with the
leave-out variance less v_i (at least a tenth of it kept): over the noise, each implicate is the
calibrated cross-fit's predictive of y (docs/risk-and-utility.md, "Input noise: luck or leak").
The covariate calibration is not made to
y's OLS (that would publish y's regression exactly, which an attacker who knows the others
inverts as L grows). ``input_noise_ols = "shared"`` makes it to y*'s OLS: the released
regression then moves by κ²(XᵀX)⁻¹, as much as if the analyst's data carried the noise.
``"separate"`` (the default) makes it to the OLS of t = y + e_β, e_β ~ N(0, κ_β² I) drawn
independently (:func:`ols_noise_sd`): Ht is all the calibration publishes of t, and what it
tells about y_i, even to an attacker who pools unlimited implicates and knows every other
record, is h_ii/κ_β² (h_ii the leverage: y_i enters Ht through column i of H, and the noise
He_β has covariance κ_β²H). With κ_β = κ (max h / s)^½ that is at most s/κ² (s =
:data:`OLS_INFORMATION_SHARE`, 1: the calibration reads no record's value, y_i + (He_β)_i/h_ii,
with less noise than y*_i carries, κ), so the release's information about y_i is at most
(1 + s)/κ², and the released regression moves by κ_β²(XᵀX)⁻¹: for 25,000 records with
max h = 0.006, 0.077 κ instead of κ. "auto" chooses κ against both channels together, so the
share moves no record's bound, only where the noise goes: a larger share is a smaller κ_β
(the regression) for a larger κ (every other released value); the share was 0.25 until
2026-12-07 (docs/risk-and-utility.md, "The calibration's share of the information").

**Choosing κ ("auto").** With unlimited implicates the attacker's posterior for y_i combines
its leave-one-out predictive N(μ_i, s_i²) with y*_i ~ N(y_i, κ²)
(:func:`synthgeo.risk.release_attacker.unlimited_bound`);
κ is the smallest value on a grid of 2 significant figures at which every record's
attributable risk under that posterior stays within the target: a bound that holds for any
number of later draws. κ is a function of the confidential data (one number, released in
release.json as every published parameter is).
"""

from __future__ import annotations

import numpy as np

__all__ = ["INPUT_NOISE_KEY", "INPUT_NOISE_OLS_KEY", "OLS_INFORMATION_SHARE", "noisy_response",
           "ols_noise_sd", "separate_target", "choose_kappa", "smallest_sd", "duplicate_draws",
           "share_duplicate_draws", "NEAR_DUPLICATE_SHARE"]

#: The key of the input noise's seed among the release seed's children
#: (:func:`synthgeo._seed.keyed_seeds`), apart from the implicates' 0 … L − 1.
INPUT_NOISE_KEY = 1_000_000_007

#: Records at one site with the same covariates whose values differ by at most this share of
#: κ are near-duplicates and share one noise draw, as exact duplicates do (one sale keyed twice a
#: last digit apart; break-it trial, 2026-12-07): averaging their independent y* read the value
#: with variance κ²/2 + δ²/4 (docs/risk-and-utility.md, "Exact duplicates share one draw").
NEAR_DUPLICATE_SHARE = 0.1

#: The key of the calibration target's own noise e_β (``input_noise_ols = "separate"``).
INPUT_NOISE_OLS_KEY = 1_000_000_011

#: Under ``input_noise_ols = "separate"``: the most the calibration's channel may tell about
#: any record, as a share of what y* tells (1/κ²). 1: no record's value is read through the
#: calibration more precisely than through y* (decided 2026-12-07; 0.25 before).
OLS_INFORMATION_SHARE = 1.0


#: ``input_noise_ols = "auto"`` takes the separate target where max h ≤ this: κ_β ≤ κ/4, and
#: with κ at most √2 times the shared target's (the channel at most doubles a record's
#: information) the regression moves by at most √2/4 of what y*'s OLS would move it. Fixed at
#: 1/16 (its value under the former share, 0.25, where it meant κ_β ≤ κ/2) so that the bundled
#: 140 sales (max h = 0.235) keep the shared target.
SEPARATE_MAX_LEVERAGE = 1.0 / 16


def separate_target(choice: str, calibration: str, leverage: np.ndarray) -> bool:
    """Whether the calibration is made to a separately noised target (else to y*, or none).

    Parameters
    ----------
    choice : {"auto", "separate", "shared"}
        ``[synthesis] input_noise_ols``.
    calibration : {"covariates", "covariates_loo", "none"}
        ``[synthesis] cross_fit_calibration`` ("none": no target at all).
    leverage : ndarray of shape (n,)
        h_ii of the design.

    Returns
    -------
    bool
        "auto": True where max h ≤ :data:`SEPARATE_MAX_LEVERAGE` (κ_β ≤ κ/4) and the
        calibration is "covariates" (the leave-own-out shift would publish the target).

    Examples
    --------
    >>> separate_target("auto", "covariates", np.array([0.01, 0.2]))
    False
    >>> separate_target("auto", "covariates", np.array([0.01, 0.05]))
    True
    """
    if calibration == "none" or choice == "shared":
        return False
    if choice == "separate":
        return True
    return calibration == "covariates" and float(np.max(leverage)) <= SEPARATE_MAX_LEVERAGE


def ols_noise_sd(kappa: float, leverage: np.ndarray,
                 share: float = OLS_INFORMATION_SHARE) -> float:
    r"""Return κ_β = κ (max_i h_ii / share)^½, the calibration target's own noise sd.

    The calibration publishes Ht, t = y + e_β; about y_i it tells h_ii/κ_β² (module
    docstring), at most ``share``/κ² with this κ_β.

    Parameters
    ----------
    kappa : float
        κ, the input noise's sd (model scale, e.g. log-dollars).
    leverage : ndarray of shape (n,)
        h_ii of the design (:func:`synthgeo.synthesis.cross_fit.leverage`), in [0, 1].
    share : float, default=OLS_INFORMATION_SHARE
        In (0, 1].

    Returns
    -------
    float
        κ_β, model scale.

    Raises
    ------
    ValueError
        If ``share`` is not in (0, 1].

    Examples
    --------
    >>> round(ols_noise_sd(0.4, np.array([0.01, 0.0025])), 6)
    0.04
    >>> round(ols_noise_sd(0.4, np.array([0.01, 0.0025]), share=0.25), 6)
    0.08
    """
    if not 0.0 < share <= 1.0:
        raise ValueError(f"`share` must be in (0, 1], got {share!r}")
    return float(kappa) * float(np.sqrt(np.max(leverage) / share))


def noisy_response(y: np.ndarray, kappa: float, seed) -> np.ndarray:
    """Return y* = y + κ z, z standard normal from ``numpy.random.default_rng(seed)``.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Confidential response, model scale.
    kappa : float
        κ ≥ 0, model scale.
    seed : int or SeedSequence
        The input noise's own seed (:func:`synthgeo._seed.keyed_seeds` of the release's).

    Returns
    -------
    ndarray of shape (n,)

    Examples
    --------
    >>> noisy_response(np.zeros(3), 0.0, 1).tolist()
    [0.0, 0.0, 0.0]
    >>> bool(np.allclose(noisy_response(np.zeros(2), 0.1, 1), noisy_response(np.zeros(2), 0.1, 1)))
    True
    """
    y = np.asarray(y, float)
    if kappa == 0:
        return y.copy()
    return y + float(kappa) * np.random.default_rng(seed).standard_normal(y.size)


def duplicate_draws(site_index: np.ndarray, X: np.ndarray, y: np.ndarray, *,
                    tolerance: float = 0.0) -> np.ndarray:
    """Return, per record, the first record it shares a noise draw with (itself if none).

    Exact duplicates (same site, i.e. the same coordinates, the same covariates and the same
    response value) share one noise draw: with independent draws an attacker who knows the
    method averages their m noisy values y* and reads y with variance κ²/m instead of κ²
    (break-it review, 2026-12-07). One draw per distinct record keeps what y* tells about a
    value at 1/κ² however often the value is repeated. With `tolerance` > 0, records at one
    site with the same covariates whose values lie within `tolerance` of the smallest value of
    their cluster share one draw too (near-duplicates: :data:`NEAR_DUPLICATE_SHARE` κ), since
    averaging two values δ apart reads either with variance κ²/2 + δ²/4. Where both records lie
    in one leave-out block (their site), every released value depends on the pair's y* only
    through their sum, so a shared draw tells no more than one record's y* to any attacker.

    Parameters
    ----------
    site_index : ndarray of int, shape (n,)
        Each record's site (:func:`synthgeo.model.kernels.make_sites`: identical coordinates).
    X : ndarray of shape (n, p)
        The design the synthesis uses (covariates; a later response's earlier y*).
    y : ndarray of shape (n,)
        The response, model scale.
    tolerance : float, default=0.0
        Largest difference of values (model scale) that still shares a draw; 0: exact
        duplicates only.

    Returns
    -------
    ndarray of int, shape (n,)
        Index of the first record (in data order) of the record's cluster: the same site and
        covariates, and a value within `tolerance` of the cluster's smallest.

    Raises
    ------
    ValueError
        If the three inputs do not have n rows each, or `tolerance` is negative or not finite.

    Examples
    --------
    >>> duplicate_draws(np.array([0, 1, 0]), np.ones((3, 1)), np.array([2.0, 2.0, 2.0])).tolist()
    [0, 1, 0]
    >>> duplicate_draws(np.zeros(3, int), np.ones((3, 1)), np.array([2.0, 2.01, 2.5]),
    ...                 tolerance=0.04).tolist()
    [0, 0, 2]
    """
    site_index = np.asarray(site_index).reshape(-1)
    X = np.asarray(X, float)
    y = np.asarray(y, float).reshape(-1) + 0.0  # -0.0 and 0.0 are one value
    n = y.size
    if site_index.size != n or X.shape[0] != n:
        raise ValueError(f"`site_index`, `X` and `y` must have the same number of rows, got "
                         f"{site_index.size}, {X.shape[0]} and {n}")
    if not (np.isfinite(tolerance) and tolerance >= 0):
        raise ValueError(f"`tolerance` must be a finite number >= 0, got {tolerance!r}")
    if n == 0:
        return np.zeros(0, int)
    key = np.column_stack([site_index.astype(float), X.reshape(n, -1)]) + 0.0
    group = np.unique(key, axis=0, return_inverse=True)[1].reshape(-1)
    order = np.lexsort((np.arange(n), y, group))  # by group, then value, then data order
    g, v = group[order], y[order]
    cluster = np.empty(n, int)
    c, anchor = -1, 0.0
    for k in range(n):  # a new cluster where the group changes or the value leaves tolerance
        if k == 0 or g[k] != g[k - 1] or v[k] - anchor > tolerance:
            c, anchor = c + 1, v[k]
        cluster[order[k]] = c
    first = np.full(c + 1, n)
    np.minimum.at(first, cluster, np.arange(n))
    return first[cluster]


def share_duplicate_draws(noisy: np.ndarray, y: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Return y + e with each record's noise e taken from its first duplicate (``first``).

    Deterministic under the seed: the draws are those of :func:`noisy_response`, each
    duplicate taking its first record's.

    Parameters
    ----------
    noisy : ndarray of shape (n,)
        y + e, independent draws (:func:`noisy_response`).
    y : ndarray of shape (n,)
    first : ndarray of int, shape (n,)
        :func:`duplicate_draws`.

    Returns
    -------
    ndarray of shape (n,)

    Examples
    --------
    >>> share_duplicate_draws(np.array([1.5, 0.25, 0.75]), np.ones(3), np.array([0, 1, 0])).tolist()
    [1.5, 0.25, 1.5]
    """
    y = np.asarray(y, float)
    e = np.asarray(noisy, float) - y
    return y + e[np.asarray(first, int)]


def choose_kappa(bound_of, threshold: float, *, largest: float = 10.0) -> float:
    """Return the smallest κ (2 significant figures) whose unlimited bound is within threshold.

    Parameters
    ----------
    bound_of : callable
        ``κ -> ndarray (n,)``: each record's attributable risk for any number of pooled
        implicates (:func:`unlimited_bound`).
    threshold : float
        The largest attributable risk allowed for any record.
    largest : float, default=10.0
        κ searched up to this (model scale).

    Returns
    -------
    float
        κ; ``largest`` when even that is not enough (the verdict then says FAIL).

    Examples
    --------
    >>> bound = lambda k: np.array([0.3 / (1.0 + 10.0 * k ** 2)])  # falls as κ grows
    >>> choose_kappa(bound, 0.10)
    0.45
    """
    def ok(k: float) -> bool:
        return bool(np.max(bound_of(k)) <= threshold)

    if not ok(float(largest)):
        return float(largest)
    return smallest_sd(ok, largest)


def smallest_sd(ok, largest: float) -> float:
    """Return the smallest sd in (0, ``largest``] with ``ok(sd)``, to 2 significant figures.

    Bisection on a criterion that holds from some sd upwards (the attacker's figure falls as the
    noise grows), then rounded *up* to 2 significant figures, stepping once more where a flat
    criterion needs it; never above ``largest``. The noise choosers' one search
    (:func:`choose_kappa`, :func:`synthgeo.synthesis.mean_noise.choose_mean_noise`).

    Parameters
    ----------
    ok : callable
        ``sd -> bool``, true at ``largest``.
    largest : float

    Returns
    -------
    float

    Examples
    --------
    >>> smallest_sd(lambda s: s >= 0.123456, 10.0)
    0.13
    """
    lo, hi = 0.0, float(largest)
    for _ in range(60):  # bisection; the criterion holds above some sd
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
        if hi - lo < 1e-4 * hi:
            break
    step = 10.0 ** (np.floor(np.log10(hi)) - 1)  # 2 significant figures, rounded up
    k = float(np.round(np.ceil(hi / step - 1e-9) * step, 12))
    while k < largest and not ok(k):  # the rounding is upwards; a flat bound may need a step
        k = float(np.round(k + step, 12))
    return min(k, float(largest))
