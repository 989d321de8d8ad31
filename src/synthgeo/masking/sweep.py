"""Choose k from evidence: a sweep of replicate donut masks over a grid of k.

For each k on the grid, many replicate masks (default 200) are drawn at once; each is scored by
the attacker model (re-identification) and the utility test (does the analysis still detect
what it detects on the true locations). The smallest k meeting both targets, set before the
sweep, is chosen; when none does, the finding says so and names the two alternatives
(docs/locations.md, "Donut geomasking and choosing k").
"""

from __future__ import annotations

import logging
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import geopandas
import numpy as np
import pandas as pd
from shapely.geometry.base import BaseGeometry
from tqdm import tqdm

from synthgeo._errors import SpecError
from synthgeo.masking._validate import check_k, resolve_seed
from synthgeo.masking.areal import draw_in_areas, household_partition
from synthgeo.masking.attacker import Attacker, NearestHouseholdAttacker
from synthgeo.masking.bayes import MethodAwareAttacker, guess_floor, mask_law
from synthgeo.masking.detection import FunctionUtility, UtilityTest
from synthgeo.masking.donut import _draw_donut, _extent, _kth_distance, _prepare
from synthgeo.masking.sites import DEFAULT_MAX_SITE_RECORDS, check_site_sizes, site_index
from synthgeo.masking.sweep_result import (
    ALTERNATIVES,
    ChooseKResult,
    finding,
    smallest_k_meeting,
)
from synthgeo.masking.sweep_result import notes as _notes
from synthgeo.masking.verify import HouseholdIndex, redraw_until_verified

__all__ = ["DEFAULT_K_GRID", "ALTERNATIVES", "ChooseKResult", "choose_k", "smallest_k_meeting"]

logger = logging.getLogger(__name__)

#: The spec's k grid.
DEFAULT_K_GRID: tuple[int, ...] = (5, 10, 15, 20, 30, 50)
_TOL = 1e-12  # as sweep_result's
#: Masking methods choose-k compares by default.
METHODS: tuple[str, ...] = ("donut", "areal")
_POINTS_PER_BATCH = 2_000_000  # masked points held at once (n_masks × n_cases)


def _check_share(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value <= 1:
        raise SpecError(f"`{name}` must be a share in [0, 1], got {value!r}")
    return float(value)


def _check_grid(k_grid: Any, total: float) -> np.ndarray:
    if isinstance(k_grid, str | bytes) or not isinstance(k_grid, Sequence | np.ndarray):
        raise TypeError(f"`k_grid` must be a sequence of integers, got {k_grid!r}")
    ks = [check_k(k, total, "k_grid", minimum=2) for k in k_grid]
    if not ks:
        raise SpecError("`k_grid` is empty; give at least one k, e.g. (5, 10, 20, 50)")
    if len(set(ks)) != len(ks):
        raise SpecError(f"`k_grid` = {list(k_grid)!r} repeats a value")
    return np.array(sorted(ks))


def _check_methods(methods: Any) -> tuple[str, ...]:
    if isinstance(methods, str):
        methods = (methods,)
    methods = tuple(methods)
    bad = [m for m in methods if m not in METHODS]
    if bad or not methods or len(set(methods)) != len(methods):
        raise SpecError(f"`methods` must be distinct values among {METHODS}, got {methods!r}")
    return methods


def _as_utility(utility: Any) -> UtilityTest:
    if hasattr(utility, "passes") and hasattr(utility, "to_dict"):
        return utility
    if callable(utility):
        return FunctionUtility(func=utility, name=getattr(utility, "__name__", "user function"))
    raise TypeError(f"`utility` must be a UtilityTest (e.g. ExcessNearSource) or a function of "
                    f"masked points, got {type(utility).__name__}")


def _utility_on_truth(utility: UtilityTest | None, xy: np.ndarray,
                      preregistered: bool) -> dict[str, Any]:
    """Score the utility test on the true locations; refuse a failing one unless pre-registered."""
    if utility is None:
        return {"attacker_only": True}
    ok = bool(np.asarray(utility.passes(xy[None]))[0])
    out: dict[str, Any] = {"passes_on_true_locations": ok, "preregistered": bool(preregistered)}
    if hasattr(utility, "observed") and hasattr(utility, "expected"):
        out["observed_on_true_locations"] = int(utility.observed(xy[None])[0])
        out["expected"] = float(utility.expected(len(xy)))
    detail = (f" (observed {out['observed_on_true_locations']} vs {out['expected']:.2f} "
              "expected)" if "expected" in out else "")
    if not ok and not preregistered:
        raise SpecError(f"the utility test does not pass on the true locations{detail}: a mask "
                        "cannot preserve a finding the data do not show, so the detection rate "
                        "would be meaningless; test the analysis the release must support "
                        "(another source, radius or utility function), or declare the test "
                        "pre-registered (--preregistered) to measure how often masks keep the "
                        "finding of no excess")
    if not ok:
        out["note"] = (f"pre-registered test: the true locations show no excess{detail}; the "
                       "agreement rate is the share of masks that show none either")
    return out


def _urbanicity(xy: np.ndarray, hxy: np.ndarray, w: np.ndarray | None, total: float,
                k_ref: int) -> tuple[np.ndarray, dict[str, Any]]:
    """Dense/sparse split of the cases by household density around each true location."""
    k_ref = max(1, min(k_ref, int(np.floor(total + 1e-9))))
    r = _kth_distance(xy, hxy, np.array([k_ref]), w)[:, 0]
    with np.errstate(divide="ignore"):
        density = k_ref / (np.pi * (r / 1000.0) ** 2)  # households per km²
    threshold = float(np.median(density))
    dense = density >= threshold
    return dense, {
        "measure": f"households per km² within the distance to the {k_ref}-th nearest household "
                   "of each case's true location",
        "k_ref": k_ref, "split": "dense = at or above the median over cases",
        "threshold_households_per_km2": threshold if np.isfinite(threshold) else None,
        "n_dense": int(dense.sum()), "n_sparse": int((~dense).sum()),
    }


def _draw_method(ctx: dict[str, Any], method: str, j: int, k: int, size: int, b: int,
                 part: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """Draw `size` masks of every site by `method`.

    Returns points (size, n_sites, 2), displacements, verified k (size, n_sites), region
    redraws and verification redraws.
    """
    sxy, sids = ctx["sxy"], ctx["sids"]
    rng = np.random.default_rng([ctx["seed"], 0, b])  # the same streams for every k: common
    if method == "areal":                              # random numbers
        area = ctx["areas"][k]
        bounds = np.broadcast_to(part.bounds[area], (size, len(sxy), 4)).reshape(-1, 4)
        pts = draw_in_areas(bounds, rng, region=ctx["region"],
                            max_redraws=ctx["max_redraws"]).reshape(size, len(sxy), 2)
        d = np.hypot(*(pts - sxy).transpose(2, 0, 1))
        vk = np.broadcast_to(part.households[area], (size, len(sxy)))
        return pts, d, vk, 0, 0
    r_k = ctx["r_all"][ctx["first"], j]
    masked, d, nr = _draw_donut(sxy, r_k, size, rng, ctx["region"], ctx["max_redraws"], sids)
    if not ctx["verify"]:
        return masked, d, ctx["index"].verified_k(sxy, masked, ctx["own"]), nr, 0

    def draw(case, scale, rng=rng, r_k=r_k):
        pts, dd, nrr = _draw_donut(sxy[case], r_k[case] * scale, 1, rng, ctx["region"],
                                   ctx["max_redraws"], sids[case])
        return pts[0], dd[0], nrr

    v = redraw_until_verified(masked, d, sxy, k=k, index=ctx["index"], draw=draw,
                              max_redraws=ctx["max_verify_redraws"], ids=sids)
    return masked, d, v.verified_k, nr + v.n_region_redraws, v.n_redraws


def _sweep_k(ctx: dict[str, Any], j: int, k: int, bar, method: str = "donut") -> dict[str, Any]:
    """Draw, score and summarise the replicate masks of one method and k (one table row)."""
    xy, n, R, seed, starts, batch = (ctx[key] for key in ("xy", "n", "R", "seed", "starts",
                                                           "batch"))
    inv = ctx["inverse"]
    success, passes = np.empty(R), np.zeros(R, dtype=bool)
    aware, aware_hh = np.full(R, np.nan), []
    dist, vk = np.empty((R, n)), np.empty((R, n))
    n_redraws = n_verify = 0
    part = None
    if method == "areal":
        part = household_partition(ctx["households_xy"], k, weights=ctx["weights"],
                                   extent=ctx["extent"], region=ctx["region"])
        ctx.setdefault("areas", {})[k] = part.locate(ctx["sxy"])
    law = (mask_law(method, ctx["index"], k, verified=ctx["verify"], extent=ctx["extent"],
                    region=ctx["region"],
                    random_seed=seed % 2**32) if ctx["aware"] else None)
    for b, start in enumerate(starts):
        size = min(batch, R - start)
        masked, d, v, nr, nv = _draw_method(ctx, method, j, k, size, b, part)
        masked, d, v = masked[:, inv], d[:, inv], v[:, inv]  # co-located records share a draw
        vk[start:start + size], n_verify = v, n_verify + nv
        success[start:start + size] = ctx["attacker"].success(
            xy, masked, random_seed=np.random.default_rng([seed, 1, b]))
        if law is not None:
            aware[start:start + size] = MethodAwareAttacker(
                known_share=ctx["known_share"]).success(
                xy, masked, law=law, random_seed=np.random.default_rng([seed, 1, b]))
            take = max(0, ctx["households_masks"] - sum(len(a) for a in aware_hh))
            if take:
                aware_hh.append(MethodAwareAttacker(prior="households").success(
                    xy, masked[:take], law=law, random_seed=np.random.default_rng([seed, 4, b])))
        if ctx["utility"] is not None:
            passes[start:start + size] = np.asarray(ctx["utility"].passes(masked), dtype=bool)
        dist[start:start + size] = d
        n_redraws += nr
        bar.update(1)
    dense = ctx["dense"]
    p = float(passes.mean()) if ctx["utility"] is not None else float("nan")
    agree = (float((passes == ctx["truth_passes"]).mean()) if ctx["utility"] is not None
             else float("nan"))
    hh = np.concatenate(aware_hh) if aware_hh else np.array([np.nan])
    runs = {"naive": success, "aware": aware, "aware_households": hh}
    means = {name: float(np.mean(v)) for name, v in runs.items()}
    ses = {name: float(np.std(v, ddof=1) / np.sqrt(len(v))) if len(v) > 1 else float("nan")
           for name, v in runs.items()}
    stronger = max((name for name in runs if np.isfinite(means[name])), key=means.get)
    return {
        "method": method, "k": int(k), "attacker_success": means[stronger],
        "attacker_success_se": ses[stronger], "stronger_attacker": stronger,
        "attacker_success_naive": means["naive"], "attacker_success_naive_se": ses["naive"],
        "attacker_success_aware": means["aware"], "attacker_success_aware_se": ses["aware"],
        "attacker_success_aware_households": means["aware_households"],
        "attacker_success_aware_households_se": ses["aware_households"],
        "guess_floor": guess_floor(k, ctx["n_known"]),
        "detection_rate": p, "detection_rate_se": float(np.sqrt(p * (1 - p) / R)),
        "agreement_rate": agree,
        "median_displacement_m": float(np.median(dist)),
        "median_displacement_dense_m": float(np.median(dist[:, dense])) if dense.any()
        else float("nan"),
        "median_displacement_sparse_m": float(np.median(dist[:, ~dense])) if (~dense).any()
        else float("nan"),
        "median_r_k_m": float(np.median(ctx["r_all"][:, j])),
        "redraw_share": n_redraws / (R * n),
        "verified_k_median": float(np.median(vk)),
        "verified_k_share_below_k": float(np.mean(vk < k - 1e-9)),
        "verify_redraw_share": n_verify / (R * n),
    }


def choose_k(
    cases: geopandas.GeoDataFrame | geopandas.GeoSeries,
    households: geopandas.GeoDataFrame | geopandas.GeoSeries,
    *,
    utility: UtilityTest | Callable[[np.ndarray], np.ndarray] | None,
    k_grid: Sequence[int] = DEFAULT_K_GRID,
    n_replicates: int = 200,
    attacker: Attacker | None = None,
    max_attacker_success: float = 0.05,
    min_detection_rate: float = 0.8,
    weights: str | np.ndarray | None = None,
    region: BaseGeometry | geopandas.GeoSeries | geopandas.GeoDataFrame | None = None,
    random_seed: int | np.random.Generator | None = None,
    progressbar: bool = True,
    max_redraws: int = 1000,
    urbanicity_k: int = 10,
    preregistered: bool = False,
    verify: bool = False,
    max_verify_redraws: int = 100,
    methods: Sequence[str] = METHODS,
    households_masks: int = 20,
    method_aware: bool = True,
    max_site_records: int | None = DEFAULT_MAX_SITE_RECORDS,
) -> ChooseKResult:
    """Sweep methods and k, score replicate masks for privacy and utility, choose both.

    Parameters
    ----------
    cases : geopandas.GeoDataFrame or geopandas.GeoSeries
        True case locations (n_cases Points) in a projected CRS in metres.
    households : geopandas.GeoDataFrame or geopandas.GeoSeries
        Household points in the same CRS (see :func:`~synthgeo.masking.mask_to_k`).
    utility : UtilityTest or callable or None
        The analysis the release must support, e.g. :class:`~synthgeo.masking.ExcessNearSource`;
        a function ``f(xy_m) -> bool array (n_masks,)`` of masked points of shape
        (n_masks, n_cases, 2) in metres is wrapped in :class:`~synthgeo.masking.FunctionUtility`.
        It must pass on the true locations unless `preregistered`. None: attacker only (no
        utility test; k is chosen on the attacker target alone).
    k_grid : sequence of int, default=(5, 10, 15, 20, 30, 50)
        Values of k (households) to try; distinct, each in 2 .. the household total.
    n_replicates : int, default=200
        Replicate masks per k.
    attacker : Attacker, optional
        Default :class:`~synthgeo.masking.NearestHouseholdAttacker` with known share 0.3.
    max_attacker_success : float, default=0.05
        Target: mean attacker success at most this share.
    min_detection_rate : float, default=0.8
        Target: at least this share of masks give the utility test's answer on the true
        locations (the detection rate when the truth shows the excess).
    weights : str or ndarray of shape (n_points,), optional
        Households per household point (column name or array); default one per point.
    region : shapely Polygon/MultiPolygon or geopandas.GeoSeries, optional
        Study region in the cases' CRS; displacements leaving it are redrawn.
    random_seed : int or numpy.random.Generator, optional
        Seed; recorded in the result. None draws fresh entropy.
    progressbar : bool, default=True
        Show a tqdm progress bar (on stderr).
    max_redraws : int, default=1000
        Rounds of redrawing displacements that leave the region before giving up.
    urbanicity_k : int, default=10
        Cases are split dense/sparse at the median of k/(π r_k²), the household density within
        the distance to the `urbanicity_k`-th nearest household.
    preregistered : bool, default=False
        The test (source, radius) was registered before the data were seen: when the true
        locations show no excess it is kept, and the agreement rate measures how often masks
        show none either.
    verify : bool, default=False
        Verified masks: each replicate's cases are redrawn until their verified k reaches k
        (see :func:`~synthgeo.masking.mask_to_k`).
    max_verify_redraws : int, default=100
        With `verify`: redraw rounds before refusing.
    methods : sequence of {"donut", "areal"}, default=("donut", "areal")
        Masking methods to sweep (see :func:`~synthgeo.masking.mask_to_k`).
    households_masks : int, default=20
        Masks per row on which the method-aware attacker with a uniform prior over all
        households is measured (it scores every household near each point; the known-case
        attackers use all masks).
    method_aware : bool, default=True
        Score the method-aware attacker (:class:`~synthgeo.masking.bayes.MethodAwareAttacker`,
        both priors) beside `attacker`, and base the verdicts on the stronger. False scores
        `attacker` alone, which understates the risk: only to reproduce an earlier sweep.
    max_site_records : int or None, default=10
        Records at one location share one draw; more than this at one site are refused
        (:mod:`synthgeo.masking.sites`).

    Returns
    -------
    ChooseKResult

    Raises
    ------
    TypeError
        Wrong input types.
    InputError
        Bad layers (CRS, NaN), weights or region (see :func:`~synthgeo.masking.mask_to_k`);
        with `verify`, a case that cannot reach its verified k within the bound.
    SpecError
        Bad grid, targets or replicate count, or a utility test that fails on the true
        locations without `preregistered` (it has nothing to preserve).

    Notes
    -----
    Replicate r of every k uses the same uniform draws (U, Θ) and the same set of known cases
    (common random numbers), so differences between k are not Monte Carlo noise and the curves
    are smooth in k; only redraws (region, verification) differ. All replicates of one k are
    drawn as one array and attacked with one KD-tree (batches of at most 2·10⁶ masked points
    bound the memory). Monte Carlo standard errors: sd(success_r)/√R for the attacker and
    √(p(1 − p)/R) for the detection rate. Every row also gives the verified k of the masks
    (median, share below k; :mod:`synthgeo.masking.verify`). The choice rule (smallest k meeting
    targets fixed beforehand) is the spec's (docs/locations.md); fixing targets first keeps the
    choice from being tuned to the result.

    References
    ----------
    Hampton KH, et al. (2010). Mapping health data: improved privacy protection with donut
    method geomasking. American Journal of Epidemiology 172(9), 1062-1069.
    doi:10.1093/aje/kwq248
    """
    prep = _prepare(cases, households, weights, region)
    ks = _check_grid(k_grid, prep["total_weight"])
    if isinstance(n_replicates, bool) or not isinstance(n_replicates, numbers.Integral) \
            or n_replicates < 1:
        raise SpecError(f"`n_replicates` must be a positive integer, got {n_replicates!r}")
    max_att = _check_share(max_attacker_success, "max_attacker_success")
    min_det = _check_share(min_detection_rate, "min_detection_rate")
    methods = _check_methods(methods)
    aware = bool(method_aware)
    attacker = NearestHouseholdAttacker() if attacker is None else attacker
    if not (hasattr(attacker, "success") and hasattr(attacker, "to_dict")):
        raise TypeError(f"`attacker` must have `success` and `to_dict` methods (see "
                        f"synthgeo.masking.Attacker), got {type(attacker).__name__}")
    utility = None if utility is None else _as_utility(utility)
    ctx = _context(prep, ks, int(n_replicates), attacker, utility, preregistered,
                   resolve_seed(random_seed), urbanicity_k, verify=verify,
                   max_redraws=max_redraws, max_verify_redraws=max_verify_redraws)
    first, inverse, counts = site_index(ctx["xy"])
    ctx.update(first=first, inverse=inverse, sxy=ctx["xy"][first], sids=ctx["ids"][first],
               own=ctx["own"][first], households_xy=prep["households_xy"],
               weights=prep["weights"], extent=_extent(prep), aware=aware,
               known_share=getattr(attacker, "known_share", 0.3),
               households_masks=int(households_masks), largest_site=check_site_sizes(
                   counts, max_site_records, ctx["ids"], first))
    ctx["n_known"] = MethodAwareAttacker(known_share=ctx["known_share"]).n_known(ctx["n"])
    with tqdm(total=len(methods) * len(ks) * len(ctx["starts"]), desc="choose-k",
              unit="batch", disable=not progressbar, leave=False) as bar:
        rows = [_sweep_k(ctx, j, k, bar, method) for method in methods
                for j, k in enumerate(ks)]
    for row in rows:
        logger.info("%s k = %d: attacker %.3f (%s), detection %.3f", row["method"], row["k"],
                    row["attacker_success"], row["stronger_attacker"], row["detection_rate"])
    return _result(pd.DataFrame(rows), ctx, max_att, min_det)


def _context(prep, ks, n_replicates, attacker, utility, preregistered, seed, urbanicity_k, *,
             verify, max_redraws, max_verify_redraws) -> dict[str, Any]:
    """Everything the per-k sweep needs, computed once."""
    xy, hxy, w = prep["xy"], prep["households_xy"], prep["weights"]
    n = len(xy)
    truth = _utility_on_truth(utility, xy, preregistered)
    index = HouseholdIndex(hxy, w)
    dense, urban = _urbanicity(xy, hxy, w, prep["total_weight"], urbanicity_k)
    batch = max(1, min(n_replicates, _POINTS_PER_BATCH // n))
    return {"xy": xy, "n": n, "R": n_replicates, "seed": seed, "batch": batch,
            "starts": list(range(0, n_replicates, batch)), "ids": prep["ids"],
            "region": prep["region"], "max_redraws": max_redraws, "verify": bool(verify),
            "max_verify_redraws": max_verify_redraws, "index": index, "own": index.own(xy),
            "r_all": _kth_distance(xy, hxy, ks, w, tree=index.tree), "attacker": attacker,
            "utility": utility, "truth": truth,
            "truth_passes": bool(truth.get("passes_on_true_locations", False)),
            "dense": dense, "urban": urban}


def _result(table: pd.DataFrame, ctx: dict[str, Any], max_att: float,
            min_det: float) -> ChooseKResult:
    """Targets, the choice of method and k, the finding and the notes."""
    attacker_only = ctx["utility"] is None
    # the stronger attacker's success, and never below a random guess (max(1/k, 1/n_known))
    risk = np.maximum(table["attacker_success"], table["guess_floor"])
    table["meets_attacker_target"] = risk <= max_att + _TOL
    table["meets_detection_target"] = (True if attacker_only else
                                       table["agreement_rate"] >= min_det - _TOL)
    table["meets_both"] = table["meets_attacker_target"] & table["meets_detection_target"]
    method, chosen = _choose(table)
    attacker, n = ctx["attacker"], ctx["n"]
    att = attacker.to_dict()
    sub = table[table["method"] == (method or table["method"].iloc[0])]
    extra = _notes(sub, chosen, max_att, min_det) if not attacker_only else []
    if isinstance(attacker, NearestHouseholdAttacker):
        att.update(n_known=attacker.n_known(n), baseline=attacker.baseline(n))
        if att["baseline"] > max_att:
            extra.insert(0, f"the attacker target {max_att} is below the success of a random "
                            f"guess among the {att['n_known']} known households "
                            f"(1/{att['n_known']} = {att['baseline']:.3f}): no mask can meet "
                            "it with this many cases and this known share")
    if ctx["aware"]:
        att["method_aware"] = {**MethodAwareAttacker(known_share=ctx["known_share"]).to_dict(),
                               "priors": "known cases (all masks); households (first "
                                         f"{ctx['households_masks']} masks per row)",
                               "reference": "docs/locations.md, 'The method-aware attacker'"}
        att["verdicts_use"] = "the stronger of the naive and method-aware attackers, never " \
                              "below the random-guess floor max(1/k, 1/n_known)"
    if ctx["largest_site"] > 1:
        extra.append(f"co-located records: up to {ctx['largest_site']} at one location, masked "
                     "with one shared draw per location")
    if "note" in ctx["truth"]:
        extra.insert(0, ctx["truth"]["note"])
    measure = (None if attacker_only else "detection" if ctx["truth_passes"]
               else "no-excess agreement")
    text = _finding(table, method, chosen, max_att, min_det, measure)
    if attacker_only:
        text = "Attacker only (no utility test): " + text
    utility = {"attacker_only": True} if attacker_only else {**ctx["utility"].to_dict(),
                                                             **ctx["truth"]}
    return ChooseKResult(
        table=table, chosen_k=chosen, chosen_method=method, finding=text,
        alternatives=() if chosen is not None else ALTERNATIVES, notes=tuple(extra),
        max_attacker_success=max_att, min_detection_rate=min_det, n_cases=n,
        n_replicates=ctx["R"], random_seed=ctx["seed"], attacker=att, utility=utility,
        urbanicity=ctx["urban"], verified=ctx["verify"],
    )


def _choose(table: pd.DataFrame) -> tuple[str | None, int | None]:
    """Choose the method and k.

    Per method the smallest k meeting both targets; across methods the one keeping the most
    utility (agreement rate), then the smaller k, then the method listed first.
    """
    best = None
    for order, (method, sub) in enumerate(table.groupby("method", sort=False)):
        ok = sub[sub["meets_both"]]
        if not len(ok):
            continue
        row = ok.loc[ok["k"].idxmin()]
        util = row["agreement_rate"] if np.isfinite(row["agreement_rate"]) else 1.0
        key = (-util, int(row["k"]), order)
        if best is None or key < best[0]:
            best = (key, method, int(row["k"]))
    return (None, None) if best is None else (best[1], best[2])


def _finding(table: pd.DataFrame, method: str | None, chosen: int | None, max_att: float,
             min_det: float, measure: str | None) -> str:
    """Return the conclusion in words, over methods."""
    if method is not None:
        sub = table[table["method"] == method]
        row = sub.set_index("k").loc[chosen]
        others = [m for m in table["method"].unique() if m != method]
        return (f"{method} mask: " + finding(sub, chosen, max_att, min_det, measure=measure)
                + f"; against the stronger attacker ({row.stronger_attacker}), random-guess "
                f"floor {row.guess_floor:.3f}"
                + (f" (also swept: {', '.join(others)})" if others else ""))
    whys = []
    for m, sub in table.groupby("method", sort=False):
        floor = float(sub["guess_floor"].min())
        if floor > max_att + _TOL:
            whys.append(f"{m}: the random-guess floor max(1/k, 1/n_known) is at least "
                        f"{floor:.3f}, above the target")
            continue
        text = finding(sub, None, max_att, min_det, measure=measure)
        whys.append(f"{m}: " + text.split(": ", 1)[1].split(". Do not release")[0])
    col = measure is not None
    targets = f"attacker success <= {max_att:.0%}" + (
        f" and {measure} >= {min_det:.0%}" if col else "")
    return (f"No method and k on the grid meets {'both targets' if col else 'the attacker target'}"
            f" ({targets}, against the stronger of the naive and method-aware attackers): "
            + "; ".join(whys) + f". Do not release masked points; release {ALTERNATIVES[0]}, "
            f"or {ALTERNATIVES[1]}.")
