"""What a release run returns: the pipeline's record of one gaussian response.

:class:`ReleaseResult` holds everything the writer and the report need (and
:class:`~synthgeo.pipeline.responses.SequentialResult` for several responses); it knows
nothing of files: :mod:`synthgeo.release.writer` writes it, and the front door's
:class:`synthgeo.api.Release` shows it as xarray, ArviZ and pandas objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import xarray as xr

from synthgeo._repr import confidential_repr
from synthgeo.config import ReleaseSpec
from synthgeo.inference.result import GPFit
from synthgeo.locations.diagnostics import LocationDiagnostics
from synthgeo.model.at_risk import AtRiskResult
from synthgeo.risk.verdict import combine_statuses
from synthgeo.risk.within_eps import RiskResult

if TYPE_CHECKING:
    from synthgeo.pipeline.at_risk_rule import AtRiskSelection, NeighbourChecks
    from synthgeo.pipeline.data import PreparedData
    from synthgeo.pipeline.general_utility import GeneralUtility
    from synthgeo.pipeline.previous import CumulativeRisk
    from synthgeo.pipeline.release_attack import ReleaseAttack
    from synthgeo.pipeline.risk_stage import RiskScores

__all__ = ["MODELS", "ReleaseResult", "SynthesiserState", "ReleaseRisk", "risk_per_record",
           "verdicts"]

#: The two models every release fits; the restricted one's implicates are released.
MODELS = ("unrestricted", "restricted")


@dataclass(frozen=True, kw_only=True)
class SynthesiserState:
    """The stored synthesiser's state after a release (:mod:`synthgeo.inference.stored`).

    Attributes
    ----------
    fit_seed : int
        The ``random_seed`` both fits were given (a key: confidential/ only).
    used_draws : ndarray of int
        Flattened (chain-major) posterior draws that implicates of this release, or of the
        release it was drawn from and its own sources, came from.
    new_draws : ndarray of int, optional
        The draws this release's implicates come from (``synthgeo draw``: draws no implicate
        used before; a fitted run: :func:`~synthgeo.synthesis.implicates.implicate_draw_index`).
    drawn_from : dict, optional
        ``synthgeo draw``: the release drawn from (its release.json's SHA-256, register id and
        uid), for release.json's ``synthesiser.drawn_from``.
    earlier_folder : Path, optional
        ``synthgeo draw`` without a refit: the folder of the release drawn from, whose report
        figures of the records alone (the at-risk map, the spatial-k histogram) the new
        report may reuse (:mod:`synthgeo.release.report._reuse`). Written nowhere.
    """

    fit_seed: int = field(repr=False)
    used_draws: np.ndarray = field(repr=False)
    new_draws: np.ndarray | None = field(default=None, repr=False)
    drawn_from: dict | None = None
    earlier_folder: Path | None = field(default=None, repr=False, compare=False)


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
        At-risk vs other vs all, both models, reduction (see
        :func:`synthgeo.risk.within_eps.summarise_risk`).
    utility : pandas.DataFrame
        Reiter (2003) table with CI overlap against the confidential OLS fit.
    seconds : dict
        Wall time per stage.
    locations : LocationDiagnostics or None
        Spatial k within ``[anonymity] radius_m`` and the outlier-policy labels of the
        released locations, related to the at-risk records (diagnostics only: no location is
        moved or dropped); None when not computed.
    neighbour_check : NeighbourChecks
        Which rule chose the at-risk records (``[model] at_risk``) and, per measure, the
        records whose Rao-Blackwellised risk rose under the restricted model, with the
        distance to the nearest at-risk record (:mod:`synthgeo.pipeline.at_risk_rule`);
        summary in release.json, per-record rows in ``confidential/``.
    cumulative : CumulativeRisk or None
        With ``previous``: this release vs pooled with the earlier one(s), and the chain of
        earlier releases' hashes (:mod:`synthgeo.pipeline.previous`).
    risk_scores : RiskScores or None
        Rao-Blackwellised release risk, both baselines and attributable risk of both models,
        the ``[risk.targets]`` verdict and the joint count
        (:func:`synthgeo.pipeline.risk_stage.score_release_risk`); None when not computed.
    seed : int or None
        The seed the run used (the spec's, or a fresh random one): a key, written to
        ``confidential/`` only.
    detector : dict or None
        release.json's ``detector`` block (:func:`synthgeo.pipeline.detector_stage.
        detector_block`): can the protected records be told apart from release/ (AUC and its
        interval, counts only), or why the detector did not run; None when not computed.
    at_risk_selection : AtRiskSelection or None
        Under ``[model] at_risk = "risk" | "both"``: the records selected by risk, on the
        selection draws that chose them and on the fresh draws the release is judged on
        (:func:`synthgeo.pipeline.at_risk_rule.judge_on_fresh_draws`); None under "spatial".
    general_utility : GeneralUtility or None
        pMSE, its ratio and S_pMSE against the paired null and SPECKS of both models' implicates,
        with the per-variable and per-region breakdowns
        (:mod:`synthgeo.pipeline.general_utility`); None when not computed.
    protection : dict or None
        Under ``[risk] protect = "targets"``: every round tried (mechanism, records protected,
        each target's value and upper bound, smallest CI overlap, seconds), whether the
        targets were reached and, if not, why (:mod:`synthgeo.pipeline.protect`); else None.
    synthesiser : SynthesiserState or None
        What the writer stores to draw more implicates later (``confidential/synthesiser.nc``,
        :mod:`synthgeo.inference.stored`): the fits' seed, the draws implicates have come from,
        and, for a release made by ``synthgeo draw``, the release it was drawn from.
    """

    def __repr__(self) -> str:
        """Show counts and verdicts only (no record-level value, no seed)."""
        return confidential_repr(
            self, n_records=self.data.n_records, n_at_risk=int(self.at_risk.n_at_risk),
            M_m=round(float(self.M_m), 1),
            n_implicates=int(self.spec.synthesis.n_implicates),
            risk_verdict=None if self.risk_scores is None or self.risk_scores.verdict is None
            else self.risk_scores.verdict.status,
            location_verdict=None if self.locations is None else self.locations.verdict.status)

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
    neighbour_check: NeighbourChecks
    locations: LocationDiagnostics | None = None
    cumulative: CumulativeRisk | None = None
    risk_scores: RiskScores | None = None
    seed: int | None = field(default=None, repr=False)
    detector: dict | None = None
    at_risk_selection: AtRiskSelection | None = None
    general_utility: GeneralUtility | None = None
    protection: dict | None = None
    synthesiser: SynthesiserState | None = field(default=None, repr=False)
    release_attack: ReleaseAttack | None = None

    @property
    def M_m(self) -> float:  # noqa: N802
        """Distance M in metres."""
        return self.at_risk.radius_m


def verdicts(result) -> dict[str, str]:
    """Return the board's answers: ``{"location": status, "risk": status}``.

    Parameters
    ----------
    result : ReleaseResult or SequentialResult

    Returns
    -------
    dict of str to str
        Each "PASS", "FAIL" or "NOT ASSESSED" (no target, or the stage did not run: never
        PASS). The one reading of the verdicts that the console, the report's heading, the
        data users' README and :attr:`synthgeo.Release.verdicts` share.

    Several responses (:class:`~synthgeo.pipeline.responses.SequentialResult`): the risk
    verdict is FAIL if any response's is FAIL, PASS only if every response's is PASS, else NOT
    ASSESSED (:func:`synthgeo.risk.verdict.combine_statuses`).

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> verdicts(NS(locations=None, risk_scores=None))
    {'location': 'NOT ASSESSED', 'risk': 'NOT ASSESSED'}
    >>> judged = NS(verdict=NS(status="PASS"))
    >>> verdicts(NS(locations=None, responses=[NS(risk_scores=judged), NS(risk_scores=None)]))
    {'location': 'NOT ASSESSED', 'risk': 'NOT ASSESSED'}
    """
    def status(stage) -> str:
        # a stage that did not run, or one without a verdict (no target), is never PASS
        verdict = getattr(stage, "verdict", None)
        return "NOT ASSESSED" if verdict is None else verdict.status

    several = getattr(result, "responses", None)
    risk = (combine_statuses(status(r.risk_scores) for r in several) if several is not None
            else status(getattr(result, "risk_scores", None)))
    return {"location": status(getattr(result, "locations", None)), "risk": risk}


def risk_per_record(result: ReleaseResult) -> pd.DataFrame:
    """Per-record risk of both models beside the at-risk flag (``risk_per_record.csv``).

    Returns
    -------
    pandas.DataFrame
        One row per record: the data's id column, ``at_risk``, ``n_neighbours_within_M``,
        then columns ``<var>[<measure>]_<model>`` (docs/release.md, "Per-record risk
        columns"): with the baselines scored (``result.risk_scores``), the realised share,
        the Rao-Blackwellised risk, both baselines, their Monte Carlo se, the average
        attack's hits and attributable risk with its se
        (:meth:`synthgeo.pipeline.risk_stage.RiskScores.per_record`); without them, the
        within-ε shares and the average attack (``share[...]``,
        ``hit_release[.../geometric]``). Confidential.
    """
    table = pd.DataFrame({
        result.data.id_column: result.data.record_id,
        "at_risk": result.at_risk.at_risk,
        "n_neighbours_within_M": result.at_risk.n_neighbours,
    })
    if result.risk_scores is not None:  # holds the within-ε shares and hits too: not twice
        per = result.risk_scores.per_record().reset_index(drop=True)
        return pd.concat([table, per], axis=1)
    for name in MODELS:
        rf = result.risk[name].to_dataframe().reset_index(drop=True)
        table = pd.concat([table, rf.add_suffix(f"_{name}")], axis=1)
    return table


@dataclass(frozen=True, kw_only=True, eq=False)
class ReleaseRisk:
    """Within-ε disclosure risk of both models (docs/risk-and-utility.md).

    Attributes
    ----------
    by_model : dict of str to RiskResult
        ``"unrestricted"`` and ``"restricted"`` (also ``risk["restricted"]``).
    summary : pandas.DataFrame
        At-risk vs other vs all records, both models, and the reduction.
    """

    def __repr__(self) -> str:
        """Show no per-record figure (confidential)."""
        return confidential_repr(self, n_records=self.result.data.n_records)

    result: ReleaseResult

    @property
    def by_model(self) -> dict[str, RiskResult]:
        """Per-model :class:`~synthgeo.risk.within_eps.RiskResult`."""
        return dict(self.result.risk)

    @property
    def summary(self) -> pd.DataFrame:
        """At-risk vs other vs all records, both models, reduction."""
        return self.result.risk_summary

    def __getitem__(self, model: str) -> RiskResult:
        """Return the :class:`~synthgeo.risk.within_eps.RiskResult` of one model."""
        return self.result.risk[model]

    def to_dataframe(self) -> pd.DataFrame:
        """Per-record risk of both models (see :func:`risk_per_record`)."""
        return risk_per_record(self.result)
