r"""The neighbour check: whether protecting at-risk records exposes the records around them.

Hu, Savitsky & Williams (*Risk-efficient Bayesian pseudo posterior data synthesis for privacy
protection*, J. Survey Statistics and Methodology 10(5), 2022; arXiv:1908.07639) found that
down-weighting the riskiest records raised the risk of some moderate-risk ones ("whack-a-mole").
Differential smoothing can do the same: an at-risk site that loses its spatial effect moves the
surface its neighbours are synthesised from. After the restricted fit, every record (at risk or
not) whose Rao-Blackwellised risk rose is listed with the rise r̃ʳ_i − r̃ᵘ_i and its distance to the
nearest *other* at-risk record (docs/risk-and-utility.md, "Neighbour check").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

__all__ = ["NeighbourCheck", "neighbour_check"]


@dataclass(frozen=True, kw_only=True, eq=False)
class NeighbourCheck:
    """Records whose risk rose under the restricted model (confidential per-record table).

    Attributes
    ----------
    table : pandas.DataFrame
        One row per record whose risk rose by more than ``min_rise``, largest rise first:
        ``record`` (position), ``at_risk``, ``risk_unrestricted``, ``risk_restricted``,
        ``rise``, ``distance_m`` (to the nearest other at-risk record; inf when there is none).
    min_rise : float
    n_records : int
        Records checked.
    """

    table: pd.DataFrame
    min_rise: float
    n_records: int

    @property
    def n_rose(self) -> int:
        """Records whose risk rose by more than ``min_rise``."""
        return int(len(self.table))

    def summary(self) -> dict[str, float | int]:
        """``n_records``, ``n_rose``, ``largest_rise``, ``median_distance_m`` (NaN if none)."""
        t = self.table
        return {"n_records": self.n_records, "n_rose": self.n_rose,
                "largest_rise": float(t["rise"].max()) if len(t) else float("nan"),
                "median_distance_m": float(t["distance_m"].median()) if len(t)
                else float("nan")}

    def to_dataframe(self) -> pd.DataFrame:
        """Return the per-record table (a copy)."""
        return self.table.copy()


def neighbour_check(coords_m: np.ndarray, at_risk: np.ndarray, risk_unrestricted: np.ndarray,
                    risk_restricted: np.ndarray, *, min_rise: float = 0.0) -> NeighbourCheck:
    """List the records whose risk rose from the unrestricted to the restricted model.

    Parameters
    ----------
    coords_m : ndarray of shape (n_records, 2)
        Record locations, metres.
    at_risk : ndarray of bool, shape (n_records,)
    risk_unrestricted, risk_restricted : ndarray of shape (n_records,)
        Rao-Blackwellised risk (or attributable risk) of each record under each model.
    min_rise : float, default=0.0
        Only rises above this are listed.

    Returns
    -------
    NeighbourCheck

    Raises
    ------
    ValueError
        If shapes disagree, ``at_risk`` is not bool, or ``min_rise`` is negative.

    Examples
    --------
    >>> xy = np.array([[0.0, 0.0], [30.0, 40.0], [5000.0, 0.0]])
    >>> chk = neighbour_check(xy, np.array([True, False, False]), np.array([0.9, 0.1, 0.2]),
    ...                       np.array([0.2, 0.3, 0.2]))
    >>> chk.table[["record", "rise", "distance_m"]].round(3).values.tolist()
    [[1.0, 0.2, 50.0]]
    """
    xy = np.asarray(coords_m, dtype=float)
    flags = np.asarray(at_risk)
    u, r = (np.asarray(v, dtype=float) for v in (risk_unrestricted, risk_restricted))
    n = flags.shape[0] if flags.ndim == 1 else -1
    if flags.dtype != bool or xy.shape != (n, 2) or u.shape != (n,) or r.shape != (n,):
        raise ValueError(f"need coords (n, 2), a bool `at_risk` (n,) and risks (n,); got "
                         f"{xy.shape}, {flags.dtype} {flags.shape}, {u.shape}, {r.shape}.")
    if not (np.isfinite(min_rise) and min_rise >= 0):
        raise ValueError(f"`min_rise` must be a non-negative number, got {min_rise!r}.")
    rise = r - u
    rows = np.flatnonzero(rise > min_rise)
    dist = np.full(rows.size, np.inf)
    risky = np.flatnonzero(flags)
    if risky.size and rows.size:
        tree = cKDTree(xy[risky])
        k = min(2, risky.size)  # the nearest at-risk record other than the record itself
        d, j = tree.query(xy[rows], k=k)
        d, j = d.reshape(rows.size, k), j.reshape(rows.size, k)
        self_hit = risky[np.minimum(j, risky.size - 1)] == rows[:, None]
        d = np.where(self_hit, np.inf, d)
        dist = d.min(axis=1)
    table = pd.DataFrame({"record": rows, "at_risk": flags[rows], "risk_unrestricted": u[rows],
                          "risk_restricted": r[rows], "rise": rise[rows], "distance_m": dist})
    table = table.sort_values(["rise", "record"], ascending=[False, True], ignore_index=True)
    return NeighbourCheck(table=table, min_rise=float(min_rise), n_records=int(n))
