r"""The neighbour check: whether protecting at-risk records exposes the records around them.

Hu, Savitsky & Williams (*Risk-efficient Bayesian pseudo posterior data synthesis for privacy
protection*, J. Survey Statistics and Methodology 10(5), 2022; arXiv:1908.07639) found that
down-weighting the riskiest records raised the risk of some moderate-risk ones ("whack-a-mole").
Differential smoothing can do the same: an at-risk site that loses its spatial effect moves the
surface its neighbours are synthesised from. After the restricted fit, every record (at risk or
not) whose Rao-Blackwellised risk rose is listed with the rise r̃ʳ_i − r̃ᵘ_i, its Monte Carlo se and
its distance to the nearest *other* at-risk record (docs/risk-and-utility.md, "Neighbour
check"). A rise counts only beyond noise, d_i > z_{1−α/n} se(d_i)
(:func:`synthgeo.risk.noise.rise_beyond_noise`); :func:`same_model_rises` gives the count the
same rule shows when a model is compared with itself (two independent halves of its
implicates), the noise level to read the count against.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from synthgeo.risk.noise import paired_se, rise_beyond_noise

__all__ = ["NeighbourCheck", "neighbour_check", "same_model_rises"]


@dataclass(frozen=True, kw_only=True, eq=False)
class NeighbourCheck:
    """Records whose risk rose under the restricted model (confidential per-record table).

    Attributes
    ----------
    table : pandas.DataFrame
        One row per record whose risk rose by more than ``min_rise``, largest rise first:
        ``record`` (position), ``at_risk``, ``risk_unrestricted``, ``risk_restricted``,
        ``rise``, ``rise_se`` (Monte Carlo se of the rise), ``beyond_noise`` (rise >
        z · rise_se), ``distance_m`` (to the nearest other at-risk record; inf when there is
        none).
    min_rise : float
    n_records : int
        Records checked.
    z : float
        The familywise quantile Φ⁻¹(1 − α/n) a rise must exceed, in se.
    """

    table: pd.DataFrame
    min_rise: float
    n_records: int
    z: float = 0.0

    @property
    def n_rose(self) -> int:
        """Records whose risk rose beyond its Monte Carlo noise (and by more than ``min_rise``)."""
        return int(self.table["beyond_noise"].sum())

    @property
    def n_rose_any(self) -> int:
        """Records whose point rise exceeds ``min_rise``, noise or not (the raw count)."""
        return int(len(self.table))

    def summary(self) -> dict[str, float | int]:
        """``n_records``, ``n_rose``, ``n_rose_any``, ``largest_rise``, ``median_distance_m``."""
        t = self.table
        return {"n_records": self.n_records, "n_rose": self.n_rose,
                "n_rose_any": self.n_rose_any,
                "largest_rise": float(t["rise"].max()) if len(t) else float("nan"),
                "median_distance_m": float(t["distance_m"].median()) if len(t)
                else float("nan")}

    def to_dataframe(self) -> pd.DataFrame:
        """Return the per-record table (a copy)."""
        return self.table.copy()


def neighbour_check(coords_m: np.ndarray, at_risk: np.ndarray, risk_unrestricted: np.ndarray,
                    risk_restricted: np.ndarray, *, min_rise: float = 0.0,
                    rise_se: np.ndarray | None = None, confidence: float = 0.95,
                    n_rows: int | None = None) -> NeighbourCheck:
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
    rise_se : ndarray of shape (n_records,), optional
        Monte Carlo se of each rise (:func:`synthgeo.risk.noise.paired_se`); default 0 (every
        positive rise counts).
    confidence : float, default=0.95
        1 − α of the familywise rule (:func:`synthgeo.risk.noise.rise_beyond_noise`).
    n_rows : int, optional
        L of the paired differences behind ``rise_se`` (t quantile; normal when None).

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
    >>> neighbour_check(xy, np.array([True, False, False]), np.array([0.9, 0.1, 0.2]),
    ...                 np.array([0.2, 0.3, 0.2]), rise_se=np.full(3, 0.1)).n_rose  # .2 < 2.13 se
    0
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
    se = np.zeros(n) if rise_se is None else np.asarray(rise_se, dtype=float)
    if se.shape != (n,):
        raise ValueError(f"`rise_se` must have shape ({n},), got {se.shape}.")
    beyond, z = rise_beyond_noise(rise, se, confidence, n_rows)
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
                          "risk_restricted": r[rows], "rise": rise[rows], "rise_se": se[rows],
                          "beyond_noise": beyond[rows], "distance_m": dist})
    table = table.sort_values(["rise", "record"], ascending=[False, True], ignore_index=True)
    return NeighbourCheck(table=table, min_rise=float(min_rise), n_records=int(n), z=z)


def same_model_rises(p: np.ndarray, confidence: float = 0.95) -> dict[str, int] | None:
    """Count the neighbour check's rises when a model is compared with itself.

    The L implicates' exact probabilities are split into two halves (rows ``0..h−1`` and
    ``h..2h−1``, h = ⌊L/2⌋; implicates are drawn independently given their posterior draws,
    and the halves come from disjoint draws), the "rise" is mean(second) − mean(first) with
    its se from the h paired differences, and the rule of :func:`neighbour_check` is applied.
    With no real change the count beyond noise should be 0 (probability ≥ confidence); the raw
    count is about n/2.

    Parameters
    ----------
    p : ndarray of shape (L, n_records)
        Per-implicate exact probabilities of one model
        (:func:`synthgeo.risk.rao_blackwell.within_probability`).
    confidence : float, default=0.95

    Returns
    -------
    dict or None
        ``n_rose`` (beyond noise), ``n_rose_any`` (any rise); None when L < 4 (no se to
        estimate on a half).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> same_model_rises(rng.uniform(size=(50, 1000)))["n_rose"]
    0
    """
    p = np.asarray(p, dtype=float)
    h = p.shape[0] // 2
    if p.ndim != 2 or h < 2:
        return None
    first, second = p[:h], p[h:2 * h]
    rise = second.mean(axis=0) - first.mean(axis=0)
    beyond, _ = rise_beyond_noise(rise, paired_se(first, second), confidence, n_rows=h)
    return {"n_rose": int(beyond.sum()), "n_rose_any": int((rise > 0).sum())}
