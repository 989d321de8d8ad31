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
from dataclasses import dataclass, field
from typing import Any

import geopandas
import numpy as np
import pandas as pd
from shapely.geometry.base import BaseGeometry
from tqdm import tqdm

from synthgeo._errors import SpecError
from synthgeo.masking._validate import check_k, resolve_seed
from synthgeo.masking.attacker import Attacker, NearestHouseholdAttacker
from synthgeo.masking.donut import INNER_RATIO, _draw_donut, _kth_distance, _prepare
from synthgeo.masking.detection import FunctionUtility, UtilityTest

__all__ = ["DEFAULT_K_GRID", "ALTERNATIVES", "ChooseKResult", "choose_k", "smallest_k_meeting"]

logger = logging.getLogger(__name__)

#: The spec's k grid.
DEFAULT_K_GRID: tuple[int, ...] = (5, 10, 15, 20, 30, 50)
#: What to release when no k meets both targets.
ALTERNATIVES: tuple[str, ...] = (
    "aggregated counts (cases per small area) instead of points",
    "the true points for approved analysts in a secure enclave",
)
_TOL = 1e-12
_POINTS_PER_BATCH = 2_000_000  # masked points held at once (n_masks × n_cases)


@dataclass(frozen=True, kw_only=True)
class ChooseKResult:
    """Outcome of :func:`choose_k`.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per k: ``k``, ``attacker_success`` (mean over masks) and its Monte Carlo
        standard error ``attacker_success_se``, ``detection_rate`` (share of masks on which the
        utility test passes) and ``detection_rate_se``, ``median_displacement_m`` and its
        ``_dense_m``/``_sparse_m`` parts, ``median_r_k_m``, ``redraw_share`` (displacements
        redrawn because they left the region, per draw), ``meets_attacker_target``,
        ``meets_detection_target``, ``meets_both``.
    chosen_k : int or None
        Smallest k meeting both targets; None when no k on the grid does.
    finding : str
        The conclusion in words (names the alternatives when no k works).
    alternatives : tuple of str
        The two alternatives to point release when no k works; empty otherwise.
    notes : tuple of str
        Caveats, e.g. an estimate within two Monte Carlo standard errors of its target.
    max_attacker_success, min_detection_rate : float
        The targets, set before the sweep.
    n_cases, n_replicates, random_seed : int
        Cases, replicate masks per k and the seed (common random numbers across k).
    attacker, utility, urbanicity : dict
        The attacker model and its parameters (plus ``n_known``, ``baseline``); the utility
        test, its parameters and its result on the true locations; the dense/sparse split.
    """

    table: pd.DataFrame
    chosen_k: int | None
    finding: str
    alternatives: tuple[str, ...]
    notes: tuple[str, ...]
    max_attacker_success: float
    min_detection_rate: float
    n_cases: int
    n_replicates: int
    random_seed: int
    attacker: dict[str, Any] = field(repr=False)
    utility: dict[str, Any] = field(repr=False)
    urbanicity: dict[str, Any] = field(repr=False)

    def to_dataframe(self) -> pd.DataFrame:
        """Return the sweep table (a copy), one row per k."""
        return self.table.copy()

    def to_record(self) -> dict[str, Any]:
        """Everything but the inputs' provenance, as JSON-ready values."""
        return {
            "n_cases": self.n_cases, "n_replicates": self.n_replicates,
            "random_seed": self.random_seed,
            "mask": {"method": "donut", "annulus": f"[{INNER_RATIO}·r_k, r_k], uniform in area",
                     "r_k": "distance to the k-th nearest household (own household counted "
                            "when in the layer; population-weighted when weights are given)",
                     "region": "displacements leaving the study region are redrawn",
                     "reference": "Hampton et al. (2010), doi:10.1093/aje/kwq248"},
            "attacker": self.attacker, "utility": self.utility,
            "targets": {"max_attacker_success": self.max_attacker_success,
                        "min_detection_rate": self.min_detection_rate,
                        "rule": "smallest k with attacker_success <= max and detection_rate "
                                ">= min, targets set before the sweep"},
            "urbanicity": self.urbanicity,
            "sweep": _records(self.table),
            "chosen_k": self.chosen_k, "finding": self.finding,
            "alternatives": list(self.alternatives), "notes": list(self.notes),
        }


def _records(table: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for row in table.to_dict("records"):
        out.append({k: (None if isinstance(v, float) and not np.isfinite(v) else
                        v.item() if isinstance(v, np.generic) else v) for k, v in row.items()})
    return out


def smallest_k_meeting(table: pd.DataFrame, *, max_attacker_success: float,
                       min_detection_rate: float) -> int | None:
    """Smallest k whose attacker success and detection rate both meet their targets.

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``k``, ``attacker_success``, ``detection_rate`` (shares in [0, 1]).
    max_attacker_success : float
        Attacker success must be <= this.
    min_detection_rate : float
        Detection rate must be >= this.

    Returns
    -------
    int or None
        The smallest such k, or None when no row meets both.
    """
    ok = ((table["attacker_success"] <= max_attacker_success + _TOL)
          & (table["detection_rate"] >= min_detection_rate - _TOL))
    return int(table.loc[ok, "k"].min()) if ok.any() else None


def _check_share(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value <= 1:
        raise SpecError(f"`{name}` must be a share in [0, 1], got {value!r}")
    return float(value)


def _check_grid(k_grid: Any, total: float) -> np.ndarray:
    if isinstance(k_grid, str | bytes) or not isinstance(k_grid, Sequence | np.ndarray):
        raise TypeError(f"`k_grid` must be a sequence of integers, got {k_grid!r}")
    ks = [check_k(k, total, "k_grid") for k in k_grid]
    if not ks:
        raise SpecError("`k_grid` is empty; give at least one k, e.g. (5, 10, 20, 50)")
    if len(set(ks)) != len(ks):
        raise SpecError(f"`k_grid` = {list(k_grid)!r} repeats a value")
    return np.array(sorted(ks))


def _as_utility(utility: Any) -> UtilityTest:
    if hasattr(utility, "passes") and hasattr(utility, "to_dict"):
        return utility
    if callable(utility):
        return FunctionUtility(func=utility, name=getattr(utility, "__name__", "user function"))
    raise TypeError(f"`utility` must be a UtilityTest (e.g. ExcessNearSource) or a function of "
                    f"masked points, got {type(utility).__name__}")


def _utility_on_truth(utility: UtilityTest, xy: np.ndarray) -> dict[str, Any]:
    ok = bool(np.asarray(utility.passes(xy[None]))[0])
    out: dict[str, Any] = {"passes_on_true_locations": ok}
    if hasattr(utility, "observed") and hasattr(utility, "expected"):
        out["observed_on_true_locations"] = int(utility.observed(xy[None])[0])
        out["expected"] = float(utility.expected(len(xy)))
    if not ok:
        detail = (f" (observed {out['observed_on_true_locations']} vs {out['expected']:.2f} "
                  "expected)" if "expected" in out else "")
        raise SpecError(f"the utility test does not pass on the true locations{detail}: a mask "
                        "cannot preserve a finding the data do not show, so the detection rate "
                        "would be meaningless; test the analysis the release must support "
                        "(another source, radius or utility function)")
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


def _finding(table: pd.DataFrame, chosen: int | None, max_att: float, min_det: float) -> str:
    targets = f"attacker success <= {max_att:.0%} and detection >= {min_det:.0%}"
    if chosen is not None:
        row = table.set_index("k").loc[chosen]
        return (f"k = {chosen} is the smallest k on the grid with {targets}: attacker success "
                f"{row.attacker_success:.3f}, detection {row.detection_rate:.3f}, median "
                f"displacement {row.median_displacement_m:.0f} m")
    att = table[table["meets_attacker_target"]]
    if len(att):
        first = att.iloc[0]
        why = (f"the attacker target is first met at k = {int(first.k)}, where detection is "
               f"only {first.detection_rate:.3f}")
    else:
        best = table.loc[table["attacker_success"].idxmin()]
        why = (f"attacker success never falls to {max_att:.0%} on the grid (lowest "
               f"{best.attacker_success:.3f}, at k = {int(best.k)})")
        det = table[table["meets_detection_target"]]
        if len(det):
            why += (f"; detection stays >= {min_det:.0%} only up to k = {int(det.k.max())}")
    return (f"No k on the grid meets both targets ({targets}): {why}. Do not release masked "
            f"points; release {ALTERNATIVES[0]}, or {ALTERNATIVES[1]}.")


def _notes(table: pd.DataFrame, chosen: int | None, max_att: float, min_det: float) -> list[str]:
    notes = []
    for _, row in table.iterrows():
        if int(row.k) != chosen:
            continue
        for est, se, target, what in (
            (row.attacker_success, row.attacker_success_se, max_att, "attacker success"),
            (row.detection_rate, row.detection_rate_se, min_det, "detection rate"),
        ):
            if abs(est - target) < 2 * se:
                notes.append(f"at k = {chosen} the {what} {est:.3f} is within two Monte Carlo "
                             f"standard errors ({se:.3f}) of its target {target}: rerun with "
                             "more replicates before relying on the choice")
    return notes


def choose_k(
    cases: geopandas.GeoDataFrame | geopandas.GeoSeries,
    households: geopandas.GeoDataFrame | geopandas.GeoSeries,
    *,
    utility: UtilityTest | Callable[[np.ndarray], np.ndarray],
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
) -> ChooseKResult:
    """Sweep k, score replicate donut masks for privacy and utility, and choose k.

    Parameters
    ----------
    cases : geopandas.GeoDataFrame or geopandas.GeoSeries
        True case locations (n_cases Points) in a projected CRS in metres.
    households : geopandas.GeoDataFrame or geopandas.GeoSeries
        Household points in the same CRS (see :func:`~synthgeo.masking.mask_to_k`).
    utility : UtilityTest or callable
        The analysis the release must support, e.g. :class:`~synthgeo.masking.ExcessNearSource`;
        a function ``f(xy_m) -> bool array (n_masks,)`` of masked points of shape
        (n_masks, n_cases, 2) in metres is wrapped in :class:`~synthgeo.masking.FunctionUtility`.
        It must pass on the true locations.
    k_grid : sequence of int, default=(5, 10, 15, 20, 30, 50)
        Values of k (households) to try; distinct, each <= the household total.
    n_replicates : int, default=200
        Replicate masks per k.
    attacker : Attacker, optional
        Default :class:`~synthgeo.masking.NearestHouseholdAttacker` with known share 0.3.
    max_attacker_success : float, default=0.05
        Target: mean attacker success at most this share.
    min_detection_rate : float, default=0.8
        Target: the utility test passes on at least this share of masks.
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

    Returns
    -------
    ChooseKResult

    Raises
    ------
    TypeError
        Wrong input types.
    InputError
        Bad layers (CRS, NaN), weights or region (see :func:`~synthgeo.masking.mask_to_k`).
    SpecError
        Bad grid, targets or replicate count, or a utility test that fails on the true
        locations (it has nothing to preserve).

    Notes
    -----
    Replicate r of every k uses the same uniform draws (U, Θ) and the same set of known cases
    (common random numbers), so differences between k are not Monte Carlo noise and the curves
    are smooth in k; only redraws outside the region differ. All replicates of one k are drawn
    as one array and attacked with one KD-tree (batches of at most 2·10⁶ masked points bound the
    memory). Monte Carlo standard errors: sd(success_r)/√R for the attacker and
    √(p(1 − p)/R) for the detection rate. The choice rule (smallest k meeting targets fixed
    beforehand) is the one in docs/locations.md; fixing targets first keeps the choice from being
    tuned to the result.

    References
    ----------
    Hampton KH, et al. (2010). Mapping health data: improved privacy protection with donut
    method geomasking. American Journal of Epidemiology 172(9), 1062-1069.
    doi:10.1093/aje/kwq248
    """
    prep = _prepare(cases, households, weights, region)
    total = prep["total_weight"]
    ks = _check_grid(k_grid, total)
    if isinstance(n_replicates, bool) or not isinstance(n_replicates, numbers.Integral) \
            or n_replicates < 1:
        raise SpecError(f"`n_replicates` must be a positive integer, got {n_replicates!r}")
    n_replicates = int(n_replicates)
    max_att = _check_share(max_attacker_success, "max_attacker_success")
    min_det = _check_share(min_detection_rate, "min_detection_rate")
    attacker = NearestHouseholdAttacker() if attacker is None else attacker
    if not (hasattr(attacker, "success") and hasattr(attacker, "to_dict")):
        raise TypeError(f"`attacker` must have `success` and `to_dict` methods (see "
                        f"synthgeo.masking.Attacker), got {type(attacker).__name__}")
    utility = _as_utility(utility)
    seed = resolve_seed(random_seed)
    xy, hxy, w, geom = prep["xy"], prep["households_xy"], prep["weights"], prep["region"]
    n = len(xy)

    truth = _utility_on_truth(utility, xy)
    dense, urban = _urbanicity(xy, hxy, w, total, urbanicity_k)
    r_all = _kth_distance(xy, hxy, ks, w)  # (n_cases, n_k)
    batch = max(1, min(n_replicates, _POINTS_PER_BATCH // n))
    starts = list(range(0, n_replicates, batch))
    rows = []
    with tqdm(total=len(ks) * len(starts), desc="choose-k", unit="batch",
              disable=not progressbar, leave=False) as bar:
        for j, k in enumerate(ks):
            success = np.empty(n_replicates)
            detected = np.empty(n_replicates, dtype=bool)
            dist = np.empty((n_replicates, n))
            n_redraws = 0
            for b, start in enumerate(starts):
                size = min(batch, n_replicates - start)
                # the same streams for every k: common random numbers
                rng = np.random.default_rng([seed, 0, b])
                masked, d, nr = _draw_donut(xy, r_all[:, j], size, rng, geom, max_redraws,
                                            prep["ids"])
                success[start:start + size] = attacker.success(
                    xy, masked, random_seed=np.random.default_rng([seed, 1, b]))
                detected[start:start + size] = np.asarray(utility.passes(masked), dtype=bool)
                dist[start:start + size] = d
                n_redraws += nr
                bar.update(1)
            p = float(detected.mean())
            rows.append({
                "k": int(k),
                "attacker_success": float(success.mean()),
                "attacker_success_se": float(success.std(ddof=1) / np.sqrt(n_replicates))
                if n_replicates > 1 else float("nan"),
                "detection_rate": p,
                "detection_rate_se": float(np.sqrt(p * (1 - p) / n_replicates)),
                "median_displacement_m": float(np.median(dist)),
                "median_displacement_dense_m": float(np.median(dist[:, dense]))
                if dense.any() else float("nan"),
                "median_displacement_sparse_m": float(np.median(dist[:, ~dense]))
                if (~dense).any() else float("nan"),
                "median_r_k_m": float(np.median(r_all[:, j])),
                "redraw_share": n_redraws / (n_replicates * n),
            })
            logger.info("k = %d: attacker %.3f, detection %.3f", k, rows[-1]["attacker_success"],
                        p)
    table = pd.DataFrame(rows)
    table["meets_attacker_target"] = table["attacker_success"] <= max_att + _TOL
    table["meets_detection_target"] = table["detection_rate"] >= min_det - _TOL
    table["meets_both"] = table["meets_attacker_target"] & table["meets_detection_target"]
    chosen = smallest_k_meeting(table, max_attacker_success=max_att, min_detection_rate=min_det)
    att = attacker.to_dict()
    notes = _notes(table, chosen, max_att, min_det)
    if isinstance(attacker, NearestHouseholdAttacker):
        att.update(n_known=attacker.n_known(n), baseline=attacker.baseline(n))
        if att["baseline"] > max_att:
            notes.insert(0, f"the attacker target {max_att} is below the success of a random "
                            f"guess among the {att['n_known']} known households "
                            f"(1/{att['n_known']} = {att['baseline']:.3f}): no mask can be "
                            "expected to meet it with this many cases and this known share")
    return ChooseKResult(
        table=table, chosen_k=chosen, finding=_finding(table, chosen, max_att, min_det),
        alternatives=() if chosen is not None else ALTERNATIVES,
        notes=tuple(notes),
        max_attacker_success=max_att, min_detection_rate=min_det, n_cases=n,
        n_replicates=n_replicates, random_seed=seed, attacker=att,
        utility={**utility.to_dict(), **truth}, urbanicity=urban,
    )
