"""The outlier policy: isolation ratios, labels, disposals to a fixed point, caps and checks.

docs/locations.md, "The outlier policy". For record i, d_i is the distance to its (k−1)-th nearest
other subject and ι_i = d_i / r_max: ok (ι ≤ 1), merge (≤ merge_ratio: microaggregation into a
group of ≥ k nearest records, published at the group centroid), generalise (≤ generalise_ratio:
the smallest quadtree cell holding ≥ k records), suppress. The same logic runs on the time axis
with its own tolerance r_max_time; a record's verdict is the worse of space and time. Disposals
change the neighbour structure, so records are re-classified until a pass disposes nothing (a
fixed point), within ``max_passes``. The global and per-unit suppression caps, the group-extent
check, the hole check and the bias statement follow.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import geopandas
import numpy as np
import pandas as pd

from synthgeo._errors import InputError, SpecError
from synthgeo._warn import warn
from synthgeo.locations import policy_checks as checks
from synthgeo.locations._axis import (
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
from synthgeo.locations._inputs import as_columns, check_columns, prepare
from synthgeo.locations.outlier_result import OutlierResult
from synthgeo.locations.policy import OutlierPolicy

__all__ = ["OutlierResult", "apply_outlier_policy", "times_s"]

_DISPOSAL = {0: "none", MERGED: "merged", GENERALISED: "generalised"}


def times_s(values: pd.Series, id_values: np.ndarray, column: str) -> np.ndarray:
    """Seconds since 1970-01-01T00:00Z of a time column (naive times are read as UTC).

    Raises
    ------
    InputError
        Naming the first records whose time is missing or not a date-time.
    """
    if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        # pandas would read numbers as nanoseconds since 1970: a year or YYMMDD column would
        # then put every record within a second of each other and the time check would pass
        raise InputError(f"time column `{column}` holds numbers, not date-times; give ISO "
                         "8601 times such as 2017-01-01T06:00:42Z (convert years, YYMMDD codes "
                         "or epoch seconds first)")
    parsed = pd.to_datetime(values, utc=True, errors="coerce", format="mixed")
    bad = parsed.isna().to_numpy()
    if bad.any():
        raise InputError(f"time column `{column}` has {int(bad.sum())} missing or unreadable "
                         f"value(s) at ids {list(id_values[bad][:5])}; give ISO 8601 times "
                         "such as 2017-01-01T06:00:42Z")
    ns = parsed.to_numpy(dtype="datetime64[ns]").astype(np.int64)
    return ns / 1e9


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
        k, r_max_m, ratios, caps, r_max_time, max_passes, group_diameter_ratio.
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
        filled in (the ``run`` pipeline reports it in the location verdict).

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
    subject (docs/locations.md). Merge: the record and its k−1 nearest other subjects form a
    group; groups sharing a member are united, and all active members are published at the
    centroid of their true locations (spatial microaggregation, Domingo-Ferrer & Mateo-Sanz
    2002, doi:10.1109/69.979982). A merge that would make a group (chained or not) wider than
    ``policy.group_diameter_ratio`` · r_max (r_max_time on the time axis) fails, and the record
    is generalised instead. Generalise: the smallest cell of a quadtree of sides 2^j m (time:
    nested bins 1 s … 52 weeks) holding ≥ k subjects, counting exact points, group centroids
    and already generalised cells inside it. r_max bounds every disposal (docs/locations.md,
    "The bound on every disposal"): only cells whose half-diagonal is ≤ r_max are tried, and a
    merge that puts a member beyond r_max of its group's centroid fails;
    ``policy.disposal_bound_ratio`` scales the bound (default 1). Merged members stay exempt
    while their group keeps ≥ k active subjects, cells while they hold ≥ k; otherwise they are
    classified again. A record that cannot be merged or generalised within the bound is
    suppressed, and counts against the caps.

    Examples
    --------
    >>> import geopandas, numpy as np
    >>> xy = np.array([[0, 0], [10, 0], [0, 10], [10, 10], [5, 5], [5000, 5000]], float)
    >>> xy += [630_000.0, 4_270_000.0]  # easting, northing in UTM zone 10N (metres)
    >>> pts = geopandas.GeoDataFrame(geometry=geopandas.points_from_xy(*xy.T), crs=32610)
    >>> res = apply_outlier_policy(pts, OutlierPolicy(k=3, r_max_m=100,
    ...                            max_suppressed_share=0.5), on_failure="report")
    >>> res.label.tolist()
    ['ok', 'ok', 'ok', 'ok', 'ok', 'suppress']
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
    axes = _axes(points, prep, policy, time)
    run = _fixed_point(axes, policy, len(prep.coords_m))
    result = _result(points, policy, prep, axes, run, unit=unit, time=time, subject=subject,
                     attributes=attributes)
    if result.hole.get("flag"):
        warn(result.hole["message"])
    if result.failures and on_failure == "refuse":
        raise SpecError(result.refusal_message())
    return result


@dataclass(kw_only=True)
class _Run:
    """State of the fixed-point iteration (internal)."""

    suppressed: np.ndarray
    flagged: np.ndarray
    passes: list[dict[str, Any]] = field(default_factory=list)
    converged: bool = False
    first_dist: dict[str, np.ndarray] = field(default_factory=dict)
    first_cells: dict[str, np.ndarray] = field(default_factory=dict)


def _axes(points: geopandas.GeoDataFrame, prep: Any, policy: OutlierPolicy,
          time: str | None) -> list[Axis]:
    """Build the space axis (metres) and, with a time column, the time axis (seconds)."""
    n = len(prep.coords_m)
    subj = prep.subject if prep.subject is not None else np.arange(n, dtype=np.int64)
    own = prep.subject is not None
    axes = [Axis("space", prep.coords_m, policy.r_max_m, subj, policy.k, has_subjects=own,
                 max_diameter=policy.group_diameter_bound_m, max_radius=policy.disposal_bound_m)]
    if time:
        t = times_s(points[time], prep.record_id, time)
        axes.append(Axis("time", t, policy.r_max_time_s, subj, policy.k, has_subjects=own,
                         max_diameter=policy.group_diameter_ratio * policy.r_max_time_s,
                         max_radius=policy.disposal_bound_ratio * policy.r_max_time_s))
    return axes


def _classify(axes: list[Axis], active: np.ndarray, policy: OutlierPolicy,
              run: _Run, first: bool) -> list[np.ndarray]:
    """Label codes per axis for one pass (exempt: valid merge groups and cells)."""
    n = len(active)
    labs = []
    for ax in axes:
        lab = np.zeros(n, dtype=np.int8)
        exempt = (ax.status == MERGED) & (ax.group_sizes(active) >= policy.k)
        valid_cell = ax.cells_valid(active)
        regrow = active & (ax.status == GENERALISED) & ~valid_cell
        lab[regrow] = GENERALISE
        q = np.flatnonzero(active & ~exempt & ~valid_cell & ~regrow)
        dist = ax.isolation(q, active)
        lab[q] = classify(dist[:, -1] / ax.r_max, policy.merge_ratio, policy.generalise_ratio)
        if first:
            run.first_dist[ax.name] = dist
        labs.append(lab)
    return labs


def _dispose(axes: list[Axis], labs: list[np.ndarray], run: _Run) -> None:
    """Merge, generalise (when a merge fails) and suppress (when generalising fails)."""
    for ax, lab in zip(axes, labs):
        active = ~run.suppressed
        ax.regroup(active)
        merge_q = np.flatnonzero(active & (lab == MERGE))
        cand = np.flatnonzero(active & (ax.status != GENERALISED) & (lab != GENERALISE))
        short, too_wide = ax.merge(merge_q, cand, active, ax.max_diameter)
        ax.label[short] = np.maximum(ax.label[short], GENERALISE)  # ι says merge: kept
        ax.regroup(active)
        gen_q = np.union1d(np.flatnonzero(active & (lab == GENERALISE)),
                           np.union1d(short, too_wide))
        failed = ax.generalise(gen_q.astype(np.int64), active)
        run.suppressed[failed] = True
    for ax in axes:
        ax.regroup(~run.suppressed)


def _fixed_point(axes: list[Axis], policy: OutlierPolicy, n: int) -> _Run:
    """Classify and dispose until a pass disposes nothing, within ``policy.max_passes``."""
    run = _Run(suppressed=np.zeros(n, dtype=bool), flagged=np.zeros(n, dtype=np.int64))
    # for the advice: the smallest cell holding k' subjects around each record (first pass)
    run.first_cells = {ax.name: ax.smallest_cell_radius(range(2, policy.k + 1)) for ax in axes}
    for p in range(1, policy.max_passes + 1):
        active = ~run.suppressed
        labs = _classify(axes, active, policy, run, first=p == 1)
        worst = np.max(labs, axis=0)
        run.passes.append({"pass": p, **{
            ax.name: {LABELS[c]: int(((lab == c) & active).sum()) for c in range(4)}
            for ax, lab in zip(axes, labs)}})
        if not (worst[active] > OK).any():
            run.converged = True
            break
        for ax, lab in zip(axes, labs):
            ax.label = np.maximum(ax.label, lab)
        run.flagged[(worst > OK) & (run.flagged == 0)] = p
        run.suppressed |= active & (worst == SUPPRESS)
        _dispose(axes, labs, run)
    for ax in axes:
        ax.release_record(np.flatnonzero(run.suppressed))
    return run


def _disposal_of(ax: Axis, suppressed: np.ndarray) -> np.ndarray:
    d = np.asarray([_DISPOSAL[s] for s in ax.status.tolist()], dtype=object)
    d[suppressed] = "suppressed"
    return d


def _published(axes: list[Axis], run: _Run) -> dict[str, Any]:
    """Collect published locations (and times), merge groups and per-record disposals."""
    suppressed, active = run.suppressed, ~run.suppressed
    space = axes[0]
    gid, rows = space.group_table(active)
    frames = [pd.DataFrame(rows).assign(axis="space")]
    published = space.published.copy()
    published[suppressed] = np.nan
    out = {"group_id": gid, "published_m": published, "published_time_s": None,
           "time_interval_s": None, "disposal_time": None,
           "disposal": _disposal_of(space, suppressed)}
    if len(axes) > 1:
        tax = axes[1]
        frames.append(pd.DataFrame(tax.group_table(active)[1]).assign(axis="time"))
        size = tax.cell_size()
        pub_t = np.where(np.isnan(size), tax.published[:, 0],
                         tax.published[:, 0] - np.nan_to_num(size) / 2)
        pub_t[suppressed] = np.nan
        out.update(published_time_s=pub_t, time_interval_s=size,
                   disposal_time=_disposal_of(tax, suppressed))
    kept = [g for g in frames if len(g)]
    out["groups"] = pd.concat(kept, ignore_index=True) if kept else pd.DataFrame(
        columns=["group", "n_records", "n_subjects", "diameter", "exceeds_r_max",
                 "max_displacement", "displacement_exceeds_r_max", "axis"])
    return out


def _result(points: geopandas.GeoDataFrame, policy: OutlierPolicy, prep: Any, axes: list[Axis],
            run: _Run, *, unit: str | None, time: str | None, subject: str | None,
            attributes: Sequence[str] | None) -> OutlierResult:
    """Assemble the result: labels, disposals, caps, suggestions, hole check, bias, failures."""
    suppressed, active = run.suppressed, ~run.suppressed
    unit_values = None if unit is None else points[unit].to_numpy(dtype=object)
    space = axes[0]
    label_space = space.label.copy()
    label_time = axes[1].label.copy() if time else None
    final = label_space if label_time is None else np.maximum(label_space, label_time)
    final = np.where(suppressed, SUPPRESS, final)
    labels = np.asarray(LABELS, dtype=object)
    moved = {"merged": (space.status == MERGED) & active,
             "generalised": (space.status == GENERALISED) & active}
    if time:
        moved["time_disposed"] = (axes[1].status != 0) & active
    overall, units = checks.suppression_caps(
        suppressed, unit_values, max_share=policy.max_suppressed_share,
        max_unit_share=policy.max_unit_suppressed_share, other=moved)
    suggestions = {ax.name: checks.cap_suggestions(
        run.first_dist[ax.name], unit_values, k=policy.k, r_max=ax.r_max,
        generalise_ratio=policy.generalise_ratio, cell_radius=run.first_cells[ax.name],
        bound_ratio=policy.disposal_bound_ratio, max_share=policy.max_suppressed_share,
        max_unit_share=policy.max_unit_suppressed_share) for ax in axes}
    if attributes is None:
        skip = {prep.id_column, subject, unit, time, points.geometry.name}
        attributes = [c for c in points.columns if c not in skip]
    attributes = list(as_columns(attributes, "attributes"))
    check_columns(points, attributes, "`attributes`")
    bias = checks.bias_table(points, suppressed, attributes)
    failures, advice = _failures(policy, run.converged, overall, units, unit, suggestions,
                                 bool(time))
    d0 = run.first_dist["space"][:, -1]
    dt = run.first_dist["time"][:, -1] if time else None
    return OutlierResult(
        policy=policy, id_column=prep.id_column, record_id=prep.record_id, unit_column=unit,
        time_column=time, unit=unit_values, isolation_m=d0,
        isolation_ratio=d0 / policy.r_max_m, isolation_time_s=dt,
        isolation_ratio_time=None if dt is None else dt / policy.r_max_time_s,
        label=labels[final], label_space=labels[label_space],
        label_time=None if label_time is None else labels[label_time],
        flagged_in_pass=run.flagged, cell_size_m=space.cell_size(),
        n_passes=len(run.passes), converged=run.converged, passes=run.passes,
        overall=overall, units=units, suggestions=suggestions,
        hole=checks.hole_check(units, unit), bias=bias,
        bias_statement=checks.bias_statement(bias, int(suppressed.sum()),
                                             int(active.sum())),
        failures=failures, advice=advice, crs_wkt=prep.crs_wkt,
        n_merges_too_wide={ax.name: ax.n_too_wide for ax in axes},
        n_unplaced={ax.name: ax.n_unplaced for ax in axes},
        **_published(axes, run),
    )


def _failures(policy: OutlierPolicy, converged: bool, overall: dict, units: pd.DataFrame | None,
              unit: str | None, suggestions: dict, has_time: bool) -> tuple[list[str], str]:
    """Return what breached (one item each) and the advice: which parameter to move."""
    s = suggestions["space"]
    k_ok = s["k_max_passing"]
    move = [f"lower `k` (now {policy.k}" + (f"; {k_ok} would pass)" if k_ok and k_ok < policy.k
                                             else "; even k = 2 would not pass at this r_max)"
                                             if k_ok is None else ")"),
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
                   "(each pass's disposals isolated other records)")
    if not overall["passes"]:
        out.append(f"suppressed share {overall['share']:.2%} ({overall['n_suppressed']} of "
                   f"{overall['n_records']}) exceeds `max_suppressed_share` = "
                   f"{policy.max_suppressed_share:.2%}")
    if units is not None and not units["passes"].all():
        bad = units[~units["passes"]]
        shown = ", ".join(f"{r.unit!r} {r.share:.1%} ({r.n_suppressed} of {r.n_records})"
                          for r in bad.head(5).itertuples())
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        out.append(f"{len(bad)} unit(s) of `{unit}` exceed `max_unit_suppressed_share` = "
                   f"{policy.max_unit_suppressed_share:.0%}: {shown}{more}")
    return out, fix
