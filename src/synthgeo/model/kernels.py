"""Sites, distances and the exponential covariance.

Records at one location share one spatial effect (docs/model.md): the GP lives on the
S unique sites and records map to sites through an incidence vector ``site_index`` (the N x S
matrix A with one 1 per row, stored as the column index of that 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree
from scipy.spatial.distance import cdist

__all__ = ["Sites", "make_sites", "one_record_per_site", "exponential_correlation",
           "M_FROM_RHO0"]

#: Conversion used throughout: kilometres internally, metres in every public report.
METRES_PER_KM = 1000.0


def M_FROM_RHO0(phi_per_m: float | np.ndarray, rho0: float = 0.2) -> float | np.ndarray:  # noqa: N802
    """Distance in metres at which exponential correlation falls to ``rho0``.

    Parameters
    ----------
    phi_per_m : float or ndarray
        Decay parameter φ in 1/metre.
    rho0 : float, default=0.2
        Correlation threshold, 0 < rho0 < 1.

    Returns
    -------
    float or ndarray
        M = −log(ρ₀)/φ in metres (Quick, Holan & Wikle 2018, Sect. 4).
    """
    return -np.log(rho0) / np.asarray(phi_per_m, dtype=float)


@dataclass(frozen=True, kw_only=True)
class Sites:
    """Unique locations of a record set.

    Attributes
    ----------
    coords_m : ndarray of shape (n_sites, 2)
        Site coordinates in metres (projected CRS).
    site_index : ndarray of int, shape (n_records,)
        Site of each record; ``coords_m[site_index]`` gives the record locations.
    """

    coords_m: np.ndarray
    site_index: np.ndarray

    @property
    def n_sites(self) -> int:
        """Number of unique sites S."""
        return int(self.coords_m.shape[0])

    @property
    def n_records(self) -> int:
        """Number of records N."""
        return int(self.site_index.shape[0])

    @property
    def one_record_per_site(self) -> bool:
        """True when record i is at site i (no two records share a location)."""
        return one_record_per_site(self.site_index, self.n_sites)

    def distance_km(self) -> np.ndarray:
        """Site-to-site Euclidean distances, ndarray of shape (n_sites, n_sites), kilometres."""
        c = self.coords_m / METRES_PER_KM
        return cdist(c, c)

    def nearest_site_distance_m(self) -> np.ndarray:
        """Distance from each site to its nearest other site, shape (n_sites,), metres."""
        if self.n_sites < 2:
            return np.full(self.n_sites, np.inf)
        d, _ = cKDTree(self.coords_m).query(self.coords_m, k=2)
        return d[:, 1]


def one_record_per_site(site_index: np.ndarray, n_sites: int) -> bool:
    """Return whether ``site_index`` is 0, 1, …, n_sites − 1 (A = I: no gather needed).

    Parameters
    ----------
    site_index : ndarray of int, shape (n_records,)
        Site of each record.
    n_sites : int

    Returns
    -------
    bool

    Examples
    --------
    >>> one_record_per_site(np.arange(3), 3), one_record_per_site(np.array([0, 0, 1]), 2)
    (True, False)
    """
    return site_index.size == n_sites and bool(
        np.array_equal(site_index, np.arange(site_index.size)))


def make_sites(coords_m: np.ndarray) -> Sites:
    """Group records at identical coordinates into sites.

    Parameters
    ----------
    coords_m : ndarray of shape (n_records, 2)
        Projected record coordinates in metres. Coincident records (exactly equal coordinates)
        are real data and share one site; nothing is jittered.

    Returns
    -------
    Sites
        Unique sites in first-appearance order and the record-to-site map.

    Raises
    ------
    ValueError
        If ``coords_m`` is not of shape (n, 2) or holds non-finite values.
    """
    coords_m = np.asarray(coords_m, dtype=float)
    if coords_m.ndim != 2 or coords_m.shape[1] != 2:
        raise ValueError(f"`coords_m` must have shape (n_records, 2), got {coords_m.shape!r}")
    if not np.all(np.isfinite(coords_m)):
        raise ValueError("`coords_m` holds NaN or infinite coordinates")
    _, first, inverse = np.unique(coords_m, axis=0, return_index=True, return_inverse=True)
    # relabel sites in order of first appearance so that site 0 is record 0's site
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return Sites(coords_m=coords_m[first[order]], site_index=rank[inverse.ravel()])


def exponential_correlation(distance, phi, *, exp=np.exp):
    """Exponential (Matérn ν = 1/2) correlation ``exp(−φ d)``: the one home of the kernel.

    Spec: ``docs/model.md`` (R_st = exp(−φ d_st), effective range 3/φ where the correlation
    falls to 0.05).

    Parameters
    ----------
    distance : ndarray
        Distances, in the reciprocal unit of ``phi``.
    phi : float or ndarray
        Decay (broadcast against ``distance``); effective range is 3/φ.
    exp : callable, default=numpy.exp
        The exponential to use (``pytensor.tensor.exp`` inside a PyMC model).

    Returns
    -------
    ndarray
        Correlations, same shape as ``distance`` (broadcast with ``phi``).

    Examples
    --------
    >>> float(exponential_correlation(np.array(300.0), 3.0 / 300.0))  # at the effective range
    0.049787068367863944
    """
    return exp(-phi * distance)
