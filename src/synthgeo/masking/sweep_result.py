"""The outcome of a k sweep: the table, the choice and the finding in words.

The choice rule (docs/locations.md, "Donut geomasking and choosing k"): the smallest k whose
attacker success and detection rate both meet targets set before the sweep; when none does,
the finding says so and names the two alternatives to a point release.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from synthgeo._repr import confidential_repr
from synthgeo.masking.donut import INNER_RATIO

__all__ = ["ALTERNATIVES", "ChooseKResult", "smallest_k_meeting", "finding", "notes"]

#: What to release when no k meets both targets.
ALTERNATIVES: tuple[str, ...] = (
    "aggregated counts (cases per small area) instead of points",
    "the true points for approved analysts in a secure enclave",
)
_TOL = 1e-12


@dataclass(frozen=True, kw_only=True)
class ChooseKResult:
    """Outcome of :func:`choose_k`.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per k: ``k``, ``attacker_success`` (mean over masks) and its Monte Carlo
        standard error ``attacker_success_se``, ``detection_rate`` (share of masks on which the
        utility test passes) and ``detection_rate_se``, ``median_displacement_m`` and its
        ``_dense_m``/``_sparse_m`` parts, ``median_r_k_m``, ``redraw_share`` (displacements
        redrawn because they left the region, per draw), ``meets_attacker_target``,
        ``meets_detection_target``, ``meets_both``.
    chosen_k : int or None
        Smallest k meeting both targets with the chosen method; None when no method and k on
        the grid do.
    finding : str
        The conclusion in words (names the alternatives when no k works).
    alternatives : tuple of str
        The two alternatives to point release when no k works; empty otherwise.
    notes : tuple of str
        Caveats, e.g. an estimate within two Monte Carlo standard errors of its target.
    max_attacker_success, min_detection_rate : float
        The targets, set before the sweep.
    n_cases, n_replicates, random_seed : int
        Cases, replicate masks per k and the seed (common random numbers across k).
    attacker, utility, urbanicity : dict
        The attacker model and its parameters (plus ``n_known``, ``baseline``); the utility
        test, its parameters and its result on the true locations (``{"attacker_only": True}``
        without one); the dense/sparse split.
    verified : bool, default=False
        Whether the masks were verified (each case redrawn until its verified k reached k).
    chosen_method : str or None
        The method of the choice ("donut" or "areal"); None when none meets both targets.
    """

    table: pd.DataFrame
    chosen_k: int | None
    finding: str
    alternatives: tuple[str, ...]
    notes: tuple[str, ...]
    max_attacker_success: float
    min_detection_rate: float
    n_cases: int
    n_replicates: int
    random_seed: int
    attacker: dict[str, Any] = field(repr=False)
    utility: dict[str, Any] = field(repr=False)
    urbanicity: dict[str, Any] = field(repr=False)
    verified: bool = False
    chosen_method: str | None = None

    def __repr__(self) -> str:
        """Show the choice and its size (the table: ``to_dataframe()``; the text: ``finding``)."""
        return confidential_repr(self, chosen_k=self.chosen_k, chosen_method=self.chosen_method,
                                 n_cases=self.n_cases, n_replicates=self.n_replicates,
                                 n_rows=int(len(self.table)), verified=self.verified)

    def to_dataframe(self) -> pd.DataFrame:
        """Return the sweep table (a copy), one row per k."""
        return self.table.copy()

    def to_record(self) -> dict[str, Any]:
        """Everything but the inputs' provenance, as JSON-ready values."""
        return {
            "n_cases": self.n_cases, "n_replicates": self.n_replicates,
            "random_seed": self.random_seed,
            "mask": {"methods": sorted(set(self.table["method"])) if "method" in self.table
                     else ["donut"],
                     "annulus": f"[{INNER_RATIO}·r_k, r_k], uniform in area",
                     "areal": "uniform within an area of a k-d partition of the household "
                              "layer into areas of >= k households (Kounadi & Leitner 2016, "
                              "doi:10.1016/j.compenvurbsys.2016.01.004)",
                     "verified": self.verified,
                     "r_k": "distance to the k-th nearest household (own household counted "
                            "when in the layer; population-weighted when weights are given)",
                     "region": "displacements leaving the study region are redrawn",
                     "reference": "Hampton et al. (2010), doi:10.1093/aje/kwq248"},
            "attacker": self.attacker, "utility": self.utility,
            "targets": {"max_attacker_success": self.max_attacker_success,
                        "min_detection_rate": self.min_detection_rate,
                        "rule": "per method the smallest k with max(attacker_success, "
                                "guess_floor) <= max and detection_rate >= min, "
                                "attacker_success the stronger of the naive and method-aware "
                                "attackers; across methods the higher detection rate, then "
                                "the smaller k; targets set before the sweep"},
            "urbanicity": self.urbanicity,
            "sweep": _records(self.table),
            "chosen_method": self.chosen_method,
            "chosen_k": self.chosen_k, "finding": self.finding,
            "alternatives": list(self.alternatives), "notes": list(self.notes),
        }


def _records(table: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for row in table.to_dict("records"):
        out.append({k: (None if isinstance(v, float) and not np.isfinite(v) else
                        v.item() if isinstance(v, np.generic) else v) for k, v in row.items()})
    return out


def smallest_k_meeting(table: pd.DataFrame, *, max_attacker_success: float,
                       min_detection_rate: float) -> int | None:
    """Smallest k whose attacker success and detection rate both meet their targets.

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``k``, ``attacker_success``, ``detection_rate`` (shares in [0, 1]).
    max_attacker_success : float
        Attacker success must be <= this.
    min_detection_rate : float
        Detection rate must be >= this.

    Returns
    -------
    int or None
        The smallest such k, or None when no row meets both.
    """
    ok = ((table["attacker_success"] <= max_attacker_success + _TOL)
          & (table["detection_rate"] >= min_detection_rate - _TOL))
    return int(table.loc[ok, "k"].min()) if ok.any() else None


def finding(table: pd.DataFrame, chosen: int | None, max_att: float, min_det: float, *,
            measure: str | None = "detection") -> str:
    """Return the conclusion in words: the chosen k, or why none and the alternatives.

    `measure` names the utility figure: "detection" (``detection_rate``), "no-excess
    agreement" (``agreement_rate``, a pre-registered test without excess in the true data) or
    None (attacker only: the attacker target alone decides).
    """
    col = {"detection": "detection_rate", None: None}.get(measure, "agreement_rate")
    targets = f"attacker success <= {max_att:.0%}" + (
        f" and {measure} >= {min_det:.0%}" if col else "")
    if chosen is not None:
        row = table.set_index("k").loc[chosen]
        util = f", {measure} {row[col]:.3f}" if col else ""
        return (f"k = {chosen} is the smallest k on the grid with {targets}: attacker success "
                f"{row.attacker_success:.3f}{util}, median displacement "
                f"{row.median_displacement_m:.0f} m, verified k median "
                f"{row.get('verified_k_median', float('nan')):.0f}")
    att = table[table["meets_attacker_target"]]
    if len(att) and col:
        first = att.iloc[0]
        why = (f"the attacker target is first met at k = {int(first.k)}, where {measure} is "
               f"only {first[col]:.3f}")
    else:
        best = table.loc[table["attacker_success"].idxmin()]
        why = (f"attacker success never falls to {max_att:.0%} on the grid (lowest "
               f"{best.attacker_success:.3f}, at k = {int(best.k)})")
        det = table[table["meets_detection_target"]]
        if len(det) and col:
            why += (f"; {measure} stays >= {min_det:.0%} only up to k = {int(det.k.max())}")
    what = "both targets" if col else "the attacker target"
    return (f"No k on the grid meets {what} ({targets}): {why}. Do not release masked "
            f"points; release {ALTERNATIVES[0]}, or {ALTERNATIVES[1]}.")


def notes(table: pd.DataFrame, chosen: int | None, max_att: float, min_det: float) -> list[str]:
    """Return caveats: a chosen k whose estimate is within two Monte Carlo s.e. of a target."""
    notes = []
    for _, row in table.iterrows():
        if int(row.k) != chosen:
            continue
        for est, se, target, what in (
            (row.attacker_success, row.attacker_success_se, max_att, "attacker success"),
            (row.detection_rate, row.detection_rate_se, min_det, "detection rate"),
        ):
            if abs(est - target) < 2 * se:
                notes.append(f"at k = {chosen} the {what} {est:.3f} is within two Monte Carlo "
                             f"standard errors ({se:.3f}) of its target {target}: rerun with "
                             "more replicates before relying on the choice")
    return notes


