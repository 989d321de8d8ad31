"""The outcome of the outlier policy: per-record labels, the disposed layer, the record."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import geopandas
import numpy as np
import pandas as pd
import shapely

from synthgeo._repr import confidential_repr
from synthgeo.locations._axis import LABELS, cell_radius
from synthgeo.locations._inputs import as_columns, check_columns
from synthgeo.locations.policy import OutlierPolicy
from synthgeo.locations.policy_checks import bias_statement

__all__ = ["OutlierResult"]


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
        Verdict per axis from ι (``label_time`` None without a time column). A record that
        could not be placed within the bound keeps its label here; its disposal is
        "suppressed" and :attr:`label` says "suppress".
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
        Suppressed vs retained attributes (see :func:`synthgeo.locations.policy_checks.bias_table`).
    bias_statement : str
    failures : list of str
        Why the policy refuses (caps breached, no fixed point); empty when it passes.
    advice : str
        Which parameter to move (first-pass estimates of k and r_max that would pass).
    crs_wkt : str
        CRS of `published_m`.
    n_merges_too_wide : dict of str to int
        Per axis, merges refused because the group would have been wider than the policy
        allows (``group_diameter_ratio`` · r_max, r_max_time on the time axis); those records
        were generalised instead.
    n_unplaced : dict of str to int
        Per axis, generalisations that failed because no cell within the bound on every
        disposal held k subjects (those records were suppressed).
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
    advice: str = ""
    crs_wkt: str = ""
    n_merges_too_wide: dict[str, int] = field(default_factory=dict)
    n_unplaced: dict[str, int] = field(default_factory=dict)

    def __repr__(self) -> str:
        """Show counts and settings only (never an id, a distance or a published location)."""
        values, counts = np.unique(np.asarray(self.disposal, dtype=str), return_counts=True)
        return confidential_repr(
            self, n_records=int(len(self.record_id)), k=self.policy.k,
            r_max_m=self.policy.r_max_m, n_passes=self.n_passes, converged=self.converged,
            refused=self.refused, disposals={str(v): int(c) for v, c in zip(values, counts)})

    @property
    def suppressed(self) -> np.ndarray:
        """Boolean mask, shape (n_records,): removed from the release."""
        return self.disposal == "suppressed"

    @property
    def refused(self) -> bool:
        """Whether the policy refuses the release (a cap is breached or no fixed point)."""
        return bool(self.failures)

    def conditional_bias_statement(self) -> str:
        """:attr:`bias_statement` worded for a policy that is only diagnosed ("would be").

        For a release that does not apply the policy (``treatment = "none"``) or a policy that
        refuses: no record is suppressed, so the paragraph says what suppression would do.
        """
        n_sup = int(self.overall["n_suppressed"])
        return bias_statement(self.bias, n_sup, len(self.label) - n_sup, applied=False)

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
        """Return all failures and the advice in one message (empty when the policy passes)."""
        if not self.failures:
            return ""
        return "; ".join(self.failures) + " — " + self.advice

    def to_dataframe(self) -> pd.DataFrame:
        """Return labels per record (confidential): ratios, labels, disposals, locations."""
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

    def _bound(self, axis: str) -> float | None:
        """Widest merge group allowed on `axis` (metres or seconds; None without that axis)."""
        if axis == "space":
            return self.policy.group_diameter_bound_m
        t = self.policy.r_max_time_s
        return None if t is None else self.policy.group_diameter_ratio * t

    def widest_disposal(self, axis: str = "space") -> dict[str, Any] | None:
        """Return the widest disposal of the released records on `axis`, against the bound.

        A disposal's radius is the largest distance from a record's true location to the point
        published for it that the disposal allows (docs/locations.md, "The bound on every
        disposal"): a generalised cell's half-diagonal (side · √2 / 2 in space, half the
        interval in time), wherever the record lies in it; a merge group's largest distance
        from a member's true location to the centroid.

        Parameters
        ----------
        axis : {"space", "time"}, default="space"

        Returns
        -------
        dict or None
            None on "time" without a time column. Otherwise (``u`` = ``m`` in space, ``s`` in
            time): ``kind`` ("cell", "merge group" or "none": nothing moved),
            ``radius_<u>`` (0 when nothing moved), ``cell_<u>`` (the widest cell's side or
            interval, None unless kind is "cell"), ``n_moved`` (released records merged or
            generalised), ``r_max_<u>``, ``bound_<u>`` (``disposal_bound_ratio`` · r_max) and
            ``within_r_max`` (radius ≤ r_max).

        Examples
        --------
        >>> import geopandas, numpy as np
        >>> from synthgeo.locations import apply_outlier_policy
        >>> xy = np.array([[0, 0], [10, 0], [0, 10], [10, 10], [5, 5], [5000, 5000]], float)
        >>> pts = geopandas.GeoDataFrame(geometry=geopandas.points_from_xy(*(xy + 5e5).T),
        ...                              crs=32610)
        >>> res = apply_outlier_policy(pts, OutlierPolicy(k=3, r_max_m=100,
        ...                            max_suppressed_share=0.5), on_failure="report")
        >>> res.widest_disposal()["kind"], res.widest_disposal()["within_r_max"]
        ('none', True)
        """
        if axis == "space":
            u, size, r_max, dims = "m", self.cell_size_m, float(self.policy.r_max_m), 2
        elif axis == "time":
            if self.time_interval_s is None:
                return None
            u, size, r_max, dims = "s", self.time_interval_s, self.policy.r_max_time_s, 1
        else:
            raise ValueError(f'`axis` must be "space" or "time", got {axis!r}')
        disp = self.disposal if axis == "space" else self.disposal_time
        cells = np.where(np.isnan(size), -np.inf, size)
        cell_r = float(cell_radius(cells.max(), dims)) if np.isfinite(cells).any() else -np.inf
        g = self.groups[self.groups["axis"] == axis] if len(self.groups) else self.groups
        group_r = float(g["max_displacement"].max()) if len(g) else -np.inf
        kind = ("none" if max(cell_r, group_r) == -np.inf else
                "cell" if cell_r >= group_r else "merge group")
        radius = max(cell_r, group_r, 0.0)
        return {"kind": kind, f"radius_{u}": radius,
                f"cell_{u}": float(cells.max()) if kind == "cell" else None,
                "n_moved": int(np.isin(disp, ("merged", "generalised")).sum()),
                f"r_max_{u}": r_max, f"bound_{u}": float(self.policy.disposal_bound_ratio * r_max),
                "within_r_max": bool(radius <= r_max * (1 + 1e-12))}

    def widest_disposal_line(self, axis: str = "space") -> str:
        """One line for the terminal and the report: the widest disposal against r_max.

        E.g. "widest disposal: cell 4,096 m (2,896 m from the truth at most; r_max 4,200 m)";
        on "time", "widest disposal in time: interval 3,600 s (1,800 s from ...)".
        """
        w = self.widest_disposal(axis)
        u, head = ("m", "widest disposal") if axis == "space" else ("s", "widest disposal in time")
        if w is None or w["kind"] == "none":
            return f"{head}: none (no released {'location' if u == 'm' else 'time'} moved)"
        cell = "cell" if u == "m" else "interval"
        what = (f"{cell} {w[f'cell_{u}']:,.0f} {u}" if w["kind"] == "cell" else "merge group")
        return (f"{head}: {what} ({w[f'radius_{u}']:,.0f} {u} from the truth at most; "
                f"r_max{'' if u == 'm' else '_time'} {w[f'r_max_{u}']:,.0f} {u}"
                + ("" if w["within_r_max"] else ": WIDER than r_max") + ")")

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
                f"max_diameter_allowed_{unit}": self._bound(axis),
                "n_merges_too_wide": int(self.n_merges_too_wide.get(axis, 0)),
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
            "widest_disposal": {axis: self.widest_disposal(axis) for axis in ("space", "time")},
            "n_unplaced": {axis: int(self.n_unplaced.get(axis, 0)) for axis in ("space", "time")},
            "generalised_cells_m": {"n": int(len(cells)),
                                    "sizes": {str(int(s)): int((cells == s).sum())
                                              for s in np.unique(cells)}},
            "bias": self.bias.to_dict("records"), "bias_statement": self.bias_statement,
            "refused": self.refused, "failures": self.failures,
            "advice": self.advice if self.failures else None,
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
