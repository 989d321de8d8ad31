"""Fit the GP regression by the conjugate grid route, exact or NNGP covariance.

The posterior of (β, σ², range, nugget) is computed on a refined grid over (range, τ²/σ²) with
β and σ² integrated out analytically (:mod:`synthgeo.inference.grid_posterior`), and independent draws are
taken from it. w is drawn only for the draws that become implicates
(:meth:`synthgeo.inference.result.GPFit.effects`), exactly under the exact engine (Matheron's rule) and
under a latent NNGP prior with a sparse solve under the NNGP engine.

Why (measured, ``benchmarks/bench_nngp.py`` and docs/inference.md): NUTS over the exact
GP needs ~8 min for N = 500 on 2 cores, and one NNGP log-density + gradient at N = 25,000 costs
~0.1 s, so NUTS (thousands of gradient evaluations per chain) cannot fit a city-size file in
minutes; the grid needs a few hundred log-density evaluations and no gradients.

Priors differ from the NUTS route in two conjugacy-driven ways, both recorded in the release
record: β | σ² ~ N(μ_β, σ² V) with V = beta_sd² / E[σ²] · I (so β's prior sd is beta_sd at
σ²'s prior mean), and the nugget enters through its share ν = τ²/(σ² + τ²) ~ Uniform(0, 1)
(truncated to [1e-4, 0.999]) instead of a half-normal on τ.
"""

from __future__ import annotations

import logging
import time

import arviz as az
import numpy as np
import xarray as xr
from threadpoolctl import threadpool_limits

from synthgeo.config import SamplingConfig
from synthgeo.inference.result import GPFit, check_convergence
from synthgeo.inference.conditionals import draw_effects_exact
from synthgeo.inference.grid_posterior import (
    ExactCovariance,
    GridSettings,
    NNGPCovariance,
    grid_posterior,
)
from synthgeo.model.kernels import METRES_PER_KM, Sites
from synthgeo.inference.nngp_effects import NNGPEffects
from synthgeo.model.restricted_gp import GPPriors
from synthgeo.model.smoothing import Smoothing

__all__ = ["fit_gp_grid", "grid_prior_description"]

log = logging.getLogger(__name__)


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


def _v_scale(priors: GPPriors) -> float:
    a, b = priors.sigma2_shape, priors.sigma2_scale
    mean_sigma2 = b / (a - 1.0) if a > 1 else b
    return priors.beta_sd**2 / mean_sigma2


def fit_gp_grid(
    y: np.ndarray,
    X: np.ndarray,
    sites: Sites,
    *,
    priors: GPPriors,
    coef_names: list[str],
    scale: np.ndarray | None = None,
    config: SamplingConfig | None = None,
    gp: str = "nngp",
    n_neighbors: int = 15,
    effect_solver: str = "cg",
    settings: GridSettings | None = None,
    random_seed: int | None = None,
    label: str = "model",
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
        with γ = "auto" makes D a function of each grid cell's α = τ²/σ² (exact per cell).
    config : SamplingConfig, optional
        ``chains`` x ``draws`` independent draws are kept (arranged as chains so that ArviZ's
        diagnostics apply); ``seed``.
    gp : {"exact", "nngp"}
        Covariance engine.
    n_neighbors : int, default=15
        NNGP conditioning-set size m.
    effect_solver : {"splu", "cg"}
        Sparse solver for the NNGP effect draws.
    settings : GridSettings, optional
    random_seed : int, optional
        Overrides ``config.seed``.
    label : str
        Name used in log messages.

    Returns
    -------
    GPFit
        ``posterior`` holds ``sigma2``, ``nugget``, ``range`` (m), ``phi`` (1/m), ``beta``;
        ``sample_stats`` the grid cell of each draw; ``engine`` the grid's stages and checks,
        whose failures are convergence problems.

    Raises
    ------
    ValueError
        For an unknown ``gp``.
    """
    if gp not in ("exact", "nngp"):
        raise ValueError(f"`gp` must be 'exact' or 'nngp', got {gp!r}")
    config = config or SamplingConfig()
    seed = config.seed if random_seed is None else random_seed
    draw_seed, effect_seed = np.random.SeedSequence(seed).spawn(2)
    smoothing = scale if isinstance(scale, Smoothing) else None
    if smoothing is not None and not smoothing.depends_on_nugget:
        scale = smoothing.scale()
    d_arg = scale if smoothing is not None and smoothing.depends_on_nugget else (
        np.ones(sites.n_sites) if scale is None else np.asarray(scale, dtype=float))
    p = X.shape[1]
    t0 = time.perf_counter()
    with threadpool_limits(limits=1):
        if gp == "exact":
            backend = ExactCovariance(y, X, sites, d_arg)
        else:
            backend = NNGPCovariance(y, X, sites, d_arg, n_neighbors=n_neighbors)
        t1 = time.perf_counter()
        post_grid = grid_posterior(
            backend, n=y.shape[0], beta_mean=np.full(p, priors.beta_mean),
            V=_v_scale(priors) * np.eye(p), sigma2_shape=priors.sigma2_shape,
            sigma2_scale=priors.sigma2_scale, range_min_m=priors.range_min_m,
            range_max_m=priors.range_max_m, settings=settings,
        )
    t2 = time.perf_counter()
    log.info("%s: %s grid, %d cells evaluated in %.1f s", label, gp, post_grid.n_evaluations,
             t2 - t1)
    n_chain, n_draw = config.chains, config.draws
    draws = post_grid.draw(n_chain * n_draw, np.random.default_rng(draw_seed))
    shape = (n_chain, n_draw)
    sigma2 = draws["sigma2"].reshape(shape)
    range_m = (3.0 / draws["phi_km"] * METRES_PER_KM).reshape(shape)
    coords = {"chain": np.arange(n_chain), "draw": np.arange(n_draw), "coef": coef_names}
    posterior = xr.Dataset(
        {
            "sigma2": (("chain", "draw"), sigma2),
            "nugget": (("chain", "draw"), draws["alpha"].reshape(shape) * sigma2),
            "range": (("chain", "draw"), range_m, {"units": "m"}),
            "phi": (("chain", "draw"), 3.0 / range_m, {"units": "1/m"}),
            "beta": (("chain", "draw", "coef"), draws["beta"].reshape(*shape, p)),
        },
        coords=coords,
    )
    if isinstance(d_arg, Smoothing):  # d at the posterior median of α, for reports
        d = d_arg.scale(float(np.median(draws["alpha"])))
    else:
        d = d_arg
    const = xr.Dataset({
        "scale": ("site", d), "site_index": ("record", sites.site_index),
        "site_x_m": ("site", sites.coords_m[:, 0]), "site_y_m": ("site", sites.coords_m[:, 1]),
    })
    idata = az.InferenceData(
        posterior=posterior,
        sample_stats=xr.Dataset({"grid_cell": (("chain", "draw"), draws["cell"].reshape(shape))},
                                coords={"chain": coords["chain"], "draw": coords["draw"]}),
        constant_data=const, observed_data=xr.Dataset({"y": ("record", y)}),
    )
    conv = check_convergence(idata)
    if post_grid.problems:
        conv = type(conv)(**{**conv.__dict__, "passed": False,
                             "problems": conv.problems + post_grid.problems})
    if not conv.passed:
        log.warning("%s: posterior problems: %s", label, "; ".join(conv.problems))

    if gp == "exact":
        sampler_obj = None
    else:
        sampler_obj = NNGPEffects(y, X, sites, d_arg, n_neighbors=n_neighbors,
                                  solver=effect_solver)
    cache: dict[tuple, np.ndarray] = {}
    seconds = {"setup": t1 - t0, "grid": t2 - t1, "recover": 0.0}

    def effect_sampler(flat_index: np.ndarray) -> np.ndarray:
        key = tuple(int(i) for i in flat_index)
        if key not in cache:
            t = time.perf_counter()
            sel = {k: v[np.asarray(flat_index)] for k, v in draws.items()}
            rng = np.random.default_rng(effect_seed)
            with threadpool_limits(limits=1):
                if sampler_obj is None:
                    cache[key] = draw_effects_exact(sel, y, X, sites, scale=d_arg,
                                                   random_seed=rng)
                else:
                    cache[key] = sampler_obj.draw(sel, rng)
            seconds["recover"] += time.perf_counter() - t
        return cache[key]

    engine = {
        "sampler": "grid", "gp": gp,
        "n_neighbors": n_neighbors if gp == "nngp" else None,
        "effect_solver": effect_solver if gp == "nngp" else "dense (Matheron)",
        "draws": "independent (no Markov chain)",
        "grid_stages": post_grid.stages,
        "grid_evaluations": post_grid.n_evaluations,
        "grid_problems": post_grid.problems,
        "priors": grid_prior_description(priors, p),
    }
    fit = GPFit(idata=idata, scale=d, priors=priors, convergence=conv,
                seconds=seconds, engine=engine, effect_sampler=effect_sampler,
                smoothing=smoothing)
    return fit
