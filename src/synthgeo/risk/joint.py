"""The joint count: records both identifiable by location and above the attributable threshold.

A record whose released location (and covariates) single it out *and* whose synthetic response
tells an attacker more than the baselines is the case a board cares about most
(docs/risk-and-utility.md; issue 11). Identifiable by location: spatial k below the anonymity
threshold k (:func:`synthgeo.locations.spatial_k.measure_spatial_k`), or unique on the released
location plus released covariates (:func:`unique_on`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["JointCount", "joint_count", "unique_on"]


def unique_on(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """Flag the records whose values on ``columns`` no other record shares.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per record (released columns: coordinates and covariates).
    columns : sequence of str

    Returns
    -------
    ndarray of bool, shape (n_records,)

    Raises
    ------
    KeyError
        If a column is missing.

    Examples
    --------
    >>> df = pd.DataFrame({"x": [0, 0, 5], "y": [1, 1, 1], "sqft": [900, 900, 900]})
    >>> unique_on(df, ["x", "y", "sqft"]).tolist()
    [False, False, True]
    """
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise KeyError(f"columns {missing} are not in the frame; pass released columns only.")
    return ~frame.duplicated(subset=list(columns), keep=False).to_numpy()


@dataclass(frozen=True, kw_only=True, eq=False)
class JointCount:
    """Counts of the joint verdict (the per-record flags are confidential).

    Attributes
    ----------
    threshold : float
        The attributable-risk threshold (``record_threshold``).
    below_k, unique, above : ndarray of bool, shape (n_records,)
        Spatial k below k; unique on location + released covariates; a_i > threshold.
    """

    threshold: float
    below_k: np.ndarray
    unique: np.ndarray
    above: np.ndarray

    @property
    def identifiable(self) -> np.ndarray:
        """below_k or unique."""
        return self.below_k | self.unique

    @property
    def joint(self) -> np.ndarray:
        """Identifiable by location and above the threshold."""
        return self.identifiable & self.above

    def to_dict(self) -> dict[str, Any]:
        """Return counts only (no record is named).

        Keys ``n_records``, ``n_below_k``, ``n_unique``, ``n_identifiable``, ``n_above``,
        ``n_joint``, ``threshold``.
        """
        return {"n_records": int(self.above.size), "n_below_k": int(self.below_k.sum()),
                "n_unique": int(self.unique.sum()),
                "n_identifiable": int(self.identifiable.sum()),
                "n_above": int(self.above.sum()), "n_joint": int(self.joint.sum()),
                "threshold": float(self.threshold)}

    def to_dataframe(self) -> pd.DataFrame:
        """Per-record flags (confidential): ``below_k``, ``unique``, ``above``, ``joint``."""
        return pd.DataFrame({"below_k": self.below_k, "unique": self.unique,
                             "above": self.above, "joint": self.joint})


def joint_count(attributable: np.ndarray, threshold: float, *, below_k: np.ndarray,
                unique: np.ndarray) -> JointCount:
    """Count records identifiable by location and with attributable risk above ``threshold``.

    Parameters
    ----------
    attributable : ndarray of shape (n_records,)
        a_i of the released model.
    threshold : float
        ``[risk.targets] record_threshold``.
    below_k : ndarray of bool, shape (n_records,)
        Spatial k below the anonymity threshold k.
    unique : ndarray of bool, shape (n_records,)
        Unique on location + released covariates (:func:`unique_on`).

    Returns
    -------
    JointCount

    Raises
    ------
    ValueError
        If a mask is not bool or the lengths differ.

    Examples
    --------
    >>> jc = joint_count(np.array([0.2, 0.0, 0.3]), 0.1, below_k=np.array([True, True, False]),
    ...                  unique=np.array([False, False, False]))
    >>> jc.to_dict()["n_joint"], jc.to_dict()["n_above"]
    (1, 2)
    """
    a = np.asarray(attributable, dtype=float)
    masks = {}
    for name, m in (("below_k", below_k), ("unique", unique)):
        arr = np.asarray(m)
        if arr.dtype != bool or arr.shape != a.shape:
            raise ValueError(f"`{name}` must be a bool array of shape {a.shape}, got "
                             f"{arr.dtype} {arr.shape}.")
        masks[name] = arr
    return JointCount(threshold=float(threshold), above=a > threshold, **masks)
