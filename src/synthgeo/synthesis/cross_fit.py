r"""Synthesis from the cross-fitted posterior predictive: every record drawn without its block.

``[synthesis] predictive = "cross_fit"`` (docs/risk-and-utility.md, "Cross-fitted synthesis").
For implicate ℓ with posterior draw θ_ℓ = (β, σ², φ, τ²) of the *unrestricted* fit, record i's
synthetic value is drawn from the predictive of y_i given every response outside its leave-out
block B(i) (record i with every record at its site, and of its subject when ``[data] subject``
is given; :func:`synthgeo.risk.loo.loo_blocks`):

.. math::

    y^{\dagger(\ell)}_i \sim N\bigl(x_i\beta_\ell + m_i,\; \sigma^2_\ell v_i\bigr),\qquad
    m_B = r_B - Q_{BB}^{-1}[Q r]_B,\quad v_i = (Q_{BB}^{-1})_{ii},

with r = y − Xβ_ℓ and Q = (R(φ_ℓ) + (τ²_ℓ/σ²_ℓ) I)⁻¹ over records: the conditional of a
Gaussian vector given the rest, read off its precision matrix (Rue & Held 2005, *Gaussian
Markov Random Fields: Theory and Applications*, Chapman & Hall/CRC, Ch. 2, Thm 2.5), which is
the leave-out cross-validation predictive of a GP (Sundararajan & Keerthi 2001, *Predictive
approaches for choosing hyperparameters in Gaussian processes*, Neural Computation 13(5),
doi:10.1162/08997660151134343; Rasmussen & Williams 2006, *Gaussian Processes for Machine
Learning*, Sect. 5.4.2, eq. 5.12). Q is the engine's own: the dense Cholesky inverse for the
exact GP, the NNGP's sparse (I − B)ᵀF⁻¹(I − B) otherwise — exact for the model each engine
fits. The predictive is computed in one place, :func:`synthgeo.risk.loo.baseline_loo` (the
leave-one-out baseline the risk stage scores against, at the same posterior draws); this module
draws the implicates from it.

**Marginal, not joint, within a block.** Each record is drawn from its own marginal
N(mean_i, σ² v_i); co-sited records (a block of several) get *independent* draws, although
their joint conditional has covariance σ² Q_BB⁻¹. The released values of one site therefore
lose the within-site correlation of the spatial effect they share (given θ_ℓ their covariance
is 0 instead of the off-diagonal of σ² Q_BB⁻¹, nearly the effect's conditional variance for
records at one point); the between-site structure, carried by the means (each the kriging of
the *other* sites' responses), is kept. A joint draw would restore it, but a record's
value would then shift with its co-sited records' draws; the per-record marginal is what the
risk of a record is scored under.

**No refit, no neighbour effect.** Nothing is refitted: the posterior draws are the
unrestricted fit's, so treating one record moves no other record's predictive except through
its own value being left out of *its own* draw. Every record is cross-fitted, so nothing is
selected and treatment cannot be told from the files by which records were chosen.

**Risk by construction, in-sample.** The release's Rao-Blackwellised risk (under ``y_mean``,
``y_sd``) *is* the leave-one-out baseline's at the same draws, so its attributable risk against
that baseline is 0 for every record by construction. That is an in-sample statement: the
mechanism is judged on the draws that define it, so it cannot fail that check. Judging it must
use fresh draws (issue 24, item 3); the leak that remains is the posterior draw θ_ℓ itself,
which was fitted with y_i (β, σ², φ, τ² carry a little of every record).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from synthgeo.inference.result import GPFit
from synthgeo.synthesis.implicates import implicate_draw_index, implicate_seeds

__all__ = ["PREDICTIVES", "CALIBRATIONS", "implicate_sources", "calibrate_covariates", "leverage",
           "own_value_bound", "own_value_leak", "draw_cross_fitted", "LOO_MAX_LEVERAGE",
           "check_loo_leverage", "high_leverage_count"]

#: ``[synthesis] predictive``: the posterior predictive of the released (restricted) fit, or
#: the unrestricted fit's cross-fitted (leave-block-out) predictive.
PREDICTIVES = ("posterior", "cross_fit")

#: ``[synthesis] cross_fit_calibration``: the cross-fitted means' covariate part calibrated to
#: the confidential regression (:func:`calibrate_covariates`; "covariates_loo": each record's
#: shift fitted without its own leave-out error), or left raw.
CALIBRATIONS = ("covariates", "covariates_loo", "none")


def implicate_sources(fit: GPFit, n_implicates: int) -> xr.Dataset:
    """Return the posterior draws the implicates of ``fit`` come from, as an empty Dataset.

    The same draws as :func:`synthgeo.synthesis.implicates.draw_implicates` (evenly spread over
    chains and draws, :func:`~synthgeo.synthesis.implicates.implicate_draw_index`), without
    drawing anything: coordinates ``source_chain`` and ``source_draw`` on ``implicate``.

    Parameters
    ----------
    fit : GPFit
    n_implicates : int
        L.

    Returns
    -------
    xarray.Dataset

    Examples
    --------
    >>> from synthgeo.testing import fake_fit
    >>> implicate_sources(fake_fit(), 4)["source_draw"].size
    4
    """
    post = fit.posterior
    n_draw = post.sizes["draw"]
    flat = implicate_draw_index(post.sizes["chain"], n_draw, n_implicates)
    ci, di = np.divmod(flat, n_draw)
    return xr.Dataset(coords={"implicate": np.arange(1, flat.size + 1),
                              "source_chain": ("implicate", post["chain"].values[ci]),
                              "source_draw": ("implicate", post["draw"].values[di])})


def calibrate_covariates(mean: np.ndarray, y: np.ndarray, X: np.ndarray, *,
                         leave_own_out: bool = False) -> np.ndarray:
    r"""Calibrate each implicate's cross-fitted means so that their OLS on X is the confidential.

    For implicate ℓ with cross-fitted means μ̃_ℓ (one per record, each without the record's
    leave-out block) the calibrated means are

    .. math::

        \mu^{c}_\ell = \tilde\mu_\ell + X\delta_\ell,\qquad
        \delta_\ell = (X^\top X)^{-1}X^\top (y - \tilde\mu_\ell),

    i.e. μ̃_ℓ plus the projection of its leave-out errors e_ℓ = y − μ̃_ℓ onto the columns of
    X. Then (XᵀX)⁻¹Xᵀμ^c_ℓ = (XᵀX)⁻¹Xᵀy exactly, so the OLS of an implicate drawn as
    μ^c_ℓ + sd_ℓ z (z standard normal) on X equals the confidential OLS in expectation over z,
    for every ℓ (docs/risk-and-utility.md, "Calibrated cross-fit"). Only the covariate part
    moves: the residual of μ^c_ℓ against X is the raw cross-fit's, (I − H)μ̃_ℓ.

    Record i's own value enters its calibrated mean only through δ_ℓ: with β_ℓ and the other
    responses fixed, ∂μ^c_i/∂y_i = [H Λ Q]_ii, with H = X(XᵀX)⁻¹Xᵀ, Q the precision of y and
    Λ = blockdiag(Q_BB⁻¹) (the raw mean μ̃_i does not depend on y_i). That weight, O(p/n),
    is computed by :func:`synthgeo.risk.loo.calibration_own_weight`.

    Parameters
    ----------
    mean : ndarray of shape (L, n_records)
        The cross-fitted means μ̃ (model scale, e.g. log-dollars), one row per implicate.
    y : ndarray of shape (n_records,)
        The confidential response, model scale.
    X : ndarray of shape (n_records, p)
        The model's design matrix (intercept included): the released covariates.
    leave_own_out : bool, default=False
        Shift record i by x_i δ_(i), δ_(i) the regression of the leave-out errors on X
        *without record i* (the deletion formula x_i δ_(i) = x_i δ − h_ii ε_i / (1 − h_ii),
        ε = e − Xδ; Cook & Weisberg 1982, *Residuals and Influence in Regression*, Sect.
        3.4): the leverage term of y_i's own error leaves its mean, so its own weight becomes
        (w_i − h_ii)/(1 − h_ii); the OLS match is then off by −(XᵀX)⁻¹Xᵀ diag(h/(1−h)) ε per
        implicate, O(p/n) (docs/risk-and-utility.md, "Calibrated cross-fit").

    Returns
    -------
    ndarray of shape (L, n_records)
        μ^c, model scale.

    Raises
    ------
    ValueError
        If the shapes disagree or a value is not finite.

    Examples
    --------
    >>> X = np.column_stack([np.ones(4), [0.0, 1.0, 2.0, 3.0]])
    >>> y = np.array([1.0, 2.0, 2.5, 4.0])
    >>> mc = calibrate_covariates(np.zeros((1, 4)), y, X)
    >>> bool(np.allclose(np.linalg.lstsq(X, mc[0], rcond=None)[0],
    ...                  np.linalg.lstsq(X, y, rcond=None)[0]))
    True
    """
    mean, y, X = (np.asarray(v, float) for v in (mean, y, X))
    if mean.ndim != 2 or y.shape != (mean.shape[1],) or X.ndim != 2 or X.shape[0] != y.size:
        raise ValueError(f"`mean` must be (L, n_records), `y` (n_records,) and `X` (n_records, "
                         f"p); got {mean.shape}, {y.shape} and {X.shape}")
    if not (np.isfinite(mean).all() and np.isfinite(y).all() and np.isfinite(X).all()):
        raise ValueError("`mean`, `y` and `X` of the covariate calibration must be finite")
    e = y[None, :] - mean  # (L, n) leave-out errors
    delta = np.linalg.lstsq(X, e.T, rcond=None)[0]  # (p, L)
    shift = (X @ delta).T
    if leave_own_out:  # x_i δ_(i) = x_i δ − h_ii ε_i / (1 − h_ii)
        h = leverage(X)
        shift = shift - (h / (1.0 - h))[None, :] * (e - shift)
    return mean + shift


def leverage(X: np.ndarray) -> np.ndarray:
    """Return h_ii, the diagonal of the hat matrix X(XᵀX)⁻¹Xᵀ (dimensionless, in [0, 1]).

    Parameters
    ----------
    X : ndarray of shape (n, p)

    Returns
    -------
    ndarray of shape (n,)

    Examples
    --------
    >>> leverage(np.column_stack([np.ones(3), [0.0, 1.0, 2.0]])).round(3).tolist()
    [0.833, 0.333, 0.833]
    """
    X = np.asarray(X, float)
    return np.einsum("ij,ij->i", X @ np.linalg.pinv(X.T @ X), X)


#: Under ``cross_fit_calibration = "covariates_loo"``: the largest leverage h_ii allowed. The
#: leave-own-out shift divides by 1 − h_ii; above one half it more than doubles the record's own
#: error, and the leave-one-out covariate prediction is unstable (break-it review, 2026-12-07).
LOO_MAX_LEVERAGE = 0.5


def check_loo_leverage(X: np.ndarray) -> None:
    """Refuse ``cross_fit_calibration = "covariates_loo"`` where a record's h_ii exceeds 0.5.

    Parameters
    ----------
    X : ndarray of shape (n, p)
        The design (intercept included).

    Raises
    ------
    synthgeo.SpecError
        One line: how many records, and the option that works (``"covariates"``).

    Examples
    --------
    >>> check_loo_leverage(np.column_stack([np.ones(20), np.arange(20.0)]))  # all h < 0.5
    >>> try:
    ...     check_loo_leverage(np.column_stack([np.ones(4), [0.0, 1.0, 2.0, 30.0]]))
    ... except ValueError as exc:
    ...     print(str(exc)[:60])
    `[synthesis] cross_fit_calibration = "covariates_loo"`: 1 re
    """
    from synthgeo._errors import SpecError

    n = high_leverage_count(X)
    if n:
        raise SpecError(
            f'`[synthesis] cross_fit_calibration = "covariates_loo"`: {n} record(s) have '
            f"leverage h_ii above {LOO_MAX_LEVERAGE:g}, where the leave-one-out covariate "
            "prediction is unstable (its shift divides by 1 - h_ii); use "
            'cross_fit_calibration = "covariates"')


def high_leverage_count(X: np.ndarray) -> int:
    """Return how many records have h_ii above :data:`LOO_MAX_LEVERAGE`.

    Examples
    --------
    >>> high_leverage_count(np.column_stack([np.ones(4), [0.0, 1.0, 2.0, 30.0]]))
    1
    """
    return int(np.sum(leverage(X) > LOO_MAX_LEVERAGE))


def own_value_bound(weight: np.ndarray, mean: np.ndarray, sd: np.ndarray,
                    y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Per record: the own-value shift of the calibrated mean, and the risk it can add.

    With w_iℓ the weight of y_i in its calibrated mean (:func:`calibrate_covariates`;
    :func:`synthgeo.risk.loo.calibration_own_weight`) and e_iℓ = y_i − μ̃_iℓ its leave-out error,
    replacing y_i by μ̃_iℓ would move the calibrated mean by w_iℓ e_iℓ. For a normal
    predictive with sd s the probability of any interval moves by at most |Δμ| φ(0)/s
    (|∂/∂μ [Φ((b−μ)/s) − Φ((a−μ)/s)]| = |φ(·) − φ(·)|/s ≤ 1/(s√(2π))), whatever the interval;
    so a record's Rao-Blackwellised within-tolerance risk (a mean over implicates of such
    probabilities, on any monotone scale such as dollars) carries at most

    .. math::

        b_i = rac{1}{L}\sum_\ell rac{|w_{i\ell}\, e_{i\ell}|}{s_{i\ell}\sqrt{2\pi}}

    of the record's own value beyond the raw cross-fit (which carries none given θ_ℓ).

    Parameters
    ----------
    weight, mean, sd : ndarray of shape (L, n_records)
        w, the raw cross-fitted means μ̃ and sds s (model scale).
    y : ndarray of shape (n_records,)
        Confidential response, model scale.

    Returns
    -------
    shift_sd : ndarray of shape (n_records,)
        Mean over implicates of |w e| / s (the own-value shift in predictive sds).
    bound : ndarray of shape (n_records,)
        b_i, a probability (dimensionless).

    Examples
    --------
    >>> sh, b = own_value_bound(np.full((2, 1), 0.01), np.zeros((2, 1)), np.ones((2, 1)),
    ...                         np.array([2.0]))
    >>> round(float(sh[0]), 3), round(float(b[0]), 4)
    (0.02, 0.008)
    """
    weight, mean, sd = (np.asarray(v, float) for v in (weight, mean, sd))
    shift = np.abs(weight * (np.asarray(y, float)[None, :] - mean)) / sd
    return shift.mean(axis=0), shift.mean(axis=0) / np.sqrt(2.0 * np.pi)


def own_value_leak(weight: np.ndarray, mean: np.ndarray, sd: np.ndarray,
                   y: np.ndarray) -> dict[str, float | int]:
    """Return the aggregates of :func:`own_value_bound` for release.json (no record's value).

    Parameters
    ----------
    weight, mean, sd, y
        As :func:`own_value_bound`.

    Returns
    -------
    dict
        ``largest_weight`` (max |w|), ``mean_weight`` (mean |w|), ``largest_shift_sd``,
        ``largest_risk_bound`` (max b_i) and ``n_records_bound_above_0_01``.

    Examples
    --------
    >>> own_value_leak(np.full((2, 1), 0.01), np.zeros((2, 1)), np.ones((2, 1)),
    ...                np.array([2.0]))["n_records_bound_above_0_01"]
    0
    """
    shift_sd, bound = own_value_bound(weight, mean, sd, y)
    w = np.abs(np.asarray(weight, float))
    return {"largest_weight": float(w.max()), "mean_weight": float(w.mean()),
            "largest_shift_sd": float(shift_sd.max()), "largest_risk_bound": float(bound.max()),
            "n_records_bound_above_0_01": int((bound > 0.01).sum())}


def draw_cross_fitted(
    mean: np.ndarray, sd: np.ndarray, *, sources: xr.Dataset,
    random_seed: int | np.random.SeedSequence | np.random.Generator | None,
    record_id: np.ndarray | None = None, calibration: str = "none",
) -> xr.Dataset:
    """Draw L implicates from the cross-fitted predictive N(mean, sd²), record by record.

    Parameters
    ----------
    mean, sd : ndarray of shape (L, n_records)
        The leave-block-out predictive of each record at each implicate's posterior draw,
        model scale (:func:`synthgeo.risk.loo.baseline_loo` at ``sources``' draws).
    sources : xarray.Dataset
        :func:`implicate_sources`: ``source_chain``/``source_draw`` of each implicate.
    random_seed : int, SeedSequence, Generator or None
        Root of the per-implicate seeds (:func:`~synthgeo.synthesis.implicates.
        implicate_seeds`): implicate ℓ is mean_ℓ + sd_ℓ z_ℓ with z_ℓ standard normal from
        ``default_rng(seeds[ℓ])`` (one draw per record, marginally; module docstring), so the
        same seed gives the same values.
    record_id : ndarray of shape (n_records,), optional
        Values of the ``record`` coordinate.
    calibration : {"none", "covariates", "covariates_loo"}, default="none"
        How ``mean`` was calibrated (:func:`calibrate_covariates`), kept in
        ``attrs["calibration"]``: the risk stage reuses the predictive as its leave-one-out
        baseline only when it is "none" (raw cross-fit).

    Returns
    -------
    xarray.Dataset
        As :func:`~synthgeo.synthesis.implicates.draw_implicates`: ``y_synthetic``, ``y_mean``,
        ``y_sd`` (implicate, record; ``y_mean``/``y_sd`` confidential) and the source
        coordinates; ``attrs["predictive"] = "cross_fit"``, ``attrs["calibration"]``.

    Raises
    ------
    ValueError
        If ``mean`` and ``sd`` differ in shape, do not have one row per implicate of
        ``sources``, or ``sd`` is not positive and finite.

    Examples
    --------
    >>> from synthgeo.testing import fake_fit
    >>> src = implicate_sources(fake_fit(), 3)
    >>> ds = draw_cross_fitted(np.zeros((3, 2)), np.ones((3, 2)), sources=src, random_seed=1)
    >>> ds["y_synthetic"].shape, ds.attrs["predictive"]
    ((3, 2), 'cross_fit')
    """
    mean, sd = np.asarray(mean, float), np.asarray(sd, float)
    L = sources.sizes["implicate"]
    if mean.shape != sd.shape or mean.ndim != 2 or mean.shape[0] != L:
        raise ValueError(f"`mean` and `sd` must both have shape ({L}, n_records), one row per "
                         f"implicate; got {mean.shape} and {sd.shape}")
    if calibration not in CALIBRATIONS:
        raise ValueError(f"`calibration` must be one of {CALIBRATIONS}, got {calibration!r}")
    if not np.all(np.isfinite(sd) & (sd > 0)):
        raise ValueError("`sd` of the cross-fitted predictive must be positive and finite")
    y = np.empty_like(mean)
    for ell, seed in enumerate(implicate_seeds(random_seed, L)):
        y[ell] = mean[ell] + sd[ell] * np.random.default_rng(seed).standard_normal(mean.shape[1])
    n = mean.shape[1]
    return xr.Dataset(
        {"y_synthetic": (("implicate", "record"), y),
         "y_mean": (("implicate", "record"), mean),
         "y_sd": (("implicate", "record"), sd)},
        coords={"implicate": sources["implicate"].values,
                "record": np.arange(n) if record_id is None else np.asarray(record_id),
                "source_chain": ("implicate", sources["source_chain"].values),
                "source_draw": ("implicate", sources["source_draw"].values)},
        attrs={"predictive": "cross_fit", "calibration": calibration},
    )
