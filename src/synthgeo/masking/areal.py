"""Areal masking to k households: a partition built from the household layer alone.

The household layer is cut into rectangles by recursive weighted-median splits along the longer
side (a k-d partition: every cell holding at least 2k households is split in two halves each
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
        Households (weights summed) assigned to each area by the splits; every one >= k. A
        household on a split line counts in the area its rank put it in; the closed rectangle
        holds at least as many.
    k : int
        The threshold the partition was built for.
    """

    bounds: np.ndarray = field(repr=False)
    households: np.ndarray = field(repr=False)
    k: int
    _axis: np.ndarray = field(repr=False)
    _split: np.ndarray = field(repr=False)
    _left: np.ndarray = field(repr=False)
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
        while True:
            inner = self._left[node] >= 0
            if not inner.any():
                break
            i = np.flatnonzero(inner)
            n = node[i]
            right = xy[i, self._axis[n]] >= self._split[n]
            node[i] = self._left[n] + right
        area = self._leaf[node]
        area[out] = -1
        return area

    @property
    def _root(self) -> np.ndarray:
        b = self.bounds
        return np.array([b[:, 0].min(), b[:, 1].min(), b[:, 2].max(), b[:, 3].max()])

    def polygons(self) -> np.ndarray:
        """Return the areas as shapely boxes, shape (n_areas,)."""
        return shapely.box(*self.bounds.T)


def household_partition(households_xy: np.ndarray, k: int, *,
                        weights: np.ndarray | None = None,
                        extent: tuple[float, float, float, float] | None = None) -> AreaPartition:
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

    Returns
    -------
    AreaPartition

    Notes
    -----
    Level by level, every cell holding >= 2k households is split along its longer side at the
    weighted median of the households' coordinates: the lower half takes the households whose
    cumulative weight is <= half the cell's,
    and the split line lies midway between the two halves. A split that would leave either half
    below k (large weights) is not made. One sort per level.

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
    if extent is None:
        lo, hi = hxy.min(axis=0), hxy.max(axis=0)
        pad = PAD * max(float((hi - lo).max()), 1.0)
        extent = (lo[0] - pad, lo[1] - pad, hi[0] + pad, hi[1] + pad)
    boxes = [np.asarray(extent, dtype=float)[None]]
    axis_l, split_l, left_l = [np.zeros(1, np.int64)], [np.zeros(1)], [np.full(1, -1)]
    n_nodes = 1
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
        lo_c = np.where(vertical, box[c, 1], box[c, 0])
        span = np.where(vertical, box[c, 3] - box[c, 1], box[c, 2] - box[c, 0])
        # one float sort on "cell + position within the cell" (in [c, c + 0.5])
        order = np.argsort(c + 0.5 * (coord - lo_c) / np.maximum(span, 1e-300))
        pts, c, coord = pts[order], c[order], coord[order]
        cw = np.cumsum(w[pts])
        seg = np.concatenate([[0], np.cumsum(np.bincount(c, minlength=n_nodes))])
        before = np.concatenate([[0.0], cw])[seg[c]]
        lower = (cw - before) <= tot[c] / 2 + 1e-9
        wl = np.bincount(c, weights=w[pts] * lower, minlength=n_nodes)
        ok = is_cand & (wl >= k - 1e-9) & (tot - wl >= k - 1e-9)
        split_cells = np.flatnonzero(ok)
        if not len(split_cells):
            break
        # households are sorted by cell then coordinate: the lower half is a prefix of its cell
        first = seg[split_cells]
        n_low = np.bincount(c, weights=lower, minlength=n_nodes)[split_cells].astype(np.int64)
        s = (coord[first + n_low - 1] + coord[first + n_low]) / 2
        a = ax[split_cells]
        child = n_nodes + 2 * np.arange(len(split_cells))
        lb, rb = box[split_cells].copy(), box[split_cells].copy()
        lb[np.arange(len(s)), 2 + a] = s
        rb[np.arange(len(s)), a] = s
        new_box = np.empty((2 * len(s), 4))
        new_box[0::2], new_box[1::2] = lb, rb
        axis = np.concatenate(axis_l)
        split = np.concatenate(split_l)
        left = np.concatenate(left_l)
        axis[split_cells], split[split_cells], left[split_cells] = a, s, child
        axis_l, split_l = [axis, np.zeros(2 * len(s), np.int64)], [split, np.zeros(2 * len(s))]
        left_l = [left, np.full(2 * len(s), -1)]
        boxes.append(new_box)
        moved = ok[cell[pts]]
        p, cc = pts[moved], cell[pts[moved]]
        pos = np.searchsorted(split_cells, cc)
        cell[p] = child[pos] + (~lower[moved]).astype(np.int64)
        frontier = np.arange(n_nodes, n_nodes + 2 * len(s))
        n_nodes += 2 * len(s)
    axis, split, left = (np.concatenate(v) for v in (axis_l, split_l, left_l))
    box = np.concatenate(boxes)
    leaves = np.flatnonzero(left < 0)
    leaf = np.full(n_nodes, -1, dtype=np.int64)
    leaf[leaves] = np.arange(len(leaves))
    tot = np.bincount(cell, weights=w, minlength=n_nodes)
    return AreaPartition(bounds=box[leaves], households=tot[leaves], k=int(k), _axis=axis,
                         _split=split, _left=left, _leaf=leaf)


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
