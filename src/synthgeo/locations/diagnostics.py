"""Location diagnostics of a release: spatial k, outlier policy, treatment and verdict.

``synthgeo run`` measures spatial k and the outlier policy on the locations, publishes them as
``[anonymity] treatment`` says (``"none"``: exactly; ``"apply"``: the policy's disposals, see
:mod:`synthgeo.locations.treatment`) and judges the result (the location verdict;
docs/locations.md). Most records of a partially synthetic file have spatial_k = 1 at small
radii; that is the honest finding — their protection rests on the synthesis, and those are the
records differential smoothing must cover. The summary relates both measures to the at-risk
records of the smoothing rule.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import geopandas
import numpy as np
import pandas as pd

from synthgeo._errors import LocationError
from synthgeo.io.notices import collect, note
from synthgeo.locations.outliers import OutlierResult, apply_outlier_policy
from synthgeo.locations.policy import OutlierPolicy
from synthgeo.locations.spatial_k import SpatialKResult, measure_spatial_k
from synthgeo.locations.treatment import (
    LocationTreatment,
    LocationVerdict,
    apply_treatment,
    location_verdict,
)

__all__ = ["LocationDiagnostics", "location_diagnostics", "report_tables", "enforce_verdict"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class LocationDiagnostics:
    """Spatial k and outlier-policy labels of the released locations.

    Attributes
    ----------
    spatial_k : SpatialKResult
        Per-record k within ``radius_m`` (the attacker's positional uncertainty).
    outliers : OutlierResult
        Labels under (k, r_max_m, caps); computed with ``on_failure="report"``.
    at_risk : ndarray of bool, shape (n_records,), or None
        The smoothing rule's at-risk records, once known (see :meth:`with_at_risk`).
    seconds : float
        Wall time of the diagnostics.
    treatment : LocationTreatment or None
        The published locations (``treatment`` "none" or "apply").
    verdict : LocationVerdict or None
        PASS / FAIL / NOT ASSESSED for the published locations.
    warnings : list of dict
        Coded warnings for the board (``{"code", "message"}``): those of the loaded layer
        (``attrs["warnings"]``), the hole check, a FAIL verdict released under "warn".
    """

    spatial_k: SpatialKResult
    outliers: OutlierResult
    at_risk: np.ndarray | None = None
    seconds: float = 0.0
    treatment: LocationTreatment | None = None
    verdict: LocationVerdict | None = None
    warnings: list[dict[str, str]] = dataclasses.field(default_factory=list)

    def with_at_risk(self, at_risk: np.ndarray) -> LocationDiagnostics:
        """Copy with the at-risk flags (shape (n_records,)) attached."""
        flags = np.asarray(at_risk, dtype=bool)
        if flags.shape != self.spatial_k.spatial_k.shape:
            raise ValueError(f"`at_risk` must have shape {self.spatial_k.spatial_k.shape}, got "
                             f"{flags.shape}")
        return dataclasses.replace(self, at_risk=flags)

    def relation_to_at_risk(self) -> dict[str, Any] | None:
        """Count at-risk records also below k, or labelled other than ok (None if unknown)."""
        if self.at_risk is None:
            return None
        risk = self.at_risk
        below = self.spatial_k.below_k
        flagged = self.outliers.label != "ok"
        return {
            "n_at_risk": int(risk.sum()),
            "n_at_risk_below_k": int((risk & below).sum()),
            "n_at_risk_labelled_not_ok": int((risk & flagged).sum()),
            "n_below_k_not_at_risk": int((~risk & below).sum()),
            "n_labelled_not_ok_not_at_risk": int((~risk & flagged).sum()),
            "at_risk_by_label": {lab: int((risk & (self.outliers.label == lab)).sum())
                                 for lab in ("ok", "merge", "generalise", "suppress")},
        }

    def summary(self) -> dict[str, Any]:
        """Summary numbers for ``release.json`` (no per-record values, no locations)."""
        out = self.outliers.record()
        t = self.treatment
        return {
            "moves_locations": bool(t is not None and t.moves_locations),
            "treatment": None if t is None else {
                "treatment": t.treatment, "spatial_k_after": t.spatial_k_after,
                "withheld": t.withheld, "totals": t.totals},
            "spatial_k": {**self.spatial_k.summary(),
                          "histogram": self.spatial_k.histogram().to_dict("records")},
            "outlier_policy": {key: out[key] for key in (
                "policy", "unit_column", "time_column", "n_passes", "converged", "labels",
                "disposals", "isolation_ratio", "isolation_ratio_time", "suppressed",
                "n_units_breaching", "suggestions", "hole_check", "group_extent",
                "generalised_cells_m", "bias_statement", "refused", "failures", "advice")},
            "at_risk": self.relation_to_at_risk(),
            "seconds": self.seconds,
        }

    def per_record(self) -> pd.DataFrame:
        """Return per-record k and policy labels (confidential folder only).

        The policy's columns are prefixed ``policy_`` (``policy_label``, ``policy_disposal``,
        ...): what the outlier policy would do; this release moves no location.
        """
        sk = self.spatial_k.to_dataframe().drop(columns=["x_m", "y_m"])
        ol = self.outliers.to_dataframe()
        keep = [c for c in ol.columns if c not in sk.columns and not c.startswith("published")]
        # what the policy *would* do: nothing is moved in this release
        hypothetical = {c: f"policy_{c}" for c in keep if c.startswith(("label", "disposal",
                                                                        "flagged", "group",
                                                                        "cell"))}
        out = pd.concat([sk, ol[keep].rename(columns=hypothetical)], axis=1)
        if self.treatment is not None and self.treatment.treatment == "apply":
            out["released"] = self.treatment.released
            out["released_disposal"] = self.treatment.disposal
        if self.at_risk is not None:
            out["at_risk"] = self.at_risk
        return out


def location_diagnostics(
    points: geopandas.GeoDataFrame,
    *,
    radius_m: float = 100.0,
    k: int = 5,
    k_max: int | None = 100,
    policy: OutlierPolicy,
    group_by: Sequence[str] = (),
    unit: str | None = None,
    time_column: str | None = None,
    subject: str | None = None,
    id_column: str | None = None,
    treatment: str = "none",
    attributes: Sequence[str] | None = None,
) -> LocationDiagnostics:
    """Spatial k, outlier-policy labels, the treatment and the verdict of released locations.

    Parameters
    ----------
    points : geopandas.GeoDataFrame
        Released locations, projected CRS in metres.
    radius_m : float, default=100
        Attacker's positional uncertainty for exact locations, metres.
    k : int, default=5
        Threshold for spatial k (the policy uses ``policy.k``).
    k_max : int or None, default=100
        Cap on counts (read "≥ k_max").
    policy : OutlierPolicy
        r_max_m, ratios, caps. A breached cap or a missing fixed point is reported
        (``outliers.failures``, the summary's ``refused``), not raised and not warned about:
        the release moves no location, so it is a finding for the board, not a failure.
    group_by : sequence of str, default=()
        Quasi-identifier columns for spatial k.
    unit, time_column, subject, id_column : str, optional
        Columns (see :func:`synthgeo.locations.outliers.apply_outlier_policy`).
    treatment : {"none", "apply"}, default="none"
        How the locations are published (see :func:`synthgeo.locations.treatment.apply_treatment`).
        Under "none" the bias statement says what suppression *would* do.
    attributes : sequence of str, optional
        Columns compared between the records the policy suppresses and the others (default:
        every column but id, location, unit, time and subject; ``synthgeo run`` passes the
        model's covariates and responses).

    Returns
    -------
    LocationDiagnostics

    Raises
    ------
    InputError, SpecError, TypeError
        As :func:`synthgeo.locations.spatial_k.measure_spatial_k` and
        :func:`synthgeo.locations.outliers.apply_outlier_policy`.
    """
    t0 = time.perf_counter()
    sk = measure_spatial_k(points, radius_m, k=k, group_by=list(group_by), subject=subject,
                           k_max=k_max, id_column=id_column)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the hole check is reported in the summary
        ol = apply_outlier_policy(points, policy, unit=unit, time=time_column, subject=subject,
                                  attributes=attributes, id_column=id_column, on_failure="report")
    if treatment != "apply":  # diagnosed only: say what suppression would do
        ol = dataclasses.replace(ol, bias_statement=ol.conditional_bias_statement())
    treated = apply_treatment(points, ol, sk, treatment=treatment, id_column=id_column)
    hole = [{"code": "suppression_hole", "message": ol.hole["message"]}] \
        if ol.hole.get("flag") and treatment == "apply" else []
    return LocationDiagnostics(spatial_k=sk, outliers=ol, seconds=time.perf_counter() - t0,
                               treatment=treated, verdict=location_verdict(ol, treated, sk),
                               warnings=collect(points.attrs.get("warnings"), hole))


def enforce_verdict(locations: LocationDiagnostics, on_failure: str) -> LocationDiagnostics:
    """Stop on a FAIL location verdict, or record it as the warning ``location_verdict_fail``.

    Parameters
    ----------
    locations : LocationDiagnostics
    on_failure : {"stop", "warn"}
        ``[anonymity] on_location_failure``.

    Returns
    -------
    LocationDiagnostics
        `locations`, with the warning added under "warn".

    Raises
    ------
    LocationError
        On FAIL with ``on_failure = "stop"`` (the message gives the verdict and the fix).
    ValueError
        If `on_failure` is neither "stop" nor "warn".
    """
    if on_failure not in ("stop", "warn"):
        raise ValueError(f'`on_failure` must be "stop" or "warn", got {on_failure!r}')
    v = locations.verdict
    if v is None or v.status != "FAIL":
        return locations
    if on_failure == "stop":
        raise LocationError(v.summary_line() + '. Nothing was written; set `[anonymity] '
                            'on_location_failure = "warn"` (or --on-location-failure warn) to '
                            "release with the FAIL recorded in release.json and the report")
    notes = list(locations.warnings)
    note(notes, "location_verdict_fail", v.summary_line())
    return dataclasses.replace(locations, warnings=notes)


def _treatment_rows(locations: LocationDiagnostics) -> list[tuple[str, str]]:
    """Overview rows: the treatment, the verdict, spatial k after it, withheld, warnings."""
    t, v = locations.treatment, locations.verdict
    if t is None:
        return [("locations moved in this release", "none (diagnostics only)")]
    d = v.details if v is not None else {}
    by_unit = t.withheld.get("by_unit")
    moved = ("none (diagnostics only)" if t.treatment == "none" else
             f"{d.get('n_moved', 0)} moved (merged to group centroids, generalised to cell "
             f"centres), {t.totals['n_withheld']} withheld" + (
                 f" (by {t.withheld['unit_column']}: "
                 + ", ".join(f"{u} {n}" for u, n in by_unit.items()) + ")" if by_unit else ""))
    rows = [("location treatment", f'"{t.treatment}"'),
            ("locations moved in this release", moved)]
    if v is not None:
        rows.append(("location verdict", v.status + ("" if v.passed else
                                                     " — " + "; ".join(v.reasons))))
        w = d.get("widest_disposal")
        if w is not None:  # the bound on every disposal (docs/locations.md)
            rows.append(("widest disposal released (largest distance true → published)",
                         "none (no released location moved)" if w["kind"] == "none" else
                         (f"cell {w['cell_m']:,.0f} m" if w["kind"] == "cell" else
                          "merge group") + f": {w['radius_m']:,.0f} m, r_max "
                         f"{w['r_max_m']:,.0f} m" + ("" if w["within_r_max"] else
                                                     " — WIDER than r_max")))
    a = t.spatial_k_after
    if t.treatment == "apply":
        rows.append((f"spatial k after the treatment: below k = {a['k']} / median",
                     f"{a.get('n_below_k', 0)} ({a.get('share_below_k') or 0.0:.1%}) / "
                     f"{a.get('median', '–')}"))
        if t.totals["n_withheld"]:
            rows.append(("risk and utility figures", f"computed on all {t.totals['n_records']} "
                                                     "records, the withheld ones included"))
    rows += [(f"warning: {w['code']}", w["message"]) for w in locations.warnings]
    return rows


def report_tables(locations: LocationDiagnostics) -> dict[str, Any]:
    """Tables for the board's report (the report module lays them out).

    Parameters
    ----------
    locations : LocationDiagnostics

    Returns
    -------
    dict
        ``overview`` (item/value), ``k_distribution`` (every observed k), ``k_histogram``
        (binned histogram data: lower, upper, label, n_records, share), ``k_by_group``,
        ``worst_offenders`` (confidential: true locations), ``labels`` (label × disposal
        counts), ``units`` (per-unit suppressed shares; empty without a unit column),
        ``at_risk`` (at-risk × label / below-k cross-table; empty before the at-risk rule),
        ``bias`` (SMD table) as pandas DataFrames, and ``bias_statement`` (str).
    """
    sk, ol = locations.spatial_k, locations.outliers
    s = sk.summary()
    pol = ol.policy
    rows = [
        ("radius (attacker's positional uncertainty)", f"{sk.radius_m:g} m"),
        ("grouped by", " × ".join(sk.group_by) or "location only"),
        ("records", f"{s['n_records']}"),
        ("spatial k: min / 5th pct / median",
         f"{sk.label(s['min'])} / {sk.label(s['p05'])} / {sk.label(s['median'])}"
         if s["n_records"] else "–"),
        (f"records below k = {sk.k}", f"{s.get('n_below_k', 0)} "
                                       f"({s.get('share_below_k', 0.0):.1%})"),
        ("records with spatial k = 1", f"{s.get('n_k_equals_1', 0)}"),
        ("outlier policy", f"k = {pol.k}, r_max = {pol.r_max_m:g} m, ratios "
                           f"{pol.merge_ratio:g}/{pol.generalise_ratio:g}, caps "
                           f"{pol.max_suppressed_share:.0%} global / "
                           f"{pol.max_unit_suppressed_share:.0%} per unit"),
        ("labels (ok / merge / generalise / suppress)",
         " / ".join(str(v) for v in ol.label_counts().values())),
        ("would suppress", f"{ol.overall['n_suppressed']} ({ol.overall['share']:.2%})"),
        ("policy outcome", "passes" if not ol.refused else "would refuse: "
                                                            + ol.refusal_message()),
        *_treatment_rows(locations),
    ]
    rel = locations.relation_to_at_risk()
    if rel is not None:
        rows.append(("at-risk records: below k / labelled not ok",
                     f"{rel['n_at_risk_below_k']} / {rel['n_at_risk_labelled_not_ok']} of "
                     f"{rel['n_at_risk']}"))
    labels = pd.crosstab(pd.Series(ol.label, name="label"),
                         pd.Series(ol.disposal, name="disposal")).reset_index()
    if locations.at_risk is not None:
        risk = pd.Series(np.where(locations.at_risk, "at risk", "not at risk"), name="at_risk")
        at_risk = pd.crosstab(risk, [pd.Series(np.where(sk.below_k, f"k < {sk.k}",
                                                        f"k >= {sk.k}"), name="spatial_k"),
                                     pd.Series(ol.label, name="label")])
        at_risk.columns = [f"{a}, {b}" for a, b in at_risk.columns]
        at_risk = at_risk.reset_index()
    else:
        at_risk = pd.DataFrame()
    return {
        "overview": pd.DataFrame(rows, columns=["item", "value"]),
        "k_distribution": sk.distribution(),
        "k_histogram": sk.histogram(),
        "k_by_group": sk.by_group(),
        "worst_offenders": sk.worst_offenders(10),
        "labels": labels,
        "units": ol.units if ol.units is not None else pd.DataFrame(),
        "at_risk": at_risk,
        "bias": ol.bias,
        "bias_statement": ol.bias_statement,
    }
