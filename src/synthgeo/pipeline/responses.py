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

Engines: a gaussian response goes through the spec's engine
(:func:`synthgeo.pipeline.run.make_fitter`); a bernoulli / poisson one through the nested
Laplace GLMM (:func:`glmm_fitter`), where the at-risk sites always get an independent effect
(docs/model.md: under γ = ∞ an isolated high count otherwise leaks through β₀).

This module holds what is particular to several responses and to the GLMM families; the one
route that runs every release, one response or several, is
:func:`synthgeo.pipeline.run.run_release` (a single response is a sequence of one).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pandas as pd
import xarray as xr

from synthgeo._repr import confidential_repr
from synthgeo.config import ReleaseSpec, ResponseConfig
from synthgeo.model.at_risk import AtRiskResult
from synthgeo.model.transform import ResponseScale
from synthgeo.pipeline.at_risk_rule import NeighbourChecks
from synthgeo.pipeline.data import PreparedData
from synthgeo.pipeline.result import MODELS
from synthgeo.risk.joint import JointCount
from synthgeo.risk.verdict import combine_statuses

__all__ = ["ResponseResult", "SequentialResult", "response_formula", "released_values",
           "response_scale_of", "response_design", "PhiOfGLMM", "glmm_fitter",
           "shift_to_earlier", "risk_rule_inputs", "draw_discrete", "discrete_risk_tables",
           "gaussian_risk_frame",
           "response_utility", "joint_risk", "joint_over_responses",
           "release_attacker_over_responses"]


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
    risk_scores : RiskScores or None
        Gaussian responses: the risk stage's scores with the ``[risk.targets]`` verdict and
        this response's joint count (:func:`synthgeo.pipeline.risk_stage.score_release_risk`;
        ``attributable`` is its table); None for yes/no and counts.
    at_risk_choice : AtRiskChoice or None
        Which rule flagged which records (``[model] at_risk``: spatial, by risk, both).
    own_value_leak : dict or None
        A gaussian response under the calibrated cross-fit: the own-value leak's aggregates
        (:func:`synthgeo.synthesis.cross_fit.own_value_leak`); None otherwise.
    neighbour_check : NeighbourChecks or None
        A gaussian response: the records whose risk rose from the unrestricted model to the
        released one (:func:`synthgeo.pipeline.at_risk_rule.run_neighbour_check`, on this
        response's y and scale); None for yes/no and counts (no Rao-Blackwellised risk).
    detector : dict or None
        A gaussian response: release.json's ``detector`` block for it
        (:func:`synthgeo.pipeline.detector_stage.detector_block`: features the released
        covariates, locations and this response's implicates); None for yes/no and counts.
    input_noise : dict or None
        A gaussian response under ``[synthesis] input_noise``: what its synthesis did
        (:func:`synthgeo.pipeline.synthesis_noise.draw_input_noise`; aggregates only).
    """

    def __repr__(self) -> str:
        """Show the name, family and counts only."""
        return confidential_repr(self, name=self.name, family=self.family,
                                 n_at_risk=int(self.at_risk.n_at_risk))

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
    risk_scores: object = None
    at_risk_choice: object = None
    own_value_leak: dict | None = None
    input_noise: dict | None = None
    neighbour_check: NeighbourChecks | None = None
    detector: dict | None = None

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
    """Everything a release of several responses writes (see :func:`run_release`).

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
    general_utility : GeneralUtility or None
        pMSE against the paired null of every response jointly, both models
        (:mod:`synthgeo.pipeline.general_utility`).
    risk_joint : JointCount or None
        Records identifiable by location and possibly above the first ``record_threshold`` in
        at least one gaussian response (upper Monte Carlo bound of each response's a_i;
        :func:`joint_over_responses`); None without a threshold.
    warnings : list of dict
        ``{"code", "message"}``: each response's FAIL under ``on_risk_failure = "warn"``.
    protection : dict or None
        ``[risk] protect = "targets"``: every round's figures and the released round
        (:func:`synthgeo.pipeline.protect.seek_targets`); None otherwise.
    """

    def __repr__(self) -> str:
        """Show counts only (no record-level value, no seed)."""
        return confidential_repr(
            self, n_records=self.data.n_records, responses=[r.name for r in self.responses],
            n_implicates=int(self.spec.synthesis.n_implicates), risk_verdict=self.risk_status,
            location_verdict=None if self.locations is None else self.locations.verdict.status)

    spec: ReleaseSpec
    data: PreparedData
    responses: list
    joint_risk: pd.DataFrame | None
    joint_per_record: pd.DataFrame | None
    correlations: pd.DataFrame
    seconds: dict
    locations: object = None
    seed: int | None = field(default=None, repr=False)
    general_utility: object = None
    risk_joint: JointCount | None = None
    warnings: list = field(default_factory=list)
    protection: dict | None = None

    @property
    def M_m(self) -> float:  # noqa: N802
        """M of the first response, metres."""
        return self.responses[0].at_risk.radius_m

    @property
    def risk_statuses(self) -> dict[str, str]:
        """Each response's risk verdict, by name ("NOT ASSESSED" without scores or targets)."""
        return {r.name: ("NOT ASSESSED" if r.risk_scores is None
                         else r.risk_scores.verdict.status) for r in self.responses}

    @property
    def risk_status(self) -> str:
        """The release's risk verdict: FAIL if any response FAILs, PASS if every one PASSes.

        Else NOT ASSESSED (:func:`synthgeo.risk.verdict.combine_statuses`).
        """
        return combine_statuses(self.risk_statuses.values())

    @property
    def release_attacker_joint(self) -> dict | None:
        """The release attacker's count over responses (:func:`release_attacker_over_responses`)."""
        return release_attacker_over_responses(
            [(r.name, r.risk_scores) for r in self.responses if r.risk_scores is not None])


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


def response_scale_of(spec: ReleaseSpec, rc: ResponseConfig) -> ResponseScale:
    """Return the scales of one gaussian response (its ``transform``, ``[data] back_transform``).

    Examples
    --------
    >>> from synthgeo.config import DataConfig
    >>> spec = ReleaseSpec(data=DataConfig(responses=[{"name": "a", "transform": "log"}]))
    >>> response_scale_of(spec, spec.data.responses[0]).g_name
    'exp'
    """
    return ResponseScale(transform=rc.transform, back_transform=spec.data.back_transform)


def response_design(data: PreparedData, rc: ResponseConfig, earlier: dict, synthetic: dict,
                    n_implicates: int) -> tuple[PreparedData, dict]:
    """Return response j's data (y, X with the earlier responses) and each model's X†.

    Parameters
    ----------
    data : PreparedData
        The records; ``data.y`` is the first response's.
    rc : ResponseConfig
    earlier : dict of str to ndarray of shape (n_records,)
        The confidential earlier responses by name, in order (model scale); empty for the
        first.
    synthetic : dict of str to list of ndarray of shape (L, n_records)
        Each model's synthetic earlier responses.
    n_implicates : int

    Returns
    -------
    data_j : PreparedData
        ``data`` itself for the first response.
    X_syn : dict of str to ndarray of shape (L, n_records, p) or None
        Implicate ℓ's design with the earlier synthetic responses of model m (None: first).
    """
    from synthgeo.pipeline.design import response_values

    if not earlier:
        return data, {m: None for m in MODELS}
    X = np.column_stack([data.X, *earlier.values()])
    names = [*data.coef_names, *earlier]
    X_syn = {}
    for m in MODELS:  # (L, N, p): implicate ℓ's design holds the earlier synthetic responses
        X_syn[m] = np.repeat(X[None], n_implicates, axis=0)
        for k, s in enumerate(synthetic[m]):
            X_syn[m][:, :, data.X.shape[1] + k] = s
    return dataclasses.replace(data, y=response_values(data.gdf, rc), X=X,
                               coef_names=names), X_syn


class PhiOfGLMM:
    """φ quantiles (1/metre) of a GLMM fit, as GPFit.phi_quantiles (φ = 3 / effective range)."""

    def __init__(self, fit):
        self.fit = fit

    def phi_quantiles(self, q=(0.05, 0.5, 0.95)):
        """φ at the posterior quantiles ``q`` of the effective range (reversed), 1/metre."""
        qq = self.fit.grid.quantiles([1 - p for p in q])[:, 0]
        return 3.0 / self.fit.model.priors.range_m(qq)


def glmm_fitter(spec: ReleaseSpec, data_j: PreparedData, rc: ResponseConfig):
    """Return ``fit(scale=None) -> GLMMFit`` for a yes/no or count response.

    The nested Laplace GLMM (:func:`synthgeo.inference.glmm.fit_glmm`); the at-risk sites
    always get an independent effect; priors from the gaussian defaults' range box and
    ``[model.priors]`` ``beta_mean``, ``beta_sd``.
    """
    from synthgeo.inference.glmm import fit_glmm
    from synthgeo.model.families import get_family
    from synthgeo.model.glmm_priors import GLMMPriors
    from synthgeo.model.restricted_gp import default_priors

    gp = default_priors(data_j.y, data_j.X, data_j.sites, **{
        k: v for k, v in spec.model.priors.items() if k in ("range_min_m", "range_max_m")})
    kw = {k: v for k, v in spec.model.priors.items() if k in ("beta_mean", "beta_sd")}
    priors = GLMMPriors(range_min_m=gp.range_min_m, range_max_m=gp.range_max_m, **kw)
    exposure = data_j.gdf[rc.exposure].to_numpy(dtype=float) if rc.exposure else None
    return partial(fit_glmm, data_j.y, data_j.X, data_j.sites, family=get_family(rc.family),
                   priors=priors, coef_names=data_j.coef_names, exposure=exposure,
                   covariance=spec.model.engine_for(data_j.n_records),
                   n_neighbors=spec.model.n_neighbors, at_risk_effect="independent")


def shift_to_earlier(ds: xr.Dataset, fit, X: np.ndarray, X_syn: np.ndarray, *,
                     beta: np.ndarray | None = None) -> xr.Dataset:
    """Gaussian implicates moved by (X†(ℓ) − X) β(ℓ): drawn given the earlier synthetic values.

    ``y_synthetic`` and ``y_mean`` (the predictive each value was drawn from) of ``ds``
    (:func:`synthgeo.synthesis.implicates.draw_implicates` of ``fit``), in place. ``beta``
    (L, p): the coefficients the means used, when not the fit's draws (input noise: the OLS of
    y* on the design ``X``, which then holds the earlier responses' y*).
    """
    from synthgeo.synthesis.implicates import implicate_draw_index

    y = ds["y_synthetic"].values.copy()
    if beta is None:
        post = fit.posterior
        n_draw = post.sizes["draw"]
        flat = implicate_draw_index(post.sizes["chain"], n_draw, X_syn.shape[0])
        ci, di = np.divmod(flat, n_draw)
        beta = post["beta"].values[ci, di]  # (L, p)
    shift = np.einsum("lnp,lp->ln", X_syn - X[None], beta)
    y += shift
    ds["y_mean"] = ds["y_mean"] + shift
    if "y_mean_marginal" in ds:  # input noise's own-value predictive moves with it
        ds["y_mean_marginal"] = ds["y_mean_marginal"] + shift
    ds["y_synthetic"] = (("implicate", "record"), y)
    return ds


def risk_rule_inputs(spec: ReleaseSpec, rc: ResponseConfig, data_j: PreparedData, fit,
                     implicates: xr.Dataset, X_syn: dict) -> tuple[xr.Dataset, dict]:
    """Return the unrestricted implicates and attacker the at-risk rule scores (one response).

    ``[model] at_risk = "risk" | "both"`` on a response of several scores what the final risk
    stage will score (:func:`synthgeo.pipeline.risk_stage.score_release_risk`): on the
    response's own scale ``g``; for a later response, the unrestricted implicates drawn
    given the earlier *synthetic* unrestricted responses (:func:`shift_to_earlier`, on a
    copy: ``implicates`` is shifted once more by the synthesis stage) and the attacker who
    holds the earlier responses' released values instead of their confidential ones, paired
    with the implicates (row ℓ: the restricted implicate ℓ of each earlier response).

    Returns
    -------
    implicates : xarray.Dataset
        ``implicates`` (first response) or a shifted copy.
    kwargs : dict
        ``g`` and, for a later response, ``own_X`` (L, n_records, p) for
        :func:`synthgeo.pipeline.at_risk_rule.score_unrestricted`.
    """
    kw: dict = {"g": response_scale_of(spec, rc).g_name}
    if X_syn["restricted"] is None:
        return implicates, kw
    shifted = shift_to_earlier(implicates.copy(deep=True), fit, data_j.X, X_syn["unrestricted"])
    return shifted, {**kw, "own_X": X_syn["restricted"]}


def draw_discrete(spec: ReleaseSpec, fit, X: np.ndarray, X_syn: np.ndarray | None, seed):
    """GLMM implicates (L, n_records); η of implicate ℓ moved by (X†(ℓ) − X) β(ℓ)."""
    rng = np.random.default_rng(seed)
    dr = fit.draw(spec.synthesis.n_implicates, rng)
    eta = dr["eta_synth"].copy()
    if X_syn is not None:
        eta += np.einsum("lnp,lp->ln", X_syn - X[None], dr["beta"])
    if fit.model.overdispersion:
        eta += np.exp(0.5 * dr["theta"][:, 2])[:, None] * rng.standard_normal(eta.shape)
    return fit.model.family.sample(eta, rng, offset=fit.model.offset).astype(float)


def discrete_risk_tables(spec: ReleaseSpec, rc: ResponseConfig, synthetic: dict, y, at_risk,
                         frame: pd.DataFrame):
    """Per-record risk, summary and matches of a yes/no or count response (GLM baseline)."""
    from synthgeo.risk.discrete import discrete_risk, glm_baseline, summarise_discrete

    formula = f"{rc.name} ~ " + (" + ".join(spec.data.covariates) or "1")
    per_model = {m: discrete_risk(synthetic[m], y, family=rc.family) for m in MODELS}
    base = glm_baseline(formula, synthetic["restricted"], frame.copy(), y, response=rc.name,
                        family=rc.family)
    summary = summarise_discrete(per_model, base, y, at_risk.at_risk, family=rc.family)
    per = pd.concat([per_model[m].add_suffix(f"_{m}") for m in MODELS]
                    + [base.add_suffix("_baseline")], axis=1)
    matches = {m: synthetic[m] == y[None] for m in MODELS}  # equality for the joint risk
    return per, summary.assign(response=rc.name), matches


def gaussian_risk_frame(spec: ReleaseSpec, rc: ResponseConfig, risk: dict, synthetic: dict, y):
    """Per-record within-ε risk of both models side by side, and the matches (joint risk)."""
    per = pd.concat([risk[m].to_dataframe().reset_index(drop=True).add_suffix(f"_{m}")
                     for m in MODELS], axis=1)
    g = np.exp if response_scale_of(spec, rc).g_name == "exp" else (lambda v: v)
    matches = {m: np.abs(g(synthetic[m]) - g(y)[None]) <= spec.risk.eps[0] for m in MODELS}
    return per, matches


def response_utility(spec: ReleaseSpec, rc: ResponseConfig, synthetic: dict, y, frame,
                     formula: str, *, truth=None, progressbar: bool = False) -> pd.DataFrame:
    """Reiter table of the analyst's model on one response (OLS; GLM for yes/no, counts).

    A gaussian response is compared on its released scale (exp of the model scale under
    ``transform = "log"``); ``truth`` its confidential column as given (default: the
    released map of ``y``).
    """
    if rc.family == "gaussian":
        from synthgeo.utility.reiter import compare_to_confidential

        released = response_scale_of(spec, rc).to_released
        syn = {m: xr.DataArray(released(synthetic[m]), dims=("implicate", "record"))
               for m in MODELS}
        return compare_to_confidential(formula, syn, frame, response=rc.name,
                                       truth=released(y) if truth is None else truth,
                                       alpha=spec.utility.alpha, progressbar=progressbar)
    from synthgeo.utility.glm import compare_glm_to_confidential

    return compare_glm_to_confidential(formula, synthetic, frame, response=rc.name, truth=y,
                                       family=rc.family, alpha=spec.utility.alpha)


def joint_risk(data: PreparedData, results: list) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Share of implicates matching every response, per record and by model and group."""
    from synthgeo.risk.discrete import joint_match_share

    any_risk = np.logical_or.reduce([r.at_risk.at_risk for r in results])
    per = pd.DataFrame({data.id_column: data.record_id, "at_risk_any": any_risk})
    rows = []
    for m in MODELS:
        share = joint_match_share([r.matches[m] for r in results])
        per[f"joint_share_{m}"] = share
        for g, mask in (("at risk (any response)", any_risk), ("other", ~any_risk),
                        ("all", np.ones_like(any_risk))):
            if mask.any():
                rows.append({"model": m, "group": g, "n_records": int(mask.sum()),
                             "mean_joint_share": float(share[mask].mean()),
                             "share_records_any_match": float((share[mask] > 0).mean())})
    return pd.DataFrame(rows), per


def release_attacker_over_responses(scored: list) -> dict | None:
    """Count records above the threshold against the release attacker in any response.

    Parameters
    ----------
    scored : list of (str, RiskScores)
        Each gaussian response's name and scores (``release_attack``: its release attacker,
        :mod:`synthgeo.pipeline.release_attack`; ``identifiable``: spatial k below k or unique
        on location and released covariates).

    Returns
    -------
    dict or None
        ``threshold`` (the first per-record target's), ``n_records``, ``n_above_any`` (above
        it in at least one response: the union), ``n_identifiable_above_any`` (of those, the
        identifiable by location) and ``by_response`` (each response's count); counts only.
        None when no response has a release attacker with a threshold.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> def one(a):
    ...     return NS(release_attack=NS(threshold=0.1, attributable=np.array(a)),
    ...               identifiable=np.array([True, False, False]))
    >>> release_attacker_over_responses([("a", one([0.2, 0.0, 0.0])),
    ...                                  ("b", one([0.0, 0.3, 0.05]))])["n_above_any"]
    2
    """
    attacks = [(name, s.release_attack, s.identifiable) for name, s in scored
               if s is not None and getattr(s, "release_attack", None) is not None
               and s.release_attack.threshold is not None]
    if not attacks:
        return None
    threshold = attacks[0][1].threshold
    above = {name: np.asarray(a.attributable) > threshold for name, a, _ in attacks}
    union = np.logical_or.reduce(list(above.values()))
    identifiable = np.asarray(attacks[0][2], bool)
    return {"threshold": float(threshold), "n_records": int(union.size),
            "n_above_any": int(union.sum()),
            "n_identifiable_above_any": int((union & identifiable).sum()),
            "by_response": [{"response": k, "n_above": int(v.sum())} for k, v in above.items()]}


def joint_over_responses(scores: list) -> JointCount | None:
    """Count records identifiable by location and possibly above the threshold in any response.

    Parameters
    ----------
    scores : list of RiskScores
        The gaussian responses' scores, each with its :class:`~synthgeo.risk.joint.JointCount`
        (identifiable by location — the same released locations and covariates for every
        response — and a_i + z_{1−α} se_i above the first ``record_threshold``).

    Returns
    -------
    JointCount or None
        ``above`` is the union over responses (an upper bound: a record counts when its upper
        Monte Carlo bound exceeds the threshold in at least one response); None without a
        threshold or a gaussian response.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> def one(above):
    ...     return NS(joint=JointCount(threshold=0.1, below_k=np.array([True, True, False]),
    ...                                unique=np.zeros(3, bool), above=np.array(above)))
    >>> joint_over_responses([one([True, False, True]), one([False, True, False])]).to_dict()[
    ...     "n_joint"]
    2
    """
    joints = [s.joint for s in scores if s is not None and s.joint is not None]
    if not joints:
        return None
    first = joints[0]
    return JointCount(threshold=first.threshold, below_k=first.below_k, unique=first.unique,
                      above=np.logical_or.reduce([j.above for j in joints]))
