"""Checks on an outlier-policy outcome: caps, hole check, group extent and the bias statement.

docs/locations.md, "The outlier policy". Each function takes plain arrays and returns numbers (and
messages); :func:`synthgeo.locations.outliers.apply_outlier_policy` decides what refuses.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from synthgeo.locations._inputs import MISSING_LABEL

__all__ = [
    "suppression_caps", "hole_check", "cap_suggestions", "bias_table", "bias_statement",
    "SMD_THRESHOLD",
]

SMD_THRESHOLD = 0.1
"""|standardised mean difference| above which a difference is reported as not negligible
(Austin 2009, Stat Med 28:3083, doi:10.1002/sim.3697, citing Normand et al. 2001)."""

_MAX_CATEGORIES = 20  # a text column with more values is not compared (free text, ids)


def suppression_caps(
    suppressed: np.ndarray, unit: np.ndarray | None, *, max_share: float, max_unit_share: float,
    other: dict[str, np.ndarray] | None = None,
) -> tuple[dict[str, Any], pd.DataFrame | None]:
    """Global and per-unit suppressed shares against their caps.

    Parameters
    ----------
    suppressed : ndarray of bool, shape (n_records,)
    unit : ndarray of shape (n_records,), optional
        Administrative unit per record (missing values form their own unit).
    max_share, max_unit_share : float
        Caps (shares, e.g. 0.01 and 0.10); a share equal to its cap passes.
    other : dict of str to ndarray of bool, optional
        Further per-record flags counted per unit as ``n_<name>`` (e.g. merged, generalised).

    Returns
    -------
    overall : dict
        ``n_records``, ``n_suppressed``, ``share``, ``cap``, ``passes``.
    units : pandas.DataFrame or None
        Per unit: ``unit``, ``n_records``, ``n_suppressed``, ``share``, ``passes`` and the
        ``n_<name>`` counts of `other`; sorted by share, highest first.
    """
    n = len(suppressed)
    n_sup = int(suppressed.sum())
    share = n_sup / n if n else 0.0
    overall = {"n_records": n, "n_suppressed": n_sup, "share": share, "cap": max_share,
               "passes": bool(share <= max_share)}
    if unit is None:
        return overall, None
    labels = pd.Series(unit, dtype=object).where(pd.notna(unit), MISSING_LABEL).astype(str)
    frame = pd.DataFrame({"unit": labels.to_numpy(), "suppressed": suppressed})
    table = frame.groupby("unit", sort=True)["suppressed"].agg(["size", "sum"]).reset_index()
    table.columns = ["unit", "n_records", "n_suppressed"]
    table["n_suppressed"] = table["n_suppressed"].astype(np.int64)
    table["share"] = table["n_suppressed"] / table["n_records"]
    table["passes"] = table["share"] <= max_unit_share
    keys, ascending = ["share", "n_suppressed"], [False, False]
    for name, flags in (other or {}).items():
        counts = pd.Series(np.asarray(flags, dtype=np.int64)).groupby(frame["unit"]).sum()
        table[f"n_{name}"] = table["unit"].map(counts).astype(np.int64).to_numpy()
        keys.append(f"n_{name}")
        ascending.append(False)
    table = table.sort_values([*keys, "unit"], ascending=[*ascending, True],
                              kind="stable").reset_index(drop=True)
    return overall, table


def hole_check(units: pd.DataFrame | None, unit_column: str | None) -> dict[str, Any]:
    """Flag when exactly one unit had suppressions (published unit totals then reveal it).

    If per-unit counts of the released records and a grand total of all records are
    published, the total minus the sum of the units is the number suppressed; when a single
    unit had suppressions, that difference is its suppressed count (a disclosure "hole").

    Returns
    -------
    dict
        ``applies`` (a unit column was given), ``n_units_with_suppressions``, ``flag``,
        ``unit`` and ``n_suppressed`` when flagged, and ``message``.
    """
    if units is None:
        return {"applies": False, "flag": False,
                "message": "no unit column: per-unit totals not checked"}
    hit = units[units["n_suppressed"] > 0]
    out: dict[str, Any] = {"applies": True, "n_units_with_suppressions": int(len(hit)),
                           "flag": bool(len(hit) == 1)}
    if len(hit) == 1:
        row = hit.iloc[0]
        out.update(unit=str(row["unit"]), n_suppressed=int(row["n_suppressed"]))
        out["message"] = (
            f"hole: only {unit_column} {row['unit']!r} had suppressions "
            f"({int(row['n_suppressed'])}); publishing per-unit counts with a grand total "
            "would reveal that count — publish no grand total, or suppress in a second unit"
        )
    elif len(hit) == 0:
        out["message"] = "no unit had suppressions: no count to reveal"
    else:
        out["message"] = (f"{len(hit)} units had suppressions: the grand total minus the unit "
                          "counts reveals only their sum")
    return out


def cap_suggestions(
    distances: np.ndarray, unit: np.ndarray | None, *, k: int, r_max: float,
    generalise_ratio: float, max_share: float, max_unit_share: float,
    cell_radius: np.ndarray | None = None, bound_ratio: float = 1.0,
) -> dict[str, Any]:
    """First-pass estimates of the largest k and the smallest r_max that meet both caps.

    A record is suppressed in the first pass when d_i > generalise_ratio · r_max, d_i the
    distance to its (k−1)-th nearest other subject. With `cell_radius` (the bound on every
    disposal, docs/locations.md) a record flagged at all (d_i > r_max) is kept only when the
    smallest cell holding k subjects around it has a radius ≤ bound_ratio · r_max: the
    smallest r_max keeping it is min(d_i, max(d_i / generalise_ratio, radius / bound_ratio))
    (merges are ignored: with the default group bound they cannot place a flagged record).
    ``distances[:, j]`` holds the distance to the (j+1)-th, so every smaller threshold
    k' = j + 2 comes for free. Later passes can move
    the outcome, so these are estimates for the message, not guarantees.

    Parameters
    ----------
    distances : ndarray of shape (n_records, k − 1)
        Sorted nearest-other-subject distances on this axis (units of `r_max`).
    unit : ndarray of shape (n_records,), optional
        Unit labels.
    k : int
    r_max : float
    generalise_ratio, max_share, max_unit_share : float
    cell_radius : ndarray of shape (n_records, k − 1), optional
        Radius (half-diagonal) of the smallest quadtree cell holding ≥ j + 2 subjects around
        each record, all at their true locations (``Axis.smallest_cell_radius``).
    bound_ratio : float, default=1
        ``disposal_bound_ratio``: a cell is allowed when its radius ≤ bound_ratio · r_max.

    Returns
    -------
    dict
        ``k_max_passing`` (largest k' ≤ k meeting both caps at this r_max, None if none) and
        ``r_max_min_passing`` (smallest r_max meeting both caps at this k; inf if none).
    """
    n = len(distances)
    needed = distances / generalise_ratio  # the smallest r_max keeping each record
    if cell_radius is not None:
        needed = np.minimum(distances, np.maximum(needed, cell_radius / bound_ratio))
    codes = None if unit is None else pd.factorize(pd.Series(unit, dtype=object),
                                                   use_na_sentinel=False)[0]

    def passes(sup: np.ndarray) -> bool:
        if n == 0:
            return True
        if sup.mean() > max_share:
            return False
        if codes is not None:
            share = np.bincount(codes, weights=sup) / np.bincount(codes)
            return bool(np.all(share <= max_unit_share))
        return True

    k_ok = None
    for kk in range(k, 1, -1):
        if passes(needed[:, kk - 2] > r_max):
            k_ok = kk
            break
    d = needed[:, -1] if n else np.zeros(0)

    def min_r(values: np.ndarray, cap: float) -> float:
        allowed = int(np.floor(cap * len(values) + 1e-9))
        if allowed >= len(values):
            return 0.0
        return float(np.sort(values)[::-1][allowed])  # strictly above this is suppressed

    r_need = min_r(d, max_share) if n else 0.0
    if codes is not None:
        for c in np.unique(codes):
            r_need = max(r_need, min_r(d[codes == c], max_unit_share))
    return {"k_max_passing": k_ok, "r_max_min_passing": r_need}


def bias_table(frame: pd.DataFrame, suppressed: np.ndarray, columns: list[str]) -> pd.DataFrame:
    """Standardised mean differences, suppressed vs retained records, per attribute.

    Numeric columns: d = (m_s − m_r) / √((s²_s + s²_r)/2). Text columns with ≤ 20 values: one
    row per value, d for its indicator = (p_s − p_r) / √((p_s(1−p_s) + p_r(1−p_r))/2) (Austin
    2009, eqs. 1–2, doi:10.1002/sim.3697). d is NaN where undefined (no suppressed records,
    or no variance in either group); missing values form their own category / are dropped from
    means.

    Returns
    -------
    pandas.DataFrame
        ``attribute``, ``value`` (category, or "mean"), ``suppressed``, ``retained`` (mean or
        share), ``smd``, ``flag`` (|smd| > :data:`SMD_THRESHOLD`); sorted by |smd|.
    """
    rows = []
    sup = np.asarray(suppressed, dtype=bool)
    for col in columns:
        series = frame[col]
        if pd.api.types.is_bool_dtype(series) or not pd.api.types.is_numeric_dtype(series):
            text = series.astype(object).where(series.notna(), MISSING_LABEL).astype(str)
            values = text.to_numpy()
            cats = pd.unique(values)
            if len(cats) > _MAX_CATEGORIES:
                continue
            for cat in sorted(cats):
                ind = values == cat
                ps = ind[sup].mean() if sup.any() else np.nan
                pr = ind[~sup].mean() if (~sup).any() else np.nan
                den = np.sqrt((ps * (1 - ps) + pr * (1 - pr)) / 2)
                smd = (ps - pr) / den if den > 0 else np.nan
                rows.append((col, str(cat), ps, pr, smd))
        else:
            x = series.to_numpy(dtype=float)
            xs, xr = x[sup & ~np.isnan(x)], x[~sup & ~np.isnan(x)]
            ms = xs.mean() if len(xs) else np.nan
            mr = xr.mean() if len(xr) else np.nan
            vs = xs.var(ddof=1) if len(xs) > 1 else 0.0
            vr = xr.var(ddof=1) if len(xr) > 1 else 0.0
            den = np.sqrt((vs + vr) / 2)
            smd = (ms - mr) / den if den > 0 else np.nan
            rows.append((col, "mean", ms, mr, smd))
    out = pd.DataFrame(rows, columns=["attribute", "value", "suppressed", "retained", "smd"])
    out["flag"] = out["smd"].abs() > SMD_THRESHOLD
    order = out["smd"].abs().fillna(-1).sort_values(ascending=False, kind="stable").index
    return out.loc[order].reset_index(drop=True)


def bias_statement(table: pd.DataFrame, n_suppressed: int, n_retained: int, *,
                   applied: bool = True) -> str:
    """Write one paragraph for the report: are the suppressed records a random-looking subset.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`bias_table`.
    n_suppressed, n_retained : int
        Records the policy suppresses / keeps.
    applied : bool, default=True
        False when the policy is only diagnosed (``[anonymity] treatment = "none"``: every
        record is released): the paragraph then says what suppression *would* do.

    Returns
    -------
    str
    """
    sup, ret = ("suppressed", "retained") if applied else ("would be suppressed",
                                                           "would be retained")
    if n_suppressed == 0:
        return ("No record was suppressed, so suppression introduces no selection bias."
                if applied else "The policy would suppress no record.")
    if n_retained == 0:
        return (f"All {n_suppressed} records {'were' if applied else 'would be'} suppressed: "
                "none would be released, so there is no retained group to compare them with.")
    if table.empty:
        return (f"{n_suppressed} record(s) {sup}, {n_retained} {ret}; no attribute "
                "was compared (name them with `attributes`).")
    flagged = table[table["flag"]]
    head = (f"{n_suppressed} record(s) {sup} vs {n_retained} {ret}; "
            f"{len(flagged)} of {len(table)} comparisons exceed |SMD| = {SMD_THRESHOLD} "
            "(Austin 2009).")
    if flagged.empty:
        text = head + (f" The records that {'were' if applied else 'would be'} suppressed do "
                       "not differ noticeably from the others on the attributes compared.")
    else:
        parts = []
        for _, r in flagged.head(3).iterrows():
            if r["value"] == "mean":
                parts.append(f"{r['attribute']}: mean {r['suppressed']:.4g} vs "
                             f"{r['retained']:.4g} (SMD {r['smd']:+.2f})")
            else:
                parts.append(f"{r['attribute']} = {r['value']!r}: {r['suppressed']:.0%} vs "
                             f"{r['retained']:.0%} (SMD {r['smd']:+.2f})")
        text = head + ((" Suppression is selective — " if applied else
                        " Suppression would be selective — ") + "; ".join(parts)
                       + " (suppressed vs retained): "
                       + ("analyses of the released file under-represent records like the "
                          "suppressed ones." if applied else
                          "a file released under this policy would under-represent records "
                          "like them (none was suppressed here)."))
    if n_suppressed < 20:
        text += (f" With only {n_suppressed} {'suppressed' if applied else 'such'} record(s) "
                 "these differences are "
                 "noisy; read them as indicative.")
    return text
