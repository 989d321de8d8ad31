"""At-risk records and sites for differential smoothing (docs/model.md, "At-risk records").

A record's neighbours are the records of *other subjects* within M metres (inclusive). With no
subject id every record is its own subject, so records sharing a site are each other's
neighbours. Paper's rule (Quick, Holan & Wikle 2018, Sect. 4): a record is at risk when it has no
neighbour within M = −log(ρ₀)/φ̂. The k-anonymity form generalises this to fewer than k − 1
neighbours (k = 2 is the paper's rule). A site is at risk when any record at it is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synthgeo.locations.nearest import kth_neighbour_distance
from synthgeo.locations.neighbours import other_subject_record_counts
from synthgeo.model.kernels import exponential_correlation

__all__ = ["AtRiskResult", "find_at_risk", "neighbour_counts", "kth_neighbour_distance",
           "continuous_weights"]


def neighbour_counts(
    coords_m: np.ndarray, radius_m: float, *, subject: np.ndarray | None = None
) -> np.ndarray:
    """Count the records of other subjects within ``radius_m`` of each record.

    Parameters
    ----------
    coords_m : ndarray of shape (n_records, 2)
        Projected coordinates, metres.
    radius_m : float
        Neighbourhood radius M in metres; a record at exactly M counts (inclusive).
    subject : ndarray of shape (n_records,), optional
        Subject id per record; records of one subject never count as each other's neighbours.
        ``None`` treats every record as its own subject.

    Returns
    -------
    ndarray of int, shape (n_records,)
        Neighbour count, the record itself excluded.

    Raises
    ------
    ValueError
        If ``radius_m`` is negative or not finite (a :class:`synthgeo.SpecError`).

    Notes
    -----
    The KD-tree machinery shared with the location diagnostics
    (:func:`synthgeo.locations.neighbours.other_subject_record_counts`): all records within M
    minus the records of the record's own subject within M.
    """
    return other_subject_record_counts(coords_m, radius_m, subject=subject)


@dataclass(frozen=True, kw_only=True)
class AtRiskResult:
    """Outcome of the at-risk rule.

    Attributes
    ----------
    radius_m : float
        M in metres.
    k : int
        Anonymity threshold of the rule (2 = the paper's rule).
    n_neighbours : ndarray of int, shape (n_records,)
        Neighbouring records of other subjects within M.
    at_risk : ndarray of bool, shape (n_records,)
        Record-level flag (the record's site is at risk).
    site_at_risk : ndarray of bool, shape (n_sites,)
        Site-level flag a_s used by the restricted model.
    """

    radius_m: float
    k: int
    n_neighbours: np.ndarray
    at_risk: np.ndarray
    site_at_risk: np.ndarray

    @property
    def n_at_risk(self) -> int:
        """Number of at-risk records."""
        return int(self.at_risk.sum())


def find_at_risk(
    coords_m: np.ndarray,
    site_index: np.ndarray,
    radius_m: float,
    *,
    k: int = 2,
    subject: np.ndarray | None = None,
) -> AtRiskResult:
    """Flag at-risk records and sites: fewer than ``k − 1`` neighbours within ``radius_m``.

    Parameters
    ----------
    coords_m : ndarray of shape (n_records, 2)
        Projected record coordinates, metres.
    site_index : ndarray of int, shape (n_records,)
        Site of each record (see :func:`synthgeo.model.kernels.make_sites`).
    radius_m : float
        M in metres, e.g. −log(0.2)/φ̂ from the unrestricted fit.
    k : int, default=2
        Threshold; k = 2 is the paper's rule (no neighbour within M).
    subject : ndarray of shape (n_records,), optional
        Subject ids (see :func:`neighbour_counts`).

    Returns
    -------
    AtRiskResult

    Raises
    ------
    ValueError
        If ``k`` < 2 or ``radius_m`` is invalid.
    """
    if not (isinstance(k, (int, np.integer)) and k >= 2):
        raise ValueError(f"`k` must be an integer >= 2, got {k!r}")
    site_index = np.asarray(site_index)
    n_nb = neighbour_counts(coords_m, radius_m, subject=subject)
    rec = n_nb < (k - 1)
    n_sites = int(site_index.max()) + 1 if site_index.size else 0
    site = np.zeros(n_sites, dtype=bool)
    np.logical_or.at(site, site_index, rec)
    return AtRiskResult(
        radius_m=float(radius_m), k=int(k), n_neighbours=n_nb, at_risk=site[site_index],
        site_at_risk=site,
    )


def continuous_weights(
    coords_m: np.ndarray,
    site_index: np.ndarray,
    phi_per_m: float,
    rho0: float = 0.2,
    *,
    k: int = 2,
    subject: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Graded at-risk weights a = 1 − min(1, ρ_nn/ρ₀), ρ_nn = exp(−φ̂ d_nn) (docs/model.md).

    Beyond the paper (its future-work section asks for graded weights). a = 0 for records with
    k − 1 neighbours within M = −log(ρ₀)/φ̂ (so a > 0 exactly where the binary rule flags a
    record) and rises to 1 as the (k − 1)-th neighbour distance d_nn grows.

    Parameters
    ----------
    coords_m : ndarray of shape (n_records, 2)
        Projected coordinates, metres.
    site_index : ndarray of int, shape (n_records,)
        Site of each record.
    phi_per_m : float
        φ̂, decay in 1/metre (posterior median of the unrestricted fit).
    rho0 : float, default=0.2
        Correlation threshold ρ₀.
    k : int, default=2
        d_nn is the distance to the (k − 1)-th nearest record of another subject.
    subject : ndarray of shape (n_records,), optional
        Subject ids.

    Returns
    -------
    a_site : ndarray of shape (n_sites,)
        Largest record weight at each site, in [0, 1].
    a_record : ndarray of shape (n_records,)
        Each record's own weight.
    """
    d_nn = kth_neighbour_distance(coords_m, k, subject=subject)
    with np.errstate(over="ignore"):
        rho_nn = exponential_correlation(d_nn, float(phi_per_m))
    a_rec = 1.0 - np.minimum(1.0, rho_nn / float(rho0))
    site_index = np.asarray(site_index)
    a_site = np.zeros(int(site_index.max()) + 1 if site_index.size else 0)
    np.maximum.at(a_site, site_index, a_rec)
    return a_site, a_rec
