"""The fit type both inference routes return, its one builder, and the convergence gate.

:class:`GPFit` holds the posterior groups (xarray; ArviZ's ``InferenceData`` of them on
demand), D and the engine's description; :func:`build_fit` is the one place a fit is assembled
(NUTS, grid and the test helpers); :func:`check_convergence` compares ArviZ's R-hat and ESS
with the release thresholds for NUTS fits; grid fits are judged by the grid's checks and the
importance ESS of their independent draws instead (:func:`grid_convergence`: no Markov chain,
so R-hat and ArviZ's autocorrelation ESS say nothing there, and ArviZ is not imported on that
route); :func:`require_convergence` applies ``on_convergence_failure``. Method:
``docs/inference.md``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import xarray as xr

from synthgeo._errors import ConvergenceError
from synthgeo._warn import warn
from synthgeo.inference.netcdf import write_inference_netcdf
from synthgeo.model.restricted_gp import GPPriors
from synthgeo.model.smoothing import Smoothing

if TYPE_CHECKING:
    import arviz as az

__all__ = ["GPFit", "Convergence", "check_convergence", "require_convergence",
           "HYPER_PARAMETERS", "build_fit", "grid_convergence", "grid_diagnostics_table"]

log = logging.getLogger(__name__)

#: Sampled (hyper-)parameters whose diagnostics gate a release.
HYPER_PARAMETERS = ("sigma2", "nugget", "range")
#: :attr:`Convergence.method` of a NUTS fit.
NUTS_METHOD = ("ArviZ: rank-normalised R-hat and bulk/tail ESS of the Markov chains "
               "(Vehtari et al. 2021), divergences")
#: :attr:`Convergence.method` of a grid fit.
GRID_METHOD = ("grid: independent draws, no Markov chain, so R-hat is undefined (null); ESS = "
               "Kish ESS of the importance weights of the (range, nugget share) points, given "
               "for every parameter: the ESS of the range and of the nugget share, a lower "
               "bound for sigma2, nugget (tau2) and beta; checks: grid cell and edge mass, "
               "importance ESS, draws per chain")


@dataclass(frozen=True, kw_only=True)
class Convergence:
    """MCMC diagnostics (ArviZ) against the release thresholds.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per scalar parameter: ``r_hat``, ``ess_bulk``, ``ess_tail``.
    n_divergent : int
        Divergent transitions after warm-up.
    max_r_hat, min_ess_bulk, min_ess_tail : float
        Worst values over the table.
    passed : bool
        R-hat ≤ 1.01, bulk and tail ESS ≥ 100 per chain, no divergences.
    problems : list of str
        Human-readable reasons when not passed.
    method : str
        What the figures are (ArviZ's diagnostics of NUTS chains, or a grid fit's checks).
    """

    table: pd.DataFrame
    n_divergent: int
    max_r_hat: float
    min_ess_bulk: float
    min_ess_tail: float
    passed: bool
    problems: list[str]
    method: str = NUTS_METHOD

    def to_dict(self) -> dict:
        """JSON-serialisable summary."""
        return {
            "passed": self.passed, "max_r_hat": self.max_r_hat,
            "min_ess_bulk": self.min_ess_bulk, "min_ess_tail": self.min_ess_tail,
            "n_divergent": self.n_divergent, "problems": self.problems, "method": self.method,
            "per_parameter": self.table.reset_index(names="parameter").to_dict("records"),
        }


def check_convergence(
    posterior: xr.Dataset,
    sample_stats: xr.Dataset | None = None,
    var_names: tuple[str, ...] = HYPER_PARAMETERS,
    *,
    max_r_hat: float = 1.01,
    min_ess_per_chain: float = 100.0,
) -> Convergence:
    """Compare ArviZ's rank-normalised R-hat and bulk/tail ESS with the release thresholds.

    For Markov chains (NUTS); grid fits are checked by :func:`grid_convergence`.

    Parameters
    ----------
    posterior : xarray.Dataset
        Draws with dims (chain, draw, ...).
    sample_stats : xarray.Dataset, optional
        With ``diverging`` (chain, draw); None: no divergences counted.
    var_names : tuple of str
        Parameters to check.
    max_r_hat : float, default=1.01
    min_ess_per_chain : float, default=100
        Required bulk and tail ESS per chain (total ≥ this × number of chains).

    Returns
    -------
    Convergence

    References
    ----------
    Vehtari, Gelman, Simpson, Carpenter, Bürkner (2021), Rank-normalization, folding, and
    localization: an improved R-hat. Bayesian Analysis 16(2), doi:10.1214/20-BA1221.
    """
    import arviz as az  # ~1.5 s to import (numba compilation included): only where used

    post = posterior[list(var_names)]
    table = pd.DataFrame({
        "r_hat": _flat(az.rhat(post)),
        "ess_bulk": _flat(az.ess(post, method="bulk")),
        "ess_tail": _flat(az.ess(post, method="tail")),
    })
    n_chain = posterior.sizes["chain"]
    div = sample_stats.get("diverging") if sample_stats is not None else None
    n_div = int(div.sum()) if div is not None else 0
    need = min_ess_per_chain * n_chain
    problems = []
    if n_chain < 2 or table["r_hat"].isna().any():
        problems.append("R-hat undefined (needs >= 2 chains)")
    elif table["r_hat"].max() > max_r_hat:
        problems.append(f"R-hat {table['r_hat'].max():.3f} > {max_r_hat} "
                        f"({table['r_hat'].idxmax()})")
    for col in ("ess_bulk", "ess_tail"):
        if table[col].min() < need:
            problems.append(f"{col} {table[col].min():.0f} < {need:.0f} ({table[col].idxmin()})")
    if n_div:
        problems.append(f"{n_div} divergent transitions")
    return Convergence(
        table=table, n_divergent=n_div, max_r_hat=float(table["r_hat"].max()),
        min_ess_bulk=float(table["ess_bulk"].min()), min_ess_tail=float(table["ess_tail"].min()),
        passed=not problems, problems=problems,
    )


def _flat(ds) -> pd.Series:
    out = {}
    for name, da in ds.data_vars.items():
        vals = np.atleast_1d(da.values).ravel()
        if vals.size == 1:
            out[name] = float(vals[0])
        else:
            for i, v in enumerate(vals):
                out[f"{name}[{i}]"] = float(v)
    return pd.Series(out)


@dataclass(frozen=True, kw_only=True)
class GPFit:
    """A fitted (restricted or unrestricted) GP regression.

    Attributes
    ----------
    groups : dict of str to xarray.Dataset
        The InferenceData groups: ``posterior`` with ``sigma2``, ``nugget`` (response units²),
        ``range`` (effective range, metres), ``phi`` (1/metre), ``beta`` (chain, draw, coef),
        ``w`` (chain, draw, site) where stored; ``sample_stats``; ``constant_data`` with
        ``scale`` (D) and ``site_index``; ``observed_data``. Read them as :attr:`posterior`,
        :attr:`sample_stats`, :attr:`constant_data`; :attr:`idata` is ArviZ's InferenceData.
    scale : ndarray of shape (n_sites,)
        Diagonal of D.
    priors : GPPriors
    convergence : Convergence
    seconds : dict
        Wall time per fitting stage in seconds.
    engine : dict
        How the posterior was computed: ``sampler`` ("nutpie" or "grid"), ``gp`` ("exact" or
        "nngp"), ``n_neighbors``, and for the grid route its stages and checks.
    effect_sampler : callable or None
        ``effect_sampler(flat_index) -> ndarray (k, n_sites)``: w for the given flattened
        (chain, draw) indices when the posterior does not store ``w`` for every draw (the grid
        route draws w only for the draws that become implicates). Use :meth:`effects`.
    smoothing : Smoothing or None
        When D depends on the draw (γ = "auto"), the rule giving d(α); ``scale`` then holds
        d at the posterior median of α, for reports only. Use :meth:`scales`.
    grid : GridPosterior or None
        The grid route's continuous posterior of (range, nugget share)
        (:class:`synthgeo.inference.grid_posterior.GridPosterior`); quantiles of φ come from it.
    sampler_idata : arviz.InferenceData or None
        The sampler's own InferenceData (NUTS: nutpie's, its warm-up groups kept), returned
        by :attr:`idata`; None: :attr:`idata` is built from ``groups`` when first asked for.
    """

    groups: dict[str, xr.Dataset]
    scale: np.ndarray
    priors: GPPriors
    convergence: Convergence
    seconds: dict[str, float]
    engine: dict = field(default_factory=lambda: {"sampler": "nutpie", "gp": "exact"})
    effect_sampler: Callable[[np.ndarray], np.ndarray] | None = None
    smoothing: Smoothing | None = None
    grid: Any = None
    sampler_idata: Any = None

    @property
    def posterior(self) -> xr.Dataset:
        """The ``posterior`` group (chain, draw, ...)."""
        return self.groups["posterior"]

    @property
    def sample_stats(self) -> xr.Dataset | None:
        """The ``sample_stats`` group (None if the fit has none)."""
        return self.groups.get("sample_stats")

    @property
    def constant_data(self) -> xr.Dataset:
        """The ``constant_data`` group: ``scale`` (D, per site), ``site_index`` (per record)."""
        return self.groups["constant_data"]

    @cached_property
    def idata(self) -> az.InferenceData:
        """ArviZ's InferenceData of :attr:`groups` (built, and ArviZ imported, on first use)."""
        if self.sampler_idata is not None:
            return self.sampler_idata
        import arviz as az

        return az.InferenceData(**self.groups)

    def to_netcdf(self, path) -> None:
        """Write :attr:`idata` as ArviZ writes it (engine h5netcdf).

        ArviZ is imported only when the sampler's own InferenceData is held; otherwise
        :func:`synthgeo.inference.netcdf.write_inference_netcdf` writes the same bytes from
        :attr:`groups`.
        """
        if self.sampler_idata is not None:
            self.sampler_idata.to_netcdf(str(path), engine="h5netcdf")
        else:
            write_inference_netcdf(path, self.groups)

    def effects(self, flat_index: np.ndarray) -> np.ndarray:
        """Spatial effects w (model scale, before D) for flattened (chain, draw) indices.

        Parameters
        ----------
        flat_index : ndarray of int, shape (k,)
            Indices into the posterior flattened as chain-major (chain * n_draw + draw).

        Returns
        -------
        ndarray of shape (k, n_sites)
        """
        flat_index = np.asarray(flat_index, dtype=int)
        post = self.posterior
        if "w" in post:
            ci, di = np.divmod(flat_index, post.sizes["draw"])
            return post["w"].values[ci, di]
        if self.effect_sampler is None:
            raise ValueError("this fit holds no spatial effects")
        return self.effect_sampler(flat_index)

    def scales(self, flat_index: np.ndarray) -> np.ndarray:
        """D's diagonal for flattened (chain, draw) indices, shape (k, n_sites).

        Equal to ``scale`` in every row unless γ = "auto", where row j is d(α_j) with
        α_j = τ²/σ² of draw j. Read-only: the rows of a fixed D are a broadcast view of
        ``scale`` (no (k, S) array; 800 MB at 10⁶ sites and k = 100).
        """
        flat_index = np.asarray(flat_index, dtype=int)
        if self.smoothing is None or not self.smoothing.depends_on_nugget:
            return np.broadcast_to(self.scale, (flat_index.size, self.scale.size))
        post = self.posterior
        alpha = (post["nugget"] / post["sigma2"]).values.ravel()[flat_index]
        return np.stack([self.smoothing.scale(float(a)) for a in alpha])

    def phi_quantiles(self, q: tuple[float, ...] = (0.05, 0.5, 0.95)) -> np.ndarray:
        """Posterior quantiles of φ in 1/metre.

        From the grid's continuous marginal when the fit has one (no Monte Carlo error, not
        a node), else from the draws.
        """
        if self.grid is not None:
            return np.asarray(self.grid.quantiles("phi_per_m", q))
        return np.quantile(self.posterior["phi"].values.ravel(), q)

    def describe(self) -> str:
        """One line naming the engine, for the run summary and the report."""
        e = self.engine
        gp = f"{e.get('gp', 'exact')} GP"
        post = self.posterior
        n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
        if e.get("sampler") != "grid":
            return f"NUTS ({e.get('sampler', 'nutpie')}, {gp}): {n_chain} chains x {n_draw} draws"
        return (f"grid ({gp}): {e['grid_evaluations']} cells evaluated, largest cell "
                f"{e['max_cell_mass']:.3f}, edge {e['edge_mass']:.4f}; {n_chain * n_draw} "
                f"independent draws at {e['theta_points']} (range, nugget) points, importance "
                f"ESS {e['importance_ess']:.0f}")


def require_convergence(fits: dict[str, GPFit], policy: str) -> None:
    """Raise :class:`ConvergenceError` (policy "stop") or warn (policy "warn") on failures."""
    bad = {k: f.convergence.problems for k, f in fits.items() if not f.convergence.passed}
    if not bad:
        return
    msg = "; ".join(f"{k}: {', '.join(v)}" for k, v in bad.items())
    grid = any(f.engine.get("sampler") == "grid" for f in fits.values())
    if policy == "stop" and grid:
        raise ConvergenceError(
            f"posterior checks failed ({msg}); nothing was written to release/. The grid "
            "route's draws are independent: raise `[sampling] draws` for too few draws; grid "
            "problems (cell or edge mass, a low importance ESS) need the prior bounds "
            "checked. Or set `on_convergence_failure = \"warn\"` for a preview"
        )
    if policy == "stop":
        raise ConvergenceError(
            f"MCMC did not converge ({msg}); nothing was written to release/. Increase "
            "`[sampling] draws`/`tune`, or set `on_convergence_failure = \"warn\"` for a preview"
        )
    warn(f"{'posterior check' if grid else 'MCMC convergence'} problems ({msg})")


def _constant_data(y: np.ndarray, sites, scale: np.ndarray) -> tuple[xr.Dataset, xr.Dataset]:
    const = xr.Dataset({
        "scale": ("site", np.asarray(scale, float)), "site_index": ("record", sites.site_index),
        "site_x_m": ("site", sites.coords_m[:, 0]), "site_y_m": ("site", sites.coords_m[:, 1]),
    })
    return const, xr.Dataset({"y": ("record", np.asarray(y, float))})


def build_fit(
    posterior: xr.Dataset,
    *,
    y: np.ndarray,
    sites,
    scale: np.ndarray,
    priors: GPPriors | None,
    seconds: dict[str, float],
    engine: dict,
    sample_stats: xr.Dataset | None = None,
    base: az.InferenceData | None = None,
    effect_sampler: Callable[[np.ndarray], np.ndarray] | None = None,
    smoothing: Smoothing | None = None,
    grid: Any = None,
    label: str = "model",
) -> GPFit:
    """Assemble a :class:`GPFit`: InferenceData groups, convergence, engine (the one builder).

    Parameters
    ----------
    posterior : xarray.Dataset
        ``sigma2``, ``nugget``, ``range`` (m), ``phi`` (1/m), ``beta`` and optionally ``w``,
        dims (chain, draw, ...).
    y : ndarray of shape (n_records,)
    sites : Sites
    scale : ndarray of shape (n_sites,)
        D's diagonal (for γ = "auto": at the posterior median of α, for reports).
    priors : GPPriors
    seconds : dict
    engine : dict
        ``sampler`` "grid" gates on the grid's checks (``grid_problems``) and the importance
        ESS (``importance_ess``) instead of R-hat.
    sample_stats : xarray.Dataset, optional
        Replaces ``base``'s sample_stats.
    base : arviz.InferenceData, optional
        The sampler's own InferenceData (other groups kept, posterior replaced).
    effect_sampler, smoothing, grid
        See :class:`GPFit`.
    label : str
        Name in log messages.

    Returns
    -------
    GPFit
    """
    const, obs = _constant_data(y, sites, scale)
    groups = {"posterior": posterior, "constant_data": const, "observed_data": obs}
    if sample_stats is not None:
        groups["sample_stats"] = sample_stats
    if base is not None:  # the sampler's own InferenceData: its other groups kept
        for name, ds in groups.items():
            if name in base.groups():
                setattr(base, name, ds)
            else:
                base.add_groups({name: ds})
        groups = {name: base[name] for name in base.groups()
                  if name in ("posterior", "sample_stats", "constant_data", "observed_data")}
    conv = (grid_convergence(groups["posterior"], engine) if engine.get("sampler") == "grid"
            else check_convergence(groups["posterior"], groups.get("sample_stats")))
    if not conv.passed:
        log.warning("%s: posterior problems: %s", label, "; ".join(conv.problems))
    return GPFit(groups=groups, scale=np.asarray(scale, float), priors=priors,
                 convergence=conv, seconds=seconds, engine=engine,
                 effect_sampler=effect_sampler, smoothing=smoothing, grid=grid,
                 sampler_idata=base)


#: Grid fits: the importance weights' Kish ESS must be at least this share of the points.
MIN_IMPORTANCE_ESS_FRACTION = 0.5


def grid_convergence(posterior: xr.Dataset, engine: dict,
                     min_draws_per_chain: float = 100.0) -> Convergence:
    """Posterior checks of a grid fit: the grid's own and the importance ESS of its draws.

    The draws are independent (importance resampling from the grid's continuous posterior,
    no Markov chain), so R-hat is not defined (reported as NaN) and an autocorrelation ESS
    would only count the draws. What limits their information is the number of distinct
    (range, nugget) points and their importance weights: the Kish ESS of the weights
    (``engine["importance_ess"]``) is reported as every parameter's ESS — the ESS of the range
    and the nugget share, a lower bound for σ², τ² and β, which are drawn afresh at every
    draw. Checks: the grid's (``engine["grid_problems"]``: cell and edge mass), an importance
    ESS of at least :data:`MIN_IMPORTANCE_ESS_FRACTION` of the points, and at least
    ``min_draws_per_chain`` draws per chain (as NUTS fits need ``min_ess_per_chain``; an
    autocorrelation ESS of independent draws is their number, which is what ArviZ's check
    came to here before issue 13).

    Parameters
    ----------
    posterior : xarray.Dataset
        A grid fit's draws, dims (chain, draw, ...).
    engine : dict
        Its ``engine`` (:func:`synthgeo.inference.grid.grid_diagnostics`): ``grid_problems``,
        ``importance_ess``, ``theta_points``.
    min_draws_per_chain : float, default=100

    Returns
    -------
    Convergence

    Examples
    --------
    >>> from synthgeo.testing import fake_fit
    >>> engine = {"importance_ess": 80.0, "theta_points": 100, "grid_problems": []}
    >>> grid_convergence(fake_fit(n_draw=50).posterior, engine).problems
    ['50 draws per chain < 100: raise `[sampling] draws`']
    """
    ess, points = engine.get("importance_ess"), engine.get("theta_points")
    ess = float("nan") if ess is None else float(ess)
    names = [n for n in HYPER_PARAMETERS if n in posterior]
    table = pd.DataFrame({"r_hat": np.nan, "ess_bulk": ess, "ess_tail": ess}, index=names)
    problems = list(engine.get("grid_problems", []))
    if points is not None and not ess >= MIN_IMPORTANCE_ESS_FRACTION * points:
        problems.append(f"importance ESS {ess:.0f} < {MIN_IMPORTANCE_ESS_FRACTION} x {points} "
                        "(range, nugget) points: the grid did not resolve the posterior")
    n_draw = posterior.sizes["draw"]
    if n_draw < min_draws_per_chain:
        problems.append(f"{n_draw} draws per chain < {min_draws_per_chain:.0f}: raise "
                        "`[sampling] draws`")
    return Convergence(table=table, n_divergent=0, max_r_hat=float("nan"),
                       min_ess_bulk=ess, min_ess_tail=ess, passed=not problems,
                       problems=problems, method=GRID_METHOD)


def grid_diagnostics_table(fits: dict[str, GPFit]) -> pd.DataFrame | None:
    """Return the grid's diagnostics per fit as a table for the report (None: no grid fit).

    Columns: ``model``, ``engine``, ``cells`` (evaluated), ``grids``, ``largest cell mass``,
    ``edge mass``, ``draws``, ``(range, nugget) points``, ``importance ESS``,
    ``distinct ranges``, ``problems``.
    """
    rows = []
    for name, fit in fits.items():
        e = fit.engine
        if e.get("sampler") != "grid":
            continue
        post = fit.posterior
        rows.append({
            "model": name, "engine": f"grid, {e['gp']} GP",
            "cells": e["grid_evaluations"], "grids": len(e["grid_stages"]),
            "largest cell mass": e["max_cell_mass"], "edge mass": e["edge_mass"],
            "draws": post.sizes["chain"] * post.sizes["draw"],
            "(range, nugget) points": e["theta_points"],
            "importance ESS": round(e["importance_ess"], 1),
            "distinct ranges": int(np.unique(post["range"].values).size),
            "problems": "; ".join(fit.convergence.problems) or "none",
        })
    return pd.DataFrame(rows) if rows else None
