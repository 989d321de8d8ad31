"""Verified k: the anonymity a masked point actually gives against the household layer.

The k of :func:`~synthgeo.masking.mask_to_k` is a property of the annulus around the *true*
point (r_k = distance to the k-th nearest household). An attacker with the household layer sees
the *masked* point instead: the usual post-mask measure (Allshouse et al. 2010,
doi:10.1080/10106049.2010.496496) counts the households closer to the masked point than the true
household is, plus one (the true household). A donut to k leaves most cases below k by this
measure (the annulus [0.5 r_k, r_k] holds about k/4 to k households around the masked point), so
:func:`mask_to_k` can redraw a case until its verified k reaches k (``verify=True``), bounded;
a case that fails :data:`WIDEN_AFTER` times in a row has its annulus widened by :data:`WIDEN`.

Households are counted within d·cos(π/64) of the masked point (d the displacement): the circle
inscribed in MaskMyPy 1.1's 64-gon, so that a peer's count is never below ours; households
exactly as far as the true location (ties) are therefore not counted. One household at the true
location is taken to be the case's own (the "plus one"). With weights (households per point),
weights are summed instead of points counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.spatial import cKDTree

from synthgeo._errors import InputError

__all__ = ["INSCRIBED", "HouseholdIndex", "verified_k", "summarise_verified_k",
           "redraw_until_verified", "Verification", "WIDEN", "WIDEN_AFTER"]

#: Households are counted within d·cos(π/64) of the masked point, d = |true − masked|: the circle
#: inscribed in every 64-sided polygon inscribed in the circle of radius d, so that the verified
#: k never exceeds MaskMyPy 1.1's count (1 + addresses in ``buffer(d)``, a 64-gon) nor the count
#: in the full circle (docs/locations.md, "Verified k").
INSCRIBED = float(np.cos(np.pi / 64))
_TOUCH_M = 1e-6  # a household this close to the true location is at it (metres)
_THREADED = 20_000  # query batches at least this large use all cores


class HouseholdIndex:
    """A KD-tree of the households (and their weights) for repeated verified-k counts.

    Parameters
    ----------
    households_xy : ndarray of shape (n_points, 2)
        Household coordinates, metres.
    weights : ndarray of shape (n_points,), optional
        Households per point (default one each).
    """

    def __init__(self, households_xy: np.ndarray, weights: np.ndarray | None = None) -> None:
        self.xy = np.asarray(households_xy, dtype=float)
        self.tree = cKDTree(self.xy)
        self.weights = None if weights is None else np.asarray(weights, dtype=float)

    def _count(self, points: np.ndarray, radius: np.ndarray) -> np.ndarray:
        """Households (weight) within `radius` of each point, inclusive."""
        # threads pay off only for large batches (the redraw rounds are mostly small)
        workers = -1 if len(points) >= _THREADED else 1
        if self.weights is None:
            return np.asarray(self.tree.query_ball_point(points, radius, return_length=True,
                                                         workers=workers), dtype=float)
        hits = self.tree.query_ball_point(points, radius, workers=workers)
        return np.array([self.weights[h].sum() for h in hits], dtype=float)

    def own(self, true_xy: np.ndarray) -> np.ndarray:
        """1 where a household lies at the true location (taken as the case's own), else 0."""
        return np.minimum(1.0, self._count(true_xy, np.full(len(true_xy), _TOUCH_M)))

    def verified_k(self, true_xy: np.ndarray, masked_xy: np.ndarray,
                   own: np.ndarray | None = None) -> np.ndarray:
        """Return the verified k of masked points (see :func:`verified_k`); (..., 2) → (...)."""
        true_xy = np.asarray(true_xy, dtype=float)
        masked_xy = np.asarray(masked_xy, dtype=float)
        flat_m = masked_xy.reshape(-1, 2)
        flat_t = np.broadcast_to(true_xy, masked_xy.shape).reshape(-1, 2)
        d = np.hypot(*(flat_m - flat_t).T)
        radius = d * INSCRIBED + _TOUCH_M
        closer = self._count(flat_m, radius)
        if own is None:
            own = self.own(true_xy)
        own_flat = np.broadcast_to(own, masked_xy.shape[:-1]).reshape(-1)
        # the own household (at distance d) is inside the counting circle only when d ≈ 0
        k = closer - own_flat * (d <= radius) + 1.0
        return k.reshape(masked_xy.shape[:-1])


def verified_k(true_xy: np.ndarray, masked_xy: np.ndarray, households_xy: np.ndarray, *,
               weights: np.ndarray | None = None) -> np.ndarray:
    """Households at least as close to each masked point as its true location, own counted once.

    Parameters
    ----------
    true_xy : ndarray of shape (n_cases, 2)
        True case locations, metres.
    masked_xy : ndarray of shape (n_cases, 2) or (n_masks, n_cases, 2)
        Masked locations, same CRS.
    households_xy : ndarray of shape (n_points, 2)
        Household layer, same CRS.
    weights : ndarray of shape (n_points,), optional
        Households per point.

    Returns
    -------
    ndarray of shape (n_cases,) or (n_masks, n_cases)
        K_i = 1 + #{households h ≠ own : |h − m_i| ≤ c·|x_i − m_i|}, c = cos(π/64) ≈ 0.9988
        (weights summed when given): 1 + the households closer to the masked point than the
        true location (Allshouse et al. 2010, doi:10.1080/10106049.2010.496496), counted in
        the circle inscribed in the 64-gon that MaskMyPy 1.1 buffers with, so that neither its
        count nor the full circle's is ever below ours (docs/locations.md).

    Raises
    ------
    InputError
        If the shapes do not match.

    Examples
    --------
    >>> import numpy as np
    >>> hh = np.array([[0, 0], [10, 0], [20, 0], [30, 0], [40, 0]], float)
    >>> # true household at x = 0, masked to x = 25: households at 20 and 30 are closer than
    >>> # 25 m, the one at 10 is 15 m away (closer too); 40 is 15 m away; 0 is the case's own
    >>> verified_k(np.array([[0.0, 0.0]]), np.array([[25.0, 0.0]]), hh).tolist()
    [5.0]
    >>> verified_k(np.array([[0.0, 0.0]]), np.array([[-5.0, 0.0]]), hh).tolist()
    [1.0]
    """
    true_xy = np.asarray(true_xy, dtype=float)
    masked_xy = np.asarray(masked_xy, dtype=float)
    if true_xy.ndim != 2 or true_xy.shape[1] != 2 or masked_xy.shape[-2:] != true_xy.shape:
        raise InputError(f"`masked_xy` must have shape {true_xy.shape} or (n_masks, "
                         f"*{true_xy.shape}), got {masked_xy.shape}")
    return HouseholdIndex(households_xy, weights).verified_k(true_xy, masked_xy)


def summarise_verified_k(values: np.ndarray, k: int) -> dict[str, Any]:
    """Distribution of verified k: min, 5th percentile, median, share and count below k.

    Examples
    --------
    >>> summarise_verified_k(np.array([1.0, 3.0, 5.0, 8.0]), 5)["share_below_k"]
    0.5
    """
    v = np.asarray(values, dtype=float).ravel()
    if not len(v):
        return {"k": int(k), "n": 0}
    return {"k": int(k), "n": int(len(v)), "min": float(v.min()),
            "p05": float(np.quantile(v, 0.05)), "median": float(np.median(v)),
            "n_below_k": int((v < k - 1e-9).sum()), "share_below_k": float((v < k - 1e-9).mean())}


#: A case redrawn this many times without reaching k has its annulus widened by :data:`WIDEN`.
WIDEN_AFTER = 10
#: Factor by which both radii of a case's annulus grow after every :data:`WIDEN_AFTER` failures.
WIDEN = 1.25


@dataclass(frozen=True, kw_only=True)
class Verification:
    """Outcome of :func:`redraw_until_verified`.

    Attributes
    ----------
    verified_k : ndarray of shape (n_masks, n_cases)
        Verified k of the final points (all ≥ k).
    n_redraws : int
        Draws replaced because their verified k was below k.
    n_region_redraws : int
        Region redraws made while redrawing.
    annulus_scale : ndarray of shape (n_masks, n_cases)
        Factor applied to the case's annulus [0.5 r_k, r_k] for its final draw (1: the donut
        as specified; > 1: widened after repeated failures).
    rounds : int
        Redraw rounds used.
    """

    verified_k: np.ndarray
    n_redraws: int
    n_region_redraws: int
    annulus_scale: np.ndarray
    rounds: int

    def to_dict(self, k: int, max_redraws: int) -> dict[str, Any]:
        """Summary for records: redraws, widened cases, largest widening, the bound."""
        widened = self.annulus_scale > 1
        return {"k": int(k), "n_redraws": self.n_redraws, "rounds": self.rounds,
                "max_redraws": int(max_redraws), "widen_after": WIDEN_AFTER, "widen": WIDEN,
                "n_widened": int(widened.sum()),
                "max_annulus_scale": float(self.annulus_scale.max()) if widened.size else 1.0}


def redraw_until_verified(masked: np.ndarray, dist: np.ndarray, true_xy: np.ndarray, *, k: int,
                          index: HouseholdIndex, draw, max_redraws: int,
                          ids: np.ndarray | None = None) -> Verification:
    """Redraw each (mask, case) whose verified k is below k until it reaches k, bounded.

    A case drawn :data:`WIDEN_AFTER` times in a row without reaching k has its annulus widened
    by :data:`WIDEN` (both radii), and again after every further :data:`WIDEN_AFTER` failures:
    some cases cannot reach k anywhere in [0.5 r_k, r_k] (their k − 1 nearest households lie
    on different sides), a wider donut always can.

    Parameters
    ----------
    masked : ndarray of shape (n_masks, n_cases, 2)
        Masked points, changed in place.
    dist : ndarray of shape (n_masks, n_cases)
        Their displacements, metres, changed in place.
    true_xy : ndarray of shape (n_cases, 2)
    k : int
        Target verified k.
    index : HouseholdIndex
    draw : callable
        ``draw(cases, scale) -> (points (m, 2), displacements (m,), region_redraws)``: fresh
        donut draws for the case indices `cases` in their annulus times `scale` (m,).
    max_redraws : int
        Rounds allowed; a case still below k after them is refused.
    ids : ndarray, optional
        Case ids for the message.

    Returns
    -------
    Verification

    Raises
    ------
    InputError
        When a case stays below k after `max_redraws` rounds (naming the cases, the bound and
        the options that help).
    """
    n = true_xy.shape[0]
    own = index.own(true_xy)
    flat_m, flat_d = masked.reshape(-1, 2), dist.reshape(-1)
    vk = index.verified_k(true_xy, masked, own).reshape(-1)
    scale = np.ones(vk.shape)
    fails = np.zeros(vk.shape, dtype=np.int64)
    todo = np.flatnonzero(vk < k - 1e-9)
    n_redraws = n_region = rounds = 0
    while todo.size:
        if rounds == max_redraws:
            cases = np.unique(todo % n)
            shown = (ids[cases] if ids is not None else cases)[:5].tolist()
            raise InputError(
                f"after {max_redraws} redraws, {len(cases)} case(s) (e.g. {shown}) still have a "
                f"verified k below {k} (annulus widened up to x{scale[todo].max():.3g}): "
                "raise the redraw bound (--max-verify-redraws), lower k, or mask without "
                "--verify and report the verified k")
        rounds += 1
        fails[todo] += 1
        scale[todo] = WIDEN ** (fails[todo] // WIDEN_AFTER)
        case = todo % n
        pts, d, nr = draw(case, scale[todo])
        flat_m[todo], flat_d[todo] = pts, d
        n_redraws += todo.size
        n_region += nr
        vk[todo] = index.verified_k(true_xy[case], pts, own[case])
        todo = todo[vk[todo] < k - 1e-9]
    shape = masked.shape[:-1]
    return Verification(verified_k=vk.reshape(shape), n_redraws=n_redraws,
                        n_region_redraws=n_region, annulus_scale=scale.reshape(shape),
                        rounds=rounds)
