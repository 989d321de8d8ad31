"""Spatial k-anonymity: per-record k within a radius, its distribution and worst offenders.

docs/locations.md, "Spatial k-anonymity". ``spatial_k`` of a record is the number of
records (distinct subjects when a subject id is given) within ``radius_m`` of it, itself
included, among records with the same quasi-identifier values when ``group_by`` is given. The
radius is the recipient's uncertainty about a published location (for the exact locations of a
partially synthetic file: the attacker's positional uncertainty), not a knob to tune.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import geopandas
import numpy as np
import pandas as pd
import pyproj

from synthgeo._repr import confidential_repr
from synthgeo.locations._inputs import as_columns, check_threshold, prepare
from synthgeo.locations.nearest import nearest_other_subjects
from synthgeo.locations.neighbours import radius_counts

__all__ = ["SpatialKResult", "measure_spatial_k", "quantile_count"]

_BASE_EDGES = (1, 2, 3, 4, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)


def quantile_count(values: np.ndarray, q: float) -> int:
    """Return the q-quantile of integer counts as an observed value (inverted CDF).

    Parameters
    ----------
    values : ndarray of int, shape (n,)
        Counts (n ≥ 1).
    q : float
        Probability in [0, 1].

    Returns
    -------
    int
        The smallest value v with F(v) ≥ q (F the empirical CDF): never an interpolated count.

    References
    ----------
    Hyndman, R. J. & Fan, Y. (1996). Sample quantiles in statistical packages. The American
    Statistician 50(4), 361–365, definition 1. doi:10.1080/00031305.1996.10473566
    """
    return int(np.quantile(np.asarray(values), q, method="inverted_cdf"))


@dataclass(frozen=True, kw_only=True)
class SpatialKResult:
    """Per-record spatial k and how to summarise it.

    Attributes
    ----------
    radius_m : float
        Radius in metres (inclusive).
    k : int
        Threshold: a record with ``spatial_k < k`` breaks k-anonymity.
    k_max : int or None
        Cap: ``spatial_k == k_max`` reads "≥ k_max"; below it counts are exact.
    group_by : tuple of str
        Quasi-identifier columns (empty: location only).
    subject_column : str or None
        Subject id column (k counts distinct subjects) or None (k counts records).
    id_column : str
        Record id column name.
    record_id : ndarray of shape (n_records,)
        Record ids.
    spatial_k : ndarray of int64, shape (n_records,)
        Records (or subjects) within `radius_m`, itself included, capped at `k_max`.
    group : ndarray of object, shape (n_records,), or None
        Group label per record ("value × value"), None without `group_by`.
    subject : ndarray of int64, shape (n_records,), or None
        Subject codes.
    coords_m : ndarray of shape (n_records, 2)
        Projected coordinates, metres (confidential).
    crs_wkt : str
        WKT of the projected CRS of `coords_m`.
    """

    radius_m: float
    k: int
    k_max: int | None
    group_by: tuple[str, ...]
    subject_column: str | None
    id_column: str
    record_id: np.ndarray
    spatial_k: np.ndarray
    group: np.ndarray | None
    subject: np.ndarray | None
    coords_m: np.ndarray
    crs_wkt: str

    def __repr__(self) -> str:
        """Show counts and settings only (never an id, a count per record or a coordinate)."""
        return confidential_repr(self, n_records=self.n_records, radius_m=self.radius_m,
                                 k=self.k, k_max=self.k_max, group_by=self.group_by,
                                 n_below_k=int(self.below_k.sum()))

    @property
    def n_records(self) -> int:
        """Number of records."""
        return len(self.spatial_k)

    @property
    def below_k(self) -> np.ndarray:
        """Boolean mask, shape (n_records,): ``spatial_k < k``."""
        return self.spatial_k < self.k

    @property
    def at_cap(self) -> np.ndarray:
        """Boolean mask, shape (n_records,): ``spatial_k ≥ k_max`` (value shown as the cap)."""
        if self.k_max is None:
            return np.zeros(self.n_records, dtype=bool)
        return self.spatial_k >= self.k_max

    def label(self, value: int) -> str:
        """Text of a k value: ``"≥100"`` at the cap, else the number."""
        if self.k_max is not None and value >= self.k_max:
            return f"≥{self.k_max}"
        return str(int(value))

    def summary(self) -> dict[str, Any]:
        """Count, min, median, 5th percentile, number and share below k (JSON-ready).

        Quantiles are observed values (inverted CDF); a value equal to ``k_max`` reads
        "≥ k_max" (``*_at_cap`` says so).
        """
        sk = self.spatial_k
        n = len(sk)
        out: dict[str, Any] = {
            "n_records": n, "radius_m": self.radius_m, "k": self.k, "k_max": self.k_max,
            "group_by": list(self.group_by), "subject_column": self.subject_column,
            "n_subjects": int(len(np.unique(self.subject))) if self.subject is not None else n,
            "n_groups": int(len(pd.unique(self.group))) if self.group is not None else 1,
        }
        if n == 0:
            return out
        stats = {"min": int(sk.min()), "p05": quantile_count(sk, 0.05),
                 "median": quantile_count(sk, 0.5)}
        for key, v in stats.items():
            out[key] = v
            out[f"{key}_at_cap"] = bool(self.k_max is not None and v >= self.k_max)
        out["n_below_k"] = int(self.below_k.sum())
        out["share_below_k"] = float(self.below_k.mean())
        out["n_k_equals_1"] = int((sk == 1).sum())
        out["n_at_cap"] = int(self.at_cap.sum())
        return out

    def distribution(self) -> pd.DataFrame:
        """Tabulate every observed k value.

        Returns
        -------
        pandas.DataFrame
            ``spatial_k``, ``label``, ``n_records``, ``share``, ``cumulative_share``.
        """
        values, counts = np.unique(self.spatial_k, return_counts=True)
        n = max(self.n_records, 1)
        return pd.DataFrame({
            "spatial_k": values, "label": [self.label(v) for v in values], "n_records": counts,
            "share": counts / n, "cumulative_share": np.cumsum(counts) / n,
        })

    def histogram(self) -> pd.DataFrame:
        """Histogram data with bins 1, 2, 3, 4, 5–9, 10–19, … (k and the cap are bin edges).

        Returns
        -------
        pandas.DataFrame
            ``lower``, ``upper`` (inclusive; ``upper`` is NaN for the open bin "≥ k_max"),
            ``label``, ``n_records``, ``share``.
        """
        top = self.k_max if self.k_max is not None else int(max(self.spatial_k.max(), 1)) + 1
        edges = sorted({e for e in (*_BASE_EDGES, self.k) if e < top} | {top})
        rows = []
        for lo, hi in zip(edges[:-1], edges[1:]):
            n = int(((self.spatial_k >= lo) & (self.spatial_k < hi)).sum())
            rows.append((lo, hi - 1, str(lo) if hi - 1 == lo else f"{lo}–{hi - 1}", n))
        n_top = int((self.spatial_k >= top).sum())
        if self.k_max is not None:
            rows.append((top, np.nan, f"≥{top}", n_top))
        frame = pd.DataFrame(rows, columns=["lower", "upper", "label", "n_records"])
        frame["share"] = frame["n_records"] / max(self.n_records, 1)
        return frame

    def by_group(self) -> pd.DataFrame:
        """Per group: ``n_records``, ``min``, ``p05``, ``median``, ``n_below_k``, ``share_below_k``.

        Sorted by share below k (worst first). One row ``"all"`` without `group_by`.
        """
        labels = self.group if self.group is not None else np.full(self.n_records, "all", object)
        frame = pd.DataFrame({"group": labels, "spatial_k": self.spatial_k})
        rows = []
        for name, part in frame.groupby("group", sort=True):
            sk = part["spatial_k"].to_numpy()
            below = sk < self.k
            rows.append((name, len(sk), self.label(sk.min()), self.label(quantile_count(sk, 0.05)),
                         self.label(quantile_count(sk, 0.5)), int(below.sum()),
                         float(below.mean())))
        out = pd.DataFrame(rows, columns=["group", "n_records", "min", "p05", "median",
                                          "n_below_k", "share_below_k"])
        return out.sort_values(["share_below_k", "n_records"], ascending=[False, False],
                               kind="stable").reset_index(drop=True)

    def worst_offenders(self, n: int = 10, *, crs: Any = None) -> pd.DataFrame:
        """Return the ``n`` records with the lowest k, most isolated first among equal k.

        Parameters
        ----------
        n : int, default=10
            Rows wanted.
        crs : str, int or pyproj.CRS, optional
            Also give the locations in this CRS (columns ``x``, ``y``; e.g. the input's
            EPSG:4326 gives longitude, latitude), rounded to about 1 cm (7 decimals of a
            degree, 2 of a metre).

        Returns
        -------
        pandas.DataFrame
            Id column, ``spatial_k``, ``group`` (with `group_by`), ``nearest_other_m`` (distance
            to the nearest other record of the same group, another subject; inf if none),
            ``x_m``, ``y_m`` (projected) and optionally ``x``, ``y``. Confidential: true
            locations.
        """
        if self.n_records == 0 or n <= 0:
            return pd.DataFrame()
        kth = np.partition(self.spatial_k, min(n, self.n_records) - 1)[min(n, self.n_records) - 1]
        cand = np.flatnonzero(self.spatial_k <= kth)
        dist, _ = nearest_other_subjects(self.coords_m, 1, subject=self.subject,
                                         groups=self.group, query=cand)
        nearest = dist[:, 0]
        order = np.lexsort((cand, -nearest, self.spatial_k[cand]))[:n]
        rows = cand[order]
        out = pd.DataFrame({self.id_column: self.record_id[rows],
                            "spatial_k": [self.label(v) for v in self.spatial_k[rows]]})
        if self.group is not None:
            out["group"] = self.group[rows]
        out["nearest_other_m"] = nearest[order]
        out["x_m"] = self.coords_m[rows, 0]
        out["y_m"] = self.coords_m[rows, 1]
        if crs is not None:
            target = pyproj.CRS.from_user_input(crs)
            to = pyproj.Transformer.from_crs(pyproj.CRS.from_wkt(self.crs_wkt), target,
                                             always_xy=True)
            x, y = to.transform(out["x_m"].to_numpy(), out["y_m"].to_numpy())
            # to 1 cm: the round trip through the projection adds ~1e-3 m of noise
            digits = 7 if target.is_geographic else 2
            out["x"], out["y"] = np.round(x, digits), np.round(y, digits)
        return out

    def to_dataframe(self) -> pd.DataFrame:
        """Return the per-record table (confidential).

        Columns: id, group, ``spatial_k``, ``at_cap``, ``below_k``, ``x_m``, ``y_m``.
        """
        out = pd.DataFrame({self.id_column: self.record_id})
        if self.group is not None:
            out["group"] = self.group
        out["spatial_k"] = self.spatial_k
        out["at_cap"] = self.at_cap
        out["below_k"] = self.below_k
        out["x_m"] = self.coords_m[:, 0]
        out["y_m"] = self.coords_m[:, 1]
        return out


def measure_spatial_k(
    points: geopandas.GeoDataFrame,
    radius_m: float,
    *,
    k: int = 5,
    group_by: str | Sequence[str] | None = None,
    subject: str | None = None,
    k_max: int | None = 100,
    id_column: str | None = None,
) -> SpatialKResult:
    """Measure spatial k-anonymity of every record.

    Parameters
    ----------
    points : geopandas.GeoDataFrame
        Points in a projected CRS in metres (:func:`synthgeo.io.points.load_points` gives one);
        a geographic or Web Mercator layer is refused.
    radius_m : float
        The recipient's uncertainty about a published location, metres (inclusive).
    k : int, default=5
        Threshold for "below k".
    group_by : str or sequence of str, optional
        Quasi-identifier columns a recipient can tell apart (e.g. ``["race", "gender"]``): a
        record is anonymous only among records with the same values. Missing values form their
        own value.
    subject : str, optional
        Subject id column: k counts distinct subjects (subject deduplication).
    k_max : int or None, default=100
        Cap on the counts (read "≥ k_max"); must be ≥ `k`. None: exact counts everywhere.
    id_column : str, optional
        Record id column (default: ``points.attrs["id_column"]`` from ``load_points``, else
        the row number).

    Returns
    -------
    SpatialKResult

    Raises
    ------
    TypeError
        If `points` is not a GeoDataFrame.
    InputError
        Missing/geographic/Web Mercator CRS, non-point geometry, missing column, missing
        subject id.
    SpecError
        If `radius_m` < 0, `k` < 2 or `k_max` < `k`.

    Notes
    -----
    spatial_k_i = #{j : g_j = g_i, ‖x_j − x_i‖ ≤ radius_m} (distinct subjects with `subject`),
    by KD-tree (:func:`synthgeo.locations.neighbours.radius_counts`). docs/locations.md;
    the grouped form is k-anonymity within equivalence classes of quasi-identifiers (Sweeney
    2002, doi:10.1142/S0218488502001648) with location generalised to a disc of radius r.

    Examples
    --------
    >>> import geopandas, numpy as np
    >>> xy = np.array([[0, 0], [60, 80], [300, 0.0]]) + [500_000, 4_980_000]  # UTM 15N, m
    >>> gdf = geopandas.GeoDataFrame(geometry=geopandas.points_from_xy(*xy.T), crs=32615)
    >>> measure_spatial_k(gdf, 100.0, k=2).spatial_k.tolist()
    [2, 2, 1]
    """
    cols = as_columns(group_by, "group_by")
    check_threshold(k, k_max)
    prep = prepare(points, group_by=cols, subject=subject, id_column=id_column)
    sk = radius_counts(prep.coords_m, radius_m, groups=prep.group_label, subject=prep.subject,
                       k_max=k_max)
    return SpatialKResult(
        radius_m=float(radius_m), k=int(k), k_max=None if k_max is None else int(k_max),
        group_by=cols, subject_column=subject, id_column=prep.id_column,
        record_id=prep.record_id, spatial_k=sk, group=prep.group_label, subject=prep.subject,
        coords_m=prep.coords_m, crs_wkt=prep.crs_wkt,
    )
