"""The main job: spec → load → fit both models → at-risk → synthesize → risk → utility.

Order: load → location diagnostics → fit unrestricted → at-risk → fit restricted →
synthesize → risk → utility. Writing the outputs is :mod:`synthgeo.release.writer`'s job.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import geopandas
import numpy as np
import pandas as pd
import xarray as xr

from synthgeo._errors import InputError, SpecError
from synthgeo._progress import progress_iter
from synthgeo.locations.diagnostics import LocationDiagnostics, location_diagnostics
from synthgeo.config import AUTO_EXACT_MAX_RECORDS, ReleaseSpec
from synthgeo.model.at_risk import AtRiskResult, continuous_weights, find_at_risk
from synthgeo.inference.nuts import fit_gp
from synthgeo.inference.result import GPFit, require_convergence
from synthgeo.model.kernels import M_FROM_RHO0, Sites, make_sites
from synthgeo.model.restricted_gp import GPPriors, default_priors
from synthgeo.model.smoothing import Smoothing
from synthgeo.io.points import coordinates_m, load_points
from synthgeo.risk.within_eps import RiskResult, summarise_risk, within_eps_risk
from synthgeo.synthesis.implicates import draw_implicates
from synthgeo.utility.reiter import compare_to_confidential, fit_ols

__all__ = ["PreparedData", "ReleaseResult", "prepare_data", "run_release",
           "restricted_smoothing"]

log = logging.getLogger(__name__)

MODELS = ("unrestricted", "restricted")

#: A fitting function: ``(y, X, sites, *, priors, coef_names, config, scale, random_seed,
#: label) -> GPFit``, as :func:`synthgeo.inference.nuts.fit_gp` and
#: :func:`synthgeo.inference.grid.fit_gp_grid`.
Fitter = Callable[..., GPFit]


@dataclass(frozen=True, kw_only=True)
class PreparedData:
    """Validated, projected records and the arrays the model needs.

    Attributes
    ----------
    gdf : geopandas.GeoDataFrame
        Records in a projected CRS (metres), all input columns kept.
    y : ndarray of shape (n_records,)
        Response on the model scale.
    X : ndarray of shape (n_records, n_coef)
        Intercept plus the spec's covariates.
    coef_names : list of str
    sites : Sites
    frame : pandas.DataFrame
        Covariates and the confidential response, n_records rows: the analyst's data.
    record_id : ndarray of shape (n_records,)
    id_column : str
    """

    gdf: geopandas.GeoDataFrame
    y: np.ndarray
    X: np.ndarray
    coef_names: list[str]
    sites: Sites
    frame: pd.DataFrame
    record_id: np.ndarray
    id_column: str

    @property
    def n_records(self) -> int:
        """N."""
        return len(self.y)


def prepare_data(spec: ReleaseSpec) -> PreparedData:
    """Load, validate and project the spec's points; build y, X and the sites.

    Raises
    ------
    synthgeo.InputError
        For any problem with the points file (see :func:`synthgeo.io.points.load_points`).
    """
    d = spec.data
    gdf = load_points(
        spec.data_path(), x=d.x, y=d.y, crs=d.crs,
        numeric_columns=[d.response, *d.covariates],
        required_columns=_required_columns(spec), id_column=d.id, query=d.query,
        target_crs=d.target_crs, drop_duplicates=d.drop_duplicates,
    )
    id_col = d.id or "record"
    y = gdf[d.response].to_numpy(dtype=float)
    X = np.column_stack([np.ones(len(gdf))] + [gdf[c].to_numpy(dtype=float)
                                               for c in d.covariates])
    _check_model_inputs(spec, y, X)
    _check_released_columns(spec, gdf, y)
    sites = make_sites(coordinates_m(gdf))
    if sites.n_sites < 3:
        raise InputError(
            f"only {sites.n_sites} distinct location(s) among {len(y)} records: a spatial model "
            "needs at least 3; records at one location are real data, but there is no spatial "
            "variation to fit"
        )
    frame = pd.DataFrame(gdf.drop(columns="geometry"))[d.covariates].reset_index(drop=True)
    frame[d.response] = y
    check_formula_names(spec.formula, [d.response, *d.covariates])
    try:
        fit_ols(spec.formula, frame)
    except Exception as exc:  # patsy/statsmodels raise many types for a bad formula
        raise SpecError(
            f"`[utility] formula` {spec.formula!r} cannot be fitted to the response and the "
            f"spec's covariates {d.covariates}: {type(exc).__name__}: "
            f"{str(exc).splitlines()[0]}"
        ) from exc
    return PreparedData(
        gdf=gdf, y=y, X=X, coef_names=["Intercept", *d.covariates],
        sites=sites, frame=frame, record_id=gdf[id_col].to_numpy(), id_column=id_col,
    )


def _required_columns(spec: ReleaseSpec) -> list[str]:
    """Columns the spec names besides response and covariates (subject, [anonymity] ones)."""
    a = spec.anonymity
    cols = [spec.data.subject, *a.group_by, a.unit, a.time]
    return list(dict.fromkeys(c for c in cols if c))


#: A released column whose |correlation| with the response, or with its back-transform,
#: exceeds this is taken to disclose it.
DISCLOSURE_CORRELATION = 0.9999


def _back_transformed(spec: ReleaseSpec, y: np.ndarray) -> np.ndarray:
    """g(y), the response on the scale a person knows (dollars); may overflow to inf."""
    with np.errstate(over="ignore"):
        return np.exp(y) if spec.data.back_transform == "exp" else y


def _determines_response(values: np.ndarray, y: np.ndarray,
                         g: np.ndarray) -> tuple[float, str] | None:
    """(correlation, which) when `values` determine y or g(y), else None."""
    if np.ptp(values) == 0:
        return None
    for target, what in ((y, "the response"), (g, "the back-transformed response")):
        if np.ptp(target) > 0:
            r = float(np.corrcoef(values, target)[0, 1])
            if abs(r) > DISCLOSURE_CORRELATION:
                return r, what
    return None


def _check_model_inputs(spec: ReleaseSpec, y: np.ndarray, X: np.ndarray) -> None:
    """Refuse inputs that would give a meaningless fit or leak the response.

    Raises
    ------
    InputError
        Back-transformed response not finite; constant response; a constant covariate (collinear
        with the intercept); a covariate that determines the response (released covariates
        would then disclose it).
    """
    d = spec.data
    g = _back_transformed(spec, y)
    if not np.all(np.isfinite(g)):
        raise InputError(
            f"`back_transform = {d.back_transform!r}` of response `{d.response}` overflows "
            f"(largest value {np.max(y)!r}); is the response already on the log scale? Use "
            "`back_transform = \"identity\"` for a response in dollars"
        )
    if np.ptp(y) == 0:
        raise InputError(f"response `{d.response}` is constant ({y[0]!r}): nothing to model")
    for j, c in enumerate(d.covariates, start=1):
        x = X[:, j]
        if np.ptp(x) == 0:
            raise InputError(f"covariate `{c}` is constant ({x[0]!r}): it is collinear with "
                             "the intercept; remove it from `[data] covariates`")
        if hit := _determines_response(x, y, g):
            r, what = hit
            raise InputError(
                f"covariate `{c}` determines {what} `{d.response}` (correlation {r:.6f}); "
                "covariates are released unchanged, so it would disclose the confidential "
                "value: remove it from `[data] covariates`"
            )


#: Names a `[utility] formula` may call besides the spec's columns (patsy evaluates the
#: formula as Python, so anything else is refused before it runs).
FORMULA_FUNCTIONS = frozenset({"I", "C", "log", "exp", "sqrt", "np", "np.log", "np.exp",
                               "np.sqrt", "np.log1p", "center", "standardize", "scale", "bs",
                               "cr", "Q"})


def check_formula_names(formula: str, columns: list[str]) -> None:
    """Refuse a formula naming anything but the given columns and a few transforms.

    Patsy evaluates formula terms as Python expressions, so a reviewed spec must not be able to
    run code through its formula (``__import__("os").system(...)``).

    Raises
    ------
    SpecError
        For a dunder, a string literal or an unknown name.
    """
    import re

    if "__" in formula or re.search(r"[\"'`;\[\]{}]", formula):
        raise SpecError(f"`[utility] formula` {formula!r} holds characters a model formula "
                        "does not need (quotes, brackets, `__`); name columns and transforms only")
    allowed = set(columns) | FORMULA_FUNCTIONS
    for name in re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", formula):
        if name not in allowed:
            raise SpecError(
                f"`[utility] formula` {formula!r} names `{name}`, which is neither the response, "
                f"a covariate {columns[1:]} nor one of {sorted(FORMULA_FUNCTIONS)}"
            )


def _check_released_columns(spec: ReleaseSpec, gdf, y: np.ndarray) -> None:
    """Refuse an id or coordinate column that is, or determines, the confidential response.

    The id and the coordinates are released unchanged, so they must not carry the response.

    Raises
    ------
    InputError
    """
    d = spec.data
    g = _back_transformed(spec, y)
    for key in ("id", "x", "y", "subject"):
        col = getattr(d, key)
        if col is None or col not in gdf.columns:
            continue
        if col == d.response:
            raise InputError(f"`[data] {key}` names the response column `{col}`: it is released "
                             "unchanged and would disclose the confidential value")
        vals = pd.to_numeric(gdf[col], errors="coerce").to_numpy(dtype=float)
        if np.isfinite(vals).all() and _determines_response(vals, y, g):
            raise InputError(
                f"`[data] {key}` column `{col}` determines the response `{d.response}`; it is "
                "released unchanged and would disclose the confidential value: use another column"
            )


@dataclass(frozen=True, kw_only=True)
class ReleaseResult:
    """Everything a release writes.

    Attributes
    ----------
    spec : ReleaseSpec
    data : PreparedData
    fits : dict of str to GPFit
        ``"unrestricted"`` and ``"restricted"``.
    at_risk : AtRiskResult
        At-risk rule at M (``radius_m``, metres).
    at_risk_sensitivity : dict
        At-risk record counts at M from φ's 5% and 95% posterior quantiles.
    implicates : dict of str to xarray.Dataset
        ``y_synthetic`` (implicate, record) per model.
    risk : dict of str to RiskResult
    risk_summary : pandas.DataFrame
        At-risk vs other vs all, both models, reduction (see :func:`synthgeo.risk.within_eps.summarise_risk`).
    utility : pandas.DataFrame
        Reiter (2003) table with CI overlap against the confidential OLS fit.
    seconds : dict
        Wall time per stage.
    locations : LocationDiagnostics or None
        Spatial k within ``[anonymity] radius_m`` and the outlier-policy labels of the
        released locations, related to the at-risk records (diagnostics only: no location is
        moved or dropped); None when not computed.
    """

    spec: ReleaseSpec
    data: PreparedData
    fits: dict[str, GPFit]
    at_risk: AtRiskResult
    at_risk_sensitivity: dict[str, float]
    implicates: dict[str, xr.Dataset]
    risk: dict[str, RiskResult]
    risk_summary: pd.DataFrame
    utility: pd.DataFrame
    seconds: dict[str, float] = field(default_factory=dict)
    locations: LocationDiagnostics | None = None

    @property
    def M_m(self) -> float:  # noqa: N802
        """Distance M in metres."""
        return self.at_risk.radius_m


def _priors(spec: ReleaseSpec, data: PreparedData) -> GPPriors:
    return default_priors(data.y, data.X, data.sites, **spec.model.priors)


def _fitter(spec: ReleaseSpec, data: PreparedData, *, progressbar: bool = False,
            fitter: Fitter | None = None):
    """``fit(scale=None, random_seed=..., label=...) -> GPFit`` for the spec's engine.

    With ``fitter`` given, that function replaces the spec's engine (see :data:`Fitter`).
    """
    priors = _priors(spec, data)
    gp = spec.model.engine_for(data.n_records)
    common = dict(priors=priors, coef_names=data.coef_names, config=spec.sampling)
    if fitter is not None:
        return partial(fitter, data.y, data.X, data.sites, **common)
    if spec.sampling.sampler == "grid":
        from synthgeo.inference.grid import fit_gp_grid

        return partial(fit_gp_grid, data.y, data.X, data.sites, gp=gp,
                       n_neighbors=spec.model.n_neighbors, **common)
    if gp != "exact":
        raise SpecError(
            f'`[model] gp = "auto"` chose the NNGP for {data.n_records} records (more than '
            f'{AUTO_EXACT_MAX_RECORDS}), which needs `[sampling] sampler = "grid"`'
        )
    return partial(fit_gp, data.y, data.X, data.sites,
                   parametrization=spec.model.parametrization, progressbar=progressbar, **common)


def restricted_smoothing(
    spec: ReleaseSpec, coords_m: np.ndarray, sites: Sites, at_risk: AtRiskResult,
    phi_per_m: float, *, subject: np.ndarray | None = None,
) -> Smoothing:
    """D of the restricted model from the spec's at-risk weights and γ (spec: model.md).

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

    Returns
    -------
    Smoothing
    """
    if spec.model.at_risk_weight == "continuous":
        a, _ = continuous_weights(coords_m, sites.site_index, phi_per_m, spec.model.rho0,
                                  k=spec.model.k, subject=subject)
    else:
        a = at_risk.site_at_risk.astype(float)
    return Smoothing(a=a, gamma=spec.model.gamma_value)


def run_release(spec: ReleaseSpec, *, progress=None, progressbar: bool = False,
                fitter: Fitter | None = None) -> ReleaseResult:
    """Fit both models, synthesise, score risk and utility (writes nothing).

    Parameters
    ----------
    spec : ReleaseSpec
        A validated spec.
    fitter : callable, optional
        Replaces the spec's inference engine (see :data:`Fitter`): called as
        ``fitter(y, X, sites, priors=..., coef_names=..., config=..., scale=...,
        random_seed=..., label=...)`` and returning a
        :class:`~synthgeo.inference.result.GPFit`. Default: the engine
        ``[sampling] sampler`` and ``[model] gp`` name.
    progress : callable, optional
        ``progress(message: str)`` called at each stage (the CLI prints it).
    progressbar : bool, default=False
        Progress bars on stderr: nutpie's own for sampling, tqdm for the recovery of β and w,
        synthesis, risk and the utility fits.

    Returns
    -------
    ReleaseResult

    Raises
    ------
    synthgeo.InputError
        Bad input data.
    synthgeo.ConvergenceError
        When a fit fails the convergence thresholds and ``on_convergence_failure = "stop"``.
    """
    say = progress or (lambda msg: log.info(msg))
    seconds: dict[str, float] = {}
    t = time.perf_counter()
    data = prepare_data(spec)
    seconds["load"] = time.perf_counter() - t
    say(f"loaded {data.n_records} records at {data.sites.n_sites} sites "
        f"({data.gdf.crs.name})")
    t = time.perf_counter()
    locations = _locations(spec, data)
    seconds["locations"] = time.perf_counter() - t
    sk, ol = locations.spatial_k.summary(), locations.outliers
    say(f"locations (diagnostics only, none moved): {sk['n_below_k']} of {sk['n_records']} "
        f"records below k = {sk['k']} within {sk['radius_m']:g} m; the outlier policy at "
        f"r_max = {spec.anonymity.r_max_m:g} m would suppress {ol.overall['n_suppressed']}"
        + (" and refuse a location release" if ol.refused else ""))
    seeds = np.random.SeedSequence(spec.sampling.seed).spawn(4)
    fit_seed = [int(s.generate_state(1)[0]) for s in seeds[:2]]
    synth_seed = seeds[2:]
    fits: dict[str, GPFit] = {}
    fit = _fitter(spec, data, progressbar=progressbar, fitter=fitter)

    say("fitting the unrestricted model")
    t = time.perf_counter()
    fits["unrestricted"] = fit(random_seed=fit_seed[0], label="unrestricted")
    seconds["fit_unrestricted"] = time.perf_counter() - t

    coords = coordinates_m(data.gdf)
    subject = data.gdf[spec.data.subject].to_numpy() if spec.data.subject else None
    phi_q = fits["unrestricted"].phi_quantiles((0.05, 0.5, 0.95))
    if spec.model.M_m is not None:
        M = float(spec.model.M_m)
    else:
        M = float(M_FROM_RHO0(phi_q[1], spec.model.rho0))
    at_risk = find_at_risk(coords, data.sites.site_index, M, k=spec.model.k, subject=subject)
    sens = {}
    for label, phi in (("phi_q05", phi_q[0]), ("phi_q95", phi_q[2])):
        m_q = float(M_FROM_RHO0(phi, spec.model.rho0))
        r = find_at_risk(coords, data.sites.site_index, m_q, k=spec.model.k, subject=subject)
        sens[label] = {"phi_per_m": float(phi), "M_m": m_q, "n_at_risk": r.n_at_risk}
    say(f"M = {M:,.0f} m: {at_risk.n_at_risk} at-risk records")
    locations = locations.with_at_risk(at_risk.at_risk)

    say("fitting the restricted model")
    t = time.perf_counter()
    smoothing = restricted_smoothing(spec, coords, data.sites, at_risk, float(phi_q[1]),
                                     subject=subject)
    fits["restricted"] = fit(scale=smoothing, random_seed=fit_seed[1], label="restricted")
    seconds["fit_restricted"] = time.perf_counter() - t
    require_convergence(fits, spec.sampling.on_convergence_failure)

    say(f"drawing {spec.synthesis.n_implicates} implicates per model")
    t = time.perf_counter()
    implicates = {
        name: draw_implicates(fits[name], data.X, n_implicates=spec.synthesis.n_implicates,
                              record_id=data.record_id, random_seed=synth_seed[i],
                              at_risk_effect=(spec.model.at_risk_effect
                                              if name == "restricted" else "zero"),
                              scheduler=spec.compute.scheduler)  # [compute]: where blocks run
        for i, name in progress_iter(enumerate(MODELS), enabled=progressbar, desc="synthesis",
                                     total=len(MODELS), unit="model")
    }
    seconds["synthesize"] = time.perf_counter() - t

    t = time.perf_counter()
    risk = {
        name: within_eps_risk(ds["y_synthetic"], data.y, eps=spec.risk.eps, p=spec.risk.p,
                              transform=spec.data.back_transform)
        for name, ds in progress_iter(implicates.items(), enabled=progressbar, desc="risk",
                                      total=len(implicates), unit="model")
    }
    summary = summarise_risk(risk["unrestricted"], risk["restricted"], at_risk.at_risk)
    seconds["risk"] = time.perf_counter() - t

    t = time.perf_counter()
    utility = compare_to_confidential(
        spec.formula, {k: v["y_synthetic"] for k, v in implicates.items()}, data.frame,
        response=spec.data.response, truth=data.y, alpha=spec.utility.alpha,
        progressbar=progressbar,
    )
    seconds["utility"] = time.perf_counter() - t
    return ReleaseResult(
        spec=spec, data=data, fits=fits, at_risk=at_risk, at_risk_sensitivity=sens,
        implicates=implicates, risk=risk, risk_summary=summary, utility=utility,
        seconds=seconds, locations=locations,
    )


def _locations(spec: ReleaseSpec, data: PreparedData) -> LocationDiagnostics:
    """Location diagnostics of the released (unchanged) locations, from ``[anonymity]``."""
    a = spec.anonymity
    return location_diagnostics(
        data.gdf, radius_m=a.radius_m, k=a.k, k_max=a.k_max, policy=a.policy(),
        group_by=a.group_by, unit=a.unit, time_column=a.time, subject=spec.data.subject,
        id_column=data.id_column,
    )
