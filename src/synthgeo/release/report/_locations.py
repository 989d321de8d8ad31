"""The report's location section: spatial k and the outlier policy (docs/locations.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from synthgeo.release.report import _figures as F
from synthgeo.release.report._html import Section, render
from synthgeo.release.report._reuse import SPATIAL_K

__all__ = ["locations_for_report", "section_locations"]


def _get(obj: Any, key: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _as_frame(obj: Any, value_name: str) -> pd.DataFrame | None:
    if obj is None:
        return None
    if isinstance(obj, pd.DataFrame):
        return obj.reset_index(drop=isinstance(obj.index, pd.RangeIndex))
    if isinstance(obj, pd.Series):
        return obj.rename_axis("item").reset_index(name=value_name)
    if isinstance(obj, Mapping):
        return pd.DataFrame(list(obj.items()), columns=["item", value_name])
    return pd.DataFrame(obj)


def locations_for_report(locations: Any) -> Any:
    """Turn :class:`synthgeo.locations.LocationDiagnostics` into :func:`section_locations`' keys.

    Anything else (a mapping, None) is returned unchanged.
    """
    if locations is None or not hasattr(locations, "spatial_k") or not hasattr(
            locations, "outliers"):
        return locations
    from synthgeo.locations.diagnostics import report_tables

    sk, ol = locations.spatial_k, locations.outliers
    tables = report_tables(locations)
    pol = ol.policy
    policy = {"k": pol.k, "r_max_m": pol.r_max_m,
              "max_suppressed_share": pol.max_suppressed_share,
              "max_unit_suppressed_share": pol.max_unit_suppressed_share,
              "outcome": "passes" if not ol.refused else "would refuse",
              # the bound on every disposal (issue 23): what the policy publishes at most
              "widest disposal": ol.widest_disposal_line().split(": ", 1)[1]}
    return {
        "spatial_k": sk.spatial_k, "radius_m": sk.radius_m, "k": sk.k,
        "k_max": getattr(sk, "k_max", None),
        "summary": dict(zip(tables["overview"]["item"], tables["overview"]["value"])),
        "worst_offenders": tables["worst_offenders"],
        "outlier_policy": tables["labels"],
        "policy": policy,
        "bias_statement": tables["bias_statement"],
        "bias": tables["bias"],
    }


def _summary_of(sk: np.ndarray, k: int | None) -> dict[str, Any] | None:
    """Count, min, median, 5th percentile (and the number and share below k) of spatial k."""
    if not sk.size:
        return None
    summary: dict[str, Any] = {"records": int(sk.size), "min": int(sk.min()),
                               "median": float(np.median(sk)),
                               "5th percentile": float(np.percentile(sk, 5))}
    if k is not None:
        below = int(np.sum(sk < k))
        summary |= {f"records below k = {k}": below, "share below k": below / sk.size}
    return summary


def _policy_labels(locations: Any) -> pd.DataFrame | None:
    """Return the outlier policy's label counts (given, or counted from per-record labels)."""
    table = _get(locations, "outlier_policy")
    labels = _get(locations, "outlier_labels")
    if table is None and labels is not None:
        counts = pd.Series(np.asarray(labels)).value_counts().rename_axis("label")
        table = counts.reset_index(name="records")
    return _as_frame(table, "records")


def section_locations(locations: Any) -> Section | None:
    """Spatial-k histogram and summary, worst offenders, and the outlier-policy table.

    Parameters
    ----------
    locations : mapping or object, optional
        ``ReleaseResult.locations``; ``None`` skips the section. Keys (or attributes), each
        optional:

        - ``spatial_k`` : array-like of int, shape (n_records,), or a DataFrame with a
          ``spatial_k`` column — records within ``radius_m``, itself included;
        - ``radius_m`` : float, metres; ``k`` : int threshold; ``k_max`` : int count cap;
        - ``summary`` : mapping of statistic to value (computed from ``spatial_k`` if absent:
          count, min, median, 5th percentile, number and share below k);
        - ``worst_offenders`` : DataFrame (the first 20 rows are shown);
        - ``outlier_policy`` : DataFrame or mapping of label to count (ok / merge / generalise
          / suppress), or ``outlier_labels`` : array-like of labels per record (counted);
        - ``policy`` : mapping of policy parameters (k, r_max_m, caps) and their outcome (with
          the widest disposal: a cell's half-diagonal or a merge group's largest
          member-to-centroid distance, against r_max);
        - ``bias_statement`` : str and ``bias`` : DataFrame — the records the policy suppresses
          (or would) against the others (standardised mean differences).

    Returns
    -------
    Section or None
    """
    locations = locations_for_report(locations)
    if locations is None:
        return None
    sk = _get(locations, "spatial_k")
    if isinstance(sk, pd.DataFrame):
        sk = sk["spatial_k"]
    k, radius_m, k_max = (_get(locations, n) for n in ("k", "radius_m", "k_max"))
    summary, histogram_uri = _get(locations, "summary"), None
    if sk is not None:
        sk = np.asarray(sk, dtype=int)
        if summary is None:
            summary = _summary_of(sk, k)
        histogram_uri = F.reused(SPATIAL_K) or F.to_data_uri(  # a draw: the earlier one's
            F.plot_spatial_k_histogram(sk, k=k, radius_m=radius_m, k_max=k_max))
    worst = _get(locations, "worst_offenders")
    parts = {
        "histogram_uri": histogram_uri,
        "summary": _as_frame(summary, "value"),
        "worst": None if worst is None else _as_frame(worst, "value").head(20),
        "policy_labels": _policy_labels(locations),
        "policy_parameters": _as_frame(_get(locations, "policy"), "value"),
        "bias": _get(locations, "bias"),
    }
    if all(v is None for v in parts.values()):
        return None
    body = render("locations.html.j2", k=k, bias_statement=_get(locations, "bias_statement"),
                  radius_m=f"{radius_m:,.0f}" if radius_m else None, **parts)
    return Section("locations", "Location diagnostics: spatial k and outlier policy", body)
