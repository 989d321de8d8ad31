r"""The release's risk stage: Rao-Blackwellised risk, both baselines, attributable risk, verdict.

After synthesis, for each model (unrestricted, restricted) and every measure of the spec
(``[risk] eps`` and ``p``, and any measure a target names), both attacks:

- **release**: the Rao-Blackwellised per-record risk r̃_i, the mean over implicates of the exact
  normal probability under the predictive each implicate was drawn from
  (:mod:`synthgeo.risk.rao_blackwell`), beside the realised share;
- **baseline_loo**: the unrestricted GP's leave-one-out predictive of y_i at the draws that
  made the unrestricted implicates (:mod:`synthgeo.risk.loo`; the engine's own factorisation:
  dense for the exact GP, the sparse NNGP precision otherwise), leaving out the records of
  i's block under ``[risk] loo_unit``; the largest a_i under each other unit is reported beside
  it (:mod:`synthgeo.risk.loo_units`);
- **baseline_public**: OLS of each model's implicates on the released covariates
  (:mod:`synthgeo.risk.baselines`);
- **attributable** = release − the stronger baseline, chosen once per measure and attack on all
  records by its mean over both models, for every group and record (one baseline rule,
  :mod:`synthgeo.risk.attributable`), with its Monte Carlo se.

The ``[risk.targets]`` are then judged on the released (restricted) model
(:mod:`synthgeo.risk.verdict`) with the Monte Carlo bounds of :mod:`synthgeo.risk.noise` at
``[risk] confidence``, with the joint count of records identifiable by location and
above the attributable threshold (:mod:`synthgeo.risk.joint`). Sources: Reiter, Wang & Zhang
(2014), doi:10.29012/jpc.v6i1.635; Giomi et al. (2022), doi:10.56553/popets-2023-0055;
docs/risk-and-utility.md.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import xarray as xr

from synthgeo._errors import RiskError
from synthgeo._warn import warn
from synthgeo.config import ReleaseSpec
from synthgeo.config.risk import LOO_UNITS
from synthgeo.inference.result import GPFit
from synthgeo.io.notices import note
from synthgeo.io.points import coordinates_m
from synthgeo.pipeline.data import response_scale
from synthgeo.pipeline.loo_cache import (
    cached_loo,
    cached_precision_function,
    drop_precision_function,
    update_loo,
)
from synthgeo.risk.attributable import ATTACKS, AttributableSummary, attributable_summary
from synthgeo.risk.baselines import public_regression
from synthgeo.risk.joint import JointCount, joint_count, unique_on
from synthgeo.risk.loo import (
    baseline_loo_sets,
    block_differs,
    exact_precision,
    leave_out_blocks,
    nngp_precision,
)
from synthgeo.risk.loo_posterior import reweight_leave_out
from synthgeo.risk.loo_units import LooUnitComparison, UnitFigures, unit_figures
from synthgeo.risk.measure import Measure, measures_from
from synthgeo.risk.noise import z_value
from synthgeo.risk.predictive import Predictive, kept_predictive
from synthgeo.risk.records import RecordRisk, score_records
from synthgeo.risk.selection import HistogramSelection, histogram_records
from synthgeo.risk.verdict import (
    RiskVerdict,
    apply_risk_gate,
    assess_risk,
    pair_text,
    paired_checks,
    reported_checks,
)

if TYPE_CHECKING:
    from synthgeo.pipeline.release_attack import ReleaseAttack

__all__ = ["RiskScores", "score_release_risk", "risk_measures", "loo_predictive",
           "attacker_shift", "public_X",
           "release_predictive_of", "own_value_predictive", "score_model", "RISK_FAILED_CODE",
           "gate_cumulative",
           "record_blocks", "compare_loo_units", "loo_predictives", "other_loo_units"]

#: The code of the warning a failed verdict leaves under ``on_risk_failure = "warn"``.
RISK_FAILED_CODE = "risk_targets_failed"
_MODELS = ("unrestricted", "restricted")


def risk_measures(spec: ReleaseSpec) -> tuple[Measure, ...]:
    """Every measure the spec scores: ``[risk] eps``, ``p`` and those its targets name.

    Examples
    --------
    >>> from synthgeo.config import bundled_spec_path, load_spec
    >>> [m.key for m in risk_measures(load_spec(bundled_spec_path()))]
    ['abs:10000', 'rel:0.1']
    """
    return measures_from(eps=spec.risk.eps, p=spec.risk.p,
                         extra=[t.measure for t in spec.risk.targets])


def posterior_draws(fit: GPFit, ds: xr.Dataset) -> dict[str, np.ndarray]:
    """β (L, p), σ², φ (1/m), τ² (L,) of the posterior draws that made ``ds``'s implicates."""
    post = fit.posterior
    sel = {"chain": xr.DataArray(ds["source_chain"].values, dims="implicate"),
           "draw": xr.DataArray(ds["source_draw"].values, dims="implicate")}
    at = post[["beta", "sigma2", "phi", "nugget"]].sel(sel)
    return {"beta": at["beta"].transpose("implicate", "coef").values,
            **{v: at[v].values.astype(float) for v in ("sigma2", "phi", "nugget")}}


def record_blocks(spec: ReleaseSpec, data, unit: str | None = None) -> np.ndarray:
    """Return the leave-out blocks of ``data``'s records under ``unit`` (default: the spec's).

    :func:`synthgeo.risk.loo.leave_out_blocks` on the prepared sites and ``[data] subject``.

    Raises
    ------
    ValueError
        For ``unit = "subject"`` without a ``[data] subject`` column.
    """
    subject = data.gdf[spec.data.subject].to_numpy() if spec.data.subject else None
    return leave_out_blocks(unit or spec.loo_unit, data.sites.site_index, subject)


def loo_predictive(spec: ReleaseSpec, data, fit: GPFit, ds: xr.Dataset, *,
                   own_X: np.ndarray | None = None, unit: str | None = None,
                   own_weight: dict[str, np.ndarray] | None = None,
                   reweight: bool = False) -> Predictive:
    """Return the leave-one-out baseline at the draws that made the implicates ``ds`` of ``fit``.

    Parameters
    ----------
    spec : ReleaseSpec
        ``[risk] loo_unit`` and ``[data] subject``: which records are left out with each
        record (:func:`record_blocks`).
    data : PreparedData
    fit : GPFit
        The unrestricted fit (its engine picks the dense or the NNGP precision).
    ds : xarray.Dataset
        Its implicates (:func:`synthgeo.synthesis.implicates.draw_implicates`), for the
        ``source_chain``/``source_draw`` of each implicate.
    own_X : ndarray of shape (n_records, p), optional
        The covariates the attacker holds for each target record, where they differ from the
        model's ``data.X`` (a later response of a sequential release: the earlier responses'
        released synthetic values instead of their confidential ones). The other records'
        values stay as in ``data`` (the attacker who knows everyone else). Since
        E[y_i | y_−i] = x_i'β + (kriging of the others' residuals), the mean moves by
        (own_x_i − x_i)'β at each draw; the sd is unchanged (docs/risk-and-utility.md, "A
        later response's baselines"). Shape (L, n_records, p): **paired** with the
        implicates (row ℓ holds the earlier responses' released values of implicate ℓ), and
        under ``reweight`` applied after the resampling with each row's own draw's β
        (:func:`attacker_shift`).
    unit : {"site", "subject", "record"}, optional
        Another leave-out unit than the spec's (the comparison of units).
    own_weight : dict, optional
        Filled with unit → (L, n_records) weight of each record's own value in its
        covariate-calibrated cross-fitted mean (:func:`synthgeo.risk.loo.baseline_loo_sets`).
    reweight : bool, default=False
        The baseline attacker's: at the leave-out posterior
        (:func:`synthgeo.risk.loo_posterior.reweight_leave_out`; ``[risk] loo_posterior =
        "reweighted"``) instead of at each draw θ_ℓ (the per-draw predictive a cross-fit
        draws from).

    Returns
    -------
    Predictive
        (L, n_records), model scale.
    """
    unit = unit or spec.loo_unit
    density: dict[str, np.ndarray] | None = {} if reweight else None
    paired = own_X is not None and np.ndim(own_X) == 3
    loo = loo_predictives(spec, data, fit, ds, {unit: record_blocks(spec, data, unit)},
                          own_X=None if paired and reweight else own_X,
                          own_weight=own_weight, log_density=density)[unit]
    if not reweight:
        return loo
    moved = reweight_leave_out(loo, density[unit])
    if paired:  # implicate ℓ's own covariates with the draw resampled into row ℓ
        return attacker_shift(moved.predictive, posterior_draws(fit, ds)["beta"], own_X, data.X,
                              rows=moved.rows)
    return moved.predictive


def attacker_shift(loo: Predictive, beta: np.ndarray, own_X: np.ndarray, X: np.ndarray, *,
                   rows: np.ndarray | None = None) -> Predictive:
    r"""Move the leave-one-out baseline to the attacker's own covariates: mean + (x̃ − x)'β.

    E[y_i | y_−B(i)] = x_i'β + (kriging of the others' residuals), so replacing record i's
    own covariates x_i by the attacker's x̃_i moves the mean by (x̃_i − x_i)'β at each draw and
    leaves the sd (docs/risk-and-utility.md, "A later response's baselines").

    Parameters
    ----------
    loo : Predictive
        (L, n_records), model scale, at the model's covariates ``X``.
    beta : ndarray of shape (L, p)
        The posterior draws of β behind the rows of ``loo`` (before any resampling).
    own_X : ndarray of shape (n_records, p) or (L, n_records, p)
        The attacker's covariates: one row per record, or **paired** with the implicates
        (row ℓ: the earlier responses' released values of implicate ℓ).
    X : ndarray of shape (n_records, p)
        The model's design.
    rows : ndarray of int, shape (L, n_records), optional
        The draw behind each row of each record after the leave-out posterior's resampling
        (:attr:`synthgeo.risk.loo_posterior.LeaveOutPosterior.rows`); default: row ℓ is draw ℓ.

    Returns
    -------
    Predictive

    Examples
    --------
    >>> base = Predictive(mean=np.zeros((2, 1)), sd=np.ones((2, 1)))
    >>> beta = np.array([[0.0, 2.0], [0.0, 3.0]])
    >>> X = np.array([[1.0, 0.0]])
    >>> paired = np.array([[[1.0, 1.0]], [[1.0, -1.0]]])  # implicate 1: +1, implicate 2: -1
    >>> attacker_shift(base, beta, paired, X).mean.ravel().tolist()
    [2.0, -3.0]
    >>> attacker_shift(base, beta, paired, X, rows=np.array([[1], [1]])).mean.ravel().tolist()
    [3.0, -3.0]
    """
    diff = np.asarray(own_X, float) - np.asarray(X, float)
    b = np.asarray(beta, float)
    if rows is not None:
        b = b[np.asarray(rows)]  # (L, n, p): each (row, record)'s draw
        shift = np.einsum("lnp,lnp->ln" if diff.ndim == 3 else "lnp,np->ln", b, diff)
    else:
        shift = np.einsum("lp,lnp->ln" if diff.ndim == 3 else "lp,np->ln", b, diff)
    return Predictive(mean=loo.mean + shift, sd=loo.sd, name=loo.name)


def precision_function(spec: ReleaseSpec, data, fit: GPFit):
    """Return the precision of y over records, ``(phi_per_m, alpha) -> Q``, of ``fit``'s engine.

    :func:`synthgeo.risk.loo.nngp_precision` (the fit's neighbour count) for an NNGP fit,
    :func:`~synthgeo.risk.loo.exact_precision` otherwise; locations in metres.
    """
    coords = coordinates_m(data.gdf)
    m = _nngp_neighbours(spec, fit)
    if m is not None:  # one graph and pattern per run for every stage that asks (loo_cache)
        return cached_precision_function(data, m, lambda: nngp_precision(coords, m))
    return exact_precision(coords)


def _nngp_neighbours(spec: ReleaseSpec, fit: GPFit) -> int | None:
    """Return the neighbour count of an NNGP fit, or None for the exact GP."""
    if fit.engine.get("gp") != "nngp":
        return None
    return int(fit.engine.get("n_neighbors") or spec.model.n_neighbors)


def loo_predictives(spec: ReleaseSpec, data, fit: GPFit, ds: xr.Dataset,
                    blocks: dict[str, np.ndarray], *, own_X: np.ndarray | None = None,
                    seconds: dict[str, float] | None = None,
                    own_weight: dict[str, np.ndarray] | None = None,
                    log_density: dict[str, np.ndarray] | None = None
                    ) -> dict[str, Predictive]:
    """:func:`loo_predictive` under several block sets, each precision built once.

    Parameters
    ----------
    spec, data, fit, ds, own_X, own_weight
        As :func:`loo_predictive`.
    blocks : dict of str to ndarray of int
        Leave-out unit → its blocks (:func:`record_blocks`).
    seconds : dict, optional
        Filled with unit → the seconds of its block solves
        (:func:`synthgeo.risk.loo.baseline_loo_sets`).
    log_density : dict, optional
        Filled with unit → (L, n_records) log density of each record's leave-out block at each
        draw (:func:`synthgeo.risk.loo.block_log_density`).

    Returns
    -------
    dict of str to Predictive
        By unit, (L, n_records), model scale.
    """
    d = posterior_draws(fit, ds)

    def compute(todo: dict[str, np.ndarray], weights: bool) -> dict[str, dict]:
        spent: dict[str, float] = {}
        weight: dict[str, np.ndarray] | None = {} if weights else None
        density: dict[str, np.ndarray] = {}
        preds = baseline_loo_sets(data.y, data.X, beta=d["beta"], sigma2=d["sigma2"],
                                  phi=d["phi"], alpha=d["nugget"] / d["sigma2"],
                                  precision_of=precision_function(spec, data, fit),
                                  block_sets=todo, seconds=spent, own_weight=weight,
                                  log_density=density)
        return {u: {"predictive": preds[u], "own_weight": None if weight is None else weight[u],
                    "log_density": density[u], "seconds": spent.get(u, 0.0)} for u in todo}

    # the same predictive serves the synthesis, the risk stage and every round of a run; the
    # own-value weights (an (L, n) array per unit) only when asked for (a calibrated cross-fit)
    wanted = own_weight is not None
    draws = (ds["source_chain"].values, ds["source_draw"].values)
    entries = cached_loo(fit, data, draws, blocks, lambda todo: compute(todo, wanted))
    lacking = {u: blocks[u] for u, e in entries.items() if wanted and e["own_weight"] is None}
    if lacking:  # kept without them by an earlier caller: the same arrays, now with weights
        for u, e in compute(lacking, True).items():
            entries[u]["own_weight"] = e["own_weight"]
            update_loo(fit, data, draws, u, own_weight=e["own_weight"])
    loos = {u: e["predictive"] for u, e in entries.items()}
    for u, e in entries.items():
        if seconds is not None:
            seconds[u] = e["seconds"]
        if own_weight is not None:
            own_weight[u] = e["own_weight"]
        if log_density is not None:
            log_density[u] = e["log_density"]
    if own_X is None:
        return loos
    return {k: attacker_shift(v, d["beta"], own_X, data.X) for k, v in loos.items()}


def public_X(own_X: np.ndarray) -> np.ndarray:
    """Return the public baseline's regressors: ``own_X``, or its mean over implicates.

    The public baseline regresses each implicate on one design; with the attacker's covariates
    paired with the implicates (L, n_records, p) it takes their mean over implicates.
    """
    own_X = np.asarray(own_X, float)
    return own_X.mean(axis=0) if own_X.ndim == 3 else own_X


def release_predictive_of(ds: xr.Dataset) -> Predictive:
    """Return the predictive each implicate was drawn from (``y_mean``, ``y_sd`` of ``ds``)."""
    mean = ds["y_mean"].transpose("implicate", "record").values
    sd = ds["y_sd"].transpose("implicate", "record").values
    return Predictive(mean=mean, sd=sd, name="release")


def own_value_predictive(ds: xr.Dataset) -> Predictive:
    """Return the predictive the own-value risk is scored on.

    :func:`release_predictive_of`, or under input noise read in expectation (``[risk]
    input_noise_reading = "expected"``) the implicates' predictive over the noise,
    ``y_mean_marginal`` / ``y_sd_marginal`` (:mod:`synthgeo.pipeline.synthesis_noise`).
    """
    if "y_mean_marginal" not in ds:
        return release_predictive_of(ds)
    return Predictive(mean=ds["y_mean_marginal"].transpose("implicate", "record").values,
                      sd=ds["y_sd_marginal"].transpose("implicate", "record").values,
                      name="release")


def score_model(data, ds: xr.Dataset, loo: Predictive, measures, g: str,
                realised=None, groups=None) -> RecordRisk:
    """Per-record risk of one model's implicates: release (RB), share, LOO, public, hits.

    ``realised``: the implicates' :func:`~synthgeo.risk.within_eps.within_eps_risk`, whose
    shares are reused; ``groups``: masks whose per-row means are kept for the se of a group's
    mean (:func:`~synthgeo.risk.records.score_records`).
    """
    synthetic = ds["y_synthetic"].transpose("implicate", "record").values
    return score_records(data.y, synthetic=synthetic, release=own_value_predictive(ds),
                         baseline_loo=loo, baseline_public=public_regression(synthetic, data.X),
                         measures=measures, g=g, record=np.asarray(data.record_id),
                         realised=realised, id_column=data.id_column, groups=groups)


@dataclass(frozen=True, kw_only=True, eq=False)
class RiskScores:
    """Release, baselines and attributable risk of both models, and the verdict.

    Attributes
    ----------
    measures : tuple of Measure
    g : {"exp", "identity"}
        The map to the person's scale the measures are judged on.
    summary : AttributableSummary
        By model × group (``all``, ``at_risk``, ``other``) × measure × attack; per-record
        inputs in ``summary.records`` (confidential).
    verdict : RiskVerdict
        ``[risk.targets]`` on the restricted (released) model; NOT ASSESSED without targets.
    joint : JointCount or None
        Identifiable by location and possibly above the first ``record_threshold`` (upper
        Monte Carlo bound; None without a threshold).
    identifiable : ndarray of bool
        Records identifiable by location (spatial k below k, or unique on location plus
        released covariates), confidential.
    warnings : list of dict
        ``{"code", "message"}``: a FAIL under ``on_risk_failure = "warn"``.
    loo_posterior : dict or None
        :meth:`synthgeo.risk.loo_posterior.LeaveOutPosterior.summary` of the spec's unit when
        the baseline integrates over the leave-out posterior (``[risk] loo_posterior =
        "reweighted"``); None under "full".
    loo_units : LooUnitComparison or None
        The leave-out unit run and the largest a_i under every other unit
        (:func:`compare_loo_units`); None when not compared.
    baseline_loader : callable or None
        ``() -> Predictive``: the leave-one-out baseline of the spec's unit as scored
        (confidential; the release attacker's prior, :mod:`synthgeo.pipeline.release_attack`),
        kept on disk when large (:func:`synthgeo.risk.predictive.kept_predictive`); read it
        as :attr:`baseline`.
    release_attack : ReleaseAttack or None
        The release attacker's figures (:func:`synthgeo.pipeline.release_attack.\
score_release_attacker`); None when not scored.
    attacker_reported : tuple of TargetCheck
        The release attacker's figure on each target criterion when it is scored but not
        judged (``[risk] release_attacker = "report"``;
        :func:`synthgeo.risk.verdict.reported_checks`), printed beside the own-value figures;
        empty when judged (its checks are the verdict's) or not scored.
    """

    measures: tuple[Measure, ...]
    g: str
    summary: AttributableSummary
    verdict: RiskVerdict
    joint: JointCount | None
    identifiable: np.ndarray = field(repr=False)
    warnings: list[dict[str, str]] = field(default_factory=list)
    loo_units: LooUnitComparison | None = None
    loo_posterior: dict | None = None
    baseline_loader: Callable[[], Predictive] | None = field(default=None, repr=False)
    release_attack: ReleaseAttack | None = None
    attacker_reported: tuple = ()

    @property
    def baseline(self) -> Predictive | None:
        """The scored leave-one-out baseline (confidential; read from disk when large)."""
        return None if self.baseline_loader is None else self.baseline_loader()

    @property
    def records(self) -> dict[str, RecordRisk]:
        """Per-record risk by model (confidential)."""
        return self.summary.records

    @property
    def table(self) -> pd.DataFrame:
        """The group table (:data:`synthgeo.risk.attributable.SUMMARY_COLUMNS`)."""
        return self.summary.table

    def rb(self, model: str, key: str | None = None) -> np.ndarray:
        """Rao-Blackwellised release risk of ``model`` per record (first measure by default)."""
        key = key or self.measures[0].key
        return self.records[model].per_record["release"].sel(measure=key).values

    def histogram_selection(self, at_risk: np.ndarray, n: int = 8,
                            key: str | None = None) -> HistogramSelection:
        """Choose the report's histogram records (``risk.selection.histogram_records``).

        At-risk first, then by the larger of the two models' Rao-Blackwellised risk.
        """
        return histogram_records(np.asarray(at_risk, bool), self.rb("unrestricted", key),
                                 self.rb("restricted", key), n=min(n, len(at_risk)))

    def verdict_line(self) -> str:
        """One line for the CLI: the risk verdict, each target and the joint count.

        Each criterion shows the own-value figure (Monte Carlo bounds) and the release
        attacker's on the same criterion beside it (exact given the release; "reported, not
        judged" under ``release_attacker = "report"``), and which one decided
        (:func:`synthgeo.risk.verdict.pair_text`).
        """
        v = self.verdict
        if not v.checks:
            return ("risk verdict: NOT ASSESSED (no [risk.targets]; the figures are reported "
                    "beside their baselines)")
        parts = [pair_text(*p) for p in paired_checks(v.checks, self.attacker_reported)]
        conf = v.checks[0].confidence
        model = "released" if v.model == "restricted" else v.model
        line = (f"risk verdict ({model} model, own values with Monte Carlo bounds at {conf:g}): "
                f"{v.status}: " + " | ".join(parts))
        if self.joint is not None:
            j = self.joint.to_dict()
            line += (f"\njoint: {j['n_joint']} of {j['n_records']} records identifiable by "
                     f"location and possibly above attributable risk {j['threshold']:g} "
                     "(upper Monte Carlo bound)")
        return line

    def per_record(self) -> pd.DataFrame:
        """Per-record table (confidential): every probability, its se and a_i, both models.

        Columns ``<var>[<measure>]_<model>`` (docs/release.md, "Per-record risk columns"):
        ``share`` (realised), ``release`` (RB), ``loo``, ``public`` and their Monte Carlo se
        ``release_se``, ``loo_se``, ``public_se``; the average attack's hits
        ``hit_<release|loo|public>[<measure>/<form>]_<model>``;
        ``attributable[<measure>/<attack>]_<model>`` and ``attributable_se[...]`` against the
        one baseline b*; then ``identifiable_by_location``; then the release attacker's
        ``release_attacker_risk``, ``release_attacker_attributable`` and
        ``release_attacker_implicate_budget`` (released model, judged measure). The index
        holds the record ids, named as the data's id column.
        """
        frames = []
        for model, rr in self.records.items():
            df = rr.to_dataframe()
            index = df.index
            df = df.reset_index(drop=True)
            cols = {}
            for m in self.measures:
                for attack in ATTACKS:
                    cols[f"attributable[{m.key}/{attack}]"] = (
                        self.summary.record_attributable(model, m.key, attack))
                    cols[f"attributable_se[{m.key}/{attack}]"] = (
                        self.summary.record_attributable_se(model, m.key, attack))
            frames.append(pd.concat([df, pd.DataFrame(cols)], axis=1).add_suffix(f"_{model}"))
        out = pd.concat(frames, axis=1)
        out["identifiable_by_location"] = self.identifiable
        if self.release_attack is not None:  # the neighbour signal (released model)
            out = pd.concat([out, self.release_attack.per_record()], axis=1)
        return out.set_axis(index, axis=0)


def _identifiable(spec: ReleaseSpec, data, locations) -> tuple[np.ndarray, np.ndarray]:
    """(below k, unique on location + released covariates), per record."""
    n = data.n_records
    sk = getattr(locations, "spatial_k", None)
    below = np.asarray(sk.below_k, bool) if sk is not None else np.zeros(n, bool)
    xy = coordinates_m(data.gdf)
    frame = pd.DataFrame({"__x": xy[:, 0], "__y": xy[:, 1]})
    for c in spec.data.covariates:
        frame[c] = data.gdf[c].to_numpy()
    return below, unique_on(frame, list(frame.columns))


def _gate(spec: ReleaseSpec, verdict: RiskVerdict) -> list[dict[str, str]]:
    """Apply ``on_risk_failure``: raise under "stop"; under "warn" return the coded warning."""
    notes: list[dict[str, str]] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        apply_risk_gate(verdict, spec.risk.on_risk_failure)  # raises under "stop"
    for w in caught:
        notes.append({"code": RISK_FAILED_CODE, "message": str(w.message)})
        warn(str(w.message))
    return notes


def gate_cumulative(spec: ReleaseSpec, scores: RiskScores, verdict: RiskVerdict) -> RiskScores:
    """Apply ``on_risk_failure`` to the verdict on pooled implicates (repeated releases).

    Raises
    ------
    RiskError
        Under ``on_risk_failure = "stop"`` when a target fails on the pooled figures (before
        anything is written).

    Returns
    -------
    RiskScores
        ``scores`` with the coded warning added under "warn".
    """
    where = "cumulative (pooled with the earlier releases): "
    try:
        notes = [{**n, "message": where + n["message"]} for n in _gate(spec, verdict)]
    except RiskError as exc:  # say which figure failed: this release alone passed
        raise RiskError(where + str(exc)) from None
    return dataclasses.replace(scores, warnings=[*scores.warnings, *notes]) if notes else scores


def other_loo_units(spec: ReleaseSpec, data) -> dict[str, np.ndarray]:
    """Every leave-out unit besides the spec's that the data allow → whose block differs.

    ``"subject"`` only with a ``[data] subject`` column; values: bool (n_records,) from
    :func:`~synthgeo.risk.loo.block_differs` against the unit run (all False: same blocks).
    """
    blocks = record_blocks(spec, data)
    return {u: block_differs(blocks, record_blocks(spec, data, u)) for u in LOO_UNITS
            if u != spec.loo_unit and (u != "subject" or spec.data.subject)}


def compare_loo_units(spec: ReleaseSpec, data, implicates: dict[str, xr.Dataset],
                      summary: AttributableSummary, measures, g: str, *,
                      loos: dict[str, Predictive], differs: dict[str, np.ndarray],
                      solve_seconds: dict[str, float] | None = None,
                      own_X: np.ndarray | None = None, realised=None) -> LooUnitComparison:
    """Score the attributable risk under every other leave-out unit the data allow.

    For each unit of ``differs`` (:func:`other_loo_units`): when its blocks are the unit run's
    partition, "same blocks" and nothing more; otherwise both models scored against its
    leave-one-out baseline (``loos``, from :func:`loo_predictives` at the same draws;
    :func:`score_model`) and the share attack's a_i against the stronger baseline chosen on
    all records (:func:`~synthgeo.risk.attributable.attributable_summary`).

    Parameters
    ----------
    spec, data, implicates, own_X, realised
        As :func:`score_release_risk`.
    summary : AttributableSummary
        The unit run's (its ``all`` group gives the unit run's figures).
    measures : tuple of Measure
    g : {"exp", "identity"}
    loos : mapping of str to Predictive
        Leave-one-out baseline by unit, for every unit whose blocks differ (each read once, so
        a mapping that makes it on demand holds one unit's at a time).
    differs : dict of str to ndarray of bool
        :func:`other_loo_units`.
    solve_seconds : dict of str to float, optional
        Each unit's block solves (added to its scoring time in ``seconds``).

    Returns
    -------
    LooUnitComparison
        Per-record a_i in memory (confidential).
    """
    unit, keys = spec.loo_unit, [m.key for m in measures]
    as_run = unit_figures(unit, summary, _MODELS, keys, differs=np.zeros(data.n_records, bool))
    public = data if own_X is None else dataclasses.replace(data, X=public_X(own_X))
    others: list[UnitFigures] = []
    for other, diff in differs.items():
        if not diff.any():
            others.append(dataclasses.replace(as_run, unit=other, same_blocks=True))
            continue
        t0 = time.perf_counter()
        loo = loos[other]  # read once: it may be made on demand (_OnDemand)
        records = {m: score_model(public, implicates[m], loo, measures, g,
                                  (realised or {}).get(m)) for m in _MODELS}
        del loo
        spent = time.perf_counter() - t0 + (solve_seconds or {}).get(other, 0.0)
        others.append(unit_figures(other, attributable_summary(records), _MODELS, keys,
                                   differs=diff, seconds=spent))
    return LooUnitComparison(unit=unit, source="default" if spec.risk.loo_unit is None
                             else "spec", as_run=as_run, others=tuple(others),
                             subject=bool(spec.data.subject))


class _OnDemand(Mapping):
    """unit → Predictive: ``kept``'s own for the units in ``ready``, the others ``make(unit)``.

    Nothing made is kept: the caller holds a unit's baseline only while it uses it.
    """

    def __init__(self, kept: dict[str, Predictive], ready: set[str], make) -> None:
        self._kept, self._ready, self._make = kept, ready, make

    def __getitem__(self, unit: str) -> Predictive:
        """Return ``unit``'s baseline (made now unless it is ready)."""
        return self._kept[unit] if unit in self._ready else self._make(unit)

    def __iter__(self):
        """Iterate over the units."""
        return iter(self._kept)

    def __len__(self) -> int:
        """Return the number of units."""
        return len(self._kept)


def score_release_risk(spec: ReleaseSpec, data, fits: dict[str, GPFit],
                       implicates: dict[str, xr.Dataset], at_risk: np.ndarray,
                       locations=None, *, own_X: np.ndarray | None = None,
                       g: str | None = None, realised=None,
                       compare_units: bool = True, release_attacker: bool = True,
                       attack_kw: dict | None = None) -> RiskScores:
    """Score both models against both baselines, judge the targets, apply the gate.

    Parameters
    ----------
    spec : ReleaseSpec
        ``[risk]`` (measures, targets, ``on_risk_failure``), ``[data]`` (scale, subject).
    data : PreparedData
    fits : dict of str to GPFit
        ``"unrestricted"`` (for the LOO baseline) and ``"restricted"``.
    implicates : dict of str to xarray.Dataset
        Each model's :func:`~synthgeo.synthesis.implicates.draw_implicates` output.
    at_risk : ndarray of bool, shape (n_records,)
        The at-risk records (a group of the table).
    locations : LocationDiagnostics, optional
        Spatial k of the released locations (the joint count); None: no record below k.
    own_X : ndarray of shape (n_records, p) or (L, n_records, p), optional
        A later response of several: the covariates the attacker holds, the earlier responses'
        released values in place of their confidential ones (:func:`loo_predictive`; 3-D:
        paired with the implicates); also the public baseline's regressors (their mean over
        implicates, :func:`public_X`). Default: ``data.X``.
    g : {"exp", "identity"}, optional
        The response's map to the person's scale (default: the first response's).
    realised : dict of str to RiskResult, optional
        Each model's within-ε risk of the same implicates, whose realised shares are reused.
    compare_units : bool, default=True
        Also score the attributable risk under every other leave-out unit
        (:func:`compare_loo_units`; ``RiskScores.loo_units``).
    release_attacker : bool, default=True
        Score the release attacker (:mod:`synthgeo.pipeline.release_attack`) and, under
        ``[risk] release_attacker = "judge"``, judge the targets against it too.
    attack_kw : dict, optional
        A response of several: ``design``, ``shift``, ``extra_information`` and
        ``means_read`` for :func:`synthgeo.pipeline.release_attack.score_release_attacker`.

    Returns
    -------
    RiskScores

    Raises
    ------
    synthgeo.RiskError
        When a target fails and ``[risk] on_risk_failure = "stop"`` (nothing is written).
    """
    measures = risk_measures(spec)
    g = g or response_scale(spec).g_name
    # the other units' baselines share each precision with the unit run's (one pass)
    differs = other_loo_units(spec, data) if compare_units else {}
    blocks = {spec.loo_unit: record_blocks(spec, data),
              **{u: record_blocks(spec, data, u) for u, d in differs.items() if d.any()}}
    paired = own_X is not None and np.ndim(own_X) == 3
    released = implicates["restricted"]
    same_draws = all(np.array_equal(released[c].values, implicates["unrestricted"][c].values)
                     for c in ("source_chain", "source_draw"))
    # a raw cross-fit's predictive is the baseline itself; a calibrated one's is not
    reweight = spec.loo_posterior == "reweighted"
    reuse = (released.attrs.get("predictive") == "cross_fit" and own_X is None and same_draws
             and released.attrs.get("calibration", "none") == "none" and not reweight
             and not released.attrs.get("input_noise") and not released.attrs.get("mean_noise"))
    solve_seconds: dict[str, float] = {}
    density: dict[str, np.ndarray] | None = {} if reweight else None
    if reuse and len(blocks) == 1:
        # cross-fitted release: drawn from this very predictive at the same posterior draws
        # (synthgeo.synthesis.cross_fit), so it is reused rather than computed a second time
        loos = {spec.loo_unit: dataclasses.replace(release_predictive_of(released),
                                                   name="baseline_loo")}
    else:
        loos = loo_predictives(spec, data, fits["unrestricted"], implicates["unrestricted"],
                               blocks, own_X=None if paired and reweight else own_X,
                               seconds=solve_seconds, log_density=density)
    loo_posterior = None
    full = loos  # at the full posterior's draws

    def leave_out_posterior(u: str) -> Predictive:
        """Return unit ``u``'s baseline at the leave-out posterior (risk.loo_posterior)."""
        nonlocal loo_posterior
        # the unit run's baseline is this stage's own copy (the run's cache serves copies):
        # reweighted in place, no second pair of (L, N) arrays
        moved = reweight_leave_out(full[u], density[u], overwrite=u == spec.loo_unit)
        if u == spec.loo_unit:
            loo_posterior = moved.summary()
        if not paired:
            return moved.predictive
        # implicate ℓ's earlier released values, with row ℓ's resampled draw
        beta = posterior_draws(fits["unrestricted"], implicates["unrestricted"])["beta"]
        return attacker_shift(moved.predictive, beta, own_X, data.X, rows=moved.rows)

    if reweight:  # the baseline's θ fitted without the record; the other units' when scored
        loos = {**loos, spec.loo_unit: leave_out_posterior(spec.loo_unit)}
        # its full-posterior baseline and densities are not read again (the run's cache keeps
        # its own copy): not held through the scoring (three (L, N) arrays)
        full = {u: p for u, p in full.items() if u != spec.loo_unit}
        density.pop(spec.loo_unit, None)
    loo = loos[spec.loo_unit]
    if (m := _nngp_neighbours(spec, fits["unrestricted"])) is not None:
        drop_precision_function(data, m)  # not held through the scoring (1 GB at 10⁶)
    public = data if own_X is None else dataclasses.replace(data, X=public_X(own_X))
    mask = np.asarray(at_risk, bool)
    groups = {"at_risk": mask, "other": ~mask}
    records = {m: score_model(public, implicates[m], loo, measures, g, (realised or {}).get(m),
                              groups={"all": np.ones(mask.size, bool), **groups})
               for m in _MODELS}
    confidence = getattr(spec.risk, "confidence", 0.95)
    summary = attributable_summary(records, groups=groups)
    below, unique = _identifiable(spec, data, locations)
    joint = None
    target = next((t for t in spec.risk.targets if t.record_threshold is not None), None)
    if target is not None:
        key = Measure.parse(target.measure).key
        upper = (summary.record_attributable("restricted", key, target.attack)
                 + z_value(confidence, summary.records["restricted"].n_implicates)
                 * summary.record_attributable_se("restricted", key, target.attack))
        # possibly above the threshold (upper Monte Carlo bound): the protective count
        joint = joint_count(upper, target.record_threshold, below_k=below, unique=unique)
    attack = None
    if release_attacker:  # the neighbour signal on the released implicates
        from synthgeo.pipeline.release_attack import score_release_attacker  # noqa: PLC0415
        attack = score_release_attacker(spec, data, fits, implicates, loo, mask, g,
                                        **(attack_kw or {}))
    judged = attack.by_target if attack is not None and attack.judged else None
    verdict = assess_risk(summary, spec.risk.targets, model="restricted", joint=joint,
                          confidence=confidence, release_attacker=judged)
    notes = _gate(spec, verdict)  # a FAIL under "stop" raises before the other units
    if attack is not None and not attack.judged and spec.risk.targets:
        above = attack.summary().get("n_records_above_threshold") or 0
        if above:  # the verdict does not say it: release.json and the report must
            note(notes, "release_attacker_not_judged",
                 f"the release attacker is scored, not judged ([risk] release_attacker = "
                 f'"report"): {above} records are above the target\'s threshold against it '
                 f"(largest attributable {attack.summary()['largest_attributable']:.3g}); the "
                 'verdict does not cover it; set release_attacker = "judge"')
    if reweight:  # each other unit's leave-out posterior is made, and held, while it is scored
        loos = _OnDemand(loos, {spec.loo_unit}, leave_out_posterior)
    units = (compare_loo_units(spec, data, implicates, summary, measures, g, loos=loos,
                               differs=differs, solve_seconds=solve_seconds, own_X=own_X,
                               realised=realised) if compare_units else None)
    reported = (reported_checks(spec.risk.targets, attack.by_target, confidence)
                if attack is not None and not attack.judged else ())
    return RiskScores(measures=measures, g=g, summary=summary, verdict=verdict, joint=joint,
                      identifiable=below | unique, warnings=notes, loo_units=units,
                      loo_posterior=loo_posterior, baseline_loader=kept_predictive(loo),
                      release_attack=attack,
                      attacker_reported=reported)
