"""The cross-fit's noise mechanisms against the release attacker: input noise and mean noise.

``[synthesis] input_noise`` (:mod:`synthgeo.synthesis.input_noise`: y* = y + e feeds the whole
synthesis; a bound for any number of pooled implicates) and ``[synthesis] mean_noise``
(:mod:`synthgeo.synthesis.mean_noise`: each record's mean moved by noise common to its
implicates, before the covariate calibration). Both draw the cross-fitted implicates
(:func:`synthgeo.synthesis.cross_fit.draw_cross_fitted`) at the implicates' posterior draws
of the unrestricted fit, and record what they did in the implicates' ``attrs`` (release.json's
``synthesis``). "auto" chooses the noise against the first per-record target
(:func:`synthgeo.pipeline.release_attack.judged_target`), with the leave-one-out predictive at
the same draws as the attacker's prior.
"""

from __future__ import annotations

import numpy as np

from synthgeo._errors import SpecError
from synthgeo._seed import keyed_seeds
from synthgeo._warn import warn
from synthgeo.pipeline.data import response_scale
from synthgeo.pipeline.release_attack import (
    attributable_function,
    information_with_mean_noise,
    judged_target,
    released_map,
)
from synthgeo.pipeline.risk_stage import (
    loo_predictive,
    posterior_draws,
    precision_function,
    record_blocks,
)
from synthgeo.risk.loo import baseline_loo_sets
from synthgeo.risk.predictive import Predictive
from synthgeo.risk.rao_blackwell import rb_risk
from synthgeo.synthesis.cross_fit import calibrate_covariates, draw_cross_fitted
from synthgeo.synthesis.input_noise import INPUT_NOISE_KEY, choose_kappa, noisy_response
from synthgeo.synthesis.mean_noise import MEAN_NOISE_KEY, choose_mean_noise, mean_noise

__all__ = ["draw_input_noise", "draw_mean_noise", "INPUT_NOISE_CAP"]

#: The largest input noise sd, in multiples of the response's standard deviation (model scale):
#: "auto" searches up to it; a given sd above it is refused.
INPUT_NOISE_CAP = 5.0


def _calibrated(spec, mean: np.ndarray, target: np.ndarray, X: np.ndarray) -> np.ndarray:
    calibration = spec.synthesis.cross_fit_calibration
    if calibration == "none":
        return mean
    return calibrate_covariates(mean, target, X, leave_own_out=calibration == "covariates_loo")


def _attacker(spec, data, loo):
    """Return the judged threshold, the baseline's risk and ``information -> attributable``."""
    measure, attack, threshold = judged_target(spec)
    base, attributable_at = attributable_function(loo, data.y, measure, attack,
                                                  response_scale(spec).g_name)
    return threshold, base, attributable_at


def _prior(spec, data, fit, sources, own_X=None):
    """Return the attacker's prior: the leave-one-out baseline the verdict scores against.

    At the leave-out posterior under ``[risk] loo_posterior = "reweighted"`` (the default), so
    that "auto" chooses the noise against the same baseline that judges it; for a later
    response of several, with the earlier responses' released values paired with the
    implicates (``own_X``, (L, n, p)), as the verdict's baseline holds them.
    """
    return loo_predictive(spec, data, fit, sources, own_X=own_X,
                          reweight=spec.loo_posterior == "reweighted")


def _realised_bound(spec, data, loo, base: np.ndarray, ystar: np.ndarray,
                    kappa: float) -> np.ndarray:
    """Per record: the attacker who holds y*_i exactly, on *this* noise draw (not averaged).

    Its guess is a draw from N(μ + ω(y*_i − μ), 1/(1/s² + 1/κ²)), ω = (1/κ²)/(1/s² + 1/κ²)
    (its mean, for the average attack), against the leave-one-out predictive N(μ, s²) at the
    implicates' draws, whose risk is ``base``; the figure the any-L bound averages over the noise
    (docs/risk-and-utility.md, "Input noise").
    """
    measure, attack, _ = judged_target(spec)
    prior, J = 1.0 / loo.sd ** 2, 1.0 / kappa ** 2
    mean = loo.mean + J / (prior + J) * (ystar[None, :] - loo.mean)
    sd = np.sqrt(1.0 / (prior + J)) * (0.0 if attack == "average" else 1.0)
    guess = Predictive(mean=mean, sd=sd)
    return rb_risk(guess, data.y, measure, response_scale(spec).g_name) - base


def draw_input_noise(spec, data, fit, sources, seed, *, design: np.ndarray | None = None,
                     own_X: np.ndarray | None = None, out: dict | None = None):
    """Draw the cross-fitted implicates from y* = y + e (module docstring).

    κ as given, or chosen ("auto") so that the attacker who knows y*_i stays within the first
    per-record target for every record. The predictive of y*_B is computed with α + κ²/σ̄²
    (σ̄² the median σ² of the draws) and y_B's variance is that minus κ²σ²/σ̄².

    Several responses (docs/risk-and-utility.md, "Input noise for several responses"): each
    response draws its own e from its own seed and κ; a later response's synthesis uses
    ``design``, its design with the earlier responses at their y* (so that nothing released
    reads an earlier confidential value), and "auto" chooses κ against the verdict's baseline,
    which holds the earlier responses' released values (``own_X``, (L, n, p)). ``out``, if
    given, receives ``y_star`` (n,), ``beta`` (L, p), the means' coefficients, and
    ``raw_error`` (n,), y* less the mean raw leave-out mean (confidential, in memory only: the
    later responses' designs, the shift to the earlier synthetic values, the release attacker).
    """
    X = data.X if design is None else np.asarray(design, float)
    d = posterior_draws(fit, sources)
    alpha = d["nugget"] / d["sigma2"]
    kappa, chosen, reached = spec.synthesis.input_noise, "given", None
    cap = INPUT_NOISE_CAP * float(np.std(data.y))
    if kappa != "auto" and float(kappa) > cap:
        raise SpecError(
            f"`[synthesis] input_noise = {kappa!r}` is more than {INPUT_NOISE_CAP:g} times the "
            "response's standard deviation (model scale): the released values would be "
            'noise; give a smaller sd, or "auto"')
    loo0 = _prior(spec, data, fit, sources, own_X)
    threshold, base, attributable_at = _attacker(spec, data, loo0)
    unlimited = np.full(data.y.size, np.inf)
    if kappa == "auto":
        bound = lambda k: attributable_at(unlimited, noise_sd=k)  # noqa: E731
        kappa = choose_kappa(bound, threshold, largest=cap)
        chosen, reached = "auto", bool(np.max(bound(kappa)) <= threshold)
        if not reached:
            warn(f'`[synthesis] input_noise = "auto"` stopped at its cap ({INPUT_NOISE_CAP:g} '
                 "times the response's standard deviation) without bringing the release "
                 "attacker within the target: the verdict says FAIL")
    kappa = float(kappa)
    ystar = noisy_response(data.y, kappa, keyed_seeds(seed, [INPUT_NOISE_KEY])[0])
    realised = _realised_bound(spec, data, loo0, base, ystar, kappa)
    # β of the means from y*, not from the fit on y: the calibrated means carry
    # −(I − H)M₀Xβ_ℓ, and β_ℓ fitted on y would reach them (break-it trial, 2026-12-03)
    d["beta"] = np.broadcast_to(np.linalg.lstsq(X, ystar, rcond=None)[0],
                                d["beta"].shape).copy()
    sigma_bar2 = float(np.median(d["sigma2"]))
    shift = kappa ** 2 / sigma_bar2
    unit = spec.loo_unit
    loo = baseline_loo_sets(ystar, X, beta=d["beta"], sigma2=d["sigma2"], phi=d["phi"],
                            alpha=alpha + shift, precision_of=precision_function(spec, data, fit),
                            block_sets={unit: record_blocks(spec, data)})[unit]
    # calibrated to y*'s OLS: y's would publish y's regression exactly as L grows
    mean = _calibrated(spec, loo.mean, ystar, X)
    var = loo.sd ** 2 - shift * d["sigma2"][:, None]  # Var(y_i | y*_-B) = σ²v' − κ²σ²/σ̄²
    if out is not None:
        out.update(y_star=ystar, beta=d["beta"], raw_error=ystar - loo.mean.mean(axis=0))
    ds = draw_cross_fitted(mean, np.sqrt(np.maximum(var, 1e-12)), sources=sources,
                           random_seed=seed, record_id=data.record_id,
                           calibration=spec.synthesis.cross_fit_calibration)
    ds.attrs["input_noise"] = {"sd": kappa, "chosen": chosen, "alpha_shift": shift,
                               "sigma2_median": sigma_bar2, "reached": reached,
                               "beta": "OLS of y* (every implicate)",
                               "largest_attributable_this_noise": float(realised.max()),
                               "n_records_above_this_noise": (
                                   None if threshold is None
                                   else int((realised > threshold).sum()))}
    return ds


def draw_mean_noise(spec, data, fit, sources, seed):
    """Draw the cross-fitted implicates around means moved by η (module docstring).

    v as given (``mean_noise`` is its sd), or chosen ("auto") so that the release attacker at
    this release's L stays within the first per-record target for every record. The implicate
    variance becomes s² − v (at least 10 % of s² is kept: v ≤ 0.9 × the smallest).
    """
    loo = loo_predictive(spec, data, fit, sources)
    largest = 0.9 * float((loo.sd ** 2).min())
    chosen, asked, reached_auto = "given", spec.synthesis.mean_noise, None
    calibrated_mean = _calibrated(spec, loo.mean, data.y, data.X)
    if asked == "auto":
        threshold, _, attributable_at = _attacker(spec, data, _prior(spec, data, fit, sources))
        M0 = released_map(spec, data, fit, sources, "cross_fit")
        L = loo.mean.shape[0]

        def info_of(v: float) -> np.ndarray:
            s2 = (loo.sd ** 2).mean(axis=0) - v + calibrated_mean.var(axis=0)  # released
            return information_with_mean_noise(
                M0, data.X, np.maximum(s2, 1e-12), v, L,
                calibration=spec.synthesis.cross_fit_calibration)

        v, reached_auto = choose_mean_noise(info_of, attributable_at, threshold, largest)
        chosen = "auto"
        if not reached_auto:  # the figure is not monotone in v (the covariate channel grows)
            grid = np.linspace(0.0, largest, 21)
            worst = [float(np.max(attributable_at(np.asarray(info_of(g), float))))
                     for g in grid]
            v = float(grid[int(np.argmin(worst))])
            warn('`[synthesis] mean_noise = "auto"` cannot bring the release attacker within '
                 "the target at any noise up to the implicates' spread: it takes the noise "
                 "with the smallest largest risk on a grid of 21, and the verdict says FAIL")
    else:
        v = float(asked) ** 2
    capped = int((loo.sd ** 2 <= v).any(axis=0).sum())
    if v > largest:
        warn(f"`[synthesis] mean_noise = {asked!r}` is larger than the implicates' spread allows "
             "(0.9 × the smallest predictive variance): it is capped there, and release.json "
             "says so (synthesis.mean_noise.capped)")
        v = largest
    eta = mean_noise(data.y.size, v, keyed_seeds(seed, [MEAN_NOISE_KEY])[0])
    mean = _calibrated(spec, loo.mean + eta[None, :], data.y, data.X)
    ds = draw_cross_fitted(mean, np.sqrt(np.maximum(loo.sd ** 2 - v, 1e-12)), sources=sources,
                           random_seed=seed, record_id=data.record_id,
                           calibration=spec.synthesis.cross_fit_calibration)
    ds.attrs["mean_noise"] = {"sd": float(np.sqrt(v)), "variance": float(v), "chosen": chosen,
                              "n_records_sd_capped": capped,
                              "capped": bool(asked != "auto" and float(asked) ** 2 > largest),
                              "reached": reached_auto if asked == "auto" else None}
    return ds
