"""Attacker models for masked point releases: how often a masked case is linked to its household.

The default, :class:`NearestHouseholdAttacker`, follows docs/locations.md: the attacker knows
the true households of a random share of the cases and assigns each masked point of a known case
to the nearest known case household. Any object with the same ``success`` method and
``to_dict`` can replace it in :func:`synthgeo.masking.choose_k`.
"""

from __future__ import annotations

import numbers
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
from scipy.spatial import cKDTree

from synthgeo._errors import SpecError

__all__ = ["Attacker", "NearestHouseholdAttacker"]


@runtime_checkable
class Attacker(Protocol):
    """What :func:`~synthgeo.masking.choose_k` needs of an attacker model."""

    def success(self, true_xy_m: np.ndarray, masked_xy_m: np.ndarray, *,
                random_seed: int | np.random.Generator | None = None) -> np.ndarray:
        """Share of attacked cases re-identified, one value per mask, shape (n_masks,)."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """Name and parameters for the compliance record."""
        ...


@dataclass(frozen=True, kw_only=True)
class NearestHouseholdAttacker:
    """Attacker who knows a share of the case households and links by nearest distance.

    Parameters
    ----------
    known_share : float, default=0.3
        Share of cases whose true household the attacker knows, in (0, 1]. The attacker knows
        ``n_known = max(1, round(known_share · n_cases))`` cases, a fresh random set per mask.

    Notes
    -----
    For each mask, with K the set of known cases, every masked point m_i (i in K) is assigned
    to the nearest known household h_j (j in K, Euclidean distance in metres). Success for the
    mask is the share of i in K with argmin_j |m_i − h_j| = i and no other known household at
    the same distance (ties count as failures, so co-located households cannot be told apart).
    A random assignment succeeds with probability ``1 / n_known`` (the baseline).
    """

    known_share: float = 0.3

    def __post_init__(self) -> None:  # noqa: D105
        s = self.known_share
        if isinstance(s, bool) or not isinstance(s, numbers.Real) or not 0 < s <= 1:
            raise SpecError(f"`known_share` must be a share in (0, 1], got {s!r}")

    def n_known(self, n_cases: int) -> int:
        """Return the number of cases whose household the attacker knows."""
        return max(1, min(n_cases, int(np.floor(self.known_share * n_cases + 0.5))))

    def baseline(self, n_cases: int) -> float:
        """Success of a random assignment among the known households, ``1 / n_known``."""
        return 1.0 / self.n_known(n_cases)

    def to_dict(self) -> dict[str, Any]:
        """Name and parameters for the compliance record."""
        return {"name": "nearest known case household", "ties": "count as failures",
                **asdict(self)}

    def success(self, true_xy_m: np.ndarray, masked_xy_m: np.ndarray, *,
                random_seed: int | np.random.Generator | None = None) -> np.ndarray:
        """Share of known cases matched to their own household, per mask.

        Parameters
        ----------
        true_xy_m : ndarray of shape (n_cases, 2)
            True case (household) locations in metres.
        masked_xy_m : ndarray of shape (n_masks, n_cases, 2)
            Masked locations in metres, one layer per replicate mask, cases in the same order.
        random_seed : int or numpy.random.Generator, optional
            Seed of the choice of known cases (one set per mask).

        Returns
        -------
        ndarray of shape (n_masks,)
            Attacker success per mask, in [0, 1].

        Raises
        ------
        ValueError
            If the shapes do not match.

        Notes
        -----
        All masks are attacked with one KD-tree: mask r's known households and masked points
        are shifted by the same offset, with the blocks laid out on a grid more than twice the
        data's diameter apart, so that each point's two nearest households are the nearest of
        its own mask (SciPy ``cKDTree.query(k=2)``, all cores).
        """
        true_xy_m = np.asarray(true_xy_m, dtype=float)
        masked_xy_m = np.asarray(masked_xy_m, dtype=float)
        if masked_xy_m.ndim == 2:
            masked_xy_m = masked_xy_m[None]
        n_masks, n = masked_xy_m.shape[:2]
        if true_xy_m.shape != (n, 2) or masked_xy_m.shape != (n_masks, n, 2):
            raise ValueError(f"expected true_xy_m of shape (n_cases, 2) and masked_xy_m of shape "
                             f"(n_masks, n_cases, 2), got {true_xy_m.shape} and "
                             f"{masked_xy_m.shape}")
        rng = np.random.default_rng(random_seed)
        n_known = self.n_known(n)
        known = np.argsort(rng.random((n_masks, n)), axis=1)[:, :n_known]  # (n_masks, n_known)
        centre = true_xy_m.mean(axis=0)
        h = true_xy_m[known] - centre  # (n_masks, n_known, 2)
        m = np.take_along_axis(masked_xy_m, known[..., None], axis=1) - centre
        reach = float(np.abs(h).max() + np.abs(m).max()) * np.sqrt(2.0)
        spacing = 3.0 * reach + 1.0  # > 2 × (largest own-block distance)
        side = int(np.ceil(np.sqrt(n_masks)))
        block = np.arange(n_masks)
        offset = spacing * np.column_stack([block % side, block // side]).astype(float)
        h = (h + offset[:, None, :]).reshape(-1, 2)
        m = (m + offset[:, None, :]).reshape(-1, 2)
        own = np.arange(n_masks * n_known)
        if len(h) == 1:
            return np.ones(1)
        dist, idx = cKDTree(h).query(m, k=2, workers=-1)
        tie = dist[:, 1] <= dist[:, 0] * (1 + 1e-12)
        hit = (idx[:, 0] == own) & ~tie
        return hit.reshape(n_masks, n_known).mean(axis=1)
