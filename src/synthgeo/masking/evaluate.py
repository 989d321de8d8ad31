"""Score the mask actually released: attacker success, utility verdict, displacements."""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import geopandas
import numpy as np

from synthgeo._errors import InputError, SpecError
from synthgeo.masking._validate import check_region, layer_xy, record_ids, resolve_seed
from synthgeo.masking.attacker import Attacker, NearestHouseholdAttacker
from synthgeo.masking.bayes import attack_all, guess_floor, mask_law
from synthgeo.masking.detection import UtilityTest
from synthgeo.masking.donut import DonutMask
from synthgeo.masking.verify import HouseholdIndex, summarise_verified_k, verified_k

__all__ = ["MaskEvaluation", "evaluate_mask"]

#: Random choices of known cases the method-aware attacker is averaged over (it scores every
#: known case near each point, so fewer than the naive attacker's `n_attacks`).
_AWARE_ATTACKS = 50


@dataclass(frozen=True, kw_only=True)
class MaskEvaluation:
    """Privacy and utility of one released mask.

    Attributes
    ----------
    attacker_success : float
        Success of the stronger attacker: the naive one's mean over `n_attacks` random choices
        of the known cases, or, when the household layer was given, the largest of it and the
        method-aware attacker's two priors (:mod:`synthgeo.masking.bayes`).
    attacker_success_se : float
        Its Monte Carlo standard error (sd / √n_attacks).
    n_attacks : int
        Random choices of the known cases averaged over.
    attacker : dict
        The attacker model and its parameters (``n_known`` and ``baseline`` for the default).
    utility : dict or None
        The utility test, its parameters and its verdict on this mask (and on the truth); None
        when no test was given.
    median_displacement_m, min_displacement_m, max_displacement_m : float
        Displacement between true and masked locations, metres.
    verified_k : dict or None
        Distribution of the verified k of the masked points (households at least as close to
        the masked point as the true location, own counted once; see
        :func:`synthgeo.masking.verify.summarise_verified_k`; for the areal mask, households in
        the case's area); None when not measured.
    attackers : dict or None
        Mean success (and s.e.) of each attacker: ``naive``, ``aware_known_cases``,
        ``aware_households``, the ``stronger`` one's name and the random-guess ``floor``
        max(1/k, 1/n_known); None without the household layer.
    """

    attacker_success: float
    attacker_success_se: float
    n_attacks: int
    attacker: dict[str, Any]
    utility: dict[str, Any] | None
    median_displacement_m: float
    min_displacement_m: float
    max_displacement_m: float
    verified_k: dict[str, Any] | None = None
    attackers: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the evaluation as a JSON-ready dict."""
        return {"attacker_success": self.attacker_success,
                "attacker_success_se": self.attacker_success_se, "n_attacks": self.n_attacks,
                "attacker": self.attacker, "utility": self.utility,
                "median_displacement_m": self.median_displacement_m,
                "min_displacement_m": self.min_displacement_m,
                "max_displacement_m": self.max_displacement_m,
                "verified_k": self.verified_k, "attackers": self.attackers}


def _both_attackers(xy: np.ndarray, copies: np.ndarray, mask: DonutMask, hxy: np.ndarray,
                    weights: np.ndarray | None, naive: NearestHouseholdAttacker,
                    seed: int, region: Any = None) -> dict[str, Any]:
    """Naive and method-aware attackers on the released mask, the stronger and the floor."""
    index = HouseholdIndex(hxy, weights)
    extent = (mask.verification or {}).get("extent")
    law = mask_law(mask.method, index, mask.k, verified=mask.verified, random_seed=seed % 2**32,
                   extent=None if extent is None else tuple(extent), region=region)
    res = attack_all(xy, copies, law, known_share=naive.known_share,
                     random_seed=np.random.default_rng([seed, 3]), households_masks=1,
                     aware_masks=_AWARE_ATTACKS)
    out: dict[str, Any] = {}
    for name, v in res.items():
        out[name] = {"success": float(v.mean()),
                     "se": float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else 0.0}
    out["stronger"] = max(res, key=lambda n: out[n]["success"])
    n_known = naive.n_known(len(xy))
    out["floor"] = guess_floor(mask.k, n_known)
    out["law"] = law.to_dict()
    return out


def evaluate_mask(
    cases: geopandas.GeoDataFrame | geopandas.GeoSeries,
    mask: DonutMask,
    *,
    attacker: Attacker | None = None,
    utility: UtilityTest | None = None,
    n_attacks: int = 200,
    random_seed: int | np.random.Generator | None = None,
    households: geopandas.GeoDataFrame | geopandas.GeoSeries | None = None,
    weights: np.ndarray | None = None,
    region: Any = None,
) -> MaskEvaluation:
    """Score the mask that is released: attacker success and the utility test on it.

    Parameters
    ----------
    cases : geopandas.GeoDataFrame or geopandas.GeoSeries
        True case locations, in the mask's case order and CRS.
    mask : DonutMask
        The mask (e.g. from :func:`~synthgeo.masking.mask_to_k`).
    attacker : Attacker, optional
        Default :class:`~synthgeo.masking.NearestHouseholdAttacker` (known share 0.3).
    utility : UtilityTest, optional
        E.g. :class:`~synthgeo.masking.ExcessNearSource`; its verdict on the mask and on the
        truth are reported.
    n_attacks : int, default=200
        The attacker's known cases are random: success is averaged over this many choices
        (the method-aware attacker over the first 50 of them, the household-prior one over one
        attack: it does not depend on the known cases).
    random_seed : int or numpy.random.Generator, optional
        Seed of the choices of known cases.
    households : geopandas.GeoDataFrame or geopandas.GeoSeries, optional
        Household layer (same CRS): the verified k of the mask as it stands (carried-over
        points included) is measured against it; default the mask's own ``verified_k``.
    weights : ndarray of shape (n_points,), optional
        Households per point of `households`.
    region : shapely geometry or geopandas.GeoSeries, optional
        The study region the mask was drawn with (areal: its households were clipped to it).

    Returns
    -------
    MaskEvaluation

    Raises
    ------
    InputError
        If `cases` and the mask differ in length, ids or CRS.
    SpecError
        If `n_attacks` is not a positive integer.
    """
    xy, crs = layer_xy(cases, "cases")
    mxy, mcrs = layer_xy(mask.masked, "mask.masked")
    if len(xy) != len(mxy) or not np.array_equal(record_ids(cases),
                                                 mask.masked[mask.id_column].to_numpy()):
        raise InputError("`cases` and the mask hold different records (length or id order); "
                         "pass the case layer the mask was made from")
    if not crs.equals(mcrs, ignore_axis_order=True):
        raise InputError(f"`cases` is in {crs.name!r} but the mask in {mcrs.name!r}")
    if isinstance(n_attacks, bool) or not isinstance(n_attacks, numbers.Integral) \
            or n_attacks < 1:
        raise SpecError(f"`n_attacks` must be a positive integer, got {n_attacks!r}")
    attacker = NearestHouseholdAttacker() if attacker is None else attacker
    seed = resolve_seed(random_seed)
    copies = np.broadcast_to(mxy, (int(n_attacks), *mxy.shape))
    success = attacker.success(xy, copies, random_seed=np.random.default_rng(seed))
    att = attacker.to_dict()
    if isinstance(attacker, NearestHouseholdAttacker):
        att.update(n_known=attacker.n_known(len(xy)), baseline=attacker.baseline(len(xy)))
    util = None
    if utility is not None:
        util = {**utility.to_dict(), "passes": bool(utility.passes(mxy[None])[0]),
                "passes_on_true_locations": bool(utility.passes(xy[None])[0])}
        if hasattr(utility, "observed") and hasattr(utility, "expected"):
            util.update(observed=int(utility.observed(mxy[None])[0]),
                        observed_on_true_locations=int(utility.observed(xy[None])[0]),
                        expected=float(utility.expected(len(xy))))
    d = np.hypot(*(mxy - xy).T)
    vk = mask.verified_k
    attackers = None
    se = float(success.std(ddof=1) / np.sqrt(len(success))) if len(success) > 1 else float("nan")
    stronger = float(success.mean())
    if households is not None:
        hxy, hcrs = layer_xy(households, "households")
        if not crs.equals(hcrs, ignore_axis_order=True):
            raise InputError(f"`cases` is in {crs.name!r} but `households` in {hcrs.name!r}")
        if mask.method == "donut":
            vk = verified_k(xy, mxy, hxy, weights=weights)
        if isinstance(attacker, NearestHouseholdAttacker):
            attackers = _both_attackers(xy, copies, mask, hxy, weights, attacker, seed,
                                        region=check_region(region, crs))
            name = attackers["stronger"]
            stronger = attackers[name]["success"]
            se = attackers[name]["se"]
    return MaskEvaluation(
        verified_k=None if vk is None else summarise_verified_k(vk, mask.k),
        attacker_success=stronger, attacker_success_se=se, attackers=attackers,
        n_attacks=int(n_attacks), attacker=att, utility=util,
        median_displacement_m=float(np.median(d)), min_displacement_m=float(d.min()),
        max_displacement_m=float(d.max()),
    )
