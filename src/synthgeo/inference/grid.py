"""Fit the GP regression by the conjugate grid route, exact or NNGP covariance.

The posterior of (β, σ², range, nugget) is computed on a refined grid over (range, τ²/σ²) with
β and σ² integrated out analytically (:mod:`synthgeo.inference.grid_posterior`); draws are
independent, continuous in (range, nugget share) and exact in σ², β given them. w is drawn only
for the draws that become implicates (:meth:`synthgeo.inference.result.GPFit.effects`), exactly
under the exact engine (Matheron's rule) and under a latent NNGP prior with a sparse solve under
the NNGP engine. Method: ``docs/inference.md``.

Why (measured, ``benchmarks/bench_nngp.py``): NUTS over the exact GP needs ~8 min for N = 500
on 2 cores, and one NNGP log-density + gradient at N = 25,000 costs ~0.1 s, so NUTS cannot fit
a city-size file in minutes; the grid needs a few hundred log-density evaluations and no
gradients.

Priors differ from the NUTS route in two conjugacy-driven ways, both recorded in the release
record: β | σ² ~ N(μ_β, σ² V) with V = beta_sd² / E[σ²] · I (so β's prior sd is beta_sd at
σ²'s prior mean), and the nugget enters through its share ν = τ²/(σ² + τ²) ~ Uniform(0, 1)
(truncated to [1e-4, 0.999]) instead of a half-normal on τ.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import xarray as xr
from scipy.special import expit
from threadpoolctl import threadpool_limits

from synthgeo._seed import keyed_seeds
from synthgeo._spill import Spilled, spill, unspill
from synthgeo._warn import warn
from synthgeo.config import ModelConfig, SamplingConfig
from synthgeo.inference.conditionals import draw_effects_exact
from synthgeo.inference.covariance import make_covariance
from synthgeo.inference.grid_posterior import (
    ConjugatePrior,
    GridDraws,
    GridModel,
    GridPosterior,
    GridSettings,
    grid_posterior,
)
from synthgeo.inference.nngp_effects import NNGPEffects
from synthgeo.inference.prior_bound import posterior_at_prior_bound
from synthgeo.inference.quadrature import MapBatches
from synthgeo.inference.result import GPFit, build_fit
from synthgeo.model.kernels import METRES_PER_KM, Sites
from synthgeo.model.restricted_gp import GPPriors
from synthgeo.model.smoothing import Smoothing

__all__ = ["fit_gp_grid", "grid_fit_from_draws", "grid_prior_description", "conjugate_prior"]

log = logging.getLogger(__name__)


def _v_scale(priors: GPPriors) -> float:
    a, b = priors.sigma2_shape, priors.sigma2_scale
    mean_sigma2 = b / (a - 1.0) if a > 1 else b
    return priors.beta_sd**2 / mean_sigma2


def conjugate_prior(priors: GPPriors, n_coef: int,
                    settings: GridSettings | None = None) -> ConjugatePrior:
    """Return the grid route's prior from :class:`GPPriors` (see the module docstring)."""
    s = settings or GridSettings()
    return ConjugatePrior(
        beta_mean=np.full(n_coef, priors.beta_mean), V=_v_scale(priors) * np.eye(n_coef),
        sigma2_shape=priors.sigma2_shape, sigma2_scale=priors.sigma2_scale,
        range_min_m=priors.range_min_m, range_max_m=priors.range_max_m,
        nugget_share_min=s.nugget_share_min, nugget_share_max=s.nugget_share_max,
    )


def grid_prior_description(priors: GPPriors, n_coef: int) -> dict:
    """Describe the grid route's priors for release.json (see the module docstring)."""
    s = GridSettings()
    return {
        "beta": f"N({priors.beta_mean}, sigma2 * V), V = {_v_scale(priors):.6g} * I "
                f"(prior sd {priors.beta_sd} at E[sigma2])",
        "sigma2": f"InverseGamma({priors.sigma2_shape}, {priors.sigma2_scale:.6g})",
        "nugget_share": f"tau2/(sigma2 + tau2) ~ Uniform({s.nugget_share_min}, "
                        f"{s.nugget_share_max})",
        "range_m": f"Uniform({priors.range_min_m:.6g}, {priors.range_max_m:.6g})",
        "n_coef": n_coef,
    }


def _smoothing(scale, n_sites: int):
    """(Smoothing or None, D argument for the backends)."""
    smoothing = scale if isinstance(scale, Smoothing) else None
    if smoothing is not None and smoothing.depends_on_nugget:
        return smoothing, smoothing
    if smoothing is not None:
        scale = smoothing.scale()
    return smoothing, (np.ones(n_sites) if scale is None else np.asarray(scale, dtype=float))


def _posterior(draws: GridDraws, shape: tuple[int, int], coef_names: list[str]) -> xr.Dataset:
    d = draws.as_dict()
    sigma2 = d["sigma2"].reshape(shape)
    range_m = d["range_m"].reshape(shape)
    dims = ("chain", "draw")
    return xr.Dataset(
        {
            "sigma2": (dims, sigma2),
            "nugget": (dims, d["alpha"].reshape(shape) * sigma2),
            "range": (dims, range_m, {"units": "m"}),
            "phi": (dims, 3.0 / range_m, {"units": "1/m"}),
            "beta": ((*dims, "coef"), d["beta"].reshape(*shape, -1)),
        },
        coords={"chain": np.arange(shape[0]), "draw": np.arange(shape[1]), "coef": coef_names},
    )


def _read_only(w: np.ndarray) -> np.ndarray:
    """Return ``w`` marked read-only: a caller cannot change the cache, spilled or not."""
    w.flags.writeable = False
    return w


def _effect_sampler(draws: dict, y, X, sites, d_arg, gp, n_neighbors, effect_solver, seed,
                    seconds: dict, extra=None, nugget_weight=None):
    """``effect_sampler(flat_index) -> w`` drawing at each draw's own (φ, α), cached.

    The cache holds large draws in a temporary file (:func:`synthgeo._spill.spill`): each call
    then returns a fresh copy, and between calls they are not in memory.

    Draw d's normals come from ``keyed_seeds(seed, [d])``, keyed by its flattened (chain,
    draw) index: the same draw gets the same w whichever other draws are asked for with it,
    and two fits with one seed use the same normals at draw d (common random numbers).
    """
    nngp = (None if gp == "exact" else
            NNGPEffects(y, X, sites, d_arg, n_neighbors=n_neighbors, solver=effect_solver,
                        nugget_weight=nugget_weight))
    cache: dict[tuple, np.ndarray | Spilled] = {}

    def effect_sampler(flat_index: np.ndarray) -> np.ndarray:
        key = tuple(int(i) for i in flat_index)
        if key in cache:
            return _read_only(unspill(cache[key]))
        t = time.perf_counter()
        sel = {k: v[np.asarray(flat_index)] for k, v in draws.items()}
        seeds = keyed_seeds(seed, key)  # per draw, by its index: common random numbers
        with threadpool_limits(limits=1):
            if nngp is None:
                w = draw_effects_exact(sel, y, X, sites, scale=d_arg, random_seed=seeds,
                                       extra=extra, nugget_weight=nugget_weight)
            else:  # at-risk records (d = 0) carry no information on w: no `extra` needed
                w = nngp.draw(sel, seeds)
        # kept for the report's surfaces: on disk when large, out of the risk stage's peak
        cache[key] = spill(w)
        seconds["recover"] += time.perf_counter() - t
        return _read_only(w)

    return effect_sampler


def grid_diagnostics(post: GridPosterior, draws: GridDraws) -> dict:
    """Return the grid's own diagnostics for the release record (``engine``)."""
    q = post.quadrature
    imp = draws.importance
    return {
        "grid_stages": [{"stage": st["stage"], "n_per_axis": st["n_per_axis"],
                         "range_m": [float(np.exp(v)) for v in st["box"][0]],
                         "nugget_share": [float(expit(v)) for v in st["box"][1]],
                         "max_cell_mass": st["max_cell_mass"], "edge_mass": st["edge_mass"]}
                        for st in q.stages],
        "grid_evaluations": q.n_evaluations,
        "grid_laplace_start": q.laplace or None,
        "grid_cells": int(q.weights.size),
        "max_cell_mass": q.max_cell_mass,
        "edge_mass": q.edge_mass,
        "theta_points": imp.n_points,
        "importance_ess": imp.ess,
        "distinct_theta_draws": imp.n_distinct_kept,
        "grid_problems": list(q.problems),
    }


def fit_gp_grid(
    y: np.ndarray,
    X: np.ndarray,
    sites: Sites,
    *,
    priors: GPPriors,
    coef_names: list[str],
    scale: np.ndarray | Smoothing | None = None,
    config: SamplingConfig | None = None,
    gp: str = "auto",
    n_neighbors: int = 15,
    ordering: str = "coord",
    effect_solver: str = "cg",
    settings: GridSettings | None = None,
    start: np.ndarray | None = None,
    mode_start: np.ndarray | None = None,
    posterior: GridPosterior | None = None,
    map_batches: MapBatches | None = None,
    random_seed: int | None = None,
    label: str = "model",
    known_nugget: float = 0.0,
) -> GPFit:
    """Grid posterior, independent draws of (β, σ², τ², range), w on demand.

    Parameters
    ----------
    y : ndarray of shape (n_records,)
        Response on the model scale.
    X : ndarray of shape (n_records, n_coef)
        Design matrix with intercept.
    sites : Sites
        Sites in metres.
    priors : GPPriors
        ``beta_mean``, ``beta_sd``, ``sigma2_shape``, ``sigma2_scale``, ``range_min_m``,
        ``range_max_m`` are used (see the module docstring for the conjugate forms);
        ``nugget_sd_scale`` is not (the nugget share is uniform).
    coef_names : list of str
    scale : ndarray of shape (n_sites,) or Smoothing, optional
        Diagonal of D; ``None`` = unrestricted. A :class:`~synthgeo.model.smoothing.Smoothing`
        with γ = "auto" makes D a function of each point's α = τ²/σ² (exact per point); one
        with ``at_risk_nugget = "marginal"`` gives at-risk records variance σ² + τ²
        (``engine["at_risk_nugget"]`` then says so, and the synthesis follows it); one with
        ``likelihood_weight`` fits the risk-weighted pseudo-posterior (nugget τ²/α_i, the
        normalising factor kept: :mod:`synthgeo.model.pseudo_likelihood`), and the synthesis
        keeps τ².
    config : SamplingConfig, optional
        ``chains`` x ``draws`` independent draws are kept (arranged as chains for ArviZ);
        ``seed``.
    gp : {"auto", "exact", "nngp"}, default="auto"
        Covariance engine; "auto" = exact up to ``AUTO_EXACT_MAX_RECORDS`` records, as the spec.
    n_neighbors : int, default=15
        NNGP conditioning-set size m.
    ordering : {"coord", "maxmin"}, default="coord"
        NNGP ordering of the records.
    effect_solver : {"splu", "cg"}
        Sparse solver for the NNGP effect draws.
    settings : GridSettings, optional
    start : ndarray of shape (2, 2), optional
        First grid box in (log range m, logit nugget share); default the prior box (the Laplace
        box at large N, :class:`~synthgeo.inference.grid_posterior.GridSettings`).
    mode_start : ndarray of shape (2,), optional
        At large N (the Laplace start), where the mode search begins: the restricted fit
        begins at the unrestricted fit's mode.
    posterior : GridPosterior, optional
        The grid posterior of the *same* model (data, engine, D and priors: e.g. the
        unrestricted fit's when no record is at risk, so that D = I): its quadrature is used
        as it is instead of being integrated again; the draws are this fit's own (its seed,
        proposal points evaluated exactly). The caller vouches that the model is the same.
    map_batches : callable, optional
        How batches of grid cells are evaluated (default 2 threads).
    random_seed : int, optional
        Overrides ``config.seed``.
    label : str
        Name used in log messages.
    known_nugget : float, default=0
        κ² (model-scale variance): ``y`` is y + e with e ~ N(0, κ² I) and κ known; the fit is
        of y's model plus that known nugget, with y's priors
        (:mod:`synthgeo.inference.known_nugget`). ``nugget`` then holds τ² + κ² (y*'s whole
        nugget) and ``engine["known_nugget"]`` says so. Not with ``scale``.

    Returns
    -------
    GPFit
        ``posterior`` holds ``sigma2``, ``nugget``, ``range`` (m), ``phi`` (1/m), ``beta``;
        ``sample_stats`` the θ point of each draw; ``engine`` the grid's diagnostics, whose
        failures are convergence problems (and, only when the posterior piles against a prior
        bound, ``posterior_at_prior_bound``: :mod:`synthgeo.inference.prior_bound`, also
        warned); ``grid`` the :class:`GridPosterior`.

    Raises
    ------
    ValueError
        For an unknown ``gp``.
    """
    config = config or SamplingConfig()
    if gp == "auto":
        gp = ModelConfig(gp="auto").engine_for(y.shape[0])
    seed = config.seed if random_seed is None else random_seed
    draw_seed, effect_seed = np.random.SeedSequence(seed).spawn(2)
    s = settings or GridSettings()
    if known_nugget and scale is not None:
        raise ValueError("`known_nugget` fits the unrestricted model of y* only (scale=None)")
    smoothing, d_arg = _smoothing(scale, sites.n_sites)
    extra = None if smoothing is None else smoothing.extra_variance(sites.site_index)
    omega = None if smoothing is None else smoothing.noise_weight()  # pseudo-likelihood 1/α_i
    t0 = time.perf_counter()
    with threadpool_limits(limits=1):
        backend = make_covariance(gp, y, X, sites, d_arg, n_neighbors=n_neighbors,
                                  ordering=ordering, extra=extra, nugget_weight=omega)
        model = GridModel(backend=backend, prior=conjugate_prior(priors, X.shape[1], s),
                          n=y.shape[0],
                          likelihood_weight=None if omega is None
                          else np.asarray(smoothing.likelihood_weight, float),
                          known_nugget=float(known_nugget))
        t1 = time.perf_counter()
        post = (grid_posterior(model, settings=s, start=start, map_batches=map_batches,
                               mode_start=mode_start)
                if posterior is None else
                GridPosterior(model=model, quadrature=posterior.quadrature, settings=s))
        t2 = time.perf_counter()
        shape = (config.chains, config.draws)
        draws = post.draw(shape[0] * shape[1], np.random.default_rng(draw_seed),
                          map_batches=map_batches)
    t3 = time.perf_counter()
    log.info("%s: %s grid, %d cells in %.1f s%s; %d draws at %d points in %.1f s", label, gp,
             post.quadrature.n_evaluations, t2 - t1,
             "" if posterior is None else " (reused: the same model)", draws.sigma2.size,
             draws.importance.n_points, t3 - t2)
    seconds = {"setup": t1 - t0, "grid": t2 - t1, "draws": t3 - t2, "recover": 0.0}
    flat = draws.as_dict()
    alpha_median = float(1.0 / (1.0 / post.quantiles("nugget_share", 0.5) - 1.0))
    d_report = smoothing.scale(alpha_median) if isinstance(d_arg, Smoothing) else d_arg
    engine = {
        "sampler": "grid", "gp": gp,
        "n_neighbors": n_neighbors if gp == "nngp" else None,
        "ordering": ordering if gp == "nngp" else None,
        "effect_solver": effect_solver if gp == "nngp" else "dense (Matheron)",
        "draws": "independent (no Markov chain)",
        **grid_diagnostics(post, draws),
        "priors": grid_prior_description(priors, X.shape[1]),
    }
    if extra is not None:
        engine["at_risk_nugget"] = "marginal"
    if known_nugget:
        engine["known_nugget"] = float(known_nugget)
    if posterior is not None:
        engine["grid_reused"] = True
    at_bound = posterior_at_prior_bound(post.quadrature, label)
    if at_bound:  # recorded only when it fires: release.json is otherwise unchanged
        engine["posterior_at_prior_bound"] = at_bound
        for item in at_bound:
            warn(item["message"])
    return build_fit(
        _posterior(draws, shape, coef_names), y=y, sites=sites, scale=d_report, priors=priors,
        seconds=seconds, engine=engine,
        sample_stats=xr.Dataset({"grid_cell": (("chain", "draw"), flat["cell"].reshape(shape))},
                                coords={"chain": np.arange(shape[0]),
                                        "draw": np.arange(shape[1])}),
        effect_sampler=_effect_sampler(flat, y, X, sites, d_arg, gp, n_neighbors,
                                       effect_solver, effect_seed, seconds, extra, omega),
        smoothing=smoothing, grid=post, label=label,
    )


def grid_fit_from_draws(
    posterior: xr.Dataset,
    y: np.ndarray,
    X: np.ndarray,
    sites: Sites,
    *,
    scale: np.ndarray | Smoothing | None,
    priors: GPPriors | None,
    engine: dict,
    random_seed: int,
    grid=None,
    label: str = "model",
) -> GPFit:
    """Rebuild a grid fit from its stored draws, without refitting (``synthgeo draw``).

    The draws of (β, σ², τ², range) are taken as stored; w is drawn on demand, as
    :func:`fit_gp_grid` draws it: at each draw's own (φ, α), with draw d's normals keyed by
    its flattened index under the fit's own seed, so a draw no implicate used before gives
    the w the original fit would have given it (up to the rounding of α = τ²/σ², recomputed
    from the stored τ² and σ²).

    Parameters
    ----------
    posterior : xarray.Dataset
        ``sigma2``, ``nugget``, ``range`` (metres), ``phi`` (1/metre), ``beta`` (chain, draw,
        coef), as :func:`fit_gp_grid` returns them.
    y, X, sites
        The records the fit was made on (model scale; the caller checks they are the same).
    scale : ndarray of shape (n_sites,), Smoothing or None
        D, as given to :func:`fit_gp_grid` (None: unrestricted).
    priors : GPPriors or None
    engine : dict
        The original fit's ``engine`` (``gp``, ``n_neighbors``, ``effect_solver``; the grid's
        checks, which the convergence gate reads again).
    random_seed : int
        The ``random_seed`` the original fit was given.
    grid : object, optional
        Stands in for the grid posterior where φ's quantiles are asked for (an object with
        ``quantiles(name, q)``).
    label : str

    Returns
    -------
    GPFit
    """
    _, effect_seed = np.random.SeedSequence(random_seed).spawn(2)
    smoothing, d_arg = _smoothing(scale, sites.n_sites)
    extra = None if smoothing is None else smoothing.extra_variance(sites.site_index)
    gp = engine.get("gp", "exact")
    solver = engine.get("effect_solver", "cg")
    n_chain, n_draw = posterior.sizes["chain"], posterior.sizes["draw"]
    sigma2 = posterior["sigma2"].values.reshape(-1)
    range_m = posterior["range"].values.reshape(-1)
    flat = {"sigma2": sigma2, "alpha": posterior["nugget"].values.reshape(-1) / sigma2,
            "phi_km": 3.0 / (range_m / METRES_PER_KM), "range_m": range_m,
            "beta": posterior["beta"].values.reshape(n_chain * n_draw, -1)}
    seconds = {"setup": 0.0, "grid": 0.0, "draws": 0.0, "recover": 0.0}
    alpha_median = float(np.median(flat["alpha"]))
    d_report = smoothing.scale(alpha_median) if isinstance(d_arg, Smoothing) else d_arg
    return build_fit(
        posterior, y=y, sites=sites, scale=d_report, priors=priors, seconds=seconds,
        engine=dict(engine), effect_sampler=_effect_sampler(
            flat, y, X, sites, d_arg, gp, engine.get("n_neighbors"),
            solver if gp == "nngp" else "cg", effect_seed, seconds, extra),
        smoothing=smoothing, grid=grid, label=label)
