"""Areal masking to k households: a partition built from the household layer alone.

The household layer is cut into rectangles by recursive equal-weight splits along the longer
side (a k-d partition: every cell holding at least 2k households is cut into strips each
holding at least k), so that every area holds between k and about 2k households. A case is
published at a point drawn uniformly within the area that contains it (within area ∩ study
region when a region is given). The area is a function of the household layer and k only, and
every household in it is equally likely to have produced any point in it, so an attacker who
knows the method and the layer succeeds with probability 1 / (households in the area) <= 1/k
under a uniform prior over households. docs/locations.md, "Areal masking".

References
----------
Kounadi O, Leitner M (2016). Adaptive areal elimination (AAE): a transparent way of disclosing
protected spatial datasets. Computers, Environment and Urban Systems 57, 59-67.
doi:10.1016/j.compenvurbsys.2016.01.004
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import shapely
from shapely.geometry.base import BaseGeometry

from synthgeo._errors import InputError

__all__ = ["AreaPartition", "household_partition", "draw_in_areas"]

#: Padding of the household layer's bounding box (share of its larger side) for the outer areas.
PAD = 0.05


@dataclass(frozen=True, kw_only=True)
class AreaPartition:
    """Rectangles tiling the padded extent of a household layer, each holding >= k households.

    Attributes
    ----------
    bounds : ndarray of shape (n_areas, 4)
        ``xmin, ymin, xmax, ymax`` of each area, metres.
    households : ndarray of shape (n_areas,)
        Households (weights summed) in each area, recounted with :meth:`locate` on the
        household layer (inside the region when one was given); every one >= k. Split lines run
        only between distinct coordinates, so households sharing a coordinate are never split
        across a line and no household lies on one.
    k : int
        The threshold the partition was built for.
    """

    bounds: np.ndarray = field(repr=False)
    households: np.ndarray = field(repr=False)
    k: int
    _axis: np.ndarray = field(repr=False)
    _first: np.ndarray = field(repr=False)
    _q: np.ndarray = field(repr=False)
    _bstart: np.ndarray = field(repr=False)
    _bnd: np.ndarray = field(repr=False)
    _box: np.ndarray = field(repr=False)
    _leaf: np.ndarray = field(repr=False)

    @property
    def n_areas(self) -> int:
        """Number of areas."""
        return len(self.bounds)

    def locate(self, xy: np.ndarray) -> np.ndarray:
        """Area index of each point (n, 2) → (n,); -1 outside the partition's extent.

        A point on a split line goes to the upper/right side (half-open cells).
        """
        xy = np.asarray(xy, dtype=float).reshape(-1, 2)
        root = self._root
        out = ((xy[:, 0] < root[0]) | (xy[:, 0] > root[2]) | (xy[:, 1] < root[1])
               | (xy[:, 1] > root[3]))
        node = np.zeros(len(xy), dtype=np.int64)
        # boundaries as sorted keys "node + position within the node's extent" (as in the build)
        owner = np.repeat(np.arange(len(self._q)), np.maximum(self._q - 1, 0))
        vert = self._axis[owner] == 1
        lo = np.where(vert, self._box[owner, 1], self._box[owner, 0])
        span = np.where(vert, self._box[owner, 3] - self._box[owner, 1],
                        self._box[owner, 2] - self._box[owner, 0])
        keys = owner + 0.5 * (self._bnd - lo) / np.maximum(span, 1e-300)
        while True:
            i = np.flatnonzero(self._first[node] >= 0)
            if not len(i):
                break
            n = node[i]
            v = self._axis[n] == 1
            coord = np.where(v, xy[i, 1], xy[i, 0])
            lo_n = np.where(v, self._box[n, 1], self._box[n, 0])
            span_n = np.where(v, self._box[n, 3] - self._box[n, 1],
                              self._box[n, 2] - self._box[n, 0])
            key = n + 0.5 * np.clip((coord - lo_n) / np.maximum(span_n, 1e-300), 0, 1)
            j = np.searchsorted(keys, key, side="right") - self._bstart[n]
            node[i] = self._first[n] + np.clip(j, 0, self._q[n] - 1)
        area = self._leaf[node]
        area[out] = -1
        return area

    @property
    def _root(self) -> np.ndarray:
        return self._box[0]

    def polygons(self) -> np.ndarray:
        """Return the areas as shapely boxes, shape (n_areas,)."""
        return shapely.box(*self.bounds.T)


def household_partition(households_xy: np.ndarray, k: int, *,
                        weights: np.ndarray | None = None,
                        extent: tuple[float, float, float, float] | None = None,
                        region: BaseGeometry | None = None) -> AreaPartition:
    """Cut the household layer into rectangles holding at least k households each.

    Parameters
    ----------
    households_xy : ndarray of shape (n_points, 2)
        Household coordinates, metres.
    k : int
        Minimum households per area, 1 <= k <= the household total.
    weights : ndarray of shape (n_points,), optional
        Households per point (default one each).
    extent : tuple of 4 floats, optional
        ``xmin, ymin, xmax, ymax`` of the root rectangle; default the households' bounding box
        padded by :data:`PAD` of its larger side (the study region's bounds when masking with
        a region).
    region : shapely geometry, optional
        Study region: households outside it are dropped before the partition is built and
        counted, since an attacker who knows the region knows a case lies in area ∩ region.

    Returns
    -------
    AreaPartition

    Notes
    -----
    Level by level, every cell holding W >= 2k households is cut along its longer side into q
    strips of equal weight (q = floor(W/k) when W < 9k, else floor(sqrt(W/k)), so that a few
    levels reach areas of k to 2k households; the longer side is y when the cell is strictly
    taller than wide, else x). Households sharing the cut coordinate form one group, placed in
    the strip that holds the middle of its weight; the cut lines lie midway between the
    neighbouring distinct coordinates of two strips. Where weights or shared coordinates make a
    strip lighter than k the cell is halved instead, and left whole if even a half would be.
    One sort per level.

    Examples
    --------
    >>> import numpy as np
    >>> xy = np.column_stack([np.arange(8.0), np.zeros(8)])
    >>> p = household_partition(xy, 2)
    >>> p.households.tolist(), p.locate(np.array([[0.5, 0.0], [6.9, 0.0]])).tolist()
    ([2.0, 2.0, 2.0, 2.0], [0, 3])
    """
    hxy = np.asarray(households_xy, dtype=float)
    w = np.ones(len(hxy)) if weights is None else np.asarray(weights, dtype=float)
    if region is not None:
        keep = shapely.intersects_xy(region, hxy[:, 0], hxy[:, 1])
        hxy, w = hxy[keep], w[keep]
        if w.sum() < k - 1e-9:
            raise InputError(f"the study region holds {w.sum():g} households, fewer than "
                             f"k = {k}: lower --k or give a larger region")
    if extent is None:
        lo, hi = hxy.min(axis=0), hxy.max(axis=0)
        pad = PAD * max(float((hi - lo).max()), 1.0)
        extent = (lo[0] - pad, lo[1] - pad, hi[0] + pad, hi[1] + pad)
    boxes = [np.asarray(extent, dtype=float)[None]]
    axis_l, first_l, q_l = [np.zeros(1, np.int64)], [np.full(1, -1)], [np.zeros(1, np.int64)]
    bnd_l: list[np.ndarray] = []
    bstart_l = [np.zeros(1, np.int64)]
    n_nodes, n_bnd = 1, 0
    cell = np.zeros(len(hxy), dtype=np.int64)
    frontier = np.array([0])
    while len(frontier):
        box = np.concatenate(boxes)
        tot = np.bincount(cell, weights=w, minlength=n_nodes)
        cand = frontier[tot[frontier] >= 2 * k - 1e-9]
        if not len(cand):
            break
        is_cand = np.zeros(n_nodes, dtype=bool)
        is_cand[cand] = True
        pts = np.flatnonzero(is_cand[cell])
        ax = ((box[:, 3] - box[:, 1]) > (box[:, 2] - box[:, 0])).astype(np.int64)
        c = cell[pts]
        vertical = ax[c] == 1
        coord = np.where(vertical, hxy[pts, 1], hxy[pts, 0])
        order = np.lexsort((coord, c))  # by cell, then along the cut axis
        pts, c, coord = pts[order], c[order], coord[order]
        wp = w[pts]
        # households sharing the cut coordinate form one group: a line never separates them
        new = np.ones(len(pts), dtype=bool)
        new[1:] = (c[1:] != c[:-1]) | (coord[1:] != coord[:-1])
        grp = np.cumsum(new) - 1
        gw = np.bincount(grp, weights=wp)
        gc = c[new]
        cw = np.cumsum(gw)
        seg = np.concatenate([[0], np.cumsum(np.bincount(gc, minlength=n_nodes))])
        # weight of the cell before the group + half the group's own
        mid = (cw - gw / 2 - np.concatenate([[0.0], cw])[seg[gc]])[grp]
        ratio = tot / k
        q = np.where(ratio < 9, np.floor(ratio + 1e-9), np.floor(np.sqrt(ratio))).astype(np.int64)
        q = np.maximum(q, 2)
        part, ok = _parts(mid, c, wp, tot, q, k, n_nodes)
        if not ok[cand].all():  # heavy weights: try halves where equal parts fail
            q = np.where(ok, q, 2)
            part, ok = _parts(mid, c, wp, tot, q, k, n_nodes)
        ok &= is_cand
        split_cells = np.flatnonzero(ok)
        if not len(split_cells):
            break
        keep = ok[c]
        c, coord, part, pts = c[keep], coord[keep], part[keep], pts[keep]
        qs = q[split_cells]
        offset = np.zeros(n_nodes, np.int64)
        offset[split_cells] = np.concatenate([[0], np.cumsum(qs)[:-1]])
        gpart = offset[c] + part  # parts are contiguous runs of the sorted households
        start = np.concatenate([[0], np.cumsum(np.bincount(gpart, minlength=int(qs.sum())))])
        # boundaries between consecutive parts of a cell: midway between the two households
        inner = np.ones(int(qs.sum()), dtype=bool)
        inner[np.cumsum(qs) - 1] = False  # the last part of each cell has no upper boundary
        g = np.flatnonzero(inner)
        b = (coord[start[g + 1] - 1] + coord[start[g + 1]]) / 2
        owner = np.repeat(split_cells, qs)
        a = ax[owner]
        lower = np.where(a == 1, box[owner, 1], box[owner, 0])
        upper = np.where(a == 1, box[owner, 3], box[owner, 2])
        lo_e = lower.copy()
        hi_e = upper.copy()
        hi_e[g] = b
        lo_e[g + 1] = b
        child_box = box[owner].copy()
        rows = np.arange(len(owner))
        child_box[rows, a] = lo_e
        child_box[rows, 2 + a] = hi_e
        axis = np.concatenate(axis_l)
        first = np.concatenate(first_l)
        qq = np.concatenate(q_l)
        bstart = np.concatenate(bstart_l)
        first_child = n_nodes + np.concatenate([[0], np.cumsum(qs)[:-1]])
        axis[split_cells], first[split_cells], qq[split_cells] = ax[split_cells], first_child, qs
        bstart[split_cells] = n_bnd + np.concatenate([[0], np.cumsum(qs - 1)[:-1]])
        n_new = int(qs.sum())
        axis_l = [axis, np.zeros(n_new, np.int64)]
        first_l = [first, np.full(n_new, -1)]
        q_l = [qq, np.zeros(n_new, np.int64)]
        bstart_l = [bstart, np.zeros(n_new, np.int64)]
        bnd_l.append(b)
        n_bnd += len(b)
        boxes.append(child_box)
        cell[pts] = n_nodes + gpart
        frontier = np.arange(n_nodes, n_nodes + n_new)
        n_nodes += n_new
    axis, first, qq, bstart = (np.concatenate(v) for v in (axis_l, first_l, q_l, bstart_l))
    bnd = np.concatenate(bnd_l) if bnd_l else np.zeros(0)
    box = np.concatenate(boxes)
    leaves = np.flatnonzero(first < 0)
    leaf = np.full(n_nodes, -1, dtype=np.int64)
    leaf[leaves] = np.arange(len(leaves))
    part = AreaPartition(bounds=box[leaves], households=np.zeros(len(leaves)), k=int(k),
                         _axis=axis, _first=first, _q=qq, _bstart=bstart, _bnd=bnd, _box=box,
                         _leaf=leaf)
    # the counts are those of locate(), not of the splits: what the attacker recounts
    area = part.locate(hxy)
    inside = area >= 0
    object.__setattr__(part, "households", np.bincount(area[inside], weights=w[inside],
                                                       minlength=len(leaves)))
    return part


def _parts(mid: np.ndarray, c: np.ndarray, wp: np.ndarray, tot: np.ndarray, q: np.ndarray,
           k: int, n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Assign each sorted household to one of its cell's q equal-weight parts.

    Returns the part per household and, per cell, whether all its parts hold >= k.
    """
    part = np.minimum(np.floor(mid / tot[c] * q[c]).astype(np.int64), q[c] - 1)
    qmax = int(q.max())
    wpart = np.bincount(c * qmax + part, weights=wp, minlength=n_nodes * qmax).reshape(-1, qmax)
    used = np.arange(qmax)[None, :] < q[:, None]
    ok = np.where(used, wpart >= k - 1e-9, True).all(axis=1)
    return part, ok


def draw_in_areas(bounds: np.ndarray, rng: np.random.Generator, *,
                  region: BaseGeometry | None = None, max_redraws: int = 1000) -> np.ndarray:
    """One point uniform in each rectangle (n, 4) → (n, 2), within `region` when given.

    Raises
    ------
    InputError
        When a rectangle's part inside the region is too small to be hit in `max_redraws`
        rounds of rejection sampling.
    """
    lo, span = bounds[:, :2], bounds[:, 2:] - bounds[:, :2]
    pts = lo + rng.random((len(bounds), 2)) * span
    if region is None:
        return pts
    todo = np.flatnonzero(~shapely.contains_xy(region, pts[:, 0], pts[:, 1]))
    rounds = 0
    while todo.size:
        if rounds == max_redraws:
            raise InputError(f"after {max_redraws} redraws {todo.size} area(s) still have no "
                             "point inside the study region; check the region and its CRS")
        rounds += 1
        pts[todo] = lo[todo] + rng.random((todo.size, 2)) * span[todo]
        todo = todo[~shapely.contains_xy(region, pts[todo, 0], pts[todo, 1])]
    return pts
