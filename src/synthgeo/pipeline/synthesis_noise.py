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
from synthgeo._seed import confidential_seed, keyed_seeds
from synthgeo._warn import warn
from synthgeo.pipeline.data import response_scale
from synthgeo.pipeline.loo_cache import remember_map
from synthgeo.pipeline.release_attack import (
    accumulate,
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
from synthgeo.risk.noise_spread import noise_spread
from synthgeo.risk.predictive import Predictive
from synthgeo.risk.rao_blackwell import rb_risk
from synthgeo.risk.release_attacker import block_inverse, mechanism_map
from synthgeo.synthesis.cross_fit import calibrate_covariates, draw_cross_fitted, leverage
from synthgeo.synthesis.input_noise import (
    INPUT_NOISE_KEY,
    INPUT_NOISE_OLS_KEY,
    NEAR_DUPLICATE_SHARE,
    choose_kappa,
    duplicate_draws,
    noisy_response,
    ols_noise_sd,
    separate_target,
    share_duplicate_draws,
)
from synthgeo.synthesis.mean_noise import MEAN_NOISE_KEY, choose_mean_noise, mean_noise

__all__ = ["draw_input_noise", "draw_mean_noise", "input_noise_line", "INPUT_NOISE_CAP", "FLOOR"]

#: The largest input noise sd, in multiples of the response's standard deviation (model scale):
#: "auto" searches up to it; a given sd above it is refused.
INPUT_NOISE_CAP = 5.0

#: Under input noise, y's nugget share from the y* fit, τ*² − κ², is kept at least this
#: times σ*² (release.json: ``synthesis.input_noise.n_draws_nugget_truncated``).
TAU_FLOOR = 1e-3

#: Under input noise, the least share of a record's leave-out variance its implicates keep when
#: the noise's own variance in its mean reaches the rest (release.json:
#: ``synthesis.input_noise.n_records_variance_floored``).
FLOOR = 0.1


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


def _realised_bound(spec, data, loo, base: np.ndarray, ystar: np.ndarray, kappa: float, *,
                    X: np.ndarray, h: np.ndarray,
                    ols: tuple[np.ndarray, float] | None = None) -> np.ndarray:
    """Per record: the attacker who holds y*_i exactly, on *this* noise draw (not averaged).

    Its guess is a draw from N(μ + ω(y*_i − μ), 1/(1/s² + 1/κ²)), ω = (1/κ²)/(1/s² + 1/κ²)
    (its mean, for the average attack), against the leave-one-out predictive N(μ, s²) at the
    implicates' draws, whose risk is ``base``; the figure the any-L bound averages over the noise
    (docs/risk-and-utility.md, "Input noise"). ``ols``: (t, κ_β) of a separate calibration
    target; the attacker also holds Ht, i.e. y_i + (He_β)_i/h_ii with precision h_ii/κ_β²
    (``h``: the leverages of ``X``).
    """
    measure, attack, _ = judged_target(spec)
    prior, J = 1.0 / loo.sd ** 2, np.full(data.y.size, 1.0 / kappa ** 2)
    obs = ystar.copy()
    if ols is not None:  # the GLS combination of y*_i and the calibration's reading of y_i
        t, ols_sd = ols
        Ht = X @ np.linalg.lstsq(X, t, rcond=None)[0]
        Hy = X @ np.linalg.lstsq(X, data.y, rcond=None)[0]
        reading = data.y + (Ht - Hy) / np.maximum(h, 1e-300)
        J2 = h / ols_sd ** 2
        obs = (J * ystar + J2 * reading) / (J + J2)
        J = J + J2
    mean = loo.mean + J / (prior + J) * (obs[None, :] - loo.mean)
    sd = np.sqrt(1.0 / (prior + J)) * (0.0 if attack == "average" else 1.0)
    guess = Predictive(mean=mean, sd=sd)
    return rb_risk(guess, data.y, measure, response_scale(spec).g_name) - base


def _by_cell(spec, data, fit, X, draws, alpha, phi, ystar, *, kappa, ols_sd, e, e_ols):
    """Per implicate: the raw cross-fitted means of y*, their β, and the noise's spread.

    Per (φ, α) cell of the implicates' draws, the engine's precision Q gives the GLS map
    G = (XᵀQX)⁻¹XᵀQ (β = G y*: a function of y* only, and over the noise centred on the GLS
    of y, as the baseline's β_ℓ is; the OLS of y* is a different predictor, 0.13 log-dollars
    off the baseline's kriging on Lucas County) and the cross-fit's map K
    (:func:`synthgeo.risk.release_attacker.mechanism_map`): the raw means Xβ + K(y* − Xβ) (the
    leave-out mean is affine in y with this derivative), the variance v over (e, e_β) and this
    draw's shift (:func:`synthgeo.risk.noise_spread.noise_spread`), and [Q_BB⁻¹]_ii, each
    record's leave-out variance in units of σ². Arrays: means (L, n), β (L, p), v, shift and
    the variance factor (L, n). The cells' average map is kept for the release attacker
    (:func:`synthgeo.pipeline.loo_cache.remember_map`): one precision and map per cell.
    """
    precision_of = precision_function(spec, data, fit)
    blocks = record_blocks(spec, data)
    calibration = spec.synthesis.cross_fit_calibration
    L, n = alpha.size, data.y.size
    means, v, moved = np.empty((L, n)), np.empty((L, n)), np.empty((L, n))
    var_factor = np.empty((L, n))
    beta = np.empty((L, X.shape[1]))
    cells, index = np.unique(np.column_stack([phi, alpha]), axis=0, return_inverse=True)
    average = None
    for c, (phi_c, alpha_c) in enumerate(cells):
        Q = precision_of(phi_c, alpha_c)
        QX = np.asarray(Q @ X)
        G = np.linalg.solve(X.T @ QX, QX.T)
        K = mechanism_map(Q, alpha_c, mechanism="cross_fit", blocks=blocks)
        rows = np.flatnonzero(index.ravel() == c)
        # Var(y_i | y_−B) = σ² [Q_BB⁻¹]_ii (Q in units of 1/σ²)
        var_factor[rows] = np.asarray(block_inverse(Q, blocks).diagonal()).ravel()
        b = G @ ystar
        fitted = X @ b
        beta[rows] = b
        means[rows] = fitted + np.asarray(K @ (ystar - fitted)).ravel()
        v[rows], moved[rows] = noise_spread(K, X, calibration=calibration, kappa=kappa,
                                            ols_sd=ols_sd, e=e, e_ols=e_ols, beta_map=G)
        average = accumulate(average, K, rows.size / L)  # as released_map sums it
    remember_map(fit, data, draws, blocks, average)
    return means, beta, v, moved, var_factor


def check_noise_scale(spec, y: np.ndarray) -> float:
    """Refuse a given input-noise sd above the cap; return the cap (model scale).

    Called once the data are read, before any fit, for every gaussian response (break-it
    finding: the refusal came after the fits), and again where the noise is drawn.

    Raises
    ------
    SpecError
        ``[synthesis] input_noise`` above :data:`INPUT_NOISE_CAP` times the response's standard
        deviation (model scale): the released values would be noise.
    """
    kappa = spec.synthesis.input_noise
    cap = INPUT_NOISE_CAP * float(np.std(y))
    if kappa != "auto" and float(kappa) > cap:
        raise SpecError(
            f"`[synthesis] input_noise = {kappa!r}` is more than {INPUT_NOISE_CAP:g} times the "
            "response's standard deviation (model scale): the released values would be "
            'noise; give a smaller sd, or "auto"')
    return cap


def draw_input_noise(spec, data, fit, sources, seed, *, design: np.ndarray | None = None,
                     own_X: np.ndarray | None = None, out: dict | None = None, refit=None):
    """Draw the cross-fitted implicates from y* = y + e (module docstring).

    κ as given, or chosen ("auto") so that the attacker who knows y*_i (and, under a separate
    calibration target, Ht) stays within the first per-record target for every record; κ is
    chosen with the fit of y (``fit``: one number), everything released comes from ``refit``,
    the engine's fit of y* with its seed (``refit(y*) -> GPFit``), at each draw's (φ, α) with
    α = (τ*² − κ²)/σ*² (y*'s nugget holds κ²). Each record's cross-fitted mean krigs y*_−B
    at that (φ, α); its implicate variance is
    the leave-out variance s² less the variance v the noise gives its mean (at least
    :data:`FLOOR` s² kept), so that over the noise implicate ℓ of record i is N(m_iℓ(0), s²_iℓ):
    the calibrated cross-fit of y itself (docs/risk-and-utility.md, "Input noise: luck or leak").
    Exact duplicate records (same coordinates, covariates and value) share one draw of e (and
    of e_β), and so do near-duplicates (values within :data:`NEAR_DUPLICATE_SHARE` κ) unless
    ``[risk] loo_unit = "record"``: ``attrs["input_noise"]["n_records_sharing_a_draw"]`` counts
    them.

    Several responses (docs/risk-and-utility.md, "Input noise for several responses"): each
    response draws its own e from its own seed and κ; a later response's synthesis uses
    ``design``, its design with the earlier responses at their y* (so that nothing released
    reads an earlier confidential value), and "auto" chooses κ against the verdict's baseline,
    which holds the earlier responses' released values (``own_X``, (L, n, p)); its expectation
    over the noise is over its own noise, given the earlier responses' y*. ``out``, if given,
    receives ``y_star`` (n,), ``beta`` (L, p), the means' coefficients, and ``raw_error`` (n,),
    the calibration target less the mean raw leave-out mean (confidential, in memory only: the
    later responses' designs, the shift to the earlier synthetic values, the release attacker).
    """
    X = data.X if design is None else np.asarray(design, float)
    seed = confidential_seed(seed, data.y)  # e and the normals: no seed search (_seed.py)
    kappa, chosen, reached = spec.synthesis.input_noise, "given", None
    cap = check_noise_scale(spec, data.y)
    loo0 = _prior(spec, data, fit, sources, own_X)
    threshold, base, attributable_at = _attacker(spec, data, loo0)
    unlimited = np.full(data.y.size, np.inf)
    calibration = spec.synthesis.cross_fit_calibration
    h = leverage(X)
    separate = separate_target(spec.synthesis.input_noise_ols, calibration, h)

    def ols_info(k: float):  # h_ii/κ_β²: at most OLS_INFORMATION_SHARE/κ²
        return h / ols_noise_sd(k, h) ** 2 if separate and k > 0 else 0.0

    if kappa == "auto":
        bound = lambda k: attributable_at(unlimited, noise_sd=k, ols=ols_info(k))  # noqa: E731
        kappa = choose_kappa(bound, threshold, largest=cap)
        chosen, reached = "auto", bool(np.max(bound(kappa)) <= threshold)
        if not reached:
            warn(f'`[synthesis] input_noise = "auto"` stopped at its cap ({INPUT_NOISE_CAP:g} '
                 "times the response's standard deviation) without bringing the release "
                 "attacker within the target: the verdict says FAIL")
    kappa = float(kappa)
    noise_seed, ols_seed = keyed_seeds(seed, [INPUT_NOISE_KEY, INPUT_NOISE_OLS_KEY])
    # exact duplicates (site, covariates, value) share one draw: independent draws would let
    # an attacker average them (variance κ²/m); near-duplicates (values within a tenth of κ)
    # too, where the pair lies in one leave-out block (the release then reads only their sum)
    near = NEAR_DUPLICATE_SHARE * kappa if spec.loo_unit != "record" else 0.0
    first = duplicate_draws(data.sites.site_index, X, data.y, tolerance=near)
    sharing = int(np.sum(np.bincount(first, minlength=first.size)[first] > 1))
    ystar = share_duplicate_draws(noisy_response(data.y, kappa, noise_seed), data.y, first)
    ols_sd = ols_noise_sd(kappa, h) if separate else None
    target = (share_duplicate_draws(noisy_response(data.y, ols_sd, ols_seed), data.y, first)
              if separate else ystar)
    realised = _realised_bound(spec, data, loo0, base, ystar, kappa, X=X, h=h,
                               ols=(target, ols_sd) if separate and kappa > 0 else None)
    # β of the means from y* (its GLS per cell), not from the fit on y: the calibrated means
    # carry −(I − H)M₀Xβ_ℓ, and β_ℓ fitted on y would reach them (break-it trial, 2026-12-03)
    # θ from a fit on y*, not on y: the draws' σ², τ², φ fitted on y reach every implicate's
    # spread, and pooled implicates read an outlier's value off them (break-it trial,
    # 2026-12-03: 0.84 against a claimed 0.063 at 600 implicates). The y* fit's nugget holds
    # κ² too: y's is τ*² − κ² (at least TAU_FLOOR σ*²)
    if refit is None:
        raise ValueError("input noise needs `refit` (the engine's fit of y*)")
    star = refit(ystar, kappa ** 2)
    known = bool(star.engine.get("known_nugget"))  # the grid: y's model plus the known κ²
    d = posterior_draws(star, sources)
    tau2 = d["nugget"] - kappa ** 2
    truncated = int(np.sum(tau2 < TAU_FLOOR * d["sigma2"]))
    alpha = np.maximum(tau2, TAU_FLOOR * d["sigma2"]) / d["sigma2"]
    draws = (sources["source_chain"].values, sources["source_draw"].values)
    raw, d["beta"], v, moved, factor = _by_cell(
        spec, data, fit, X, draws, alpha, d["phi"], ystar, kappa=kappa, ols_sd=ols_sd,
        e=ystar - data.y, e_ols=target - data.y if separate else None)
    # calibrated to the OLS of y* ("shared") or of y + e_β ("separate"); y's own OLS would
    # publish y's regression exactly as L grows
    mean = _calibrated(spec, raw, target, X)
    s2 = d["sigma2"][:, None] * factor  # y's leave-out variance at the y* fit's θ
    if spec.synthesis.input_noise_draws == "y_star":  # over the noise: y*'s predictive
        s2 = s2 + kappa ** 2
    var = np.maximum(s2 - v, FLOOR * s2)  # over the noise: s² (v + FLOOR s² where floored)
    floored = int((s2 - v < FLOOR * s2).any(axis=0).sum())
    if out is not None:
        out.update(y_star=ystar, beta=d["beta"], raw_error=target - raw.mean(axis=0))
    ds = draw_cross_fitted(mean, np.sqrt(var), sources=sources,
                           random_seed=seed, record_id=data.record_id,
                           calibration=calibration)
    # own values over the noise (docs: "Input noise: luck or leak")
    centre, spread = mean - moved, np.sqrt(var + v)
    measure, _, _ = judged_target(spec)
    g = response_scale(spec).g_name
    over = rb_risk(Predictive(mean=centre, sd=spread), data.y, measure, g) - base
    drawn = rb_risk(Predictive(mean=mean, sd=np.sqrt(var)), data.y, measure, g) - base
    # the (φ, α) each implicate was synthesised at (the y* fit's), for the release attacker's
    # map (confidential, not written to release/)
    ds["theta_phi"] = ("implicate", np.asarray(d["phi"], float))
    ds["theta_alpha"] = ("implicate", np.asarray(alpha, float))
    reading = spec.risk.input_noise_reading
    if reading == "expected":  # the risk stage scores own values on this predictive
        ds["y_mean_marginal"] = (("implicate", "record"), centre)
        ds["y_sd_marginal"] = (("implicate", "record"), spread)
    ds.attrs["input_noise"] = {"sd": kappa, "chosen": chosen, "reached": reached,
                               "beta": "GLS of y* at each implicate's (phi, alpha)",
                               "calibration_target": (
                                   "none" if calibration == "none"
                                   else "OLS of y + e_beta (separate noise)" if separate
                                   else "OLS of y*"),
                               "ols_sd": ols_sd,
                               "n_records_variance_floored": floored,
                               "n_records_sharing_a_draw": sharing,
                               "fit": ("y* with kappa^2 a known part of the nugget "
                                       "(theta, beta and the priors' scale from y*)" if known
                                       else "y* (theta, beta and the priors' scale from y*; "
                                       "nugget less kappa^2)"),
                               "n_draws_nugget_truncated": truncated,
                               "largest_attributable_this_noise": float(realised.max()),
                               "n_records_above_this_noise": (
                                   None if threshold is None
                                   else int((realised > threshold).sum())),
                               "own_values_reading": reading,
                               "own_values_largest_expected": float(over.max()),
                               "own_values_largest_this_noise": float(drawn.max())}
    return ds


def draw_mean_noise(spec, data, fit, sources, seed):
    """Draw the cross-fitted implicates around means moved by η (module docstring).

    v as given (``mean_noise`` is its sd), or chosen ("auto") so that the release attacker at
    this release's L stays within the first per-record target for every record. The implicate
    variance becomes s² − v (at least 10 % of s² is kept: v ≤ 0.9 × the smallest).
    """
    seed = confidential_seed(seed, data.y)  # the noise: no seed search (_seed.py)
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


def input_noise_line(released) -> str | None:
    """One console line on what input noise did and how it is judged (None without it).

    Aggregates only: the sd, the calibration target, and each figure both over the noise (the
    judged reading under ``input_noise_reading = "expected"``) and on this release's one draw.
    """
    a = (released.attrs.get("input_noise") if released is not None else None) or {}
    if not a.get("sd"):
        return None
    target = a.get("calibration_target", "")
    line = (f"input noise: sd {a['sd']:g} ({a.get('chosen')}; model scale), calibration target "
            f"{target}" + (f" (its own noise sd {a['ols_sd']:.3g})" if a.get("ols_sd") else ""))
    if "own_values_largest_expected" in a:
        line += (f"; own values judged {a['own_values_reading']}: largest attributable "
                 f"{a['own_values_largest_expected']:.3f} over the noise, "
                 f"{a['own_values_largest_this_noise']:.3f} on this draw")
    line += (f"; the attacker holding y*_i, on this draw: largest "
             f"{a['largest_attributable_this_noise']:.3f}"
             + ("" if a.get("n_records_above_this_noise") is None
                else f", {a['n_records_above_this_noise']} records above the threshold"))
    return line
