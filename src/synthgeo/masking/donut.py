"""Donut geomasking to k households (Hampton et al. 2010), vectorised over replicate masks.

Each case is moved in a uniform random direction by a distance drawn uniformly *in area* from the
annulus [0.5·r_k, r_k], where r_k is the distance from the true location to its k-th nearest
household (population-weighted when the household layer carries counts per point). With a study
region, a displaced point that falls outside it is redrawn. docs/locations.md, "Donut geomasking
and choosing k".
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import geopandas
import numpy as np
import pandas as pd
import pyproj
import shapely
from scipy.spatial import cKDTree
from shapely.geometry.base import BaseGeometry

from synthgeo._errors import InputError, SpecError
from synthgeo._repr import confidential_repr
from synthgeo._warn import warn
from synthgeo.masking._validate import (
    check_cases_in_region,
    check_k,
    check_region,
    check_weights,
    inside,
    layer_xy,
    record_ids,
    resolve_seed,
    same_crs,
)
from synthgeo.masking.areal import PAD, draw_in_areas, household_partition
from synthgeo.masking.sites import DEFAULT_MAX_SITE_RECORDS, check_site_sizes, site_index
from synthgeo.masking.verify import HouseholdIndex, redraw_until_verified

__all__ = ["INNER_RATIO", "DonutMask", "kth_household_distance", "mask_to_k"]

logger = logging.getLogger(__name__)

#: Inner radius of the donut as a fraction of r_k (the spec's 0.5·r_k).
INNER_RATIO = 0.5
_N_SHOW = 5


@dataclass(frozen=True, kw_only=True)
class DonutMask:
    """One donut mask of a case layer.

    Attributes
    ----------
    masked : geopandas.GeoDataFrame
        One row per case, in case order: the case id column and the masked Point, in the cases'
        CRS (metres). This is the publishable layer.
    r_k_m : ndarray of shape (n_cases,)
        Distance in metres from each true location to its k-th nearest household (confidential;
        NaN for the areal mask, which does not use it).
    displacement_m : ndarray of shape (n_cases,)
        Distance in metres between each true and masked location (confidential).
    k : int
        The anonymity threshold: households within r_k of each case.
    random_seed : int
        The seed the displacements were drawn with.
    n_redraws : int
        Displacements redrawn because they left the study region.
    id_column : str
        Name of the id column of `masked`.
    n_reused : int, default=0
        Cases whose masked point was carried over from an earlier release (see
        :func:`synthgeo.masking.reuse_previous_mask`).
    verified_k : ndarray of shape (n_cases,) or None
        Households at least as close to each masked point as its true location, own counted
        once (see :func:`synthgeo.masking.verify.verified_k`; confidential); None when not
        measured (a carried-over mask).
    verification : dict or None
        For a verified mask (``verify=True``): redraws, rounds, the bound, cases whose annulus
        was widened and the largest widening (see :class:`synthgeo.masking.verify.Verification`);
        for the areal mask the partition (areas, fewest households in an area); None when not
        verified.
    method : {"donut", "areal"}, default="donut"
        The masking method (see :func:`mask_to_k`).
    largest_site : int, default=1
        Most records at one true location (they share one published point).
    """

    masked: geopandas.GeoDataFrame
    r_k_m: np.ndarray = field(repr=False)
    displacement_m: np.ndarray = field(repr=False)
    k: int
    random_seed: int
    n_redraws: int
    id_column: str
    n_reused: int = 0
    verified_k: np.ndarray | None = field(default=None, repr=False)
    verification: dict[str, Any] | None = None
    method: str = "donut"
    largest_site: int = 1

    def __repr__(self) -> str:
        """Show counts and settings only (never a location, a displacement or the seed)."""
        return confidential_repr(self, n_records=int(len(self.masked)), k=self.k,
                                 method=self.method, n_redraws=self.n_redraws,
                                 n_reused=self.n_reused)

    @property
    def verified(self) -> bool:
        """Whether every case was redrawn until its verified k reached k."""
        return self.verification is not None

    def to_dataframe(self) -> pd.DataFrame:
        """Per-case r_k and displacement in metres (confidential: for the board only).

        Returns
        -------
        pandas.DataFrame
            Columns: the id column, ``r_k_m``, ``displacement_m`` (the verified k is in
        :attr:`verified_k`).
        """
        return pd.DataFrame({self.id_column: self.masked[self.id_column].to_numpy(),
                             "r_k_m": self.r_k_m, "displacement_m": self.displacement_m})


def _kth_distance(xy: np.ndarray, households_xy: np.ndarray, ks: np.ndarray,
                  weights: np.ndarray | None, tree: cKDTree | None = None) -> np.ndarray:
    """Distances (n_cases, len(ks)) in metres to the k-th nearest household, for each k in `ks`.

    Unit weights: the k-th nearest household point. Weights w_j: the smallest distance d with
    Σ_{j: |x - h_j| <= d} w_j >= k (points at one distance enter together).
    """
    tree = cKDTree(households_xy) if tree is None else tree
    m = len(households_xy)
    k_max = int(ks.max())
    if weights is None:
        dist, _ = tree.query(xy, k=list(range(1, k_max + 1)), workers=-1)
        return dist[:, ks - 1]
    n_query = min(m, max(k_max, 16))
    while True:
        dist, idx = tree.query(xy, k=list(range(1, n_query + 1)), workers=-1)
        cum = np.cumsum(weights[idx], axis=1)
        if n_query == m or (cum[:, -1] >= k_max - 1e-9).all():
            break
        n_query = min(m, 4 * n_query)
    out = np.empty((len(xy), len(ks)))
    for j, k in enumerate(ks):
        reached = cum >= k - 1e-9  # tolerance for fractional counts summed in floating point
        out[:, j] = dist[np.arange(len(xy)), reached.argmax(axis=1)]
    return out


def _draw_donut(xy: np.ndarray, r_k: np.ndarray, n_masks: int, rng: np.random.Generator,
                region: BaseGeometry | None = None, max_redraws: int = 1000,
                ids: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """Draw `n_masks` donut masks of all cases at once.

    Returns masked points (n_masks, n_cases, 2), displacements (n_masks, n_cases) in metres and
    the number of redrawn displacements. The first draws are ``u`` then ``theta``, each of shape
    (n_masks, n_cases), so that two calls with equally seeded generators and different `r_k`
    share their random numbers (common random numbers across k).
    """
    n = len(xy)
    u = rng.random((n_masks, n))
    theta = rng.random((n_masks, n))
    # uniform in area on the annulus [a·r, r]: P(D <= d) = (d² - a²r²) / (r² - a²r²)
    dist = r_k * np.sqrt(INNER_RATIO**2 + u * (1.0 - INNER_RATIO**2))
    angle = 2.0 * np.pi * theta
    masked = xy + np.stack([dist * np.cos(angle), dist * np.sin(angle)], axis=-1)
    n_redraws = 0
    if region is None:
        return masked, dist, n_redraws
    flat_xy = masked.reshape(-1, 2)
    flat_d = dist.reshape(-1)
    todo = np.flatnonzero(~inside(region, flat_xy))
    rounds = 0
    while todo.size:
        if rounds == max_redraws:
            case = np.unique(todo % n)
            shown = (ids[case] if ids is not None else case)[:_N_SHOW].tolist()
            raise InputError(
                f"after {max_redraws} redraws the displacement of case(s) {shown} still leaves "
                "the study region: the annulus around them lies almost entirely outside it; "
                "check the region polygon and its CRS, or lower k"
            )
        rounds += 1
        n_redraws += todo.size
        case = todo % n
        d = r_k[case] * np.sqrt(INNER_RATIO**2 + rng.random(todo.size) * (1.0 - INNER_RATIO**2))
        a = 2.0 * np.pi * rng.random(todo.size)
        flat_xy[todo] = xy[case] + np.column_stack([d * np.cos(a), d * np.sin(a)])
        flat_d[todo] = d
        todo = todo[~inside(region, flat_xy[todo])]
    return masked, dist, n_redraws


def _prepare(cases: Any, households: Any, weights: Any, region: Any) -> dict[str, Any]:
    """Validate the layers once; return coordinates (metres), weights, region, ids, CRS."""
    xy, crs = layer_xy(cases, "cases")
    hxy, hcrs = layer_xy(households, "households")
    same_crs(crs, hcrs, "cases", "households")
    w = check_weights(weights, households, len(hxy))
    geom = check_region(region, crs)
    ids = record_ids(cases)
    check_cases_in_region(geom, xy, ids)
    total = float(w.sum()) if w is not None else float(len(hxy))
    return {"xy": xy, "households_xy": hxy, "weights": w, "region": geom, "ids": ids,
            "crs": crs, "total_weight": total}


def kth_household_distance(
    cases: geopandas.GeoDataFrame | geopandas.GeoSeries,
    households: geopandas.GeoDataFrame | geopandas.GeoSeries,
    k: int,
    *,
    weights: str | np.ndarray | None = None,
) -> np.ndarray:
    """Distance r_k from each case to its k-th nearest household, in metres.

    Parameters
    ----------
    cases : geopandas.GeoDataFrame or geopandas.GeoSeries
        Case points (n_cases) in a projected CRS in metres.
    households : geopandas.GeoDataFrame or geopandas.GeoSeries
        Household points (n_points) in the same CRS. A case's own household counts when it is in
        the layer (it is then at distance 0).
    k : int
        Number of households, 1 <= k <= the household total.
    weights : str or ndarray of shape (n_points,), optional
        Households (or people) per point, e.g. for group quarters: a column of `households` or
        an array of non-negative counts (fractions allowed). Default: one per point.

    Returns
    -------
    ndarray of shape (n_cases,)
        r_k in metres: the smallest d such that the households within d (inclusive) of the case
        number at least k.

    Raises
    ------
    TypeError
        If a layer is not a GeoDataFrame/GeoSeries or `k` is not an integer.
    InputError
        Missing, geographic or differing CRSs; NaN coordinates; bad weights.
    SpecError
        If `k` < 1 or `k` exceeds the household total.

    Notes
    -----
    Uses one SciPy ``cKDTree`` query of the nearest households (all cores).
    """
    prep = _prepare(cases, households, weights, None)
    k = check_k(k, prep["total_weight"])
    return _kth_distance(prep["xy"], prep["households_xy"], np.array([k]), prep["weights"])[:, 0]


def mask_to_k(
    cases: geopandas.GeoDataFrame | geopandas.GeoSeries,
    households: geopandas.GeoDataFrame | geopandas.GeoSeries,
    *,
    k: int,
    weights: str | np.ndarray | None = None,
    region: BaseGeometry | geopandas.GeoSeries | geopandas.GeoDataFrame | None = None,
    random_seed: int | np.random.Generator | None = None,
    max_redraws: int = 1000,
    verify: bool = False,
    max_verify_redraws: int = 100,
    method: str = "donut",
    max_site_records: int | None = DEFAULT_MAX_SITE_RECORDS,
) -> DonutMask:
    """Mask case locations to k households: donut (default) or areal.

    Parameters
    ----------
    cases : geopandas.GeoDataFrame or geopandas.GeoSeries
        True case locations (n_cases Points) in a projected CRS in metres, e.g. from
        :func:`synthgeo.io.points.load_points` (its ``attrs["id_column"]`` names the id column).
    households : geopandas.GeoDataFrame or geopandas.GeoSeries
        Household (address) points in the same CRS; a case's own household counts when in it.
    k : int
        Households each case is hidden among: 2 <= k <= the household total.
    weights : str or ndarray of shape (n_points,), optional
        Households (or people) per point, for population counts such as group quarters: a
        column name of `households` or an array. Default: one household per point.
    region : shapely Polygon or MultiPolygon, or geopandas.GeoSeries, optional
        Study region in the cases' CRS. Every case must lie in it; displacements that leave it
        are redrawn.
    random_seed : int or numpy.random.Generator, optional
        Seed of the displacements; recorded in the result. None draws fresh entropy. The seed
        is the key of the mask (with it the displacements can be recomputed and undone): keep
        it confidential and make it long and random.
    max_redraws : int, default=1000
        Rounds of redrawing before giving up on a case whose annulus lies outside the region.
    verify : bool, default=False
        Redraw each case until its verified k — households at least as close to the masked
        point as the true location, own counted once — reaches k, so that the k a board
        approves is the k an attacker with the household layer faces; a case failing 10 times
        in a row has its annulus widened ×1.25, and again every 10 failures (see
        :mod:`synthgeo.masking.verify`). The verified k is measured either way.
    max_verify_redraws : int, default=100
        Rounds of verification redraws before refusing.
    method : {"donut", "areal"}, default="donut"
        ``"areal"``: publish each case at a point uniform in its area of a partition of the
        household layer into rectangles of at least k households each
        (:mod:`synthgeo.masking.areal`); a method-aware attacker then succeeds with probability
        at most 1/k under a uniform prior over households. Always verified by construction
        (`verify` and the redraw bound do not apply); ``verified_k`` is then the households in
        the case's area.
    max_site_records : int or None, default=10
        Records at one exact location share one mask draw (so that averaging their masks
        reveals nothing); more than this many at one site are refused, since their stack of
        identical points can name an institution. None accepts any stack
        (:mod:`synthgeo.masking.sites`).

    Returns
    -------
    DonutMask
        The masked layer and, for the board, r_k, the displacement and the verified k per
        case.

    Raises
    ------
    TypeError
        Wrong input types.
    InputError
        Missing, geographic or differing CRSs; NaN coordinates; bad weights; a case outside the
        region; an annulus that stays outside the region after `max_redraws` rounds; with
        `verify`, a case whose verified k stays below k after `max_verify_redraws` rounds.
    SpecError
        If `k` < 2 or exceeds the household total, the seed is negative, `method` unknown or
        `max_site_records` neither an integer >= 1 nor None.
    InputError
        A site holding more than `max_site_records` records; for ``"areal"``, a case outside
        the padded extent of the household layer (and region).

    Warns
    -----
    UserWarning
        When some cases have k households at their exact location (r_k = 0): they are not moved.

    Notes
    -----
    Case i moves by D_i in direction Θ_i, Θ_i ~ U(0, 2π) and, with a = 0.5,
    D_i = r_k,i · sqrt(a² + U (1 − a²)), U ~ U(0, 1), so that D_i is uniform in area on the
    annulus [a·r_k,i, r_k,i]: P(D_i <= d) = (d² − a² r²) / (r² − a² r²). Masking to the k-th
    nearest household (rather than a fixed radius) adapts the displacement to population
    density. Mask once and reuse the layer: independent re-masking of the same cases lets an
    attacker average the published points (see :func:`synthgeo.masking.write_mask`).

    References
    ----------
    Hampton KH, Fitch MK, Allshouse WB, et al. (2010). Mapping health data: improved privacy
    protection with donut method geomasking. American Journal of Epidemiology 172(9), 1062-1069.
    doi:10.1093/aje/kwq248

    Allshouse WB, Fitch MK, Hampton KH, et al. (2010). Geomasking sensitive health data and
    privacy protection: an evaluation using an E911 database. Geocarto International 25(6),
    443-452. doi:10.1080/10106049.2010.496496

    Examples
    --------
    >>> import geopandas, numpy as np
    >>> grid = np.arange(10) * 100.0
    >>> hh = geopandas.GeoSeries(geopandas.points_from_xy(*map(np.ravel, np.meshgrid(grid, grid))),
    ...                          crs="EPSG:27700")
    >>> cases = geopandas.GeoSeries(geopandas.points_from_xy([450.0], [450.0]), crs="EPSG:27700")
    >>> m = mask_to_k(cases, hh, k=4, random_seed=1)
    >>> bool(0.5 * m.r_k_m[0] <= m.displacement_m[0] <= m.r_k_m[0])
    True
    """
    prep = _prepare(cases, households, weights, region)
    k = check_k(k, prep["total_weight"], minimum=2)
    for name, v in (("max_redraws", max_redraws), ("max_verify_redraws", max_verify_redraws)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise TypeError(f"`{name}` must be a non-negative int, got {v!r}")
    seed = resolve_seed(random_seed)
    xy = prep["xy"]
    if method not in ("donut", "areal"):
        raise SpecError(f"`method` must be 'donut' or 'areal', got {method!r}")
    if method == "areal":  # no r_k: the areas come from the household layer alone
        index, r_k = None, np.full(len(xy), np.nan)
    else:
        index = HouseholdIndex(prep["households_xy"], prep["weights"])
        r_k = _kth_distance(xy, prep["households_xy"], np.array([k]), prep["weights"],
                            tree=index.tree)[:, 0]
    if (zero := r_k == 0).any():
        warn(f"{int(zero.sum())} case(s) have at least k = {k} households at their exact "
                      f"location (r_k = 0), e.g. ids {prep['ids'][zero][:_N_SHOW].tolist()}: they "
                      "are published at that location, anonymous only among its households")
    first, inverse, counts = site_index(xy)
    largest = check_site_sizes(counts, max_site_records, prep["ids"], first)
    sxy, s_r, s_ids = xy[first], r_k[first], prep["ids"][first]  # one draw per site
    rng = np.random.default_rng(seed)
    verification = None
    if method == "areal":
        masked, vk, verification = _mask_areal(sxy, prep, k, rng, max_redraws, s_ids)
        n_redraws = 0
    else:
        masked, dist, n_redraws = _draw_donut(sxy, s_r, 1, rng, prep["region"], max_redraws,
                                              s_ids)
        if verify:
            def draw(case, scale):
                pts, d, nr = _draw_donut(sxy[case], s_r[case] * scale, 1, rng, prep["region"],
                                         max_redraws, s_ids[case])
                return pts[0], d[0], nr

            ver = redraw_until_verified(masked, dist, sxy, k=k, index=index, draw=draw,
                                        max_redraws=max_verify_redraws, ids=s_ids)
            vk = ver.verified_k
            n_redraws += ver.n_region_redraws
            verification = ver.to_dict(k, max_verify_redraws)
        else:
            vk = index.verified_k(sxy, masked)
    masked, vk = masked[:, inverse], vk[:, inverse]
    dist = np.hypot(*(masked[0] - xy).T)[None]
    logger.info("masked %d cases (%d sites) to k = %d by %s (%d redraws)", len(xy), len(first),
                k, method, n_redraws)
    id_column = (cases.attrs.get("id_column") if isinstance(cases, geopandas.GeoDataFrame)
                 else None) or "record"
    crs = pyproj.CRS.from_user_input(prep["crs"])
    layer = geopandas.GeoDataFrame(
        {id_column: prep["ids"]},
        geometry=geopandas.points_from_xy(masked[0, :, 0], masked[0, :, 1]), crs=crs,
    )
    layer.attrs["id_column"] = id_column
    return DonutMask(masked=layer, r_k_m=r_k, displacement_m=dist[0], k=k, random_seed=seed,
                     n_redraws=n_redraws, id_column=id_column, verified_k=vk[0],
                     verification=verification, method=method, largest_site=largest)


def _mask_areal(sxy: np.ndarray, prep: dict[str, Any], k: int, rng: np.random.Generator,
                max_redraws: int, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict]:
    """Publish each site uniformly in its area.

    Returns points (1, n_sites, 2), households in the area (1, n_sites), the partition summary.
    """
    partition = household_partition(prep["households_xy"], k, weights=prep["weights"],
                                    extent=_extent(prep), region=prep["region"])
    area = partition.locate(sxy)
    if (out := area < 0).any():
        raise InputError(f"{int(out.sum())} case(s) (e.g. ids {ids[out][:_N_SHOW].tolist()}) lie "
                         "outside the household layer's extent: the areal mask needs households "
                         "around every case; give a household layer (or region) covering them")
    pts = draw_in_areas(partition.bounds[area], rng, region=prep["region"],
                        max_redraws=max_redraws)
    info = {"k": int(k), "method": "areal", "n_areas": partition.n_areas,
            "min_households_in_area": float(partition.households.min()),
            "median_households_in_area": float(np.median(partition.households)),
            "min_locations_in_area": _min_locations(partition, prep),
            "extent": list(_extent(prep))}
    return pts[None], partition.households[area][None], info


def _min_locations(partition: Any, prep: dict[str, Any]) -> int:
    """Fewest distinct household coordinates in an area (what an attacker can name)."""
    hxy = prep["households_xy"]
    area = partition.locate(hxy)
    keep = area >= 0
    if prep["region"] is not None:
        keep &= shapely.intersects_xy(prep["region"], hxy[:, 0], hxy[:, 1])
    pairs = np.unique(np.column_stack([area[keep], hxy[keep]]), axis=0)
    return int(np.bincount(pairs[:, 0].astype(np.int64), minlength=partition.n_areas).min())


def _extent(prep: dict[str, Any]) -> tuple[float, float, float, float]:
    """Root rectangle of the areal partition: the padded household extent, with the region."""
    hxy = prep["households_xy"]
    lo, hi = hxy.min(axis=0), hxy.max(axis=0)
    pad = PAD * max(float((hi - lo).max()), 1.0)
    lo, hi = lo - pad, hi + pad
    if prep["region"] is not None:
        b = prep["region"].bounds
        lo, hi = np.minimum(lo, b[:2]), np.maximum(hi, b[2:])
    return float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1])
