r"""At-risk records beyond spatial isolation, and the neighbour check (issue 11, items 4).

``[model] at_risk`` (docs/risk-and-utility.md, "At-risk records by risk"):

- ``"spatial"`` (default): the paper's rule, no other record within M
  (:func:`synthgeo.model.at_risk.find_at_risk`);
- ``"risk"``: after the unrestricted fit and its implicates, every record whose
  Rao-Blackwellised attributable risk a_i = r̃_i − r̃_i^{b*} under the *unrestricted* model
  possibly exceeds a ``[risk.targets] record_threshold`` (for that target's measure) — its
  upper bound a_i + z_{1−α} se_i does, at ``[risk] confidence`` (:mod:`synthgeo.risk.noise`) —
  is at risk;
- ``"both"``: either rule.

The attributable risk used is always the Rao-Blackwellised one (the ``"share"`` attack, exact
normal probabilities; :mod:`synthgeo.risk.rao_blackwell`), whatever the target's ``attack``:
a threshold on 0/1 hits or realised shares flags Monte Carlo noise. b* is the stronger of the
leave-one-out and public baselines over all records, chosen on the unrestricted model alone
(the final risk stage chooses it over both models). Because the restricted model's effect is
per *site*, a record flagged by risk puts its whole site at risk. The restricted model is then
fitted once with these records and the release scored once: no iteration.

**Neighbour check** (always run; Hu, Savitsky & Williams 2022, J. Survey Statistics and
Methodology 10(5), arXiv:1908.07639: protecting the riskiest records can raise the risk of
others): per scored measure, every record whose Rao-Blackwellised risk rose from the
unrestricted to the restricted model, by how much, its Monte Carlo se (from the per-implicate
paired differences of the two models' exact probabilities) and its distance in metres to the
nearest other at-risk record (:func:`synthgeo.risk.neighbours.neighbour_check`). A rise counts
(``n_rose``) only beyond its noise: d_i > z_{1−α/n} se(d_i) (:mod:`synthgeo.risk.noise`).
Beside it, the **same-model noise level** (``n_rose_same_model``): the released unrestricted
implicates split into two independent halves (first and second L/2), the same rule applied to
the second half against the first with its se computed the same way at L/2 — the count a
comparison of a model with itself shows, computed, not assumed. The raw counts (any rise,
rise > :data:`RISE_REPORTED`) are kept as ``n_rose_any`` and ``n_rose_any_above_min``, and the
same-model raw count as ``n_rose_any_same_model``. The rise of r̃ equals the rise of the share
attack's attributable risk, whose baseline is common to both models. release.json keeps
aggregates only; the per-record rows go to ``confidential/``.

**Fresh draws for judgement** (issue 24, item 3): the risk rule scores the unrestricted model
on its *selection draws* (:func:`synthgeo.synthesis.implicates.selection_draw_index`, disjoint
from the implicates' draws), and the release is judged on the implicates' draws;
:func:`judge_on_fresh_draws` sets the selected records' figures on both side by side
(:mod:`synthgeo.risk.fresh_draws`; release.json ``at_risk_selection``, the report's "Records
selected by risk" table).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import xarray as xr

from synthgeo.config import ReleaseSpec
from synthgeo.inference.result import GPFit
from synthgeo.io.points import coordinates_m
from synthgeo.model.at_risk import AtRiskResult
from synthgeo.model.pseudo_likelihood import lipschitz_bound, pseudo_weights
from synthgeo.pipeline.data import PreparedData
from synthgeo.pipeline.risk_stage import (
    loo_predictive,
    own_value_predictive,
    public_X,
    risk_measures,
    score_model,
)
from synthgeo.risk.attributable import attributable_summary
from synthgeo.risk.fresh_draws import FreshDrawJudgement, fresh_draw_judgement
from synthgeo.risk.measure import Measure
from synthgeo.risk.neighbours import NeighbourCheck, neighbour_check, same_model_rises
from synthgeo.risk.noise import paired_se, z_value
from synthgeo.risk.predictive import Predictive
from synthgeo.risk.rao_blackwell import within_probability
from synthgeo.risk.records import RecordRisk
from synthgeo.risk.selection import AtRiskChoice, choose_at_risk

__all__ = ["score_unrestricted", "risk_rule", "pseudo_likelihood_weights", "pseudo_bound",
           "NeighbourChecks", "run_neighbour_check", "RISE_REPORTED", "AtRiskSelection",
           "judge_on_fresh_draws", "FRESH_DRAW_RULE"]

#: Rises of r̃ above this are counted separately in release.json (the smallest rise a board
#: would read as a change of risk: 1 percentage point).
RISE_REPORTED = 0.01



def score_unrestricted(spec: ReleaseSpec, data: PreparedData, fit: GPFit,
                       implicates: xr.Dataset, *, g: str | None = None,
                       own_X: np.ndarray | None = None) -> RecordRisk:
    """Per-record risk of the unrestricted model: release, both baselines, every measure.

    The risk stage's own scoring (:func:`synthgeo.pipeline.risk_stage.score_model`, one home).

    Parameters
    ----------
    spec : ReleaseSpec
    data : PreparedData
    fit : GPFit
        The unrestricted fit.
    implicates : xarray.Dataset
        Its implicates (:func:`synthgeo.synthesis.implicates.draw_implicates`: ``y_synthetic``,
        ``y_mean``, ``y_sd``), model scale.
    g : {"exp", "identity"}, optional
        The response's map to the person's scale (default: ``[data] back_transform``; a
        response of several: its own, :func:`synthgeo.pipeline.responses.response_scale_of`).
    own_X : ndarray of shape (n_records, p) or (L, n_records, p), optional
        A later response of several: the covariates the attacker holds (the earlier
        responses' released values, paired with the implicates when 3-D), as
        :func:`~synthgeo.pipeline.risk_stage.loo_predictive` and the final risk stage; also
        the public baseline's regressors (their mean over implicates).

    Returns
    -------
    RecordRisk
        Confidential.
    """
    loo = loo_predictive(spec, data, fit, implicates, own_X=own_X,
                         reweight=spec.loo_posterior == "reweighted")
    public = data if own_X is None else dataclasses.replace(data, X=public_X(own_X))
    return score_model(public, implicates, loo, risk_measures(spec),
                       g or spec.data.back_transform)


def _selection_attributable(record_risk: RecordRisk, targets) -> tuple[list, np.ndarray,
                                                                       np.ndarray]:
    """Measure keys, a_i and se_i (n_targets, n_records) of the unrestricted model, share attack.

    b* chosen on the unrestricted model alone, over all records (the risk rule's baseline).
    """
    summary = attributable_summary({"unrestricted": record_risk})
    keys = [Measure.parse(t.measure).key for t in targets]
    a = np.stack([summary.record_attributable("unrestricted", k, "share") for k in keys])
    se = np.stack([summary.record_attributable_se("unrestricted", k, "share") for k in keys])
    return keys, a, se


def pseudo_likelihood_weights(spec: ReleaseSpec, record_risk: RecordRisk) -> np.ndarray:
    """Return the pseudo-likelihood's α_i from the risk rule's scores (``at_risk_weight``).

    α_i = max(1 − r̃_i, α_min) with r̃_i the record's attributable risk under the unrestricted
    fit (share attack, Rao-Blackwellised, at the selection draws) normalised by the largest,
    per measure of a target with a ``record_threshold``, the largest over those measures
    (:func:`synthgeo.model.pseudo_likelihood.pseudo_weights`).

    Returns
    -------
    ndarray of shape (n_records,)
        Confidential (a function of the records' risks).
    """
    targets = [t for t in spec.risk.targets if t.record_threshold is not None]
    _, a, _ = _selection_attributable(record_risk, targets)
    return pseudo_weights(a)


def risk_rule(spec: ReleaseSpec, data: PreparedData, spatial: AtRiskResult,
              record_risk: RecordRisk | None = None) -> tuple[AtRiskChoice, AtRiskResult]:
    """Apply ``[model] at_risk`` to the spatial rule and the unrestricted record risk.

    Parameters
    ----------
    spec : ReleaseSpec
        ``[model] at_risk``; ``[risk.targets]`` with a ``record_threshold``.
    data : PreparedData
    spatial : AtRiskResult
        The spatial rule at M.
    record_risk : RecordRisk, optional
        :func:`score_unrestricted` (needed unless ``at_risk = "spatial"``).

    Returns
    -------
    choice : AtRiskChoice
        Record flags: ``spatial``, ``by_risk`` and their combination (before the site rule).
    at_risk : AtRiskResult
        ``spatial`` with ``at_risk`` / ``site_at_risk`` replaced: a site is at risk when any
        of its records is; every record of an at-risk site is at risk (``radius_m``,
        ``n_neighbours`` unchanged).

    Raises
    ------
    ValueError
        If the rule needs ``record_risk`` and none is given, or no target has a threshold.

    Examples
    --------
    >>> import numpy as np
    >>> from synthgeo.model.at_risk import AtRiskResult
    >>> from types import SimpleNamespace as NS
    >>> spec = NS(model=NS(at_risk="spatial"))
    >>> sp = AtRiskResult(radius_m=10.0, k=2, n_neighbours=np.array([0, 1, 1]),
    ...                   at_risk=np.array([True, False, False]),
    ...                   site_at_risk=np.array([True, False]))
    >>> choice, res = risk_rule(spec, None, sp)
    >>> choice.rule, res.n_at_risk
    ('spatial', 1)
    """
    rule = spec.model.at_risk
    if rule == "spatial":
        return choose_at_risk("spatial", np.asarray(spatial.at_risk, bool)), spatial
    targets = [t for t in spec.risk.targets if t.record_threshold is not None]
    if record_risk is None or not targets:
        raise ValueError(f'at_risk = "{rule}" needs the unrestricted record risk and a '
                         "[risk.targets] record_threshold.")
    keys, a, se = _selection_attributable(record_risk, targets)
    thresholds = np.array([t.record_threshold for t in targets], float)
    choice = choose_at_risk(rule, np.asarray(spatial.at_risk, bool), attributable=a,
                            record_threshold=thresholds, se=se,
                            z=z_value(getattr(spec.risk, "confidence", 0.95),
                                      record_risk.n_implicates))
    site_index = data.sites.site_index
    site = np.zeros(spatial.site_at_risk.shape[0], bool)
    np.logical_or.at(site, site_index, choice.at_risk)
    result = AtRiskResult(radius_m=spatial.radius_m, k=spatial.k,
                          n_neighbours=spatial.n_neighbours, at_risk=site[site_index],
                          site_at_risk=site)
    return choice, result


@dataclass(frozen=True, kw_only=True, eq=False)
class NeighbourChecks:
    """The neighbour check per scored measure, and the at-risk rule that preceded it.

    Attributes
    ----------
    checks : dict of str to NeighbourCheck
        By measure key (``"abs:10000"``, ``"rel:0.1"``); per-record rows are confidential.
    choice : AtRiskChoice
        Which records were flagged, by which rule (before the site rule).
    at_risk : ndarray of bool, shape (n_records,)
        The records the restricted model protected (every record of an at-risk site).
    record_id : ndarray of shape (n_records,)
        Ids, for the confidential table.
    id_column : str
    same_model : dict of str to dict or None
        By measure key, :func:`synthgeo.risk.neighbours.same_model_rises` of the unrestricted
        implicates (None with fewer than 4 implicates).
    """

    checks: dict[str, NeighbourCheck]
    choice: AtRiskChoice
    at_risk: np.ndarray = field(repr=False)
    record_id: np.ndarray = field(repr=False)
    id_column: str = "id"
    same_model: dict[str, dict | None] = field(default_factory=dict)

    def summary(self) -> dict:
        """Return the aggregates for release.json (no per-record value).

        Returns
        -------
        dict
            ``rule``, ``n_at_risk``, ``n_spatial``, ``n_by_risk``, ``min_rise_reported``
            (:data:`RISE_REPORTED`) and per measure: ``n_records``, ``n_rose`` (rises beyond
            Monte Carlo noise, d_i > z se_i), ``n_rose_same_model`` (the same count between
            two halves of the unrestricted implicates: the noise level; null with L < 4),
            ``z_rise`` (the familywise quantile), ``n_rose_at_risk`` (at-risk records among
            ``n_rose``), the raw extras ``n_rose_any`` (any point rise),
            ``n_rose_any_same_model`` and ``n_rose_any_above_min`` (point rise >
            ``min_rise_reported``), then over the records whose point estimate rose:
            ``largest_rise``, ``mean_rise``, ``median_distance_m``,
            ``distance_m_of_largest`` (metres to the nearest other at-risk record; null
            when there is none).
        """
        out: dict = {"rule": self.choice.rule, "n_at_risk": int(self.at_risk.sum()),
                     "n_spatial": int(self.choice.spatial.sum()),
                     "n_by_risk": int(self.choice.by_risk.sum()),
                     "min_rise_reported": RISE_REPORTED, "by_measure": {}}
        for key, chk in self.checks.items():
            t = chk.table
            finite = t["distance_m"].replace(np.inf, np.nan)
            same = self.same_model.get(key)
            out["by_measure"][key] = {
                "n_records": chk.n_records, "n_rose": chk.n_rose,
                "n_rose_same_model": None if same is None else same["n_rose"],
                "z_rise": float(chk.z),
                "n_rose_at_risk": int((t["at_risk"] & t["beyond_noise"]).sum()),
                "n_rose_any": chk.n_rose_any,
                "n_rose_any_same_model": None if same is None else same["n_rose_any"],
                "n_rose_any_above_min": int((t["rise"] > RISE_REPORTED).sum()),
                "largest_rise": float(t["rise"].max()) if len(t) else 0.0,
                "mean_rise": float(t["rise"].mean()) if len(t) else 0.0,
                "median_distance_m": (float(finite.median()) if finite.notna().any()
                                      else None),
                "distance_m_of_largest": (float(finite.iloc[0]) if len(t)
                                          and np.isfinite(finite.iloc[0]) else None),
            }
        return out

    def to_dataframe(self) -> pd.DataFrame:
        """Per-record rows (confidential): id, ``measure``, then the check's columns."""
        frames = []
        for key, chk in self.checks.items():
            t = chk.to_dataframe()
            ids = self.record_id[t["record"].to_numpy(int)]
            t = t.drop(columns="record")  # positions; the id column may itself be "record"
            t.insert(0, self.id_column, ids)
            t.insert(1, "measure", key)
            frames.append(t)
        cols = [self.id_column, "measure", "at_risk", "risk_unrestricted", "risk_restricted",
                "rise", "rise_se", "beyond_noise", "distance_m"]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)


def run_neighbour_check(spec: ReleaseSpec, data: PreparedData, implicates: dict[str, xr.Dataset],
                        at_risk: AtRiskResult, choice: AtRiskChoice, *,
                        g: str | None = None) -> NeighbourChecks:
    """Rao-Blackwellised risk of both models per measure, and the records whose risk rose.

    Parameters
    ----------
    spec : ReleaseSpec
    data : PreparedData
    implicates : dict of str to xarray.Dataset
        ``"unrestricted"`` and ``"restricted"`` implicates with their predictive (``y_mean``,
        ``y_sd``; :func:`synthgeo.synthesis.implicates.draw_implicates`).
    at_risk : AtRiskResult
        The at-risk records the restricted model protects (site rule applied).
    choice : AtRiskChoice
    g : str, optional
        The response's back-transform to the release scale (``"exp"``, ``"identity"``);
        default ``[data] back_transform``. A response of ``[[data.responses]]`` passes its own
        (:func:`synthgeo.pipeline.responses.response_scale_of`), with ``data`` holding its y.

    Returns
    -------
    NeighbourChecks
    """
    coords = coordinates_m(data.gdf)
    # own values as judged (over the input noise under input_noise_reading = "expected")
    preds = {m: own_value_predictive(ds) for m, ds in implicates.items()}
    g = spec.data.back_transform if g is None else g
    confidence = getattr(spec.risk, "confidence", 0.95)
    checks, same = {}, {}
    flags = np.asarray(at_risk.at_risk, bool)
    for m in risk_measures(spec):  # (L, n) of the unrestricted model, one measure at a time
        pu = within_probability(preds["unrestricted"], data.y, m, g)
        mean_r, rise_se = _restricted_side(pu, preds["restricted"], data.y, m, g)
        paired = pu.shape[0] == preds["restricted"].n_implicates
        checks[m.key] = neighbour_check(coords, flags, pu.mean(axis=0), mean_r,
                                        rise_se=rise_se, confidence=confidence,
                                        n_rows=pu.shape[0] if paired else None)
        same[m.key] = same_model_rises(pu, confidence)
        del pu
    return NeighbourChecks(checks=checks, choice=choice, at_risk=flags,
                           record_id=np.asarray(data.record_id), id_column=data.id_column,
                           same_model=same)


#: Records per block of the restricted model's exact probabilities in the neighbour check
#: (:func:`_restricted_side`): 2^15 records × L = 100 implicates, 26 MB per array.
_RECORD_BLOCK = 2**15


def _restricted_side(pu: np.ndarray, restricted: Predictive, y: np.ndarray, measure: Measure,
                     g: str) -> tuple[np.ndarray, np.ndarray]:
    """Return the restricted model's mean exact probability per record, and the rise's se.

    ``mean over implicates of within_probability(restricted)`` and ``paired_se(pu, that)``,
    a block of records at a time: the same doubles as the whole (L, n) array at once (each
    record's values and sums over implicates are its own), without holding it and its
    differences from ``pu``.
    """
    y = np.asarray(y, dtype=float)
    n = pu.shape[1]
    mean_r, se = np.empty(n), np.empty(n)
    # no block of a single record when there are more: numpy sums a lone column over the
    # implicates pairwise, and the columns of a wider block one implicate after another
    starts = [lo for lo in range(0, n, _RECORD_BLOCK) if n == 1 or n - lo != 1 or lo == 0]
    for lo, hi in zip(starts, [*starts[1:], n]):
        cols = slice(lo, hi)
        part = Predictive(mean=restricted.mean[:, cols], sd=restricted.sd[:, cols],
                          name=restricted.name)
        pr = within_probability(part, y[cols], measure, g)
        mean_r[cols] = pr.mean(axis=0)
        se[cols] = paired_se(pu[:, cols], pr)
    return mean_r, se


#: How the risk rule's selection and the judgement use the posterior draws (release.json).
FRESH_DRAW_RULE = (
    "records selected by risk on the unrestricted model's selection draws (posterior draws no "
    "implicate is made from); judged on the implicates' draws (fresh for them): PASS when no "
    "selected record is possibly above the record_threshold (upper Monte Carlo bound) under "
    "the released model there")


@dataclass(frozen=True, kw_only=True, eq=False)
class AtRiskSelection:
    """The risk rule's selection draws and the fresh-draw judgement of what it selected.

    Attributes
    ----------
    rule : {"risk", "both"}
    selection_draws, judged_draws : ndarray of int
        Flattened (chain, draw) indices: where the selection scored the unrestricted model,
        and where the implicates (the judgement) come from.
    judgements : tuple of FreshDrawJudgement
        One per ``[risk.targets]`` target with a ``record_threshold``.
    """

    rule: str
    selection_draws: np.ndarray = field(repr=False)
    judged_draws: np.ndarray = field(repr=False)
    judgements: tuple[FreshDrawJudgement, ...]

    @property
    def draws_disjoint(self) -> bool:
        """Whether no posterior draw is both a selection and a judged draw."""
        return not np.intersect1d(self.selection_draws, self.judged_draws).size

    @property
    def status(self) -> str:
        """FAIL when any judgement fails; NOTHING SELECTED when none selected anything."""
        statuses = [j.status for j in self.judgements]
        if "FAIL" in statuses:
            return "FAIL"
        return "PASS" if "PASS" in statuses else "NOTHING SELECTED"

    def summary(self) -> dict:
        """Return the aggregates for release.json's ``at_risk_selection`` (no per-record value)."""
        return {"rule": self.rule, "n_selection_draws": int(self.selection_draws.size),
                "n_judged_draws": int(self.judged_draws.size),
                "draws_disjoint": self.draws_disjoint, "status": self.status,
                "rule_text": FRESH_DRAW_RULE,
                "targets": [j.to_dict() for j in self.judgements]}


def _flat_draws(fit: GPFit, ds: xr.Dataset) -> np.ndarray:
    """Flattened (chain, draw) index of each implicate of ``ds`` (chain-major)."""
    post = fit.posterior
    chain = np.searchsorted(post["chain"].values, ds["source_chain"].values)
    draw = np.searchsorted(post["draw"].values, ds["source_draw"].values)
    return chain * post.sizes["draw"] + draw


def judge_on_fresh_draws(spec: ReleaseSpec, choice: AtRiskChoice, selection_risk: RecordRisk,
                         selection_draws: np.ndarray, fits: dict[str, GPFit],
                         implicates: dict[str, xr.Dataset], summary) -> AtRiskSelection:
    """Judge the records selected by risk on the release's draws, beside their selection draws.

    Parameters
    ----------
    spec : ReleaseSpec
        ``[model] at_risk`` ("risk" or "both"), ``[risk.targets]``, ``[risk] confidence``.
    choice : AtRiskChoice
        The risk rule's flags (``by_risk``: the records judged).
    selection_risk : RecordRisk
        :func:`score_unrestricted` on the selection draws (what selected them).
    selection_draws : ndarray of int
        Their flattened posterior indices.
    fits : dict of str to GPFit
    implicates : dict of str to xarray.Dataset
        Both models' released implicates (the fresh draws).
    summary : AttributableSummary
        The risk stage's (:func:`~synthgeo.pipeline.risk_stage.score_release_risk`): both
        models' a_i and se_i on the fresh draws, under the one baseline rule.

    Returns
    -------
    AtRiskSelection
    """
    targets = [t for t in spec.risk.targets if t.record_threshold is not None]
    keys, a_sel, se_sel = _selection_attributable(selection_risk, targets)
    confidence = getattr(spec.risk, "confidence", 0.95)
    n_rows = selection_risk.n_implicates
    judgements = []
    for i, (key, t) in enumerate(zip(keys, targets)):
        fresh = {m: (summary.record_attributable(m, key, "share"),
                     summary.record_attributable_se(m, key, "share"))
                 for m in ("unrestricted", "restricted")}
        judgements.append(fresh_draw_judgement(
            choice.by_risk, (a_sel[i], se_sel[i]), fresh, threshold=t.record_threshold,
            measure=key, confidence=confidence, n_rows=n_rows))
    return AtRiskSelection(rule=choice.rule, selection_draws=np.asarray(selection_draws, int),
                           judged_draws=_flat_draws(fits["restricted"],
                                                    implicates["restricted"]),
                           judgements=tuple(judgements))


def pseudo_bound(y: np.ndarray, weights: np.ndarray, implicates: dict) -> dict:
    """Return the pseudo-likelihood's Lipschitz bound on the released draws, and the unweighted.

    Δ_α = max over the released implicates' posterior draws and the records of
    α_i |log N(y_i; y_mean, y_sd²)| and ε = 2Δ_α (Savitsky, Williams & Hu 2022;
    :func:`synthgeo.model.pseudo_likelihood.lipschitz_bound`), model scale; beside it the
    same maximum with α = 1 on the same (pseudo-posterior) draws and on the unrestricted
    fit's implicate draws, and the weights' aggregates. No record's value.

    Parameters
    ----------
    y : ndarray of shape (n_records,)
    weights : ndarray of shape (n_records,)
        α_i.
    implicates : dict
        ``"restricted"`` and ``"unrestricted"`` implicates (``y_mean``, ``y_sd``).

    Returns
    -------
    dict
        For release.json ``synthesis.pseudo_likelihood``.
    """
    rel, unr = implicates["restricted"], implicates["unrestricted"]
    b = lipschitz_bound(y, rel["y_mean"].values, rel["y_sd"].values, weights)
    return {
        "weights": "alpha_i = max(1 - r_i, alpha_min), r_i = the record's attributable risk "
                   "(share attack) under the unrestricted fit at the risk rule's selection "
                   "draws, normalised by the largest positive one per target measure (with a "
                   "record_threshold), largest over measures (Hu, Williams & Savitsky)",
        "alpha_min": float(np.min(weights)), "alpha_mean": float(np.mean(weights)),
        "n_weighted": int(np.sum(weights < 1.0)), "n_eff": float(np.sum(weights)),
        "delta_alpha": b["delta"], "epsilon": b["epsilon"], "n_draws": b["n_draws"],
        "delta_unweighted": lipschitz_bound(y, rel["y_mean"].values,
                                            rel["y_sd"].values)["delta"],
        "delta_unrestricted": lipschitz_bound(y, unr["y_mean"].values,
                                              unr["y_sd"].values)["delta"],
        "bound": "Delta_alpha = max over the released implicates' posterior draws and the "
                 "records of alpha_i |log p(y_i | theta)| (model-scale density, nats); "
                 "epsilon = 2 Delta_alpha (Savitsky, Williams & Hu 2022): this database's "
                 "bound over these draws, an asymptotic DP figure, not a worst case over "
                 "databases",
    }
