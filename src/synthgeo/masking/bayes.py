"""The method-aware (Bayes) attacker: knows the published mask law and the household layer.

Masking methods must be assumed known (Kerckhoffs's principle): ``masking.json`` publishes the
method and k, and the household layer (an address register) is public. For a published point m
the attacker scores every candidate household h by the likelihood of m under the mask law
centred at h, with h's own parameters (for the donut, r_k(h) computed from the household layer
exactly as the mask computes it), times the prior of h, and names the highest-scoring candidate
(ties broken at random). Its success for a point is 1/(number of tied best candidates) when the
true household is among them, else 0. Two priors:

``"known cases"``
    The attacker knows the households of a share of the cases (as the naive
    :class:`~synthgeo.masking.NearestHouseholdAttacker`) and links each of their masked points to
    one of them; random-guess floor 1/n_known.
``"households"``
    Any household in the layer may be the case's (uniform prior over households: a point
    holding w households is w candidates; the case's own address is a candidate whether or
    not it is in the layer); for the areal mask 1/(households in the area) <= 1/k.

Likelihoods (docs/locations.md, "The method-aware attacker"):

* donut: f(m | h) = 1[0.5 r_k(h) <= |m − h| <= r_k(h)] / (0.75 π r_k(h)²);
* verified donut: 1[verified k of m from h >= k] · Σ_s π_s(h) f_s(m | h) / p_s(h), f_s the
  donut density on the annulus widened by WIDEN**s, p_s(h) the probability that a draw at
  scale s passes verification and π_s(h) that the published draw comes from scale s (after
  WIDEN_AFTER failures at each smaller scale), both estimated by simulating draws around h
  (100 draws per scale, up to six scales); the redraws at the study region's edge are not
  modelled, so the attacker is a lower bound on a fully Bayes one;
* areal: 1[m in area(h)] / |area(h)|: every household of the area scores the same.
"""

from __future__ import annotations

import numbers
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from synthgeo._errors import SpecError
from synthgeo.masking.areal import AreaPartition
from synthgeo.masking.verify import HouseholdIndex

__all__ = ["MethodAwareAttacker", "DonutLaw", "ArealLaw", "PRIORS", "mask_law", "attack_all",
           "guess_floor"]

PRIORS = ("known cases", "households")
_REL = 1e-9  # scores within this relative tolerance are ties
_TOUCH_M = 1e-6
_SCALES = 6  # annulus scales WIDEN**0 .. WIDEN**5 modelled for a verified donut
_NEGLIGIBLE = 1e-4  # a scale reached with less probability than this is not simulated


class DonutLaw:
    """The published donut law at one k, as the attacker reconstructs it.

    Parameters
    ----------
    index : HouseholdIndex
        The household layer (metres) and its weights.
    k : int
        The published k.
    verified : bool
        Whether the mask was verified (redrawn until its verified k reached k).
    inner : float
        Inner radius as a share of r_k (the published 0.5).
    n_draws : int, default=100
        Simulated draws per candidate and scale for the acceptance probability of a verified
        mask (scales reached with probability below 1e-4 are not simulated).
    random_seed : int, default=0
        Seed of those simulations.
    """

    name = "donut"

    def __init__(self, index: HouseholdIndex, k: int, *, verified: bool, inner: float,
                 n_draws: int = 100, random_seed: int = 0) -> None:
        from synthgeo.masking.donut import _kth_distance

        self.index, self.k, self.verified, self.inner = index, int(k), bool(verified), inner
        self.n_draws, self.seed = int(n_draws), int(random_seed)
        self._kth = _kth_distance
        self._hh_r: np.ndarray | None = None
        self._hh_acc: np.ndarray | None = None

    def r_k(self, xy: np.ndarray) -> np.ndarray:
        """r_k (metres) of candidate locations, as the mask computes it; (n, 2) → (n,)."""
        return self._kth(np.asarray(xy, float).reshape(-1, 2), self.index.xy,
                         np.array([self.k]), self.index.weights, tree=self.index.tree)[:, 0]

    def acceptance(self, xy: np.ndarray, r: np.ndarray) -> np.ndarray:
        """Weights of the annulus scales for candidates at `xy` with r_k `r`; (n, 2) → (n, S).

        Column s is π_s / p_s: π_s the probability that the case's published draw comes from
        the annulus widened by WIDEN**s (it failed WIDEN_AFTER draws at every smaller scale),
        p_s the probability that a draw at scale s passes verification (simulated with
        `n_draws` draws, at least 1/n_draws). Unverified: column 0 is 1, the rest 0.
        """
        from synthgeo.masking.verify import WIDEN, WIDEN_AFTER

        xy = np.asarray(xy, float).reshape(-1, 2)
        out = np.zeros((len(xy), _SCALES))
        if not self.verified:
            out[:, 0] = 1.0
            return out
        rng = np.random.default_rng(self.seed)
        left = np.ones(len(xy))  # P(reaching scale s)
        for s in range(_SCALES):
            i = np.flatnonzero(left > _NEGLIGIBLE)  # scales a case almost never reaches: 0
            if not len(i):
                break
            u = rng.random((self.n_draws, len(i)))
            a = 2 * np.pi * rng.random((self.n_draws, len(i)))
            d = r[i] * WIDEN**s * np.sqrt(self.inner**2 + u * (1 - self.inner**2))
            m = xy[i] + np.stack([d * np.cos(a), d * np.sin(a)], axis=-1)
            p = np.maximum((self.index.verified_k(xy[i], m) >= self.k - 1e-9).mean(axis=0),
                           1.0 / self.n_draws)
            stay = 1.0 - (1.0 - p) ** WIDEN_AFTER if s < _SCALES - 1 else np.ones(len(i))
            out[i, s] = left[i] * stay / p
            left[i] = left[i] * (1.0 - stay)
            left[np.setdiff1d(np.arange(len(xy)), i)] = 0.0
        return out

    def scores(self, m: np.ndarray, h: np.ndarray, r: np.ndarray, acc: np.ndarray) -> np.ndarray:
        """Return the likelihood of masked points m (P, 2) under candidates h (P, 2), pairwise.

        `r` (P,) is each candidate's r_k, `acc` (P, S) its scale weights from
        :meth:`acceptance`.
        """
        from synthgeo.masking.verify import WIDEN

        d = np.hypot(*(m - h).T)
        out = np.zeros(len(m))
        for s in range(acc.shape[1]):
            rs = r * WIDEN**s
            ok = (d >= self.inner * rs * (1 - 1e-12)) & (d <= rs * (1 + 1e-12)) & (r > 0) \
                & (acc[:, s] > 0)
            out[ok] += acc[ok, s] / (np.pi * (1 - self.inner**2) * rs[ok] ** 2)
        if self.verified and (out > 0).any():
            i = np.flatnonzero(out > 0)
            out[i] = np.where(_pair_vk(self.index, h[i], m[i]) >= self.k - 1e-9, out[i], 0.0)
        # r_k = 0: the case is not moved; the point is then its own location
        z = r <= 0
        out[z] = np.where(d[z] <= _TOUCH_M, np.inf, 0.0)
        return out

    def household_candidates(self, m: np.ndarray) -> list[np.ndarray]:
        """Households h whose (widest modelled) annulus contains each point of m (P, 2)."""
        from synthgeo.masking.verify import WIDEN

        if self._hh_r is None:
            self._hh_r = self.r_k(self.index.xy)
        r = self._hh_r
        reach = (WIDEN ** (_SCALES - 1) if self.verified else 1.0) * (1 + 1e-9)
        edges = np.unique(np.quantile(r, np.linspace(0, 1, 9)))
        bins = np.clip(np.searchsorted(edges, r, side="left"), 0, len(edges) - 1)
        from scipy.spatial import cKDTree

        out: list[list[np.ndarray]] = [[] for _ in range(len(m))]
        for b in np.unique(bins):
            members = np.flatnonzero(bins == b)
            tree = cKDTree(self.index.xy[members])
            hits = tree.query_ball_point(m, float(r[members].max()) * reach)
            for p, hh in enumerate(hits):
                if hh:
                    cand = members[np.asarray(hh)]
                    d = np.hypot(*(self.index.xy[cand] - m[p]).T)
                    keep = (d >= self.inner * r[cand] * (1 - 1e-12)) & (d <= reach * r[cand])
                    out[p].append(cand[keep])
        return [np.concatenate(v) if v else np.zeros(0, np.int64) for v in out]

    def household_acceptance(self, idx: np.ndarray) -> np.ndarray:
        """Return the scale weights of households `idx`, simulated once each and cached."""
        if self._hh_acc is None:
            self._hh_acc = np.full((len(self.index.xy), _SCALES), np.nan)
        todo = idx[np.isnan(self._hh_acc[idx, 0])]
        if len(todo):
            todo = np.unique(todo)
            self._hh_acc[todo] = self.acceptance(self.index.xy[todo], self._hh_r[todo])
        return self._hh_acc[idx]

    def to_dict(self) -> dict[str, Any]:
        """Return the law as the attacker uses it."""
        return {"method": "donut", "k": self.k, "verified": self.verified,
                "likelihood": "uniform in area on [0.5 r_k(h), r_k(h)]"
                + (" × 1[verified k >= k], mixed over the widened annuli WIDEN**s "
                   f"(s < {_SCALES}) with weights π_s / p_s simulated from {self.n_draws} "
                   "draws per scale; region redraws not modelled: a lower bound)"
                   if self.verified else "")}


def _pair_vk(index: HouseholdIndex, h: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Return the verified k of masked point m[p] had the case lived at h[p]; (P,)."""
    return index.verified_k(h, m[None])[0]


class ArealLaw:
    """The published areal law at one k: the partition of the household layer."""

    name = "areal"

    def __init__(self, index: HouseholdIndex, partition: AreaPartition) -> None:
        self.index, self.partition, self.k = index, partition, partition.k
        self.households_in_area = partition.households  # recounted with locate (region-clipped)

    def to_dict(self) -> dict[str, Any]:
        """Return the law as the attacker uses it."""
        return {"method": "areal", "k": self.k,
                "likelihood": "uniform on the area containing h: equal for every household in it"}


@dataclass(frozen=True, kw_only=True)
class MethodAwareAttacker:
    """Bayes attacker that knows the mask law and the household layer (module docstring).

    Parameters
    ----------
    known_share : float, default=0.3
        For the ``"known cases"`` prior: share of cases whose household the attacker knows
        (a fresh random set per mask, drawn as :class:`NearestHouseholdAttacker` draws it, so
        that with the same seed both attack the same cases).
    prior : {"known cases", "households"}, default="known cases"
        Candidate set and prior (module docstring).
    max_points : int or None, default=500
        ``"households"`` prior against a donut: attack a random sample of at most this many
        cases per mask (it scores every household near each point, and for a verified donut
        simulates each one's acceptance); None attacks all.

    Examples
    --------
    >>> import numpy as np
    >>> from synthgeo.masking.areal import household_partition
    >>> from synthgeo.masking.verify import HouseholdIndex
    >>> hh = np.column_stack([np.arange(8.0), np.zeros(8)])
    >>> law = ArealLaw(HouseholdIndex(hh), household_partition(hh, 4))
    >>> att = MethodAwareAttacker(prior="households")
    >>> # a case at household 1, published anywhere in its area of 4 households: 1/4
    >>> att.success(hh[[1]], np.array([[[2.5, 0.0]]]), law=law).tolist()
    [0.25]
    """

    known_share: float = 0.3
    prior: str = "known cases"
    max_points: int | None = 500

    def __post_init__(self) -> None:  # noqa: D105
        s = self.known_share
        if isinstance(s, bool) or not isinstance(s, numbers.Real) or not 0 < s <= 1:
            raise SpecError(f"`known_share` must be a share in (0, 1], got {s!r}")
        if self.prior not in PRIORS:
            raise SpecError(f"`prior` must be one of {PRIORS}, got {self.prior!r}")

    def n_known(self, n_cases: int) -> int:
        """Cases whose household the attacker knows (the ``"known cases"`` prior)."""
        return max(1, min(n_cases, int(np.floor(self.known_share * n_cases + 0.5))))

    def to_dict(self) -> dict[str, Any]:
        """Name and parameters for the compliance record."""
        return {"name": "method-aware (Bayes) attacker", "ties": "broken at random",
                **asdict(self)}

    def success(self, true_xy_m: np.ndarray, masked_xy_m: np.ndarray, *, law: Any,
                random_seed: int | np.random.Generator | None = None) -> np.ndarray:
        """Return the expected share of attacked cases linked to their own household, per mask.

        Parameters
        ----------
        true_xy_m : ndarray of shape (n_cases, 2)
            True case locations, metres.
        masked_xy_m : ndarray of shape (n_masks, n_cases, 2)
            Published points, one layer per replicate mask.
        law : DonutLaw or ArealLaw
            The published law the masks were drawn from.
        random_seed : int or numpy.random.Generator, optional
            Seed of the known cases (``"known cases"`` prior).

        Returns
        -------
        ndarray of shape (n_masks,)
            Success per mask in [0, 1]: the mean over attacked cases of
            1[true household among the best-scoring candidates] / (number of them).
        """
        xy = np.asarray(true_xy_m, dtype=float)
        masked = np.asarray(masked_xy_m, dtype=float)
        if masked.ndim == 2:
            masked = masked[None]
        n_masks, n = masked.shape[:2]
        if xy.shape != (n, 2):
            raise ValueError(f"expected true_xy_m of shape ({n}, 2), got {xy.shape}")
        if self.prior == "households":
            return self._households(xy, masked, law, random_seed)
        rng = np.random.default_rng(random_seed)
        n_known = self.n_known(n)
        known = np.argsort(rng.random((n_masks, n)), axis=1)[:, :n_known]
        if isinstance(law, ArealLaw):
            area_true = law.partition.locate(xy)
            out = np.empty(n_masks)
            for r in range(n_masks):
                kk = known[r]
                a_m = law.partition.locate(masked[r, kk])
                same = a_m[:, None] == area_true[kk][None, :]
                ties = same.sum(axis=1)
                own = same[np.arange(n_known), np.arange(n_known)]
                out[r] = np.where(own, 1.0 / np.maximum(ties, 1), 0.0).mean()
            return out
        r_true = law.r_k(xy)
        acc = law.acceptance(xy, r_true)
        from scipy.spatial import cKDTree

        from synthgeo.masking.verify import WIDEN

        # only known households within the widest modelled annulus can score > 0
        reach = float(r_true.max()) * (WIDEN ** (_SCALES - 1) if law.verified else 1.0) \
            * (1 + 1e-9) + _TOUCH_M
        out = np.empty(n_masks)
        for r in range(n_masks):
            kk = known[r]
            m = masked[r, kk]
            lists = cKDTree(xy[kk]).query_ball_point(m, reach)
            i = np.repeat(np.arange(n_known), [len(v) for v in lists])
            j = np.concatenate([np.asarray(v, dtype=np.int64) for v in lists])
            s = law.scores(m[i], xy[kk][j], r_true[kk][j], acc[kk][j])
            own = np.zeros(n_known)
            own[i[i == j]] = s[i == j]
            o = own[i]
            better = np.bincount(i, weights=s > o * (1 + _REL), minlength=n_known)
            tied = np.bincount(i, weights=_tied(s, o), minlength=n_known)
            seen = np.bincount(i, weights=s > 0, minlength=n_known) > 0
            hit = np.where((own > 0) & (better == 0), 1.0 / np.maximum(tied, 1), 0.0)
            out[r] = np.where(seen, hit, 1.0 / n_known).mean()  # nothing fits: a guess
        return out

    def _households(self, xy: np.ndarray, masked: np.ndarray, law: Any,
                    random_seed: Any) -> np.ndarray:
        n_masks, n = masked.shape[:2]
        idx = law.index
        if isinstance(law, DonutLaw) and self.max_points is not None and n > self.max_points:
            pick = np.sort(np.random.default_rng(random_seed).choice(n, self.max_points,
                                                                     replace=False))
            xy, masked, n = xy[pick], masked[:, pick], self.max_points
        own_in_layer = idx.own(xy)
        if isinstance(law, ArealLaw):
            size = law.households_in_area[law.partition.locate(xy)] + (1 - own_in_layer)
            a_true = law.partition.locate(xy)
            a_m = law.partition.locate(masked.reshape(-1, 2)).reshape(n_masks, n)
            return np.where(a_m == a_true[None], 1.0 / np.maximum(size, 1)[None], 0.0).mean(axis=1)
        w = idx.weights if idx.weights is not None else np.ones(len(idx.xy))
        r_true = law.r_k(xy)
        acc_true = law.acceptance(xy, r_true)
        flat = masked.reshape(-1, 2)
        case = np.tile(np.arange(n), n_masks)
        cands = law.household_candidates(flat)
        own_s = law.scores(flat, xy[case], r_true[case], acc_true[case])
        owner = np.repeat(np.arange(len(flat)), [len(c) for c in cands])
        cat = np.concatenate(cands) if len(cands) else np.zeros(0, np.int64)
        if law.verified:  # simulate acceptance only for candidates the point can come from
            support = law.scores(flat[owner], idx.xy[cat], law._hh_r[cat],
                                 np.ones((len(cat), _SCALES))) > 0
            owner, cat = owner[support], cat[support]
        s = law.scores(flat[owner], idx.xy[cat], law._hh_r[cat], law.household_acceptance(cat))
        own_o = own_s[owner]
        # households at the case's location cannot be told from it: the same score
        at_own = np.hypot(*(idx.xy[cat] - xy[case[owner]]).T) <= _TOUCH_M
        s[at_own] = own_o[at_own]
        better = np.bincount(owner, weights=s > own_o * (1 + _REL), minlength=len(flat))
        # a point holding w households is w tied candidates; the own one is the case itself
        tied = np.bincount(owner, weights=w[cat] * _tied(s, own_o),
                           minlength=len(flat)) - own_in_layer[case]
        hits = np.where((own_s > 0) & (better == 0), 1.0 / (1.0 + np.maximum(tied, 0)), 0.0)
        return hits.reshape(n_masks, n).mean(axis=1)


def _tied(s: np.ndarray, o: np.ndarray) -> np.ndarray:
    """Scores `s` tied with the own scores `o` (same shape): equal, or within _REL when finite.

    An infinite own score (a case not moved, r_k = 0) ties only with infinite scores.
    """
    fin = np.isfinite(o) & np.isfinite(s)
    close = np.zeros(np.shape(s), dtype=bool)
    close[fin] = np.abs(s[fin] - o[fin]) <= o[fin] * _REL
    return (s == o) | close


def mask_law(method: str, index: HouseholdIndex, k: int, *, verified: bool = False,
             extent: tuple[float, float, float, float] | None = None,
             region: Any = None, random_seed: int = 0) -> DonutLaw | ArealLaw:
    """Rebuild the published law of a mask from the household layer, as the attacker would.

    Parameters
    ----------
    method : {"donut", "areal"}
    index : HouseholdIndex
        The household layer.
    k : int
    verified : bool, default=False
        Donut only: the mask was verified.
    extent : tuple of 4 floats, optional
        Areal only: the partition's root rectangle (recorded with the mask).
    region : shapely geometry, optional
        Areal only: the study region the households were clipped to.
    random_seed : int, default=0
        Seed of the acceptance simulations (verified donut).

    Returns
    -------
    DonutLaw or ArealLaw
    """
    from synthgeo.masking.areal import household_partition
    from synthgeo.masking.donut import INNER_RATIO

    if method == "areal":
        return ArealLaw(index, household_partition(index.xy, k, weights=index.weights,
                                                   extent=extent, region=region))
    return DonutLaw(index, k, verified=verified, inner=INNER_RATIO, random_seed=random_seed)


def attack_all(xy: np.ndarray, masked: np.ndarray, law: DonutLaw | ArealLaw, *,
               known_share: float, random_seed: Any,
               households_masks: int | None = None,
               aware_masks: int | None = None) -> dict[str, np.ndarray]:
    """Success per mask of the naive and the method-aware attackers.

    Returns ``{"naive": ..., "aware_known_cases": ..., "aware_households": ...}``, arrays over
    masks: the naive attacker on all, the method-aware known-case attacker on the first
    `aware_masks` (default all; the same known cases as the naive one's first masks: same
    seed) and the household-prior attacker on the first `households_masks` (default all).
    """
    from synthgeo.masking.attacker import NearestHouseholdAttacker

    seed = np.random.default_rng(random_seed).integers(2**63)
    naive = NearestHouseholdAttacker(known_share=known_share).success(
        xy, masked, random_seed=np.random.default_rng(seed))
    cases = MethodAwareAttacker(known_share=known_share).success(
        xy, masked[:aware_masks], law=law, random_seed=np.random.default_rng(seed))
    sub = masked if households_masks is None else masked[:households_masks]
    households = MethodAwareAttacker(known_share=known_share, prior="households").success(
        xy, sub, law=law, random_seed=np.random.default_rng([seed, 1]))
    return {"naive": naive, "aware_known_cases": cases, "aware_households": households}


def guess_floor(k: int, n_known: int) -> float:
    """Return the larger random-guess floor: 1/k (households) or 1/n_known (known cases)."""
    return max(1.0 / k, 1.0 / n_known)
