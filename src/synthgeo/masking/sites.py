"""Co-located records: one mask draw per site, and a bound on how many records a site may hold.

Records at one location (a care home, a hostel, a rounded grid point) masked independently can
be averaged: the centroid of 140 independent donut masks of one site lies a few tens of metres
from it. Masking each *site* once and publishing all its records at that one point removes the
averaging attack (the centroid is the single mask). The stack that remains — many identical
published points — tells an attacker that one address holds that many cases, which can name an
institution; a site holding more than ``max_site_records`` records is therefore refused, with
the options (aggregate that site's records as a count, or accept the stack explicitly).
docs/locations.md, "Co-located records".
"""

from __future__ import annotations

import numbers

import numpy as np

from synthgeo._errors import InputError, SpecError

__all__ = ["DEFAULT_MAX_SITE_RECORDS", "site_index", "check_site_sizes"]

#: Records one site may hold before a point release is refused (``max_site_records``).
DEFAULT_MAX_SITE_RECORDS = 10


def site_index(xy: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group records by exact location, sites in order of first appearance.

    Parameters
    ----------
    xy : ndarray of shape (n, 2)
        Record coordinates, metres.

    Returns
    -------
    first : ndarray of shape (n_sites,)
        Index of each site's first record (so ``xy[first]`` are the sites).
    inverse : ndarray of shape (n,)
        Site of each record (``xy == xy[first][inverse]``).
    counts : ndarray of shape (n_sites,)
        Records per site.

    Examples
    --------
    >>> import numpy as np
    >>> first, inv, cnt = site_index(np.array([[5.0, 0], [1, 1], [5, 0]]))
    >>> first.tolist(), inv.tolist(), cnt.tolist()
    ([0, 1], [0, 1, 0], [2, 1])
    """
    xy = np.asarray(xy, dtype=float)
    _, first, inverse, counts = np.unique(xy, axis=0, return_index=True, return_inverse=True,
                                          return_counts=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return first[order], rank[inverse.reshape(-1)], counts[order]


def check_site_sizes(counts: np.ndarray, max_site_records: int | None,
                     ids: np.ndarray | None = None, first: np.ndarray | None = None) -> int:
    """Refuse sites holding more than `max_site_records` records; return the largest site.

    Raises
    ------
    InputError
        When a site holds more records than allowed: one line naming how many sites, the
        largest count and the options.
    """
    if max_site_records is not None and (isinstance(max_site_records, bool) or not isinstance(
            max_site_records, numbers.Integral) or max_site_records < 1):
        raise SpecError(f"`max_site_records` = {max_site_records!r} must be an integer >= 1 "
                        "(records one location may hold), or None to accept any stack")
    largest = int(counts.max()) if len(counts) else 0
    if max_site_records is None or largest <= max_site_records:
        return largest
    big = np.flatnonzero(counts > max_site_records)
    example = ("" if ids is None or first is None
               else f" (e.g. the site of record {np.asarray(ids)[first[big[0]]].item()!r})")
    raise InputError(
        f"{len(big)} site(s) hold more than max_site_records = {int(max_site_records)} records "
        f"at one location, the largest {largest}{example}: their stack of identical published "
        "points can name the institution; release those records as an aggregated count, or raise "
        "--max-site-records (max_site_records) to accept the stack")


def shared_locations(xy: np.ndarray) -> dict[str, int]:
    """Count household points that share their exact coordinates with another.

    k counts households (weights summed), not addresses: households at one coordinate count
    separately, but an attacker can at best name the coordinate, and duplicated rows (the same
    coordinates under new ids) inflate k silently. This summary makes such layers visible.

    Parameters
    ----------
    xy : ndarray of shape (n, 2)
        Household coordinates, metres.

    Returns
    -------
    dict
        ``points``, ``distinct_locations`` and ``points_sharing_a_location`` (points whose
        coordinates occur more than once).

    Examples
    --------
    >>> import numpy as np
    >>> shared_locations(np.array([[0.0, 0], [0, 0], [1, 1]]))
    {'points': 3, 'distinct_locations': 2, 'points_sharing_a_location': 2}
    """
    _, _, counts = site_index(xy)
    return {"points": int(counts.sum()), "distinct_locations": int(len(counts)),
            "points_sharing_a_location": int(counts[counts > 1].sum())}
