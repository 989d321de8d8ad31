"""The location treatment of a release and its verdict (docs/locations.md, "Treatment").

``treatment = "none"`` releases every location exactly: the verdict is FAIL whenever a record
the outlier policy labels merge, generalise or suppress is released at its exact location (the
policy says that location identifies it). ``treatment = "apply"`` publishes the policy's
disposals: merged records at their group's centroid, generalised records at their cell's centre,
suppressed records withheld (their count, per unit when a unit column is given, is reported and
the totals are checked: released + withheld = read, overall and per unit). Spatial k is measured
again on the released geometry. The verdict is FAIL when the policy refuses (a cap breached, no
fixed point), a released disposal is wider than r_max (docs/locations.md, "The bound on every
disposal") or the totals do not add up; the hole check (one unit with suppressions) is a
warning for the board. The verdict states the widest disposal released.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import geopandas
import numpy as np
import pandas as pd
import pyproj

from synthgeo.locations._inputs import MISSING_LABEL
from synthgeo.locations.outlier_result import OutlierResult
from synthgeo.locations.spatial_k import SpatialKResult, measure_spatial_k

__all__ = ["TREATMENTS", "LocationTreatment", "LocationVerdict", "apply_treatment",
           "location_verdict"]

#: Values of ``[anonymity] treatment``.
TREATMENTS = ("none", "apply")
_K_KEYS = ("n_records", "radius_m", "k", "min", "median", "n_below_k", "share_below_k",
           "n_k_equals_1")


@dataclass(frozen=True, kw_only=True)
class LocationTreatment:
    """The locations a release publishes, per record.

    Attributes
    ----------
    treatment : {"none", "apply"}
    released : ndarray of bool, shape (n_records,)
        False for a withheld (suppressed) record; all True under "none".
    published_m : ndarray of shape (n_records, 2)
        Published location in the projected CRS, metres: exact, group centroid or cell centre;
        NaN when withheld.
    disposal : ndarray of str, shape (n_records,)
        "none", "merged", "generalised" or "suppressed" as published ("none" everywhere under
        treatment "none").
    cell_size_m : ndarray of shape (n_records,)
        Side of the published cell, metres (NaN unless generalised and published so).
    crs_wkt : str
        CRS of `published_m`.
    spatial_k_after : dict
        Spatial k of the released records at their published locations (same radius, k,
        groups and subjects as before the treatment).
    withheld : dict
        ``n`` and, with a unit column, ``unit_column`` and ``by_unit`` (unit → count).
    totals : dict
        ``n_records``, ``n_released``, ``n_withheld``, ``consistent`` (released + withheld =
        records, overall and in every unit).
    """

    treatment: str
    released: np.ndarray = field(repr=False)
    published_m: np.ndarray = field(repr=False)
    disposal: np.ndarray = field(repr=False)
    cell_size_m: np.ndarray = field(repr=False)
    crs_wkt: str = field(repr=False)
    spatial_k_after: dict[str, Any]
    withheld: dict[str, Any]
    totals: dict[str, Any]

    def __post_init__(self) -> None:
        """Refuse an unknown treatment or arrays of different lengths."""
        if self.treatment not in TREATMENTS:
            raise ValueError(f"`treatment` must be one of {TREATMENTS}, got {self.treatment!r}")
        n = len(self.released)
        if not (len(self.published_m) == len(self.disposal) == len(self.cell_size_m) == n):
            raise ValueError("treatment arrays must all have one row per record")

    @property
    def moves_locations(self) -> bool:
        """Whether any released location differs from the true one, or a record is withheld."""
        return bool((self.disposal != "none").any())

    def release_view(self, gdf: geopandas.GeoDataFrame, columns: tuple[str, ...] = ()
                     ) -> dict[str, Any]:
        """Return what the released files carry for the records of `gdf` (same rows, order).

        Parameters
        ----------
        gdf : geopandas.GeoDataFrame
            The loaded records (projected CRS; ``attrs`` from
            :func:`synthgeo.io.points.load_points`).
        columns : tuple of str, default=()
            The input's x/y coordinate columns (CSV), rewritten to the published location in
            the input's CRS and unit.

        Returns
        -------
        dict
            ``keep`` (bool mask of released records), ``geometry`` (GeoSeries of the released
            records in the input's CRS), ``columns`` (x/y name → values in the file's unit),
            ``extra`` (``location_disposal``, ``location_cell_m`` per released record; empty
            under treatment "none").
        """
        keep = self.released
        pts = geopandas.GeoSeries(geopandas.points_from_xy(*self.published_m[keep].T),
                                  crs=self.crs_wkt)
        src = gdf.attrs.get("source_crs") or gdf.crs
        geom = pts.to_crs(src).reset_index(drop=True)
        scale = float((gdf.attrs.get("coordinate_unit") or {}).get("scale_to_crs", 1.0))
        xy = np.column_stack([geom.x.to_numpy(), geom.y.to_numpy()]) / scale
        cols = {c: xy[:, j] for j, c in enumerate(columns[:2])}
        extra = {}
        if self.treatment == "apply":
            extra = {"location_disposal": self.disposal[keep],
                     "location_cell_m": self.cell_size_m[keep]}
        return {"keep": keep, "geometry": geom, "columns": cols, "extra": extra}


@dataclass(frozen=True, kw_only=True)
class LocationVerdict:
    """PASS / FAIL / NOT ASSESSED for the locations a release publishes.

    Attributes
    ----------
    status : {"PASS", "FAIL", "NOT ASSESSED"}
    treatment : {"none", "apply"} or None
    reasons : tuple of str
        Why it fails (empty on PASS), or why it was not assessed.
    details : dict
        Numbers behind it: records, released, withheld (per unit), moved, labelled not ok and
        released exactly, spatial k before and after, totals check, hole flag, and the widest
        disposal released (``widest_disposal``: kind, radius and cell in metres, r_max).
    """

    status: str
    treatment: str | None = None
    reasons: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Refuse a status outside the shared vocabulary."""
        if self.status not in ("PASS", "FAIL", "NOT ASSESSED"):
            raise ValueError(f"`status` must be PASS, FAIL or NOT ASSESSED, got {self.status!r}")

    @property
    def passed(self) -> bool:
        """Whether the status is PASS."""
        return self.status == "PASS"

    def to_dict(self) -> dict[str, Any]:
        """``{"status": ..., "treatment": ..., "reasons": [...], **details}``, JSON-ready."""
        return {"status": self.status, "treatment": self.treatment,
                "reasons": list(self.reasons), **self.details}

    def summary_line(self) -> str:
        """One line for the terminal and the report's summary."""
        d = self.details
        head = f"location verdict {self.status} (treatment = {self.treatment!r})"
        if self.status == "NOT ASSESSED":
            return head + ": " + "; ".join(self.reasons)
        body = (f"{d.get('n_released', 0):,} of {d.get('n_records', 0):,} records released, "
                f"{d.get('n_moved', 0):,} moved, {d.get('n_withheld', 0):,} withheld; "
                f"{d.get('n_exact_flagged', 0):,} labelled merge/generalise/suppress released "
                "exactly")
        w = d.get("widest_disposal")
        if w and w.get("kind") not in (None, "none"):
            what = f"cell {w['cell_m']:,.0f} m" if w["kind"] == "cell" else "merge group"
            body += (f"; widest disposal {what}, {w['radius_m']:,.0f} m from the truth at most "
                     f"(r_max {w['r_max_m']:,.0f} m)")
        return head + ": " + body + ("" if self.passed else " — " + "; ".join(self.reasons))


def _withheld(outliers: OutlierResult, released: np.ndarray) -> tuple[dict, dict]:
    """Withheld counts (per unit) and the totals check."""
    n, n_rel = len(released), int(released.sum())
    withheld: dict[str, Any] = {"n": n - n_rel}
    consistent = n_rel + withheld["n"] == n
    if outliers.unit is not None:
        unit = pd.Series(outliers.unit, dtype=object).where(pd.notna(outliers.unit),
                                                            MISSING_LABEL).astype(str)
        table = pd.crosstab(unit, released).reindex(columns=[False, True], fill_value=0)
        by_unit = {u: int(v) for u, v in table[False].items() if v}
        withheld.update(unit_column=outliers.unit_column, by_unit=by_unit)
        per_unit = table[False] + table[True] == unit.value_counts().reindex(table.index)
        consistent = consistent and bool(per_unit.all())
    totals = {"n_records": n, "n_released": n_rel, "n_withheld": withheld["n"],
              "consistent": bool(consistent)}
    return withheld, totals


def apply_treatment(points: geopandas.GeoDataFrame, outliers: OutlierResult,
                    spatial_k: SpatialKResult, *, treatment: str = "none",
                    id_column: str | None = None) -> LocationTreatment:
    """Publish the locations under `treatment` and measure spatial k again on them.

    Parameters
    ----------
    points : geopandas.GeoDataFrame
        The records the policy ran on (projected CRS, metres; same rows and order).
    outliers : OutlierResult
        The outlier policy's outcome on `points` (its spatial disposals are applied).
    spatial_k : SpatialKResult
        Spatial k of `points` before the treatment (its radius, k, cap, groups and subjects
        are used again).
    treatment : {"none", "apply"}, default="none"
    id_column : str, optional
        Record id column.

    Returns
    -------
    LocationTreatment

    Raises
    ------
    ValueError
        Unknown `treatment`, or `outliers` not from `points`.

    Examples
    --------
    >>> import geopandas, numpy as np
    >>> from synthgeo.locations import OutlierPolicy, apply_outlier_policy, measure_spatial_k
    >>> xy = np.array([[0, 0], [10, 0], [0, 10], [10, 10], [5000, 5000]], float)
    >>> xy += [630_000.0, 4_270_000.0]  # easting, northing in UTM zone 10N (metres)
    >>> pts = geopandas.GeoDataFrame(geometry=geopandas.points_from_xy(*xy.T), crs=32610)
    >>> ol = apply_outlier_policy(pts, OutlierPolicy(k=3, r_max_m=100, max_suppressed_share=1),
    ...                           on_failure="report")
    >>> sk = measure_spatial_k(pts, 100, k=3)
    >>> apply_treatment(pts, ol, sk, treatment="apply").released.tolist()
    [True, True, True, True, False]
    """
    if treatment not in TREATMENTS:
        raise ValueError(f"`treatment` must be one of {TREATMENTS}, got {treatment!r}")
    if len(outliers.record_id) != len(points):
        raise ValueError("`outliers` holds another number of records than `points`")
    n = len(points)
    true_m = np.column_stack([points.geometry.x.to_numpy(), points.geometry.y.to_numpy()])
    if treatment == "none":
        released, published = np.ones(n, dtype=bool), true_m
        disposal, cells = np.full(n, "none", dtype=object), np.full(n, np.nan)
    else:
        released = ~outliers.suppressed
        published = np.where(released[:, None], outliers.published_m, np.nan)
        disposal, cells = outliers.disposal.copy(), outliers.cell_size_m.copy()
    crs_wkt = pyproj.CRS.from_user_input(points.crs).to_wkt()
    after = _spatial_k_after(points, released, published, spatial_k, id_column)
    withheld, totals = _withheld(outliers, released)
    return LocationTreatment(treatment=treatment, released=released, published_m=published,
                             disposal=disposal, cell_size_m=cells, crs_wkt=crs_wkt,
                             spatial_k_after=after, withheld=withheld, totals=totals)


def _spatial_k_after(points: geopandas.GeoDataFrame, released: np.ndarray,
                     published: np.ndarray, before: SpatialKResult,
                     id_column: str | None) -> dict[str, Any]:
    """Spatial k of the released records at their published locations (summary)."""
    cols = [c for c in (*before.group_by, before.subject_column) if c]
    keep = [c for c in dict.fromkeys([*cols, id_column or points.attrs.get("id_column")])
            if c and c in points.columns]
    layer = geopandas.GeoDataFrame(
        points.loc[released, keep].reset_index(drop=True),
        geometry=geopandas.points_from_xy(*published[released].T), crs=points.crs)
    layer.attrs.update(points.attrs)
    after = measure_spatial_k(layer, before.radius_m, k=before.k, group_by=list(before.group_by),
                              subject=before.subject_column, k_max=before.k_max,
                              id_column=id_column)
    s = after.summary()
    return {key: s.get(key) for key in _K_KEYS}


def _widest_released(outliers: OutlierResult, treated: LocationTreatment) -> dict[str, Any]:
    """Return the widest disposal the release publishes (none moved under treatment "none")."""
    w = outliers.widest_disposal("space")
    if treated.treatment == "apply":
        return w
    return {**w, "kind": "none", "radius_m": 0.0, "cell_m": None, "n_moved": 0,
            "within_r_max": True}


def location_verdict(outliers: OutlierResult | None, treated: LocationTreatment | None,
                     spatial_k: SpatialKResult | None = None) -> LocationVerdict:
    """Judge the released locations (see the module notes for the rules).

    Parameters
    ----------
    outliers : OutlierResult, optional
        The outlier policy's outcome; None: NOT ASSESSED.
    treated : LocationTreatment, optional
        The published locations; None: NOT ASSESSED.
    spatial_k : SpatialKResult, optional
        Spatial k before the treatment (reported beside the value after).

    Returns
    -------
    LocationVerdict

    Examples
    --------
    >>> location_verdict(None, None).to_dict()["status"]
    'NOT ASSESSED'
    """
    if outliers is None or treated is None:
        return LocationVerdict(status="NOT ASSESSED", reasons=(
            "the outlier policy did not run on the released locations",))
    flagged = outliers.label != "ok"
    exact = treated.released & (treated.disposal == "none")  # under "none": every record
    n_exact_flagged = int((flagged & exact).sum())
    reasons = []
    if treated.treatment == "none" and n_exact_flagged:
        fix = ("the policy itself refuses (" + outliers.refusal_message() + "), so "
               '`treatment = "apply"` would fail too: change the policy first'
               if outliers.refused else
               'set `[anonymity] treatment = "apply"` to publish the policy\'s disposals')
        reasons.append(f"{n_exact_flagged:,} record(s) the outlier policy labels "
                       "merge/generalise/suppress are released at their exact location "
                       f'(treatment = "none"); {fix}')
    if treated.treatment == "apply" and outliers.refused:
        reasons.append("the outlier policy refuses (" + outliers.refusal_message() + "): the "
                       "disposals of its last pass were applied, but they are not a policy "
                       "the board can approve, and records it labelled ok before that pass "
                       "are released exactly; change the policy first")
    widest = _widest_released(outliers, treated)
    if not widest["within_r_max"]:
        what = (f"a cell {widest['cell_m']:,.0f} m wide" if widest["kind"] == "cell"
                else "a merge group")
        reasons.append(f"{what} is published up to {widest['radius_m']:,.0f} m from the truth, "
                       f"beyond r_max = {widest['r_max_m']:,.0f} m, the largest generalisation "
                       "the release tolerates; keep `disposal_bound_ratio` at 1 so that records "
                       "that cannot be placed within r_max are suppressed")
    if not treated.totals["consistent"]:
        reasons.append("released + withheld records do not add up to the records read")
    before = None if spatial_k is None else spatial_k.summary()
    details = {
        "n_records": treated.totals["n_records"], "n_released": treated.totals["n_released"],
        "n_withheld": treated.totals["n_withheld"],
        "n_moved": int((treated.released & (treated.disposal != "none")).sum()),
        "n_labelled_not_ok": int(flagged.sum()), "n_exact_flagged": n_exact_flagged,
        "withheld": treated.withheld, "totals_consistent": treated.totals["consistent"],
        "policy_refused": outliers.refused, "hole_flag": bool(outliers.hole.get("flag")),
        "spatial_k_before": None if before is None else {k: before.get(k) for k in _K_KEYS},
        "spatial_k_after": treated.spatial_k_after,
        "widest_disposal": widest,
    }
    return LocationVerdict(status="FAIL" if reasons else "PASS", treatment=treated.treatment,
                           reasons=tuple(reasons), details=details)
