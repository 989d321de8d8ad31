"""The main job: points → fit both models → at-risk → synthesize → risk → utility.

Order: prepare the data → location diagnostics → fit unrestricted → at-risk rule at M → fit
restricted → synthesize → risk → utility → general utility (pMSE) (docs/model.md,
docs/risk-and-utility.md). Writing the outputs is :mod:`synthgeo.release.writer`'s job.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial

import geopandas
import numpy as np
import pandas as pd
from scipy.special import logit

from synthgeo._errors import RiskError, SpecError
from synthgeo._progress import progress_iter
from synthgeo._seed import resolve_seed
from synthgeo._spill import spill_variables, tmpdir_not_used
from synthgeo.config import AUTO_EXACT_MAX_RECORDS, ReleaseSpec, ResponseConfig, load_spec
from synthgeo.inference.result import GPFit, require_convergence
from synthgeo.io.notices import note
from synthgeo.io.points import coordinates_m
from synthgeo.locations.diagnostics import (
    LocationDiagnostics,
    enforce_verdict,
    location_diagnostics,
)
from synthgeo.model.at_risk import AtRiskResult, continuous_weights, find_at_risk
from synthgeo.model.kernels import M_FROM_RHO0, Sites
from synthgeo.model.restricted_gp import GPPriors, default_priors
from synthgeo.model.smoothing import Smoothing
from synthgeo.pipeline import responses
from synthgeo.pipeline.at_risk_rule import (
    judge_on_fresh_draws,
    pseudo_bound,
    pseudo_likelihood_weights,
    risk_rule,
    run_neighbour_check,
    score_unrestricted,
)
from synthgeo.pipeline.data import (
    PreparedData,
    check_formula_names,
    prepare_data,
)
from synthgeo.pipeline.detector_stage import detector_block
from synthgeo.pipeline.general_utility import general_utility
from synthgeo.pipeline.loo_cache import run_scope
from synthgeo.pipeline.previous import cumulative_risk, cumulative_verdict, load_previous
from synthgeo.pipeline.result import MODELS, ReleaseResult, SynthesiserState
from synthgeo.pipeline.risk_stage import (
    gate_cumulative,
    loo_predictive,
    release_predictive_of,
    score_release_risk,
)
from synthgeo.pipeline.synthesis_noise import (
    check_noise_scale,
    draw_input_noise,
    draw_mean_noise,
    input_noise_line,
)
from synthgeo.risk.selection import AtRiskChoice
from synthgeo.risk.within_eps import summarise_risk, within_eps_risk
from synthgeo.synthesis.cross_fit import (
    calibrate_covariates,
    check_loo_leverage,
    draw_cross_fitted,
    high_leverage_count,
    implicate_sources,
    leverage,
    own_value_leak,
)
from synthgeo.synthesis.implicates import (
    draw_implicates,
    implicate_draw_index,
    selection_draw_index,
)
from synthgeo.utility.glm import response_correlations

__all__ = ["Fitter", "run_release", "restricted_smoothing", "as_spec", "make_fitter"]

log = logging.getLogger(__name__)

#: A fitting function: ``(y, X, sites, *, priors, coef_names, config, scale, random_seed,
#: label) -> GPFit``, as :func:`synthgeo.inference.nuts.fit_gp` and
#: :func:`synthgeo.inference.grid.fit_gp_grid`.
Fitter = Callable[..., GPFit]


def as_spec(spec: ReleaseSpec | str | os.PathLike) -> ReleaseSpec:
    """Return `spec`, or the spec read from the TOML file it names (see :func:`load_spec`).

    Examples
    --------
    >>> from synthgeo.config import bundled_spec_path
    >>> as_spec(bundled_spec_path()).data.response
    'log_price'
    """
    return spec if isinstance(spec, ReleaseSpec) else load_spec(spec)


def _priors(spec: ReleaseSpec, data: PreparedData) -> GPPriors:
    return default_priors(data.y, data.X, data.sites, **spec.model.priors)


def make_fitter(spec: ReleaseSpec, data: PreparedData, *, progressbar: bool = False,
                fitter: Fitter | None = None):
    """Return ``fit(scale=None, random_seed=..., label=...) -> GPFit`` for the spec's engine.

    With ``fitter`` given, that function replaces the spec's engine (see :data:`Fitter`); the
    data, priors, coefficient names and ``[sampling]`` are bound.
    """
    priors = _priors(spec, data)
    gp = spec.model.engine_for(data.n_records)
    common = dict(priors=priors, coef_names=data.coef_names, config=spec.sampling)
    if fitter is not None:
        return partial(fitter, data.y, data.X, data.sites, **common)
    if spec.sampling.sampler == "grid":
        from synthgeo.compute import batch_mapper
        from synthgeo.inference.grid import fit_gp_grid

        return partial(fit_gp_grid, data.y, data.X, data.sites, gp=gp,
                       n_neighbors=spec.model.n_neighbors,
                       map_batches=batch_mapper(spec.compute.scheduler), **common)
    if gp != "exact":
        raise SpecError(
            f'`[model] gp = "auto"` chose the NNGP for {data.n_records} records (more than '
            f'{AUTO_EXACT_MAX_RECORDS}), which needs `[sampling] sampler = "grid"`'
        )
    from synthgeo.inference.nuts import fit_gp

    return partial(fit_gp, data.y, data.X, data.sites,
                   parametrization=spec.model.parametrization, progressbar=progressbar, **common)


def restricted_smoothing(
    spec: ReleaseSpec, coords_m: np.ndarray, sites: Sites, at_risk: AtRiskResult,
    phi_per_m: float, *, subject: np.ndarray | None = None,
    likelihood_weight: np.ndarray | None = None,
) -> Smoothing:
    """D of the restricted model from the spec's at-risk weights and γ (docs/model.md).

    Parameters
    ----------
    spec : ReleaseSpec
        ``[model] at_risk_weight``, ``gamma``, ``rho0``, ``k``.
    coords_m : ndarray of shape (n_records, 2)
        Record coordinates, metres.
    sites : Sites
    at_risk : AtRiskResult
        The binary rule at M (its site flags are a under ``at_risk_weight = "binary"``).
    phi_per_m : float
        φ̂ (1/metre) for the continuous weights.
    subject : ndarray of shape (n_records,), optional
    likelihood_weight : ndarray of shape (n_records,), optional
        Under ``at_risk_weight = "pseudo_likelihood"``: α_i
        (:func:`~synthgeo.pipeline.at_risk_rule.pseudo_likelihood_weights`); D = I then.

    Returns
    -------
    Smoothing

    Raises
    ------
    ValueError
        Under ``"pseudo_likelihood"`` without ``likelihood_weight``.
    """
    if spec.model.at_risk_weight == "pseudo_likelihood":
        if likelihood_weight is None:
            raise ValueError('at_risk_weight = "pseudo_likelihood" needs `likelihood_weight`')
        return Smoothing(a=np.zeros(sites.n_sites), gamma=0.0,
                         likelihood_weight=likelihood_weight)
    if spec.model.at_risk_weight == "continuous":
        a, _ = continuous_weights(coords_m, sites.site_index, phi_per_m, spec.model.rho0,
                                  k=spec.model.k, subject=subject)
    else:
        a = at_risk.site_at_risk.astype(float)
    return Smoothing(a=a, gamma=spec.model.gamma_value,
                     at_risk_nugget=spec.model.at_risk_nugget)


def _warm_start(spec: ReleaseSpec, fitter: Fitter | None, fit: GPFit,
                smoothing: Smoothing | None = None) -> dict:
    """``start``: the restricted grid fit begins on the unrestricted fit's final box.

    The two posteriors of (range, nugget share) are close (they differ at the at-risk sites
    only), so the restricted fit starts where the unrestricted one ended instead of on the
    whole prior box; its own checks (cell mass, edge mass) still decide, and a box that is
    too narrow is widened at its open edges (docs/inference.md). When D = I (no site at risk,
    or γ = 0) and no extra variance, the restricted model *is* the unrestricted one:
    ``posterior``, the unrestricted grid posterior, is reused as it is; with the one seed both
    fits take (common random numbers) its draws, effects and implicates are then bit-identical
    to the unrestricted fit's, and every difference between the two models is exactly 0.
    At large N, where the unrestricted fit began on a Laplace box, the restricted fit takes a
    Laplace start of its own (its posterior is not the unrestricted one's: its box, laid on
    the unrestricted posterior, left 42 % of the mass on an edge at 10⁵ records and cost
    1,274 evaluations), with its mode search begun at the unrestricted mode (``mode_start``).
    Other engines: nothing.
    """
    if fitter is not None or spec.sampling.sampler != "grid":
        return {}
    if (smoothing is not None and fit.grid is not None
            and smoothing.at_risk_nugget != "marginal" and not smoothing.depends_on_nugget
            and np.all(smoothing.scale() == 1.0)
            and (smoothing.likelihood_weight is None
                 or np.all(smoothing.likelihood_weight == 1.0))):
        return {"posterior": fit.grid}
    laplace = fit.engine.get("grid_laplace_start") or {}
    if laplace.get("sd"):  # large N: its own Laplace start, its search from the fit's mode
        return {"mode_start": np.asarray(laplace["mode"], float)}
    stages = fit.engine.get("grid_stages") or []
    if not stages:
        return {}
    last = stages[-1]  # the box in the quadrature's axes: log range (m), logit nugget share
    lo_hi = [np.log(last["range_m"]), logit(np.asarray(last["nugget_share"], float))]
    return {"start": np.asarray(lo_hi, float)}


@contextmanager
def _timed(seconds: dict[str, float], stage: str) -> Iterator[None]:
    """Record the wall time of the block as ``seconds[stage]``."""
    t = time.perf_counter()
    yield
    seconds[stage] = time.perf_counter() - t


def _locations(spec: ReleaseSpec, data: PreparedData) -> LocationDiagnostics:
    """Location diagnostics, treatment and verdict of the released locations (``[anonymity]``)."""
    a = spec.anonymity
    return location_diagnostics(
        data.gdf, radius_m=a.radius_m, k=a.k, k_max=a.k_max, policy=a.policy(),
        group_by=a.group_by, unit=a.unit, time_column=a.time, subject=spec.data.subject,
        id_column=data.id_column, treatment=a.treatment,
        attributes=[c for c in dict.fromkeys([*spec.data.covariates, *spec.data.response_names])
                    if c in data.gdf.columns],
    )


def _locations_message(spec: ReleaseSpec, locations: LocationDiagnostics) -> str:
    """Spatial k, the outlier policy and the location verdict (two lines; one on FAIL).

    A FAIL verdict is said once, by the gate (:func:`~synthgeo.locations.diagnostics.
    enforce_verdict`: the error under "stop", the warning under "warn"), not here too.
    """
    sk, ol = locations.spatial_k.summary(), locations.outliers
    verdict = locations.verdict
    return (f"locations: {sk['n_below_k']} of {sk['n_records']} records below k = {sk['k']} "
            f"within {sk['radius_m']:g} m; the outlier policy at r_max = "
            f"{spec.anonymity.r_max_m:g} m "
            + ("suppresses" if spec.anonymity.treatment == "apply" else "would suppress")
            + f" {ol.overall['n_suppressed']}" + (" and refuses" if ol.refused else "")
            + ("" if verdict.status == "FAIL" else "\n" + verdict.summary_line()))


def _at_risk(spec: ReleaseSpec, data: PreparedData, fit: GPFit, seed=None, *,
             implicates=None, g: str | None = None, own_X: np.ndarray | None = None,
             ) -> tuple[AtRiskResult, dict, float, AtRiskChoice, object]:
    """At-risk records, the spatial rule's sensitivity to φ, φ̂ (1/metre), the choice, the score.

    The spatial rule at M (φ̂ or ``M_m``); under ``[model] at_risk = "risk" | "both"`` also the
    records whose Rao-Blackwellised attributable risk under the unrestricted fit (scored on
    ``implicates``, drawn at its selection draws, or drawn here with ``seed``) exceeds a
    ``record_threshold`` (:mod:`synthgeo.pipeline.at_risk_rule`); ``g`` and ``own_X`` as
    :func:`~synthgeo.pipeline.at_risk_rule.score_unrestricted` (a response of several). The
    last item is that :class:`~synthgeo.risk.records.RecordRisk` (None under "spatial").
    """
    coords = coordinates_m(data.gdf)
    subject = data.gdf[spec.data.subject].to_numpy() if spec.data.subject else None
    phi_q = fit.phi_quantiles((0.05, 0.5, 0.95))
    M = float(spec.model.M_m) if spec.model.M_m is not None else float(
        M_FROM_RHO0(phi_q[1], spec.model.rho0))
    at_risk = find_at_risk(coords, data.sites.site_index, M, k=spec.model.k, subject=subject)
    sens = {}
    for label, phi in (("phi_q05", phi_q[0]), ("phi_q95", phi_q[2])):
        m_q = float(M_FROM_RHO0(phi, spec.model.rho0))
        r = find_at_risk(coords, data.sites.site_index, m_q, k=spec.model.k, subject=subject)
        sens[label] = {"phi_per_m": float(phi), "M_m": m_q, "n_at_risk": r.n_at_risk}
    record_risk = None
    if spec.model.at_risk != "spatial":
        ds = implicates if implicates is not None else _draw(
            spec, data, fit, "unrestricted", seed, draw_index=_selection_draws(spec, fit))
        record_risk = score_unrestricted(spec, data, fit, ds, g=g, own_X=own_X)
    choice, at_risk = risk_rule(spec, data, at_risk, record_risk)
    return at_risk, sens, float(phi_q[1]), choice, record_risk


def _selection_draws(spec: ReleaseSpec, fit: GPFit) -> np.ndarray:
    """Return the risk rule's posterior draws (:func:`selection_draw_index`), or raise SpecError."""
    post = fit.posterior
    try:
        return selection_draw_index(post.sizes["chain"], post.sizes["draw"],
                                    spec.synthesis.n_implicates)
    except ValueError as exc:
        raise SpecError(f'[model] at_risk = "{spec.model.at_risk}": {exc}') from None


def _draw(spec: ReleaseSpec, data: PreparedData, fit: GPFit, name: str, seed, *,
          draw_index: np.ndarray | None = None, noise: dict | None = None,
          keep: dict | None = None):
    """One model's implicates (:func:`draw_implicates`) with the spec's L and at-risk effect.

    ``draw_index``: other posterior draws than the implicates' (the risk rule's selection).

    Under ``[synthesis] predictive = "cross_fit"`` the released ("restricted") implicates are
    the unrestricted fit's cross-fitted predictive (:mod:`synthgeo.synthesis.cross_fit`), at
    the draws :func:`draw_implicates` would use, from the leave-out predictive the risk stage's
    baseline computes (:func:`~synthgeo.pipeline.risk_stage.loo_predictive`); under
    ``cross_fit_calibration = "covariates"`` its means calibrated to the confidential OLS,
    with the own-value leak's aggregates in ``attrs["own_value_leak"]``. For a later response
    of several, ``data`` holds the earlier *confidential* responses in X (the model's design);
    the caller then moves the draws to the earlier synthetic values
    (:func:`~synthgeo.pipeline.responses.shift_to_earlier`), as for the posterior predictive.
    ``noise``: keyword arguments of :func:`~synthgeo.pipeline.synthesis_noise.draw_input_noise`
    (a response of several: its design with the earlier y*, the attacker's ``own_X``, ``out``).
    ``keep``: receives ``raw_error`` (n,), y less the mean raw leave-out mean (a response of
    several: its release attacker; confidential, in memory only).
    """
    if name == "restricted" and spec.synthesis.predictive == "cross_fit":
        sources = implicate_sources(fit, spec.synthesis.n_implicates)
        calibration = spec.synthesis.cross_fit_calibration
        if spec.synthesis.input_noise != 0:
            return draw_input_noise(spec, data, fit, sources, seed, **(noise or {}))
        if spec.synthesis.mean_noise != 0:
            return draw_mean_noise(spec, data, fit, sources, seed)
        calibrated = calibration != "none"
        weight: dict | None = {} if calibrated else None
        loo = loo_predictive(spec, data, fit, sources, own_weight=weight)
        mean = loo.mean
        if keep is not None:
            keep["raw_error"] = data.y - loo.mean.mean(axis=0)
        if calibrated:  # the implicates' OLS on X: the confidential's
            own_out = calibration == "covariates_loo"
            if own_out:  # a later response's design holds the earlier responses too
                check_loo_leverage(data.X)
            mean = calibrate_covariates(loo.mean, data.y, data.X, leave_own_out=own_out)
        ds = draw_cross_fitted(mean, loo.sd, sources=sources, random_seed=seed,
                               record_id=data.record_id, calibration=calibration)
        if weight:  # aggregates only: how much of its own value a record's mean carries
            w = weight[spec.loo_unit]
            if own_out:  # the leverage term left out: (w − h)/(1 − h)
                h = leverage(data.X)[None, :]
                w = (w - h) / (1.0 - h)
            ds.attrs["own_value_leak"] = own_value_leak(w, loo.mean, loo.sd, data.y)
        return ds
    return draw_implicates(fit, data.X, n_implicates=spec.synthesis.n_implicates,
                           record_id=data.record_id, random_seed=seed,
                           at_risk_effect=(spec.model.at_risk_effect
                                           if name == "restricted" else "zero"),
                           scheduler=spec.compute.scheduler,  # [compute]: where blocks run
                           draw_index=draw_index)


def _refuse_on_several(spec: ReleaseSpec, previous) -> None:
    """Refuse ``--previous`` with ``[[data.responses]]`` (a silent skip would mislead).

    Repeated releases of several responses belong to the register issue. ``[risk.targets]``,
    ``at_risk = "risk" | "both"`` and the marginal nugget apply to every gaussian response;
    the spec refuses them with a yes/no or count response, naming the statistical reason
    (:class:`~synthgeo.config.ReleaseSpec`).
    """
    del spec  # the spec's own checks refuse what has no meaning for a discrete response
    if previous is not None:
        raise SpecError(
            "--previous (repeated releases) is applied on the single-response route only, "
            "not yet with [[data.responses]] (several responses or a yes/no / count "
            "response); leave it out or release one gaussian response")


@dataclasses.dataclass
class _Drawn:
    """One response fitted and synthesised (the per-response stage's output)."""

    config: ResponseConfig
    data: PreparedData  # its y, and X with the earlier responses
    fits: dict
    at_risk: AtRiskResult
    sensitivity: dict
    choice: AtRiskChoice
    implicates: dict | None  # gaussian: each model's draw_implicates Dataset
    synthetic: dict  # each model's (L, n_records) model-scale values
    seconds: dict
    selection: tuple | None = None  # the risk rule's (RecordRisk, selection draws) or None
    fit_seed: int | None = None  # both fits' random_seed (the stored synthesiser keeps it)
    # input noise (confidential, in memory only): y*, the design the released synthesis used
    # (the earlier responses at their y*) and the coefficients its means and shift used
    y_star: np.ndarray | None = None
    design: np.ndarray | None = None
    beta: np.ndarray | None = None
    raw_error: np.ndarray | None = None  # the calibration's mean leave-out error (cross-fit)


class _SyntheticValues(Mapping):
    """model → its implicates' (L, n_records) ``y_synthetic``, read from them on each access.

    One response's implicates keep their large arrays in temporary files
    (:func:`synthgeo._spill.spill_variables`); a stage holds the values only while it uses
    them.
    """

    def __init__(self, implicates: dict) -> None:
        self._implicates = implicates

    def __getitem__(self, model: str) -> np.ndarray:
        """Return ``model``'s synthetic values (a fresh array when they are spilled)."""
        return self._implicates[model]["y_synthetic"].values

    def __iter__(self):
        """Iterate over the models."""
        return iter(self._implicates)

    def __len__(self) -> int:
        """Return the number of models."""
        return len(self._implicates)


def _fit_and_draw(spec: ReleaseSpec, data_j: PreparedData, rc: ResponseConfig, streams,
                  X_syn: dict, *, fitter, say, progressbar: bool, several: bool,
                  reuse_fits: dict | None = None,
                  draw_index: np.ndarray | None = None,
                  noisy_earlier: list | None = None) -> _Drawn:
    """Fit unrestricted → at-risk set → fit restricted → synthesise, for one response.

    ``streams``: the response's four seed streams. Common random numbers (docs/inference.md):
    ``streams[0]`` seeds *both* fits (the grid's θ draws and each draw's effect normals, keyed
    by the draw's index), ``streams[2]`` both models' implicates (the normals of implicate ℓ),
    so a difference between the two models' per-record risks is the models', not the
    sampler's; ``streams[1]`` the risk rule's selection implicates (``at_risk = "risk" |
    "both"``, drawn at other posterior draws than the released ones:
    :func:`~synthgeo.synthesis.implicates.selection_draw_index`); ``streams[3]`` is not used
    (kept so that a later response's streams are unchanged). ``draw_index``: the posterior
    draws the implicates come from (``synthgeo draw``: draws no implicate used before);
    default :func:`~synthgeo.synthesis.implicates.implicate_draw_index`. ``noisy_earlier``:
    under ``[synthesis] input_noise``, the earlier responses' y* in order (their columns of a
    later response's design in its released synthesis).
    """
    sec: dict[str, float] = {}
    fit_seed = int(streams[0].generate_state(1)[0])  # both fits: common random numbers
    gaussian = rc.family == "gaussian"
    if gaussian:
        fit = make_fitter(spec, data_j, progressbar=progressbar, fitter=fitter)
    else:
        fit = responses.glmm_fitter(spec, data_j, rc)
    stored = draw_index is not None  # synthgeo draw: the fits are rebuilt, not refitted
    if not several:
        say("the unrestricted model from its stored draws (no refit)" if stored
            else "fitting the unrestricted model")
    with _timed(sec, "fit_unrestricted"):
        key = ("unrestricted", rc.name, fit_seed)  # one response's data, priors and seed
        cached = None if reuse_fits is None else reuse_fits.get(key)
        if cached is not None:  # a later round of protect = "targets": the same fit
            say("reusing the unrestricted fit of the first round (same seed)"
                + (f" for `{rc.name}`" if several else ""))
            fits = {"unrestricted": cached}
        else:
            fits = {"unrestricted": (fit(random_seed=fit_seed, label="unrestricted")
                                     if gaussian else fit())}
        if reuse_fits is not None and gaussian:
            reuse_fits[key] = fits["unrestricted"]
    with _timed(sec, "at_risk"):
        # the risk rule scores the unrestricted model on its selection draws (streams[1]),
        # disjoint from the implicates' draws the release is judged on (fresh draws)
        selection_draws = (None if spec.model.at_risk == "spatial" else
                           _selection_draws(spec, fits["unrestricted"]))
        phi_of = fits["unrestricted"] if gaussian else responses.PhiOfGLMM(fits["unrestricted"])
        scored, rule_kw = (None if selection_draws is None else _draw(
            spec, data_j, fits["unrestricted"], "unrestricted", streams[1],
            draw_index=selection_draws)), {}
        if several and scored is not None:  # a response of several: its scale, its attacker
            scored, rule_kw = responses.risk_rule_inputs(spec, rc, data_j, fits["unrestricted"],
                                                         scored, X_syn)
        at_risk, sens, phi_hat, choice, selection_risk = _at_risk(
            spec, data_j, phi_of, streams[1] if gaussian else None, implicates=scored,
            **rule_kw)
    say(f"M = {at_risk.radius_m:,.0f} m: {at_risk.n_at_risk} at-risk records"
        + ("" if choice.rule == "spatial" else
           f' (at_risk = "{choice.rule}": {int(choice.spatial.sum())} by location, '
           f"{int(choice.by_risk.sum())} by risk)")
        + ("; nobody is smoothed: the restricted model is the unrestricted one"
           if at_risk.n_at_risk == 0 and spec.synthesis.predictive != "cross_fit" else ""))
    if not several and spec.synthesis.predictive != "cross_fit":
        say("the restricted model from its stored draws (no refit)" if stored
            else "fitting the restricted model")
    with _timed(sec, "fit_restricted"):
        subject = data_j.gdf[spec.data.subject].to_numpy() if spec.data.subject else None
        weight = (pseudo_likelihood_weights(spec, selection_risk)
                  if spec.model.at_risk_weight == "pseudo_likelihood" else None)
        smoothing = restricted_smoothing(spec, coordinates_m(data_j.gdf), data_j.sites, at_risk,
                                         phi_hat, subject=subject, likelihood_weight=weight)
        if weight is not None:
            say(f"pseudo-likelihood: {int(np.sum(weight < 1))} records weighted below 1 "
                f"(effective records {weight.sum():,.1f} of {weight.size})")
        if spec.synthesis.predictive == "cross_fit":  # released: cross-fitted, no refit
            say("cross-fitted synthesis: no restricted fit (every record is drawn from the "
                "unrestricted fit's leave-out predictive)")
            fits["restricted"] = fits["unrestricted"]
        elif gaussian:  # several responses: no reuse of the unrestricted posterior (phase 1)
            fits["restricted"] = fit(
                scale=smoothing, random_seed=fit_seed, label="restricted",
                **_warm_start(spec, fitter, fits["unrestricted"], None if several else smoothing))
        elif np.any(np.asarray(smoothing.a) > 0) and smoothing.gamma != 0:
            fits["restricted"] = fit(scale=smoothing)
        else:  # no site is smoothed: the restricted model is the unrestricted one (D = I)
            say("no at-risk site: the restricted fit is the unrestricted one")
            fits["restricted"] = fits["unrestricted"]
    if gaussian:
        require_convergence(fits, spec.sampling.on_convergence_failure)
    if not several:
        say(f"drawing {spec.synthesis.n_implicates} implicates per model")
    with _timed(sec, "synthesize"):
        implicates = None
        noise = design = None
        keep: dict = {}  # a response of several: what its release attacker needs
        noisy = (gaussian and spec.synthesis.predictive == "cross_fit"
                 and spec.synthesis.input_noise != 0)
        if noisy and several:
            design = data_j.X.copy()  # the earlier responses at their y*
            p0 = data_j.X.shape[1] - len(noisy_earlier or [])
            for k, ystar in enumerate(noisy_earlier or []):
                design[:, p0 + k] = ystar
            noise = {"design": design, "own_X": X_syn["restricted"], "out": keep}
        if noisy:  # everything released comes from a fit of y* (its θ and priors' scale)
            released_X = data_j.X if design is None else design

            def refit(ystar, known_nugget, _X=released_X):
                ystar = np.asarray(ystar, float)
                # a later round of protect with the same noise (its fourth: implicates of y*)
                key = ("y*", rc.name, fit_seed, float(known_nugget), ystar.tobytes(),
                       np.asarray(_X, float).tobytes())
                if reuse_fits is not None and key in reuse_fits:
                    say("reusing the fit of y* of the previous round (same noise, same seed)")
                    return reuse_fits[key]
                say("fitting the model to the noised response y* (what input noise releases)")
                star = dataclasses.replace(data_j, y=ystar, X=_X)
                # the grid fits y's model plus the known nugget κ²; another engine fits y*
                # with a free nugget (κ² subtracted afterwards, floored)
                known = ({"known_nugget": known_nugget}
                         if fitter is None and spec.sampling.sampler == "grid" else {})
                out = make_fitter(spec, star, progressbar=progressbar, fitter=fitter)(
                    random_seed=fit_seed, label="unrestricted (y*)", **known)
                if reuse_fits is not None:
                    reuse_fits[key] = out
                return out

            noise = {**(noise or {}), "refit": refit}
        if gaussian:
            implicates = {  # one stream for both models: common random numbers
                m: _draw(spec, data_j, fits[m], m, streams[2], draw_index=draw_index,
                         noise=noise if m == "restricted" else None,
                         keep=keep if m == "restricted" and several else None)
                for m in progress_iter(MODELS, enabled=progressbar, desc="synthesis",
                                       total=len(MODELS), unit="model")}
            if X_syn["restricted"] is not None:  # a later response: given the earlier ones
                implicates = {m: responses.shift_to_earlier(ds, fits[m], data_j.X, X_syn[m])
                              if noise is None or m != "restricted" else
                              responses.shift_to_earlier(ds, fits[m], design, X_syn[m],
                                                         beta=keep["beta"])
                              for m, ds in implicates.items()}
            if smoothing.likelihood_weight is not None:  # aggregates for release.json
                implicates["restricted"].attrs["pseudo_likelihood"] = pseudo_bound(
                    data_j.y, smoothing.likelihood_weight, implicates)
            if several:  # a later response's design holds the earlier ones' values
                synthetic = {m: ds["y_synthetic"].values for m, ds in implicates.items()}
            else:  # large (implicate, record) arrays wait in temporary files between stages
                implicates = {m: spill_variables(ds) for m, ds in implicates.items()}
                synthetic = _SyntheticValues(implicates)
        else:
            synthetic = {m: responses.draw_discrete(spec, fits[m], data_j.X, X_syn[m],
                                                    streams[2])
                         for m in MODELS}
    return _Drawn(config=rc, data=data_j, fits=fits, at_risk=at_risk, sensitivity=sens,
                  choice=choice, implicates=implicates, synthetic=synthetic, seconds=sec,
                  selection=(None if selection_risk is None
                             else (selection_risk, selection_draws)), fit_seed=fit_seed,
                  y_star=keep.get("y_star"), design=design, beta=keep.get("beta"),
                  raw_error=keep.get("raw_error"))


def run_release(spec: ReleaseSpec | str | os.PathLike, *,
                points: geopandas.GeoDataFrame | None = None, progress=None,
                progressbar: bool = False, fitter: Fitter | None = None,
                previous: str | os.PathLike | None = None, ledger=None,
                reuse_fits: dict | None = None,
                plan: SynthesiserState | None = None, land_checked=None,
                records_digest: str | None = None, general_utility: bool = True):
    """Fit both models, synthesise, score risk and utility (writes nothing): every release.

    One route: data → locations → per response (fit unrestricted, at-risk set, fit
    restricted, synthesise) → risk → utility → result. A single gaussian response is a
    sequence of one; ``[[data.responses]]`` with several responses or a yes/no / count one is
    synthesised in sequence (:mod:`synthgeo.pipeline.responses`, docs/model.md).

    Parameters
    ----------
    spec : ReleaseSpec or path
        A validated spec, or its TOML file.
    points : geopandas.GeoDataFrame, optional
        The records, already in memory (see :func:`synthgeo.synthesize`); default: read the
        spec's ``[data] path``.
    fitter : callable, optional
        Replaces the spec's gaussian inference engine (see :data:`Fitter`): called as
        ``fitter(y, X, sites, priors=..., coef_names=..., config=..., scale=...,
        random_seed=..., label=...)`` and returning a
        :class:`~synthgeo.inference.result.GPFit`. Default: the engine
        ``[sampling] sampler`` and ``[model] gp`` name. Yes/no and count responses always use
        the nested Laplace GLMM.
    progress : callable, optional
        ``progress(message: str)`` called at each stage (the CLI prints it).
    progressbar : bool, default=False
        Progress bars on stderr (sampling, recovery of β and w, synthesis, risk, utility).
    previous : path, optional
        An earlier release of the same records (its ``synthgeo run`` folder): verified against
        the register (``ledger``) before fitting, records linked by id, and each release
        alone and the pooled implicates scored (:mod:`synthgeo.pipeline.previous`). One
        gaussian response only.
    ledger : synthgeo.register.Ledger, optional
        The release register and key (:func:`synthgeo.register.make_ledger`): required with
        ``previous``; with a register, a seed a registered release used is refused before
        fitting (one seed, one release).
    reuse_fits : dict, optional
        Shared by the rounds of ``[risk] protect = "targets"``
        (:mod:`synthgeo.pipeline.protect`): the unrestricted fit of each gaussian response,
        keyed by its name and seed, is stored on the first round and reused by the later ones
        (their ``[data]``, ``[model]`` priors and ``[sampling]`` are the same, and a later
        response's design holds the earlier *confidential* responses, the same in every
        round).
    plan : SynthesiserState, optional
        ``synthgeo draw`` (:mod:`synthgeo.pipeline.draw`): the implicates come from
        ``plan.new_draws`` (draws no implicate used before) and the stored synthesiser is
        carried on (``fitter`` then rebuilds the stored fits). One gaussian response only.
    land_checked : synthgeo.io.where.LandChecked, optional
        ``synthgeo draw``: the earlier release's land/sea outcome for its input file, used
        instead of the land mask when the file read has the SHA-256 it recorded
        (:func:`synthgeo.pipeline.data.prepare_data`).
    records_digest : str, optional
        ``synthgeo draw``: the SHA-256 the stored synthesiser holds of the records it was
        fitted to (:func:`synthgeo.inference.stored.records_sha256` of y and X); other records
        are refused after reading, before anything is fitted.
    general_utility : bool, default=True
        Whether to compute one gaussian response's pMSE (``result.general_utility``;
        :func:`with_general_utility`). ``synthgeo compare`` prints no pMSE and passes False
        (the figures it prints are the same either way); a release writes one, so
        :func:`synthgeo.api.synthesize` and ``synthgeo run`` keep the default.

    Returns
    -------
    ReleaseResult or SequentialResult
        One gaussian response: :class:`ReleaseResult`; several responses or a yes/no / count
        one: :class:`~synthgeo.pipeline.responses.SequentialResult` (a result per response).

    Raises
    ------
    synthgeo.InputError
        Bad input data; an earlier release (``previous``) without a register, or one the
        register does not hold or whose files or HMAC do not match it; a registered seed.
    synthgeo.SpecError
        A bad spec, an engine the spec cannot use, or ``previous`` with several responses.
    synthgeo.ConvergenceError
        When a fit fails the convergence thresholds and ``on_convergence_failure = "stop"``.
    synthgeo.RiskError
        When a ``[risk.targets]`` target fails for the released model (of any gaussian
        response of several: the error names it) and ``[risk] on_risk_failure = "stop"``
        (raised before anything is written).
    """
    spec, say = as_spec(spec), progress or log.info
    several = spec.data.sequential  # [[data.responses]]: several responses or a GLMM family
    if several:
        _refuse_on_several(spec, previous)
    if plan is not None and (several or spec.synthesis.predictive == "cross_fit"):
        raise SpecError("drawing from a stored synthesiser is applied to one gaussian "
                        'response under `[synthesis] predictive = "posterior"` only')
    inputs = _valid_inputs(spec, points, previous, ledger, say, land_checked=land_checked,
                           records_digest=records_digest)
    with run_scope():  # one leave-out predictive per fit and draws, for every stage and round
        if spec.risk.protect == "targets" and plan is None:  # seek the targets, round by
            # round, once the inputs are valid (synthgeo draw, plan: the drawn release keeps
            # the mechanism its round released)
            from synthgeo.pipeline.protect import seek_targets

            return seek_targets(spec, partial(_release, inputs=inputs, general=False),
                                high_leverage=high_leverage_count(inputs.data.X),
                                finish=(partial(with_general_utility, say=say)
                                        if general_utility else (lambda result: result)),
                                progress=progress, progressbar=progressbar, fitter=fitter)
        return _release(spec, inputs=inputs, progress=progress, progressbar=progressbar,
                        fitter=fitter, reuse_fits=reuse_fits, plan=plan,
                        general=general_utility)


@dataclasses.dataclass(frozen=True)
class _Inputs:
    """A run's checked inputs: the same for every round of ``protect = "targets"``."""

    data: PreparedData
    formulas: list[str]
    earlier: object  # the earlier release (``previous``) or None
    locations: LocationDiagnostics  # its verdict enforced
    seconds: dict[str, float]  # "load", "locations"


def _valid_inputs(spec: ReleaseSpec, points, previous, ledger, say, *, land_checked=None,
                  records_digest: str | None = None) -> _Inputs:
    """Check every input before anything is fitted: seed, data, earlier release, locations.

    Raises what :func:`run_release` lists for bad input (InputError, SpecError, a location
    FAIL under ``on_location_failure = "stop"``).
    """
    several, seconds = spec.data.sequential, {}
    if ledger is not None:  # one seed, one release: before anything is read or fitted
        ledger.check_seed(spec.sampling.seed)
    with _timed(seconds, "load"):
        data = prepare_data(spec, points, land_checked=land_checked)
    if records_digest is not None:  # synthgeo draw: the release's own records, before fitting
        from synthgeo.inference.stored import check_records

        check_records(data.y, data.X, records_digest)
    if ledger is not None:  # a second noise draw of registered values: before fitting too
        _check_noise_register(spec, data, ledger)
    if (spec.synthesis.predictive == "cross_fit"
            and spec.synthesis.cross_fit_calibration == "covariates_loo"):
        check_loo_leverage(data.X)  # h_ii > 0.5: unstable leave-one-out prediction
    formulas = [responses.response_formula(spec, rc, j == 0) if several else spec.formula
                for j, rc in enumerate(spec.data.response_configs)]
    for rc, formula in zip(spec.data.response_configs, formulas) if several else ():
        check_formula_names(formula, [rc.name, *spec.data.covariates])
    say(f"loaded {data.n_records} records at {data.sites.n_sites} sites ({data.gdf.crs.name})"
        + (f"; dropped {data.missing['n_dropped']} with a missing value" if data.missing
           else ""))
    noisy = next((k for k in ("input_noise", "mean_noise")
                  if getattr(spec.synthesis, k) != 0), None)
    if noisy == "input_noise":  # a noise above its cap: refused before fitting
        for y, _ in _gaussian_values(spec, data):
            check_noise_scale(spec, y)
    if previous is not None and noisy:
        raise SpecError(
            f"--previous with `[synthesis] {noisy}`: a repeated release would draw its own "
            "noise, and implicates pooled over two noise draws average the noise away (the "
            f"protection holds for draws from one noise draw); release once, or leave {noisy} "
            "out")
    earlier = None if previous is None else load_previous(  # before fitting
        previous, spec, frame_sha256=data.gdf.attrs.get("frame_sha256"), ledger=ledger)
    if earlier is not None and len(earlier.chain()) > 1:
        note(data.gdf.attrs.setdefault("warnings", []), "cumulative_partial",
             f"the cumulative risk pools this release with the one given to --previous only: "
             f"{len(earlier.chain()) - 1} older release(s) of its chain are not pooled, so the "
             "pooled figures are a lower bound for an attacker holding every release")
    if (tmpdir := tmpdir_not_used()) is not None:  # confidential arrays go elsewhere
        note(data.gdf.attrs.setdefault("warnings", []), "tmpdir_not_used", tmpdir)
    with _timed(seconds, "locations"):
        locations = _locations(spec, data)
    say(_locations_message(spec, locations))
    locations = enforce_verdict(locations, spec.anonymity.on_location_failure)  # before fitting
    return _Inputs(data, formulas, earlier, locations, seconds)


def _check_noise_register(spec: ReleaseSpec, data: PreparedData, ledger) -> None:
    """Refuse, before anything is fitted, input noise the register would refuse at the end.

    The register refuses a release whose input noise gives a registered record value a second,
    independent draw (:meth:`synthgeo.register.Register.add`); the values that would be noised
    are known from the data: each gaussian response under ``[synthesis] input_noise``, or under
    ``protect = "targets"`` when one of its rounds synthesises with input noise (the refusal
    then also names ``max_rounds``). Fingerprints as the release writer makes them.
    """
    from synthgeo.register.store import value_fingerprints

    if ledger.register is None:
        return
    fix = ""
    noisy = spec.synthesis.input_noise != 0
    if not noisy and spec.risk.protect == "targets" and spec.risk.targets:
        from synthgeo.pipeline.protect import round_specs

        rounds = round_specs(spec)
        first = next((k for k, (_, s) in enumerate(rounds) if s.synthesis.input_noise != 0),
                     None)
        if first is not None:
            noisy = True
            fix = (f' (`protect = "targets"` synthesises with input noise from round {first + 1}: '
                   f"set `[risk] max_rounds = {first}` to stop before it)")
    if not noisy:
        return
    ledger.check_noise(value_fingerprints(data.gdf, _gaussian_values(spec, data)), fix=fix)


def _gaussian_values(spec: ReleaseSpec, data: PreparedData) -> list[tuple[np.ndarray, bool]]:
    """Each gaussian response's values (model scale) and whether that scale is the log.

    What input noise draws for, known before any fit: the early refusals (the noise's cap,
    the register's second draw) read it.
    """
    from synthgeo.pipeline.data import response_scale
    from synthgeo.pipeline.design import response_values

    if spec.data.sequential:
        return [(response_values(data.gdf, rc), rc.transform == "log")
                for rc in spec.data.response_configs if rc.family == "gaussian"]
    if spec.data.response_configs[0].family == "gaussian":
        return [(data.y, response_scale(spec).g_name == "exp")]
    return []


def _release(spec: ReleaseSpec, *, inputs: _Inputs, progress=None, progressbar: bool = False,
             fitter: Fitter | None = None, reuse_fits: dict | None = None,
             plan: SynthesiserState | None = None, general: bool = True):
    """Fit, synthesise and score one release of checked inputs (:func:`run_release`).

    ``general = False``: one response's pMSE is left for :func:`with_general_utility` (a protect
    round that may not be released).
    """
    say, seconds, several = progress or log.info, dict(inputs.seconds), spec.data.sequential
    data, formulas, earlier = inputs.data, inputs.formulas, inputs.earlier
    locations = inputs.locations
    seed = resolve_seed(spec.sampling.seed)  # a key: kept in confidential/ only
    root = np.random.SeedSequence(seed)
    configs = spec.data.response_configs
    drawn: list[_Drawn] = []
    conf: dict = {}  # the earlier responses, confidential (model scale), by name
    syn: dict = {m: [] for m in MODELS}  # each model's chain conditions on its own draws
    for j, rc in enumerate(configs):
        # response 1 takes the spec's first four streams; each later one a fresh child's
        streams = root.spawn(4) if j == 0 else root.spawn(1)[0].spawn(4)
        data_j, X_syn = responses.response_design(data, rc, conf, syn,
                                                 spec.synthesis.n_implicates)
        if several:
            say(f"response {j + 1}/{len(configs)}: `{rc.name}` ({rc.family}), fitting both "
                "models")
        drawn.append(_fit_and_draw(spec, data_j, rc, streams, X_syn, fitter=fitter, say=say,
                                   progressbar=progressbar, several=several,
                                   reuse_fits=reuse_fits,
                                   draw_index=None if plan is None else plan.new_draws,
                                   noisy_earlier=[e.y_star for e in drawn]))
        conf[rc.name] = data_j.y
        if several:  # the next response's design (one response: nothing reads them)
            for m in MODELS:
                syn[m].append(drawn[-1].synthetic[m])
    if not several:
        return _one_response(spec, data, drawn[0], locations, earlier, seconds, seed, say,
                             progressbar, plan, general=general)
    return _several_responses(spec, data, drawn, formulas, locations, seconds, seed,
                              progressbar, say)


def _within_eps(spec: ReleaseSpec, d: _Drawn, progressbar: bool) -> tuple[dict, pd.DataFrame]:
    """Within-ε risk of both models' implicates of a gaussian response, and its summary."""
    g = responses.response_scale_of(spec, d.config).g_name
    risk = {m: within_eps_risk(ds["y_synthetic"], d.data.y, eps=spec.risk.eps, p=spec.risk.p,
                               transform=g)
            for m, ds in progress_iter(d.implicates.items(), enabled=progressbar, desc="risk",
                                       total=len(d.implicates), unit="model")}
    return risk, summarise_risk(risk["unrestricted"], risk["restricted"], d.at_risk.at_risk)


def _synthesiser_state(spec: ReleaseSpec, d: _Drawn,
                       plan: SynthesiserState | None) -> SynthesiserState | None:
    """Return the stored synthesiser's state after this release (the draws implicates used).

    A fitted run: its implicates' draws and the risk rule's selection draws (used to choose
    the records, so not fresh either); ``synthgeo draw``: the earlier ones and its new ones.
    """
    if plan is not None:
        used = np.union1d(plan.used_draws, plan.new_draws)
        return dataclasses.replace(plan, used_draws=used)
    if d.fit_seed is None:
        return None
    post = d.fits["unrestricted"].posterior
    own = implicate_draw_index(post.sizes["chain"], post.sizes["draw"],
                               spec.synthesis.n_implicates)
    used = own if d.selection is None else np.union1d(own, d.selection[1])
    return SynthesiserState(fit_seed=int(d.fit_seed), used_draws=np.union1d(used, own),
                            new_draws=own)


def _one_response(spec, data, d: _Drawn, locations, earlier, seconds, seed, say,
                  progressbar, plan: SynthesiserState | None = None, *,
                  general: bool = True) -> ReleaseResult:
    """Risk and utility of one gaussian response: targets, neighbour check, pooled risk."""
    seconds.update(d.seconds)
    locations = locations.with_at_risk(d.at_risk.at_risk)
    with _timed(seconds, "risk"):
        risk, summary = _within_eps(spec, d, progressbar)
    say("scoring risk against the leave-one-out and public baselines")
    with _timed(seconds, "risk_baselines"):  # raises RiskError under on_risk_failure = "stop"
        scores = score_release_risk(spec, data, d.fits, d.implicates, d.at_risk.at_risk,
                                    locations, realised=risk)
    say(scores.verdict_line())
    attack = scores.release_attack
    if attack is not None:
        seconds["release_attacker"] = attack.seconds
        say(attack.line())
    if (noise_line := input_noise_line(d.implicates["restricted"])) is not None:
        say(noise_line)
    with _timed(seconds, "neighbour_check"):
        neighbours = run_neighbour_check(spec, data, d.implicates, d.at_risk, d.choice)
    with _timed(seconds, "detector"):  # can the protected records be told apart?
        detector = detector_block(spec, data, d.implicates, d.at_risk.at_risk)
    selection = None
    if d.selection is not None:  # at_risk = "risk" | "both": judged on fresh draws
        selection = judge_on_fresh_draws(spec, d.choice, *d.selection, d.fits, d.implicates,
                                         scores.summary)
        say(f"records selected by risk, judged on fresh draws: {selection.status}")
    cumulative = None
    if earlier is not None:
        with _timed(seconds, "cumulative_risk"):
            cumulative = cumulative_risk(
                earlier, spec, data.y, data.record_id, d.synthetic["restricted"],
                d.at_risk.at_risk,
                predictive=release_predictive_of(d.implicates["restricted"]))
        say(f"cumulative risk over {cumulative.n_implicates_pooled} pooled implicates of "
            f"{cumulative.n_linked} linked records ({cumulative.n_new} new)")
        if spec.risk.targets:  # the board's targets on the pooled figures too (item 9)
            pooled = (attack.pooled_by_target(cumulative.n_implicates_pooled)
                      if attack is not None and attack.judged else None)
            verdict = cumulative_verdict(cumulative, scores, spec.risk.targets, data.record_id,
                                         release_attacker=pooled)
            cumulative = dataclasses.replace(cumulative, verdict=verdict)
            say(f"cumulative risk verdict (pooled implicates): {verdict.status}")
            scores = gate_cumulative(spec, scores, verdict)
    with _timed(seconds, "utility"):
        utility = responses.response_utility(spec, d.config, d.synthetic, data.y, data.frame,
                                   spec.formula,
                                   truth=data.frame[spec.data.response].to_numpy(),
                                   progressbar=progressbar)
    result = ReleaseResult(
        spec=spec, data=data, fits=d.fits, at_risk=d.at_risk, at_risk_sensitivity=d.sensitivity,
        implicates=d.implicates, risk=risk, risk_summary=summary, utility=utility,
        seconds=seconds, locations=locations, neighbour_check=neighbours, cumulative=cumulative,
        risk_scores=scores, seed=seed, detector=detector, at_risk_selection=selection,
        general_utility=None, synthesiser=_synthesiser_state(spec, d, plan),
        release_attack=attack)
    return with_general_utility(result, say) if general else result


def with_general_utility(result: ReleaseResult, say=log.info) -> ReleaseResult:
    """Return ``result`` with its pMSE (``general_utility``) computed, if it has none yet.

    One gaussian response: the pMSE of every implicate of both models against the paired null
    (:func:`synthgeo.pipeline.general_utility.general_utility`), with the run's seed. A protect
    round computes it only for the released round (:func:`synthgeo.pipeline.protect.\
seek_targets`' ``finish``); the figures are those the round would have computed itself.
    """
    if not isinstance(result, ReleaseResult) or result.general_utility is not None:
        return result
    spec, data = result.spec, result.data
    seconds = dict(result.seconds)
    say("general utility: pMSE of every implicate against the paired null")
    with _timed(seconds, "general_utility"):
        name = spec.data.response_configs[0].name
        general = general_utility(
            spec, data.frame.drop(columns=[spec.data.response], errors="ignore"),
            {name: data.y},
            {m: {name: result.implicates[m]["y_synthetic"].values} for m in MODELS},
            coordinates_m(data.gdf), seed=result.seed)
    say(general.summary_line({"restricted": "cross_fitted"}
                             if spec.synthesis.predictive == "cross_fit" else None))
    return dataclasses.replace(result, general_utility=general, seconds=seconds)


def _several_responses(spec, data, drawn: list[_Drawn], formulas: list[str], locations,
                       seconds, seed, progressbar, say=log.info):
    """Risk and utility of each response in turn, the joint risk and the correlations."""
    frame = data.frame.drop(columns=[spec.data.response])  # covariates, released unchanged
    results = []
    attack_inputs = _attack_inputs(spec, data, drawn)
    for j, (d, formula) in enumerate(zip(drawn, formulas)):
        rc, sec, y = d.config, d.seconds, d.data.y
        attributable = scores = nc = det = None
        with _timed(sec, "risk"):
            if rc.family == "gaussian":
                risk, summary = _within_eps(spec, d, progressbar)
                per, matches = responses.gaussian_risk_frame(spec, rc, risk, d.synthetic, y)
                summary = summary.assign(response=rc.name)
                # the attacker holds the earlier responses' released values, not their truth,
                # paired with the implicates: row ℓ holds implicate ℓ's (L, n_records, p)
                own_X = None if j == 0 else np.repeat(d.data.X[None], len(d.synthetic[
                    "restricted"]), axis=0)
                if own_X is not None:
                    own_X[:, :, data.X.shape[1]:] = np.stack(
                        [e.synthetic["restricted"] for e in drawn[:j]], axis=-1)
                scores = _score_response(spec, d, locations, own_X, risk, attack_inputs[j])
                attributable = scores.table.assign(response=rc.name)
                if spec.risk.targets:
                    say(f"{rc.name}: {scores.verdict_line()}")
                if scores.release_attack is not None:
                    sec["release_attacker"] = scores.release_attack.seconds
                    say(f"{rc.name}: {scores.release_attack.line()}")
                if (noise_line := input_noise_line(d.implicates["restricted"])) is not None:
                    say(f"{rc.name}: {noise_line}")
            else:
                per, summary, matches = responses.discrete_risk_tables(
                    spec, rc, d.synthetic, y, d.at_risk, frame)
        if rc.family == "gaussian":  # on this response's y and scale, like one response's
            with _timed(sec, "neighbour_check"):
                nc = run_neighbour_check(spec, d.data, d.implicates, d.at_risk, d.choice,
                                         g=responses.response_scale_of(spec, rc).g_name)
            with _timed(sec, "detector"):  # the released covariates (`data`), not d.data's X
                det = detector_block(spec, data, d.implicates, d.at_risk.at_risk)
        with _timed(sec, "utility"):
            utility = responses.response_utility(spec, rc, d.synthetic, y, frame, formula,
                                                progressbar=progressbar)
        per.insert(0, "at_risk", d.at_risk.at_risk)
        per.insert(0, data.id_column, data.record_id)
        results.append(responses.ResponseResult(
            config=rc, coef_names=d.data.coef_names, y=y, fits=d.fits, at_risk=d.at_risk,
            at_risk_sensitivity=d.sensitivity, synthetic=d.synthetic, risk_per_record=per,
            risk_summary=summary, utility=utility, formula=formula, matches=matches,
            seconds=sec, attributable=attributable, risk_scores=scores,
            at_risk_choice=d.choice,
            own_value_leak=(None if d.implicates is None else
                            d.implicates["restricted"].attrs.get("own_value_leak")),
            input_noise=(None if d.implicates is None else
                         d.implicates["restricted"].attrs.get("input_noise")),
            neighbour_check=nc, detector=det))
        for k, v in sec.items():  # totals over responses; per response in ResponseResult
            seconds[k] = seconds.get(k, 0.0) + v
    joint, joint_per = responses.joint_risk(data, results) if len(results) > 1 else (None, None)
    correlations = response_correlations(
        {r.name: r.y for r in results}, {r.name: r.synthetic["restricted"] for r in results})
    scored = [r.risk_scores for r in results if r.risk_scores is not None]
    risk_joint = responses.joint_over_responses(scored)
    with _timed(seconds, "general_utility"):  # every response jointly
        general = general_utility(spec, frame, {r.name: r.y for r in results},
                                  {m: {r.name: r.synthetic[m] for r in results} for m in MODELS},
                                  coordinates_m(data.gdf), seed=seed)
    result = responses.SequentialResult(
        spec=spec, data=data, responses=results, joint_risk=joint, joint_per_record=joint_per,
        correlations=correlations, seconds=seconds, locations=locations, seed=seed,
        general_utility=general, risk_joint=risk_joint,
        warnings=[w for sc in scored for w in sc.warnings])
    if spec.risk.targets:
        say(f"risk verdict of the release: {result.risk_status} ("
            + ", ".join(f"{k} {v}" for k, v in result.risk_statuses.items()) + ")")
    joint_attack = result.release_attacker_joint
    if joint_attack is not None:
        say(f"release attacker over the responses: {joint_attack['n_above_any']} of "
            f"{joint_attack['n_records']} records above {joint_attack['threshold']:g} in at "
            f"least one response ({joint_attack['n_identifiable_above_any']} identifiable by "
            "location)")
    return result


def _attack_inputs(spec, data, drawn: list[_Drawn]) -> list[dict | None]:
    """Each gaussian response's release-attacker inputs (:func:`score_release_attacker`).

    ``design`` (the design its released synthesis used), ``shift`` (the move to the earlier
    synthetic values, which the attacker removes), ``extra_information`` (what every later
    gaussian response's means tell about this one's values, per pooled implicate:
    :func:`~synthgeo.pipeline.release_attack.later_response_information`) and ``means_read``.
    A yes/no or count response: None (its values are not read; no linear map).
    """
    from synthgeo.pipeline.release_attack import (  # noqa: PLC0415 (same stage, no cycle)
        implicate_variance,
        later_response_information,
    )
    from synthgeo.pipeline.risk_stage import posterior_draws  # noqa: PLC0415 (same stage)

    p0 = data.X.shape[1]
    out: list[dict | None] = []
    for j, d in enumerate(drawn):
        if d.config.family != "gaussian":
            out.append(None)
            continue
        released = d.implicates["restricted"]
        fit = d.fits["unrestricted" if released.attrs.get("predictive") == "cross_fit"
                     else "restricted"]
        design = d.data.X if d.design is None else d.design
        beta = d.beta if d.beta is not None else posterior_draws(fit, released)["beta"]
        shift = None
        if j > 0:  # implicate ℓ's design with the earlier synthetic (released) responses
            own = np.repeat(d.data.X[None], released.sizes["implicate"], axis=0)
            own[:, :, p0:] = np.stack([e.synthetic["restricted"] for e in drawn[:j]], axis=-1)
            shift = np.einsum("lnp,lp->ln", own - design[None], beta)
        out.append({"design": design, "shift": shift, "fit": fit, "beta": beta,
                    "error": d.raw_error,
                    "extra_information": np.zeros(d.data.n_records),
                    "means_read": (d.config.name,)})
    for k, later in enumerate(out):
        if later is None or k == 0:
            continue
        d = drawn[k]
        s2 = implicate_variance(d.implicates["restricted"], later["shift"])
        for e in range(k):
            if out[e] is None:
                continue
            out[e]["extra_information"] = out[e]["extra_information"] + (
                later_response_information(spec, d.data, later["fit"],
                                           d.implicates["restricted"], later["design"],
                                           p0 + e, later["beta"], s2, later["error"]))
            out[e]["means_read"] = (*out[e]["means_read"], d.config.name)
    return [None if o is None else
            {**{k: v for k, v in o.items() if k not in ("fit", "beta", "error")},
             "extra_information": (o["extra_information"] if len(o["means_read"]) > 1
                                   else None)}
            for o in out]


def _score_response(spec, d: _Drawn, locations, own_X, realised, attack_kw=None):
    """Score one gaussian response of several and judge the targets on it, named.

    :func:`score_release_risk` on the response's own scale and attacker; the gate
    (``on_risk_failure``) names the response: "stop" raises a RiskError before anything is
    written, "warn" keeps the coded warning with the response's name.
    """
    name = d.config.name
    try:
        scores = score_release_risk(
            spec, d.data, d.fits, d.implicates, d.at_risk.at_risk, locations, own_X=own_X,
            g=responses.response_scale_of(spec, d.config).g_name, realised=realised,
            compare_units=False, release_attacker=attack_kw is not None, attack_kw=attack_kw)
    except RiskError as exc:
        raise RiskError(f"response `{name}`: {exc}") from None
    notes = [{**w, "message": f"response `{name}`: {w['message']}"} for w in scores.warnings]
    return dataclasses.replace(scores, warnings=notes)
