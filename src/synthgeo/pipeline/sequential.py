"""Several responses, and yes/no / count responses: sequential synthesis (``[[data.responses]]``).

Responses are synthesised in the order the spec gives them (synthpop's sequential synthesis,
Nowok, Raab & Dibben 2016, doi:10.18637/jss.v074.i11, made spatial). Response j is fitted, both
unrestricted and restricted, with the spec's covariates **and the confidential responses before
it** as covariates (model scale: log for ``transform = "log"``, 0/1, counts). Implicate ℓ of
response j is then drawn given implicate ℓ of the earlier **synthetic** responses: the linear
predictor of draw ℓ is moved by ``(X†(ℓ) − X) β(ℓ)``, X†(ℓ) holding the synthetic earlier
responses. Each response has its own at-risk set (M from its own φ̂) and restricted fit.
Each model's chain conditions on its own draws: the restricted (released) implicates of
response j on the restricted synthetic earlier responses, the unrestricted ones (the board's
comparison) on the unrestricted ones.

Engines: a gaussian response goes through the conjugate grid (the single-response route,
:func:`synthgeo.pipeline.run.make_fitter`); a bernoulli / poisson one through the nested
Laplace GLMM (:func:`synthgeo.inference.glmm.fit_glmm`), where the at-risk sites always get an
independent effect (docs/model.md: under γ = ∞ an isolated high count otherwise leaks through
β₀). The single-gaussian route (:func:`synthgeo.pipeline.run.run_release`) is untouched.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import xarray as xr

from synthgeo._seed import resolve_seed
from synthgeo.config import ReleaseSpec, ResponseConfig
from synthgeo.io.points import coordinates_m
from synthgeo.model.at_risk import AtRiskResult
from synthgeo.pipeline.data import PreparedData, check_formula_names, prepare_data
from synthgeo.pipeline.result import MODELS

__all__ = ["ResponseResult", "SequentialResult", "run_sequential", "response_formula",
           "released_values"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True, eq=False)
class ResponseResult:
    """One response of a sequential release.

    Attributes
    ----------
    config : ResponseConfig
    coef_names : list of str
        Design of its model: intercept, covariates, earlier responses.
    y : ndarray of shape (n_records,)
        Confidential values on the model scale.
    fits : dict of str to GPFit or GLMMFit
    at_risk : AtRiskResult
    at_risk_sensitivity : dict
    synthetic : dict of str to ndarray of shape (L, n_records)
        Model-scale synthetic values per model (``restricted`` is released).
    risk_per_record : pandas.DataFrame
        Confidential: per-record risk of both models (and the baseline for discrete ones).
    risk_summary : pandas.DataFrame
    utility : pandas.DataFrame
    formula : str
    matches : dict of str to bool ndarray (L, n_records)
        Implicate matches the truth within tolerance (for the joint risk).
    seconds : dict
    attributable : pandas.DataFrame or None
        Gaussian responses: release (Rao-Blackwellised), LOO and public baselines and
        attributable risk by model × group × measure × attack (the single-response risk
        stage's table, :mod:`synthgeo.pipeline.risk_stage`); None for yes/no and counts.
    """

    config: ResponseConfig
    coef_names: list
    y: np.ndarray
    fits: dict
    at_risk: AtRiskResult
    at_risk_sensitivity: dict
    synthetic: dict
    risk_per_record: pd.DataFrame
    risk_summary: pd.DataFrame
    utility: pd.DataFrame
    formula: str
    matches: dict
    seconds: dict = field(default_factory=dict)
    attributable: pd.DataFrame | None = None

    @property
    def name(self) -> str:
        """Column name."""
        return self.config.name

    @property
    def family(self) -> str:
        """gaussian, bernoulli or poisson."""
        return self.config.family


@dataclass(frozen=True, kw_only=True, eq=False)
class SequentialResult:
    """Everything a sequential release writes (see :func:`run_sequential`).

    Attributes
    ----------
    spec : ReleaseSpec
    data : PreparedData
        Records after ``missing = "drop"``; ``data.levels`` and ``data.missing``.
    responses : list of ResponseResult
        In synthesis order.
    joint_risk : pandas.DataFrame or None
        Share of implicates matching every response within tolerance, by model and group
        (None for one response).
    joint_per_record : pandas.DataFrame or None
    correlations : pandas.DataFrame
        Pairwise correlations of the confidential and synthetic responses.
    seconds : dict
    locations : LocationDiagnostics
    """

    spec: ReleaseSpec
    data: PreparedData
    responses: list
    joint_risk: pd.DataFrame | None
    joint_per_record: pd.DataFrame | None
    correlations: pd.DataFrame
    seconds: dict
    locations: object = None
    seed: int | None = field(default=None, repr=False)

    @property
    def M_m(self) -> float:  # noqa: N802
        """M of the first response, metres."""
        return self.responses[0].at_risk.radius_m


def response_formula(spec: ReleaseSpec, rc: ResponseConfig, first: bool) -> str:
    """Return the analyst's formula for one response.

    ``[utility] formula`` when its left side names this response (or it is the first one and the
    formula has no other response on its left); else ``name ~ covariates`` (earlier responses are
    not in the analyst's default formula: their synthetic values differ per implicate; the
    correlation table covers them).

    Examples
    --------
    >>> from synthgeo.config import DataConfig, ReleaseSpec
    >>> spec = ReleaseSpec(data=DataConfig(responses=[{"name": "a"}, {"name": "b"}],
    ...                                    covariates=["x"]))
    >>> response_formula(spec, spec.data.responses[1], False)
    'b ~ x'
    """
    f = spec.utility.formula
    if f:
        lhs = f.split("~")[0]
        names = spec.data.response_names
        if rc.name in lhs.replace("(", " ").replace(")", " ").split():
            return f
        if first and not any(n in lhs for n in names if n != rc.name):
            return f
    rhs = " + ".join(spec.data.covariates) or "1"
    lhs = f"log({rc.name})" if rc.transform == "log" else rc.name
    return f"{lhs} ~ {rhs}"


def released_values(rc: ResponseConfig, y_model: np.ndarray, original: pd.Series):
    """Model-scale synthetic values → the column as released (same form as the input).

    Gaussian: exp(y†) under ``transform = "log"``, else y†; bernoulli with ``positive``: the
    positive level for 1 and the other level for 0 (when the column has exactly two levels;
    else 0/1); counts as integers.

    Examples
    --------
    >>> rc = ResponseConfig(name="s", family="bernoulli", positive="YES")
    >>> released_values(rc, np.array([1, 0]), pd.Series(["YES", "NO", "NO"])).tolist()
    ['YES', 'NO']
    """
    y = np.asarray(y_model)
    if rc.family == "gaussian":
        return np.exp(y) if rc.transform == "log" else y
    if rc.family == "poisson":
        return y.astype(np.int64)
    if rc.positive is not None:
        others = sorted(set(original.dropna().astype(str)) - {rc.positive})
        if len(others) == 1:
            return np.where(y == 1, rc.positive, others[0])
    return y.astype(np.int64)


class _PhiOfGLMM:
    """φ quantiles (1/metre) of a GLMM fit, as GPFit.phi_quantiles (φ = 3 / effective range)."""

    def __init__(self, fit):
        self.fit = fit

    def phi_quantiles(self, q=(0.05, 0.5, 0.95)):
        qq = self.fit.grid.quantiles([1 - p for p in q])[:, 0]
        return 3.0 / self.fit.model.priors.range_m(qq)


def _glmm_priors(spec, data_j):
    from synthgeo.model.glmm_priors import GLMMPriors
    from synthgeo.model.restricted_gp import default_priors

    gp = default_priors(data_j.y, data_j.X, data_j.sites, **{
        k: v for k, v in spec.model.priors.items() if k in ("range_min_m", "range_max_m")})
    kw = {k: v for k, v in spec.model.priors.items() if k in ("beta_mean", "beta_sd")}
    return GLMMPriors(range_min_m=gp.range_min_m, range_max_m=gp.range_max_m, **kw)


def _fit_gaussian(spec, data_j, fitter, seeds, say, seconds):
    from synthgeo.inference.result import require_convergence
    from synthgeo.pipeline.run import _at_risk, _warm_start, make_fitter, restricted_smoothing

    fit = make_fitter(spec, data_j, fitter=fitter)
    t = time.perf_counter()
    fits = {"unrestricted": fit(random_seed=seeds[0], label="unrestricted")}
    seconds["fit_unrestricted"] = time.perf_counter() - t
    at_risk, sens, phi_hat, _ = _at_risk(spec, data_j, fits["unrestricted"], seeds[2])
    say(f"M = {at_risk.radius_m:,.0f} m: {at_risk.n_at_risk} at-risk records")
    subject = data_j.gdf[spec.data.subject].to_numpy() if spec.data.subject else None
    sm = restricted_smoothing(spec, coordinates_m(data_j.gdf), data_j.sites, at_risk, phi_hat,
                              subject=subject)
    t = time.perf_counter()
    fits["restricted"] = fit(scale=sm, random_seed=seeds[1], label="restricted",
                             **_warm_start(spec, fitter, fits["unrestricted"]))
    seconds["fit_restricted"] = time.perf_counter() - t
    require_convergence(fits, spec.sampling.on_convergence_failure)
    return fits, at_risk, sens


def _fit_discrete(spec, data_j, rc, exposure, say, seconds):
    from synthgeo.inference.glmm import fit_glmm
    from synthgeo.model.families import get_family
    from synthgeo.pipeline.run import _at_risk, restricted_smoothing

    priors = _glmm_priors(spec, data_j)
    common = dict(family=get_family(rc.family), priors=priors, coef_names=data_j.coef_names,
                  exposure=exposure, covariance=spec.model.engine_for(data_j.n_records),
                  n_neighbors=spec.model.n_neighbors, at_risk_effect="independent")
    t = time.perf_counter()
    fits = {"unrestricted": fit_glmm(data_j.y, data_j.X, data_j.sites, **common)}
    seconds["fit_unrestricted"] = time.perf_counter() - t
    at_risk, sens, phi_hat, _ = _at_risk(spec, data_j, _PhiOfGLMM(fits["unrestricted"]))
    say(f"M = {at_risk.radius_m:,.0f} m: {at_risk.n_at_risk} at-risk records")
    subject = data_j.gdf[spec.data.subject].to_numpy() if spec.data.subject else None
    sm = restricted_smoothing(spec, coordinates_m(data_j.gdf), data_j.sites, at_risk, phi_hat,
                              subject=subject)
    t = time.perf_counter()
    if np.any(np.asarray(sm.a) > 0) and sm.gamma != 0:
        fits["restricted"] = fit_glmm(data_j.y, data_j.X, data_j.sites, scale=sm, **common)
    else:  # no site is smoothed: the restricted model is the unrestricted one (D = I)
        say("no at-risk site: the restricted fit is the unrestricted one")
        fits["restricted"] = fits["unrestricted"]
    seconds["fit_restricted"] = time.perf_counter() - t
    return fits, at_risk, sens


def _synth_gaussian(spec, fit, X, X_syn, record_id, seed, at_risk_effect):
    """Gaussian implicates; implicate ℓ moved by (X†(ℓ) − X) β(ℓ) (earlier synthetic values)."""
    from synthgeo.synthesis.implicates import draw_implicates, implicate_draw_index

    L = spec.synthesis.n_implicates
    ds = draw_implicates(fit, X, n_implicates=L, record_id=record_id, random_seed=seed,
                         at_risk_effect=at_risk_effect)
    y = ds["y_synthetic"].values.copy()
    if X_syn is not None:
        post = fit.posterior
        n_draw = post.sizes["draw"]
        flat = implicate_draw_index(post.sizes["chain"], n_draw, L)
        ci, di = np.divmod(flat, n_draw)
        beta = post["beta"].values[ci, di]  # (L, p)
        shift = np.einsum("lnp,lp->ln", X_syn - X[None], beta)
        y += shift
        ds["y_mean"] = ds["y_mean"] + shift  # the predictive each value was drawn from
    ds["y_synthetic"] = (("implicate", "record"), y)
    return ds


def _synth_discrete(spec, fit, X, X_syn, seed):
    """GLMM implicates; η of implicate ℓ moved by (X†(ℓ) − X) β(ℓ)."""
    rng = np.random.default_rng(seed)
    dr = fit.draw(spec.synthesis.n_implicates, rng)
    eta = dr["eta_synth"].copy()
    if X_syn is not None:
        eta += np.einsum("lnp,lp->ln", X_syn - X[None], dr["beta"])
    if fit.model.overdispersion:
        eta += np.exp(0.5 * dr["theta"][:, 2])[:, None] * rng.standard_normal(eta.shape)
    return fit.model.family.sample(eta, rng, offset=fit.model.offset).astype(float)


def _gaussian_risk(spec, rc, synthetic, y, at_risk):
    from synthgeo.risk.within_eps import summarise_risk, within_eps_risk

    transform = "exp" if rc.transform == "log" else spec.data.back_transform
    risk = {m: within_eps_risk(xr.DataArray(synthetic[m], dims=("implicate", "record")), y,
                               eps=spec.risk.eps, p=spec.risk.p, transform=transform)
            for m in MODELS}
    summary = summarise_risk(risk["unrestricted"], risk["restricted"], at_risk.at_risk)
    per = pd.concat([risk[m].to_dataframe().reset_index(drop=True).add_suffix(f"_{m}")
                     for m in MODELS], axis=1)
    g = np.exp if transform == "exp" else (lambda v: v)
    matches = {m: np.abs(g(synthetic[m]) - g(y)[None]) <= spec.risk.eps[0] for m in MODELS}
    return per, summary.assign(response=rc.name), matches


def _gaussian_attributable(spec, rc, data, data_j, fits, dsets, at_risk,
                           released_earlier=()) -> pd.DataFrame:
    """Release vs LOO and public baselines and attributable risk of one gaussian response.

    The single-response risk stage's scoring (one home): the LOO baseline from the
    unrestricted fit of this response, the public baseline an OLS of the synthetic values on
    the released covariates. A later response's model has the earlier responses among its
    covariates; no attacker holds their confidential values for the target record, only the
    released ones: both baselines take the mean of the record's released (restricted)
    implicates of each earlier response, ``released_earlier`` ((L, n_records) arrays, model
    scale), in their place (docs/risk-and-utility.md, "A later response's baselines").
    """
    from synthgeo.pipeline.risk_stage import loo_predictive, risk_measures, score_model
    from synthgeo.risk.attributable import attributable_summary

    g = "exp" if rc.transform == "log" else spec.data.back_transform
    own_X = None
    if len(released_earlier):
        own_X = data_j.X.copy()
        own_X[:, data.X.shape[1]:] = np.column_stack([np.asarray(s).mean(axis=0)
                                                      for s in released_earlier])
    loo = loo_predictive(spec, data_j, fits["unrestricted"], dsets["unrestricted"],
                         own_X=own_X)
    # released covariates (and, for a later response, the earlier responses' released values)
    public = dataclasses.replace(data_j, X=data.X if own_X is None else own_X)
    records = {m: score_model(public, dsets[m], loo, risk_measures(spec), g) for m in MODELS}
    mask = np.asarray(at_risk.at_risk, bool)
    table = attributable_summary(records, groups={"at_risk": mask, "other": ~mask}).table
    return table.assign(response=rc.name)


def _discrete_risk(spec, rc, synthetic, y, at_risk, frame, formula):
    from synthgeo.risk.discrete import discrete_risk, glm_baseline, summarise_discrete

    per_model = {m: discrete_risk(synthetic[m], y, family=rc.family) for m in MODELS}
    base = glm_baseline(formula, synthetic["restricted"], frame, y, response=rc.name,
                        family=rc.family)
    summary = summarise_discrete(per_model, base, y, at_risk.at_risk, family=rc.family)
    per = pd.concat([per_model[m].add_suffix(f"_{m}") for m in MODELS]
                    + [base.add_suffix("_baseline")], axis=1)
    matches = {m: synthetic[m] == y[None] for m in MODELS}  # equality for the joint risk
    return per, summary.assign(response=rc.name), matches


def _utility(spec, rc, synthetic, y, frame, formula):
    if rc.family == "gaussian":
        from synthgeo.utility.reiter import compare_to_confidential

        if rc.transform == "log":  # the formula reads the released (original) scale
            y, synthetic = np.exp(y), {m: np.exp(v) for m, v in synthetic.items()}
        syn = {m: xr.DataArray(synthetic[m], dims=("implicate", "record")) for m in MODELS}
        return compare_to_confidential(formula, syn, frame, response=rc.name, truth=y,
                                       alpha=spec.utility.alpha)
    from synthgeo.utility.glm import compare_glm_to_confidential

    return compare_glm_to_confidential(formula, synthetic, frame, response=rc.name, truth=y,
                                       family=rc.family, alpha=spec.utility.alpha)


def _refuse_single_response_keys(spec: ReleaseSpec) -> None:
    """Refuse keys this route does not apply yet (a silent "NOT ASSESSED" would mislead)."""
    from synthgeo._errors import SpecError

    m = spec.model
    unused = [key for key, on in (
        ("[risk.targets]", bool(spec.risk.targets)),
        ('[model] at_risk = "risk" | "both"', m.at_risk != "spatial"),
        ('[model] at_risk_nugget = "marginal"', m.at_risk_nugget != "shared"),
    ) if on]
    if unused:
        raise SpecError(
            f"{', '.join(unused)}: applied on the single-response route only, not yet with "
            "[[data.responses]] (several responses or a yes/no / count response); remove them "
            "or release one gaussian response"
        )


def run_sequential(spec: ReleaseSpec, *, points=None, progress=None, fitter=None,
                   data: PreparedData | None = None) -> SequentialResult:
    """Fit, synthesise and score each response of ``[[data.responses]]`` in sequence.

    Parameters
    ----------
    spec : ReleaseSpec
        With ``[[data.responses]]``.
    points : geopandas.GeoDataFrame, optional
        Records in memory (default: read ``[data] path``).
    progress : callable, optional
        ``progress(message)`` per stage.
    fitter : callable, optional
        Replaces the gaussian engine (see :data:`synthgeo.pipeline.run.Fitter`); bernoulli /
        poisson responses always use :func:`synthgeo.inference.glmm.fit_glmm`.
    data : PreparedData, optional
        Already prepared records (tests).

    Returns
    -------
    SequentialResult

    Raises
    ------
    synthgeo.InputError, synthgeo.SpecError
        Bad records or spec (as :func:`synthgeo.pipeline.run.run_release`).
    """
    from synthgeo.locations.diagnostics import enforce_verdict
    from synthgeo.pipeline.design import response_values
    from synthgeo.pipeline.run import _locations, _locations_message
    from synthgeo.utility.glm import response_correlations

    _refuse_single_response_keys(spec)
    say, seconds = progress or log.info, {}
    t = time.perf_counter()
    data = data or prepare_data(spec, points)
    seconds["load"] = time.perf_counter() - t
    say(f"loaded {data.n_records} records at {data.sites.n_sites} sites"
        + (f"; dropped {data.missing['n_dropped']} with a missing value" if data.missing else ""))
    t = time.perf_counter()
    locations = _locations(spec, data)
    seconds["locations"] = time.perf_counter() - t
    say(_locations_message(spec, locations))
    locations = enforce_verdict(locations, spec.anonymity.on_location_failure)
    L = spec.synthesis.n_implicates
    seed = resolve_seed(spec.sampling.seed)  # a key: kept in confidential/ only
    root = np.random.SeedSequence(seed)
    frame = data.frame.drop(columns=[spec.data.response])  # covariates, released unchanged
    conf_cols, results = [], []
    syn_cols: dict = {m: [] for m in MODELS}  # each model's chain conditions on its own draws
    truths, released = {}, {}
    for j, rc in enumerate(spec.data.response_configs):
        sec: dict = {}
        # response 1 takes the single-response route's streams (same fits for the same seed);
        # each later response a fresh child of the spec's seed
        streams = root.spawn(4) if j == 0 else root.spawn(1)[0].spawn(4)
        seeds = [int(s.generate_state(1)[0]) for s in streams[:2]] + list(streams[2:])
        y = response_values(data.gdf, rc)
        X = np.column_stack([data.X, *conf_cols]) if conf_cols else data.X
        names = [*data.coef_names, *[r.name for r in spec.data.response_configs[:j]]]
        X_syn = {m: None for m in MODELS}
        for m in MODELS if conf_cols else ():  # (L, N, p): implicate ℓ's design holds the
            X_syn[m] = np.repeat(X[None], L, axis=0)  # earlier synthetic responses of model m
            for k, s in enumerate(syn_cols[m]):
                X_syn[m][:, :, data.X.shape[1] + k] = s
        data_j = dataclasses.replace(data, y=y, X=X, coef_names=names)
        exposure = (data.gdf[rc.exposure].to_numpy(dtype=float) if rc.exposure else None)
        formula = response_formula(spec, rc, j == 0)
        check_formula_names(formula, [rc.name, *spec.data.covariates])
        say(f"response {j + 1}/{len(spec.data.response_configs)}: `{rc.name}` ({rc.family}), "
            f"fitting both models")
        if rc.family == "gaussian":
            fits, at_risk, sens = _fit_gaussian(spec, data_j, fitter, seeds, say, sec)
            t = time.perf_counter()
            dsets = {m: _synth_gaussian(
                spec, fits[m], X, X_syn[m], data.record_id, seeds[2 + i],
                spec.model.at_risk_effect if m == "restricted" else "zero")
                for i, m in enumerate(MODELS)}
            synthetic = {m: dsets[m]["y_synthetic"].values for m in MODELS}
        else:
            fits, at_risk, sens = _fit_discrete(spec, data_j, rc, exposure, say, sec)
            t = time.perf_counter()
            synthetic = {m: _synth_discrete(spec, fits[m], X, X_syn[m], seeds[2 + i])
                         for i, m in enumerate(MODELS)}
        sec["synthesize"] = time.perf_counter() - t
        t = time.perf_counter()
        rframe = frame.copy()
        attributable = None
        if rc.family == "gaussian":
            per, summary, matches = _gaussian_risk(spec, rc, synthetic, y, at_risk)
            attributable = _gaussian_attributable(spec, rc, data, data_j, fits, dsets,
                                                  at_risk, syn_cols["restricted"])
        else:
            base_formula = f"{rc.name} ~ " + (" + ".join(spec.data.covariates) or "1")
            per, summary, matches = _discrete_risk(spec, rc, synthetic, y, at_risk, rframe,
                                                   base_formula)
        sec["risk"] = time.perf_counter() - t
        t = time.perf_counter()
        utility = _utility(spec, rc, synthetic, y, frame, formula)
        sec["utility"] = time.perf_counter() - t
        per.insert(0, "at_risk", at_risk.at_risk)
        per.insert(0, data.id_column, data.record_id)
        results.append(ResponseResult(
            config=rc, coef_names=names, y=y, fits=fits, at_risk=at_risk,
            at_risk_sensitivity=sens, synthetic=synthetic, risk_per_record=per,
            risk_summary=summary, utility=utility, formula=formula, matches=matches,
            seconds=sec, attributable=attributable))
        for k, v in sec.items():  # totals over responses; per response in ResponseResult
            seconds[k] = seconds.get(k, 0.0) + v
        conf_cols.append(y)
        for m in MODELS:
            syn_cols[m].append(synthetic[m])
        truths[rc.name], released[rc.name] = y, synthetic["restricted"]
    joint, joint_per = None, None
    if len(results) > 1:
        from synthgeo.risk.discrete import joint_match_share

        any_risk = np.logical_or.reduce([r.at_risk.at_risk for r in results])
        joint_per = pd.DataFrame({data.id_column: data.record_id, "at_risk_any": any_risk})
        rows = []
        for m in MODELS:
            share = joint_match_share([r.matches[m] for r in results])
            joint_per[f"joint_share_{m}"] = share
            for g, mask in (("at risk (any response)", any_risk), ("other", ~any_risk),
                            ("all", np.ones_like(any_risk))):
                if mask.any():
                    rows.append({"model": m, "group": g, "n_records": int(mask.sum()),
                                 "mean_joint_share": float(share[mask].mean()),
                                 "share_records_any_match": float((share[mask] > 0).mean())})
        joint = pd.DataFrame(rows)
    correlations = response_correlations(truths, released)
    return SequentialResult(spec=spec, data=data, responses=results, joint_risk=joint,
                            joint_per_record=joint_per, correlations=correlations,
                            seconds=seconds, locations=locations, seed=seed)
