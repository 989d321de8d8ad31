"""Distances to the nearest other subjects by KD-tree: the one home of the k-th neighbour distance.

The outlier policy's isolation distance (the (k−1)-th nearest other *subject*, docs/locations.md)
and the at-risk rule's (the (k−1)-th nearest *record* of another subject, docs/model.md) are the
same search with one switch (``distinct_subjects``). It shares the KD-tree helpers of
:mod:`synthgeo.locations.neighbours` (group embedding, blocked queries in locality order).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.spatial import cKDTree

from synthgeo._errors import SpecError
from synthgeo.locations.neighbours import RADIUS_SLACK, _check_coords, _embed, _query, codes

__all__ = ["nearest_other_subjects", "kth_neighbour_distance"]


def nearest_other_subjects(
    coords: np.ndarray,
    n_neighbours: int,
    *,
    subject: np.ndarray | Sequence | None = None,
    groups: np.ndarray | Sequence | None = None,
    query: np.ndarray | None = None,
    candidates: np.ndarray | None = None,
    distinct_subjects: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Distances to the nearest records of the ``n_neighbours`` nearest other subjects.

    Parameters
    ----------
    coords : ndarray of shape (n_records, n_dims)
        Projected coordinates in metres (or seconds for the time axis).
    n_neighbours : int
        How many distinct other subjects to find (k − 1 for the threshold k).
    subject : array-like of shape (n_records,), optional
        Subject ids; None: every record is its own subject.
    groups : array-like of shape (n_records,), optional
        Only records with the same label are neighbours.
    query : ndarray of int, optional
        Records to answer for (default: all).
    candidates : ndarray of int, optional
        Records that may be neighbours (default: all). A query record need not be one.
    distinct_subjects : bool, default=True
        Count each other subject once (its nearest record), as the outlier policy does after
        subject deduplication. False counts every record of another subject, as the at-risk
        rule's neighbour counts do (see :func:`kth_neighbour_distance`).

    Returns
    -------
    distances : ndarray of shape (n_query, n_neighbours)
        Distance to the j-th nearest other subject (its nearest record), ascending; ``inf`` when
        fewer than j other subjects exist (in the group, among the candidates).
    indices : ndarray of int64, shape (n_query, n_neighbours)
        Record index (into `coords`) of that nearest record; −1 where the distance is ``inf``.

    Raises
    ------
    InputError
        Bad `coords` or labels.
    SpecError
        If `n_neighbours` < 1.

    Notes
    -----
    The isolation distance of the outlier policy is ``distances[:, k − 2]``: d_i, the distance
    to the (k−1)-th nearest other record after subject deduplication (docs/locations.md,
    "The outlier policy"). Sorted k-NN blocks of the candidates' tree are scanned for the first
    record of each new subject; the block widens ×4 until enough subjects are found.
    """
    xy = _check_coords(coords)
    n = len(xy)
    if isinstance(n_neighbours, bool) or not isinstance(n_neighbours, (int, np.integer)) \
            or n_neighbours < 1:
        raise SpecError(f"`n_neighbours` must be a positive integer, got {n_neighbours!r}")
    need = int(n_neighbours)
    subj = codes(subject, n, "subject")
    own_records = subj is None
    if subj is None:
        subj = np.arange(n, dtype=np.int64)
    group = codes(groups, n, "groups")
    q = np.arange(n) if query is None else np.asarray(query, dtype=np.int64)
    cand = np.arange(n) if candidates is None else np.asarray(candidates, dtype=np.int64)
    out_d = np.full((len(q), need), np.inf)
    out_i = np.full((len(q), need), -1, dtype=np.int64)
    if len(q) == 0 or len(cand) == 0:
        return out_d, out_i
    reach = float(np.sqrt(np.sum(np.ptp(xy, axis=0) ** 2)))
    pts = _embed(xy, group, reach)
    tree = cKDTree(pts[cand])
    n_tree = len(cand)
    subj_c = subj[cand]
    # groups lie >= 1 apart on the embedded axis (neighbours._embed): any limit below that and
    # above the largest within-group distance keeps them apart (0.5 when every record coincides)
    limit = (np.inf if group is None else
             np.nextafter(reach * (1 + RADIUS_SLACK), np.inf) if reach > 0 else 0.5)
    todo = np.arange(len(q))
    width = min(n_tree, need + 1)
    while todo.size:
        width = min(width, n_tree)
        dist, idx = _query(tree, pts[q[todo]], width, limit)
        found = idx < n_tree
        lab = np.where(found, subj_c[np.minimum(idx, n_tree - 1)], -1)
        lab[lab == subj[q[todo]][:, None]] = -1  # own subject is never a neighbour
        if own_records or not distinct_subjects:  # each other subject's record counts
            first = lab >= 0
        else:  # first record of each subject in distance order: stable sort by label
            order = np.argsort(lab, axis=1, kind="stable")
            sl = np.take_along_axis(lab, order, axis=1)
            first_sorted = np.ones_like(sl, dtype=bool)
            first_sorted[:, 1:] = sl[:, 1:] != sl[:, :-1]
            first = np.empty_like(first_sorted)
            np.put_along_axis(first, order, first_sorted, axis=1)
            first &= lab >= 0
        rank = np.cumsum(first, axis=1)  # 1-based rank of each new subject
        n_found = rank[:, -1]
        done = (n_found >= need) | (width >= n_tree) | ~found[:, -1]
        rows = np.flatnonzero(done)
        for j in range(need):
            hit = first[rows] & (rank[rows] == j + 1)
            has = hit.any(axis=1)
            col = np.argmax(hit, axis=1)
            r_ok = rows[has]
            out_d[todo[r_ok], j] = dist[r_ok, col[has]]
            out_i[todo[r_ok], j] = cand[idx[r_ok, col[has]]]
        todo = todo[~done]
        width *= 4
    return out_d, out_i


def kth_neighbour_distance(
    coords_m: np.ndarray, k: int = 2, *, subject: np.ndarray | Sequence | None = None
) -> np.ndarray:
    """Distance from each record to its (k − 1)-th nearest record of another subject.

    The at-risk rule's distance (docs/model.md, "At-risk sites"): records of other subjects
    are counted, not distinct subjects, as in :func:`other_subject_record_counts`, so a record
    has fewer than k − 1 neighbours within M exactly when this distance exceeds M.

    Parameters
    ----------
    coords_m : ndarray of shape (n_records, 2)
        Projected coordinates, metres.
    k : int, default=2
        Anonymity threshold; k = 2 gives the nearest neighbour (the paper's rule).
    subject : array-like of shape (n_records,), optional
        Subject ids; records of one subject are never each other's neighbours. None: every
        record is its own subject.

    Returns
    -------
    ndarray of shape (n_records,)
        Metres; ``inf`` when fewer than k − 1 records of other subjects exist.

    Raises
    ------
    SpecError
        If `k` < 2.

    Examples
    --------
    >>> import numpy as np
    >>> xy = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 4.0]])
    >>> kth_neighbour_distance(xy, 3).tolist()
    [4.0, 5.0, 5.0]
    """
    dist, _ = nearest_other_subjects(coords_m, int(k) - 1, subject=subject,
                                     distinct_subjects=False)
    return dist[:, -1]
