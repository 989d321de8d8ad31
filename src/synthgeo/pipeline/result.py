"""What a release run returns: the pipeline's record and the front door's view of it.

:class:`ReleaseResult` holds everything the writer and the report need; :class:`Release` shows
it as xarray, ArviZ and pandas objects and writes it (``Release.write``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import xarray as xr

from synthgeo.config import ReleaseSpec
from synthgeo.inference.result import GPFit
from synthgeo.locations.diagnostics import LocationDiagnostics
from synthgeo.model.at_risk import AtRiskResult
from synthgeo.risk.within_eps import RiskResult

if TYPE_CHECKING:
    import arviz

    from synthgeo.pipeline.at_risk_rule import NeighbourChecks
    from synthgeo.pipeline.data import PreparedData
    from synthgeo.pipeline.previous import CumulativeRisk
    from synthgeo.pipeline.risk_stage import RiskScores

__all__ = ["MODELS", "ReleaseResult", "Release", "ReleaseRisk", "risk_per_record"]

#: The two models every release fits; the restricted one's implicates are released.
MODELS = ("unrestricted", "restricted")


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
    neighbour_check: NeighbourChecks
    locations: LocationDiagnostics | None = None
    cumulative: CumulativeRisk | None = None
    risk_scores: RiskScores | None = None
    seed: int | None = field(default=None, repr=False)

    @property
    def M_m(self) -> float:  # noqa: N802
        """Distance M in metres."""
        return self.at_risk.radius_m


def risk_per_record(result: ReleaseResult) -> pd.DataFrame:
    """Per-record risk of both models beside the at-risk flag (``risk_per_record.csv``).

    Returns
    -------
    pandas.DataFrame
        One row per record: the id column, ``at_risk``, ``n_neighbours_within_M``, then each
        model's :meth:`RiskResult.to_dataframe` columns suffixed ``_unrestricted`` and
        ``_restricted`` (shares of implicates within tolerance, in [0, 1]; attack flags);
        when the baselines were scored (``result.risk_scores``), also the Rao-Blackwellised
        risk, both baselines and attributable risk of both models
        (:meth:`synthgeo.pipeline.risk_stage.RiskScores.per_record`). Confidential.
    """
    table = pd.DataFrame({
        result.data.id_column: result.data.record_id,
        "at_risk": result.at_risk.at_risk,
        "n_neighbours_within_M": result.at_risk.n_neighbours,
    })
    for name in MODELS:
        rf = result.risk[name].to_dataframe().reset_index(drop=True)
        table = pd.concat([table, rf.add_suffix(f"_{name}")], axis=1)
    if result.risk_scores is not None:
        table = pd.concat([table, result.risk_scores.per_record()], axis=1)
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


@dataclass(frozen=True, kw_only=True, eq=False)
class Release:
    """A finished release job, from :func:`synthgeo.synthesize` or :func:`synthgeo.run`.

    Nothing is written until :meth:`write`.

    Attributes
    ----------
    result : ReleaseResult
        The pipeline's full record (prepared data, fits, at-risk rule, location diagnostics).
    implicates : xarray.Dataset
        Variables ``unrestricted`` and ``restricted``, dims (``implicate``, ``record``):
        synthetic responses on the model scale; coord ``at_risk`` (record).
    posterior : dict of str to arviz.InferenceData
        ``"unrestricted"`` and ``"restricted"`` fits (``posterior``: ``beta``, ``sigma2``,
        ``nugget``, ``range`` in metres, ``phi`` per metre, ``w``).
    risk : ReleaseRisk
        ``risk.to_dataframe()`` per record, ``risk.summary``, ``risk["restricted"]``.
    reiter : pandas.DataFrame
        Reiter (2003) combining-rules table (``q_bar``, ``b_m``, ``u_bar``, ``T_p``), both models
        beside the confidential fit, with CI overlap.

    Examples
    --------
    See :func:`synthgeo.synthesize`.
    """

    result: ReleaseResult

    def _single(self, what: str) -> None:
        """Refuse a single-response view of a sequential release (``[[data.responses]]``)."""
        if self.result.spec.data.sequential:
            raise AttributeError(
                f"`Release.{what}` describes one gaussian response; this release has "
                "`[[data.responses]]`: use `release.result.responses` (per response: fits, "
                "synthetic, risk_summary, utility) and `release.result.joint_risk`")

    @property
    def spec(self) -> ReleaseSpec:
        """The spec as run (every section, defaults filled in)."""
        return self.result.spec

    @property
    def M_m(self) -> float:  # noqa: N802
        """Distance M of the at-risk rule, metres."""
        return self.result.M_m

    @property
    def at_risk(self) -> np.ndarray:
        """Bool per record: no other record within M (docs/model.md)."""
        self._single("at_risk")
        return np.asarray(self.result.at_risk.at_risk, bool)

    @property
    def implicates(self) -> xr.Dataset:
        """Both models' implicates, dims (implicate, record), model scale."""
        self._single("implicates")
        r = self.result
        ds = xr.Dataset({name: r.implicates[name]["y_synthetic"].drop_vars(
            ["source_chain", "source_draw"], errors="ignore") for name in MODELS})
        ds = ds.assign_coords(at_risk=("record", self.at_risk))
        ds.attrs.update(response=r.spec.data.response, back_transform=r.spec.data.back_transform,
                        released_model="restricted", M_m=float(r.M_m))
        return ds

    @property
    def posterior(self) -> dict[str, arviz.InferenceData]:
        """Posterior of each model as ArviZ InferenceData."""
        self._single("posterior")
        return {name: fit.idata for name, fit in self.result.fits.items()}

    @property
    def risk(self) -> ReleaseRisk:
        """Disclosure risk of both models (see :class:`ReleaseRisk`)."""
        self._single("risk")
        return ReleaseRisk(result=self.result)

    @property
    def reiter(self) -> pd.DataFrame:
        """Reiter (2003) table of the analyst's model for both models and the truth."""
        self._single("reiter")
        return self.result.utility

    @property
    def seconds(self) -> dict[str, float]:
        """Wall time per stage, seconds."""
        return dict(self.result.seconds)

    def write(self, out: str | os.PathLike, *, overwrite: bool = False,
              progressbar: bool = False) -> Path:
        """Write exactly what ``synthgeo run`` writes: release/, confidential/, records, report.

        Parameters
        ----------
        out : path
            New output folder (atomic: all or nothing).
        overwrite : bool, default=False
            Replace an earlier synthgeo output folder.
        progressbar : bool, default=False
            Progress bar while the report is drawn.

        Returns
        -------
        Path
            The folder.

        Raises
        ------
        synthgeo.SpecError
            If `out` exists without `overwrite`, is not an earlier output, or holds an input.
        """
        from synthgeo.release.report import render_report
        from synthgeo.release.writer import check_output_dir, input_paths, write_release

        check_output_dir(Path(out), overwrite=overwrite, inputs=input_paths(self.spec))
        if self.spec.data.sequential:  # [[data.responses]]: its own writer and report
            from synthgeo.release.report._sequential import render_sequential_report
            from synthgeo.release.sequential_writer import write_sequential

            return write_sequential(self.result, out, overwrite=overwrite,
                                    report_html=render_sequential_report(self.result))
        html = render_report(self.result, progressbar=progressbar)
        return write_release(self.result, out, overwrite=overwrite, report_html=html,
                             seconds=dict(self.result.seconds))
