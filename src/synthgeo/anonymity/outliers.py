"""The outlier policy: isolation ratios, labels, disposals to a fixed point, caps and checks.

Spec: anonymity.md, "Outlier policy". For record i, d_i is the distance to its (k−1)-th nearest
other subject and ι_i = d_i / r_max: ok (ι ≤ 1), merge (≤ merge_ratio: microaggregation into a
group of ≥ k nearest records, published at the group centroid), generalise (≤ generalise_ratio:
the smallest quadtree cell holding ≥ k records), suppress. The same logic runs on the time axis
with its own tolerance r_max_time; a record's verdict is the worse of space and time. Disposals
change the neighbour structure, so records are re-classified until a pass disposes nothing (a
fixed point), within ``max_passes``. The global and per-unit suppression caps, the group-extent
check, the hole check and the bias statement follow.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import geopandas
import numpy as np
import pandas as pd
import shapely

from synthgeo._errors import InputError, SpecError
from synthgeo.anonymity import checks
from synthgeo.anonymity._axis import (
    GENERALISE,
    GENERALISED,
    LABELS,
    MERGE,
    MERGED,
    OK,
    SUPPRESS,
    Axis,
    classify,
)
from synthgeo.anonymity._inputs import as_columns, check_columns, prepare
from synthgeo.anonymity.policy import OutlierPolicy

__all__ = ["OutlierResult", "apply_outlier_policy", "times_s"]

_DISPOSAL = {0: "none", MERGED: "merged", GENERALISED: "generalised"}


def times_s(values: pd.Series, id_values: np.ndarray, column: str) -> np.ndarray:
    """Seconds since 1970-01-01T00:00Z of a time column (naive times are read as UTC).

    Raises
    ------
    InputError
        Naming the first records whose time is missing or not a date-time.
    """
    parsed = pd.to_datetime(values, utc=True, errors="coerce", format="mixed")
    bad = parsed.isna().to_numpy()
    if bad.any():
        raise InputError(f"time column `{column}` has {int(bad.sum())} missing or unreadable "
                         f"value(s) at ids {list(id_values[bad][:5])}; give ISO 8601 times "
                         "such as 2017-01-01T06:00:42Z")
    ns = parsed.to_numpy(dtype="datetime64[ns]").astype(np.int64)
    return ns / 1e9


@dataclass(frozen=True, kw_only=True)
class OutlierResult:
    """Outcome of the outlier policy (every number the record and the report need).

    Attributes
    ----------
    policy : OutlierPolicy
    id_column : str
    record_id : ndarray of shape (n_records,)
    unit_column, time_column : str or None
    unit : ndarray of shape (n_records,) or None
    isolation_m : ndarray of shape (n_records,)
        First-pass d_i in metres (distance to the (k−1)-th nearest other subject; inf if none).
    isolation_ratio : ndarray of shape (n_records,)
        ι_i = d_i / r_max_m (first pass).
    isolation_time_s, isolation_ratio_time : ndarray of shape (n_records,) or None
        The same on the time axis (seconds).
    label : ndarray of str, shape (n_records,)
        Worst verdict over passes and axes: "ok", "merge", "generalise", "suppress".
    label_space, label_time : ndarray of str, shape (n_records,)
        Verdict per axis (``label_time`` None without a time column).
    flagged_in_pass : ndarray of int, shape (n_records,)
        Pass in which the record was first labelled other than ok (0: never).
    disposal, disposal_time : ndarray of str, shape (n_records,)
        What happened to the location (time): "none", "merged", "generalised",
        "suppressed". A record moved as a member of another record's merge group has label
        "ok" and disposal "merged".
    published_m : ndarray of shape (n_records, 2)
        Published location in metres (group centroid, cell centre; NaN when suppressed).
    cell_size_m : ndarray of shape (n_records,)
        Side of the published quadtree cell (NaN unless generalised).
    group_id : ndarray of int, shape (n_records,)
        Spatial merge group (−1: none).
    published_time_s, time_interval_s : ndarray of shape (n_records,) or None
        Published time (seconds since the epoch; group mean or interval start) and the
        interval width (NaN unless generalised in time).
    n_passes : int
    converged : bool
        A pass disposed nothing within ``max_passes``.
    passes : list of dict
        Label counts per pass and axis.
    overall : dict
        Global suppressed share and cap.
    units : pandas.DataFrame or None
        Per-unit suppressed shares and caps.
    suggestions : dict
        First-pass estimates of the k and r_max (r_max_time) that would meet the caps.
    hole : dict
        The hole check.
    groups : pandas.DataFrame
        Merge groups on each axis: ``axis``, ``group``, ``n_records``, ``n_subjects``,
        ``diameter`` (metres or seconds) and ``exceeds_r_max`` (the spec's flag: "k-anonymous in
        name only"; every group formed around an outlier exceeds it, since its (k−1)-th
        neighbour lies beyond r_max), ``max_displacement`` (true location to centroid) and
        ``displacement_exceeds_r_max`` (a member moved farther than r_max).
    bias : pandas.DataFrame
        Suppressed vs retained attributes (see :func:`synthgeo.anonymity.checks.bias_table`).
    bias_statement : str
    failures : list of str
        Why the policy refuses (caps breached, no fixed point); empty when it passes.
    crs_wkt : str
        CRS of `published_m`.
    """

    policy: OutlierPolicy
    id_column: str
    record_id: np.ndarray
    unit_column: str | None
    time_column: str | None
    unit: np.ndarray | None
    isolation_m: np.ndarray
    isolation_ratio: np.ndarray
    isolation_time_s: np.ndarray | None
    isolation_ratio_time: np.ndarray | None
    label: np.ndarray
    label_space: np.ndarray
    label_time: np.ndarray | None
    flagged_in_pass: np.ndarray
    disposal: np.ndarray
    disposal_time: np.ndarray | None
    published_m: np.ndarray
    cell_size_m: np.ndarray
    group_id: np.ndarray
    published_time_s: np.ndarray | None
    time_interval_s: np.ndarray | None
    n_passes: int
    converged: bool
    passes: list[dict[str, Any]]
    overall: dict[str, Any]
    units: pd.DataFrame | None
    suggestions: dict[str, Any]
    hole: dict[str, Any]
    groups: pd.DataFrame
    bias: pd.DataFrame
    bias_statement: str
    failures: list[str] = field(default_factory=list)
    crs_wkt: str = ""

    @property
    def suppressed(self) -> np.ndarray:
        """Boolean mask, shape (n_records,): removed from the release."""
        return self.disposal == "suppressed"

    @property
    def refused(self) -> bool:
        """Whether the policy refuses the release (a cap is breached or no fixed point)."""
        return bool(self.failures)

    def label_counts(self) -> dict[str, int]:
        """Count records per final label."""
        return {name: int((self.label == name).sum()) for name in LABELS}

    def disposal_counts(self) -> dict[str, dict[str, int]]:
        """Count records per disposal, per axis."""
        out = {"space": {d: int((self.disposal == d).sum())
                         for d in ("none", "merged", "generalised", "suppressed")}}
        if self.disposal_time is not None:
            out["time"] = {d: int((self.disposal_time == d).sum())
                           for d in ("none", "merged", "generalised", "suppressed")}
        return out

    def refusal_message(self) -> str:
        """All failures in one message (empty string when the policy passes)."""
        return " | ".join(self.failures)

    def to_dataframe(self) -> pd.DataFrame:
        """Labels per record (confidential): ids, ratios, labels, disposals, published location."""
        out = pd.DataFrame({self.id_column: self.record_id})
        if self.unit is not None:
            out[self.unit_column] = self.unit
        out["isolation_m"] = self.isolation_m
        out["isolation_ratio"] = self.isolation_ratio
        if self.isolation_time_s is not None:
            out["isolation_time_s"] = self.isolation_time_s
            out["isolation_ratio_time"] = self.isolation_ratio_time
            out["label_space"] = self.label_space
            out["label_time"] = self.label_time
        out["label"] = self.label
        out["flagged_in_pass"] = self.flagged_in_pass
        out["disposal"] = self.disposal
        out["group_id"] = self.group_id
        out["cell_size_m"] = self.cell_size_m
        out["published_x_m"] = self.published_m[:, 0]
        out["published_y_m"] = self.published_m[:, 1]
        if self.disposal_time is not None:
            out["disposal_time"] = self.disposal_time
            out["published_time"] = _iso(self.published_time_s)
            out["time_interval_s"] = self.time_interval_s
        return out

    def disposed_layer(self, points: geopandas.GeoDataFrame, *,
                       keep_columns: Sequence[str] = ()) -> geopandas.GeoDataFrame:
        """Build the layer after disposals: retained records, published locations, whitelist.

        Parameters
        ----------
        points : geopandas.GeoDataFrame
            The layer the policy ran on (same rows, same order).
        keep_columns : sequence of str, default=()
            Attribute columns to carry over unchanged. Nothing else passes (in particular no
            coordinate column of the input, which would hold the true location).

        Returns
        -------
        geopandas.GeoDataFrame
            Id, unit, published time (and ``time_interval_s``), `keep_columns`, ``disposal``,
            ``cell_size_m``; geometry a Point (exact or group centroid) or the square cell
            Polygon (generalised), in the input's source CRS when known, else the projected CRS.
        """
        keep = [c for c in as_columns(keep_columns, "keep_columns")
                if c not in (self.id_column, self.unit_column, self.time_column)]
        check_columns(points, keep, "`keep_columns`")
        retained = ~self.suppressed
        out = pd.DataFrame({self.id_column: self.record_id[retained]})
        if self.unit is not None:
            out[self.unit_column] = self.unit[retained]
        if self.time_column is not None:
            out[self.time_column] = _iso(self.published_time_s[retained])
            out["time_interval_s"] = self.time_interval_s[retained]
        for c in keep:
            out[c] = points[c].to_numpy()[retained]
        out["disposal"] = self.disposal[retained]
        out["cell_size_m"] = self.cell_size_m[retained]
        xy = self.published_m[retained]
        half = self.cell_size_m[retained] / 2
        geoms = shapely.points(xy)
        gen = ~np.isnan(half)
        if gen.any():
            geoms[gen] = shapely.box(xy[gen, 0] - half[gen], xy[gen, 1] - half[gen],
                                     xy[gen, 0] + half[gen], xy[gen, 1] + half[gen])
        gdf = geopandas.GeoDataFrame(out, geometry=geoms, crs=self.crs_wkt)
        source = points.attrs.get("source_crs")
        return gdf.to_crs(source) if source else gdf

    def record(self) -> dict[str, Any]:
        """Every number of the outcome, JSON-ready (no per-record values)."""
        groups = self.groups
        ext: dict[str, Any] = {}
        for axis in ("space", "time"):
            g = groups[groups["axis"] == axis] if len(groups) else groups
            unit = "m" if axis == "space" else "s"
            ext[axis] = {
                "n_groups": int(len(g)),
                f"max_diameter_{unit}": float(g["diameter"].max()) if len(g) else None,
                f"median_diameter_{unit}": float(g["diameter"].median()) if len(g) else None,
                "n_exceeding_r_max": int(g["exceeds_r_max"].sum()) if len(g) else 0,
                f"max_displacement_{unit}": (float(g["max_displacement"].max()) if len(g)
                                             else None),
                "n_displacement_exceeding_r_max": (int(g["displacement_exceeds_r_max"].sum())
                                                   if len(g) else 0),
            }
        cells = self.cell_size_m[~np.isnan(self.cell_size_m)]
        rec = {
            "policy": self.policy.to_dict(),
            "n_records": int(len(self.record_id)),
            "unit_column": self.unit_column, "time_column": self.time_column,
            "passes": self.passes, "n_passes": self.n_passes, "converged": self.converged,
            "labels": self.label_counts(), "disposals": self.disposal_counts(),
            "isolation_ratio": _quantiles(self.isolation_ratio),
            "isolation_ratio_time": (None if self.isolation_ratio_time is None
                                     else _quantiles(self.isolation_ratio_time)),
            "suppressed": self.overall,
            "units": None if self.units is None else self.units.to_dict("records"),
            "n_units_breaching": (None if self.units is None
                                  else int((~self.units["passes"]).sum())),
            "suggestions": self.suggestions,
            "hole_check": self.hole,
            "group_extent": ext,
            "generalised_cells_m": {"n": int(len(cells)),
                                    "sizes": {str(int(s)): int((cells == s).sum())
                                              for s in np.unique(cells)}},
            "bias": self.bias.to_dict("records"), "bias_statement": self.bias_statement,
            "refused": self.refused, "failures": self.failures,
        }
        return rec


def _quantiles(x: np.ndarray) -> dict[str, float]:
    f = x[np.isfinite(x)]
    out = {"n_infinite": int((~np.isfinite(x)).sum())}
    if len(f):
        for q in (0.5, 0.9, 0.95, 0.99):
            out[f"q{int(q * 100):02d}"] = float(np.quantile(f, q))
        out["max_finite"] = float(f.max())
    return out


def _iso(seconds: np.ndarray) -> np.ndarray:
    """ISO 8601 UTC text of seconds since the epoch (None where NaN)."""
    t = pd.to_datetime(pd.Series(np.round(seconds)), unit="s", utc=True)
    text = t.dt.strftime("%Y-%m-%dT%H:%M:%SZ").astype(object)
    return np.asarray(text.where(t.notna(), None), dtype=object)


def apply_outlier_policy(
    points: geopandas.GeoDataFrame,
    policy: OutlierPolicy,
    *,
    unit: str | None = None,
    time: str | None = None,
    subject: str | None = None,
    attributes: Sequence[str] | None = None,
    id_column: str | None = None,
    on_failure: str = "refuse",
) -> OutlierResult:
    """Classify every record, dispose of the outliers to a fixed point, check caps and bias.

    Parameters
    ----------
    points : geopandas.GeoDataFrame
        Points in a projected CRS in metres (classify *after* any mask: a jitter can push a
        point into isolation).
    policy : OutlierPolicy
        k, r_max_m, ratios, caps, r_max_time, max_passes.
    unit : str, optional
        Administrative unit column for the per-unit cap and the hole check.
    time : str, optional
        Time column (ISO 8601; naive times read as UTC) for temporal outliers; needs
        ``policy.r_max_time``.
    subject : str, optional
        Subject id column (distances are to other subjects).
    attributes : sequence of str, optional
        Columns compared for the bias statement. Default: every numeric column and every
        text column with ≤ 20 values, except id, subject, unit, time and geometry.
    id_column : str, optional
        Record id column (default from ``load_points``).
    on_failure : {"refuse", "report"}, default="refuse"
        On a breached cap or no fixed point: raise, or return the result with ``failures``
        filled in (the ``run`` pipeline reports and moves no location).

    Returns
    -------
    OutlierResult

    Raises
    ------
    TypeError
        If `points` is not a GeoDataFrame.
    InputError
        Bad CRS or geometry, missing column, unreadable time.
    SpecError
        Bad `on_failure`; a time column without ``r_max_time``; and with
        ``on_failure="refuse"``, a breached cap or no fixed point — the message names the
        parameter to move (k, r_max_m, the area).

    Notes
    -----
    Isolation ratio ι_i = d_i / r_max with d_i the distance to the (k−1)-th nearest other
    subject (spec: anonymity.md). Merge: the record and its k−1 nearest other subjects form a
    group; groups sharing a member are united, and all active members are published at the
    centroid of their true locations (spatial microaggregation, Domingo-Ferrer & Mateo-Sanz
    2002, doi:10.1109/69.979982). Generalise: the smallest cell of a quadtree of sides 2^j m
    (time: nested bins 1 s … 52 weeks) holding ≥ k subjects, counting exact points, group
    centroids and already generalised cells inside it. Merged members stay exempt while their
    group keeps ≥ k active subjects, cells while they hold ≥ k; otherwise they are classified
    again. A record that cannot be merged or generalised is suppressed.
    """
    if on_failure not in ("refuse", "report"):
        raise SpecError(f'`on_failure` must be "refuse" or "report", got {on_failure!r}')
    if not isinstance(policy, OutlierPolicy):
        raise TypeError(f"`policy` must be an OutlierPolicy, got {type(policy).__name__}")
    prep = prepare(points, subject=subject, id_column=id_column)
    check_columns(points, [c for c in (unit, time) if c], "unit/time")
    if time and policy.r_max_time is None:
        raise SpecError(f"time column `{time}` given without a time tolerance: set "
                        "`r_max_time` (e.g. \"6h\", \"2d\")")
    n = len(prep.coords_m)
    k = policy.k
    subj = prep.subject if prep.subject is not None else np.arange(n, dtype=np.int64)
    unit_values = None if unit is None else points[unit].to_numpy(dtype=object)
    axes = [Axis("space", prep.coords_m, policy.r_max_m, subj, k)]
    if time:
        t = times_s(points[time], prep.record_id, time)
        axes.append(Axis("time", t, policy.r_max_time_s, subj, k))
    first_dist: dict[str, np.ndarray] = {}
    suppressed = np.zeros(n, dtype=bool)
    flagged = np.zeros(n, dtype=np.int64)
    passes: list[dict[str, Any]] = []
    converged = False
    for p in range(1, policy.max_passes + 1):
        active = ~suppressed
        labs = []
        for ax in axes:
            lab = np.zeros(n, dtype=np.int8)
            exempt = (ax.status == MERGED) & (ax.group_sizes(active) >= k)
            valid_cell = ax.cells_valid(active)
            regrow = active & (ax.status == GENERALISED) & ~valid_cell
            lab[regrow] = GENERALISE
            q = np.flatnonzero(active & ~exempt & ~valid_cell & ~regrow)
            dist = ax.isolation(q, active)
            lab[q] = classify(dist[:, -1] / ax.r_max, policy.merge_ratio,
                              policy.generalise_ratio)
            if p == 1:
                first_dist[ax.name] = dist
            labs.append(lab)
        worst = np.max(labs, axis=0)
        passes.append({"pass": p, **{
            ax.name: {LABELS[c]: int(((lab == c) & active).sum()) for c in range(4)}
            for ax, lab in zip(axes, labs)}})
        if not (worst[active] > OK).any():
            converged = True
            break
        for ax, lab in zip(axes, labs):
            ax.label = np.maximum(ax.label, lab)
        flagged[(worst > OK) & (flagged == 0)] = p
        suppressed |= active & (worst == SUPPRESS)
        for ax, lab in zip(axes, labs):
            active = ~suppressed
            ax.regroup(active)
            merge_q = np.flatnonzero(active & (lab == MERGE))
            cand = np.flatnonzero(active & (ax.status != GENERALISED) & (lab != GENERALISE))
            short = ax.merge(merge_q, cand)
            ax.label[short] = np.maximum(ax.label[short], GENERALISE)
            ax.regroup(active)
            gen_q = np.union1d(np.flatnonzero(active & (lab == GENERALISE)), short)
            failed = ax.generalise(gen_q.astype(np.int64), active)
            ax.label[failed] = SUPPRESS
            suppressed[failed] = True
        for ax in axes:
            ax.regroup(~suppressed)
    active = ~suppressed
    for ax in axes:
        ax.release_record(np.flatnonzero(suppressed))

    space = axes[0]
    d0 = first_dist["space"][:, -1]
    label_space = space.label.copy()
    label_time = axes[1].label.copy() if time else None
    final = label_space if label_time is None else np.maximum(label_space, label_time)
    final = np.where(suppressed, SUPPRESS, final)
    labels = np.asarray(LABELS, dtype=object)

    def disposal_of(ax: Axis) -> np.ndarray:
        d = np.asarray([_DISPOSAL[s] for s in ax.status.tolist()], dtype=object)
        d[suppressed] = "suppressed"
        return d

    gid, rows = space.group_table(active)
    group_frames = [pd.DataFrame(rows).assign(axis="space")]
    published = space.published.copy()
    published[suppressed] = np.nan
    pub_t = interval = None
    if time:
        tax = axes[1]
        _, trows = tax.group_table(active)
        group_frames.append(pd.DataFrame(trows).assign(axis="time"))
        size = tax.cell_size()
        pub_t = np.where(np.isnan(size), tax.published[:, 0],
                         tax.published[:, 0] - np.nan_to_num(size) / 2)
        interval = size
        pub_t[suppressed] = np.nan
    groups = pd.concat([g for g in group_frames if len(g)], ignore_index=True) \
        if any(len(g) for g in group_frames) else pd.DataFrame(
            columns=["group", "n_records", "n_subjects", "diameter", "exceeds_r_max",
                     "max_displacement", "displacement_exceeds_r_max", "axis"])

    moved = {"merged": (space.status == MERGED) & active,
             "generalised": (space.status == GENERALISED) & active}
    if time:
        moved["time_disposed"] = (axes[1].status != 0) & active
    overall, units = checks.suppression_caps(
        suppressed, unit_values, max_share=policy.max_suppressed_share,
        max_unit_share=policy.max_unit_suppressed_share, other=moved)
    suggestions = {}
    for ax in axes:
        suggestions[ax.name] = checks.cap_suggestions(
            first_dist[ax.name], unit_values, k=k, r_max=ax.r_max,
            generalise_ratio=policy.generalise_ratio, max_share=policy.max_suppressed_share,
            max_unit_share=policy.max_unit_suppressed_share)
    hole = checks.hole_check(units, unit)
    if attributes is None:
        skip = {prep.id_column, subject, unit, time, points.geometry.name}
        attributes = [c for c in points.columns if c not in skip]
    attributes = list(as_columns(attributes, "attributes"))
    check_columns(points, attributes, "`attributes`")
    bias = checks.bias_table(points, suppressed, attributes)
    statement = checks.bias_statement(bias, int(suppressed.sum()), int((~suppressed).sum()))

    failures = _failures(policy, converged, overall, units, unit, suggestions, bool(time))
    result = OutlierResult(
        policy=policy, id_column=prep.id_column, record_id=prep.record_id, unit_column=unit,
        time_column=time, unit=unit_values, isolation_m=d0,
        isolation_ratio=d0 / policy.r_max_m,
        isolation_time_s=first_dist["time"][:, -1] if time else None,
        isolation_ratio_time=(first_dist["time"][:, -1] / policy.r_max_time_s
                              if time else None),
        label=labels[final], label_space=labels[label_space],
        label_time=None if label_time is None else labels[label_time],
        flagged_in_pass=flagged, disposal=disposal_of(space),
        disposal_time=disposal_of(axes[1]) if time else None,
        published_m=published, cell_size_m=space.cell_size(), group_id=gid,
        published_time_s=pub_t, time_interval_s=interval, n_passes=len(passes),
        converged=converged, passes=passes, overall=overall, units=units,
        suggestions=suggestions, hole=hole, groups=groups, bias=bias,
        bias_statement=statement, failures=failures, crs_wkt=prep.crs_wkt,
    )
    if hole.get("flag"):
        warnings.warn(hole["message"], UserWarning, stacklevel=2)
    if failures and on_failure == "refuse":
        raise SpecError(result.refusal_message())
    return result


def _failures(policy: OutlierPolicy, converged: bool, overall: dict, units: pd.DataFrame | None,
              unit: str | None, suggestions: dict, has_time: bool) -> list[str]:
    """Refusal messages: what breached and which parameter to move."""
    s = suggestions["space"]
    move = [f"lower `k` (now {policy.k})" + (f" to {s['k_max_passing']}" if s["k_max_passing"]
                                               and s["k_max_passing"] < policy.k else ""),
            f"raise `r_max_m` (now {policy.r_max_m:g} m)" + (
                f" to about {s['r_max_min_passing']:,.0f} m"
                if np.isfinite(s["r_max_min_passing"]) and s["r_max_min_passing"] >
                policy.r_max_m else "")]
    if has_time:
        t = suggestions["time"]
        move.append(f"raise `r_max_time` (now {policy.r_max_time})" + (
            f" to about {t['r_max_min_passing'] / 3600:,.1f} h"
            if np.isfinite(t["r_max_min_passing"]) and t["r_max_min_passing"] >
            policy.r_max_time_s else ""))
    fix = ("the parameters are wrong for these data, and the fix is upstream, not per point: "
           + ", or ".join(move) + " (first-pass estimates), or release a smaller area")
    out = []
    if not converged:
        out.append(f"the outlier policy found no fixed point in {policy.max_passes} passes "
                   "(each pass's disposals isolated other records); " + fix)
    if not overall["passes"]:
        out.append(f"suppressed share {overall['share']:.2%} ({overall['n_suppressed']} of "
                   f"{overall['n_records']}) exceeds `max_suppressed_share` = "
                   f"{policy.max_suppressed_share:.2%}; " + fix)
    if units is not None and not units["passes"].all():
        bad = units[~units["passes"]]
        shown = ", ".join(f"{r.unit!r} {r.share:.1%} ({r.n_suppressed} of {r.n_records})"
                          for r in bad.head(5).itertuples())
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        out.append(f"{len(bad)} unit(s) of `{unit}` exceed `max_unit_suppressed_share` = "
                   f"{policy.max_unit_suppressed_share:.0%}: {shown}{more}; " + fix)
    return out
