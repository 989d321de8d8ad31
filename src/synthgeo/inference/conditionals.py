"""Exact draws of β and the spatial effects w given the hyper-parameters.

The PyMC model samples the collapsed posterior of θ = (σ², τ², φ); for each retained draw this
module draws (β, w) from p(β, w | θ, y) exactly, the way spBayes' ``spRecover`` does:

1. β | θ, y ~ N(m, C),  C = (V_β⁻¹ + XᵀΣ⁻¹X)⁻¹,  m = C(V_β⁻¹ μ_β + XᵀΣ⁻¹y),
   Σ = σ² A D R D Aᵀ + τ² I.
2. w | β, θ, y ~ N(Q⁻¹ D Aᵀ(y − Xβ)/τ², Q⁻¹),  Q = (σ²R)⁻¹ + D AᵀA D/τ²  (docs/inference.md),
   drawn without forming R⁻¹ by conditioning a prior draw (Matheron's rule; Wilson et al. 2020,
   ICML, "Efficiently sampling functions from Gaussian process posteriors")::

       w₀ ~ N(0, σ²R),  e₀ ~ N(0, τ²I),
       w = w₀ + σ² R D Aᵀ Σ⁻¹ (y − Xβ − A D w₀ − e₀)

   which has exactly the full-conditional law above, and stays well defined where D_ss = 0:
   there w_s follows its prior given the other sites (its "kriged" value plus noise).

Every posterior draw takes its normals from its own generator (:func:`draw_generators`): the
grid route keys them by the draw's flattened (chain, draw) index, so that draw d of two models
fitted with one seed (the unrestricted and the restricted one) uses the same z and e₀, and the
difference of their effects is the models', not the sampler's (common random numbers;
docs/inference.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr
from scipy.linalg import solve_triangular

from synthgeo._progress import progress_iter
from synthgeo._seed import keyed_seeds
from synthgeo.inference.factor import cho_factor, cho_solve
from synthgeo.inference.quadrature import thread_map
from synthgeo.model.kernels import Sites, exponential_correlation, one_record_per_site
from synthgeo.model.restricted_gp import GPPriors
from synthgeo.model.smoothing import scale_function

__all__ = ["recover_effects", "draw_effects_exact", "draw_generators", "JITTER"]

#: Relative jitter added to σ²R's diagonal before its Cholesky (R is positive definite over
#: distinct sites; the jitter only guards round-off for sites a few metres apart).
JITTER = 1e-8


def draw_generators(random_seed, n_draws: int) -> list[np.random.Generator]:
    """One generator per posterior draw.

    Parameters
    ----------
    random_seed : int, Generator, SeedSequence, None, or sequence of such
        A sequence of ``n_draws`` seeds: draw j's generator is ``default_rng(random_seed[j])``
        (the caller keys them, e.g. by flattened posterior index); otherwise one root whose
        children :func:`synthgeo._seed.keyed_seeds` ``(root, range(n_draws))`` seed the draws.
    n_draws : int

    Returns
    -------
    list of numpy.random.Generator

    Raises
    ------
    ValueError
        If a sequence of seeds does not have ``n_draws`` items.

    Examples
    --------
    >>> g = draw_generators([np.random.SeedSequence(1), 7], 2)
    >>> float(g[1].standard_normal()) == float(np.random.default_rng(7).standard_normal())
    True
    """
    if isinstance(random_seed, Sequence) and not isinstance(random_seed, (str, bytes)):
        if len(random_seed) != n_draws:
            raise ValueError(f"`random_seed` holds {len(random_seed)} per-draw seeds for "
                             f"{n_draws} draws; give one per draw or a single root seed")
        return [np.random.default_rng(s) for s in random_seed]
    return [np.random.default_rng(s) for s in keyed_seeds(random_seed, range(n_draws))]


def _noise_var(sigma2: float, nugget: float, n: int, extra, nugget_weight=None) -> np.ndarray:
    """Per-record noise variance τ² ω_i + σ² extra_i.

    extra: ``at_risk_nugget = "marginal"``; ω (``nugget_weight``): the pseudo-likelihood's
    1/α_i (default 1).
    """
    tau2 = nugget if nugget_weight is None else nugget * np.asarray(nugget_weight, float)
    return tau2 + (0.0 if extra is None else sigma2 * np.asarray(extra, float)) * np.ones(n)


def _factor(dist_km, idx, d, sigma2: float, nugget: float, phi_km: float, extra=None,
            nugget_weight=None):
    """σ²R (S, S), σ²RD and the Cholesky factor of Σ = σ² A D R D Aᵀ + diag(noise)."""
    K = sigma2 * exponential_correlation(dist_km, phi_km)  # σ²R over sites, (S, S)
    unscaled = bool(np.all(d == 1.0))
    KD = K if unscaled else K * d[None, :]  # σ² R D (the same array when D = I)
    # D R D as K ∘ (d dᵀ): exactly symmetric (d_i (K_ij d_j) is not, to rounding), as LAPACK
    # reads one triangle of it
    DKD = KD.copy() if unscaled else K * np.outer(d, d)
    Sigma = DKD if one_record_per_site(idx, K.shape[0]) else DKD[np.ix_(idx, idx)]
    Sigma[np.diag_indices(idx.size)] += _noise_var(sigma2, nugget, idx.size, extra,
                                                   nugget_weight)
    # in place, without the GIL (the draws run in threads)
    return K, KD, cho_factor(Sigma, check_finite=False)


def _draw_one(
    rng: np.random.Generator,
    y: np.ndarray,
    X: np.ndarray,
    dist_km: np.ndarray,
    idx: np.ndarray,
    d: np.ndarray,
    sigma2: float,
    nugget: float,
    phi_km: float,
    priors: GPPriors,
    prior_form: str = "independent",
    extra=None,
) -> tuple[np.ndarray, np.ndarray]:
    p = X.shape[1]
    K, KD, cf = _factor(dist_km, idx, d, sigma2, nugget, phi_km, extra)
    v_beta = (sigma2 * priors.beta_v_scale() if prior_form == "conjugate"
              else priors.beta_sd**2)
    SiX = cho_solve(cf, X)
    prec = np.eye(p) / v_beta + X.T @ SiX
    rhs = priors.beta_mean * np.ones(p) / v_beta + SiX.T @ y
    Lp = np.linalg.cholesky(prec)
    mean = cho_solve((np.asfortranarray(Lp), True), rhs)
    beta = mean + solve_triangular(Lp.T, rng.standard_normal(p), lower=False)
    z, e0 = _prior_noise(rng, K.shape[0], y.shape[0], sigma2, nugget, extra)
    w = _w_given_beta(z, e0, y - X @ beta, K, KD, d, idx, cf, sigma2)
    return beta, w


def _prior_noise(rng, n_sites: int, n: int, sigma2: float, nugget: float, extra=None,
                 nugget_weight=None):
    """Draw the standard normals of w₀ (S,) and the noise e₀ (N,) of Matheron's rule, in order."""
    z = rng.standard_normal(n_sites)
    return z, rng.normal(0.0, np.sqrt(_noise_var(sigma2, nugget, n, extra, nugget_weight)), n)


def _w_given_beta(z, e0, resid_beta, K, KD, d, idx, cf, sigma2):
    """Matheron's rule: w | β, θ, y for residual y − Xβ (cf: Cholesky of Σ).

    ``z``: standard normals of the prior draw w₀ = L z (S,); ``e0``: the noise draw (N,).
    """
    S = K.shape[0]
    Kj = K.copy()  # K + JITTER σ² I, without an identity matrix's worth of allocation
    Kj[np.diag_indices(S)] += JITTER * sigma2
    w0 = np.linalg.cholesky(Kj) @ z
    resid = resid_beta - (d * w0)[idx] - e0
    alpha = cho_solve(cf, resid)  # Σ⁻¹(...), (N,)
    At_alpha = np.bincount(idx, weights=alpha, minlength=S)  # Aᵀ α
    return w0 + KD @ At_alpha


def draw_effects_exact(
    draws: dict[str, np.ndarray],
    y: np.ndarray,
    X: np.ndarray,
    sites: Sites,
    *,
    scale: np.ndarray,
    random_seed: int | np.random.Generator | None = None,
    extra: np.ndarray | None = None,
    nugget_weight: np.ndarray | None = None,
) -> np.ndarray:
    """Draw w | β, θ, y at every site, exactly (dense; Matheron's rule), for given draws.

    Parameters
    ----------
    draws : dict
        ``sigma2`` (L,), ``alpha`` (L,) = τ²/σ², ``phi_km`` (L,) in 1/km, ``beta`` (L, p).
    y, X, sites
        As :func:`recover_effects`.
    scale : ndarray of shape (S,) or Smoothing
        D's diagonal, or a :class:`~synthgeo.model.smoothing.Smoothing` evaluated at each
        draw's α (γ = "auto").
    random_seed : int, Generator, SeedSequence, None, or sequence of them
        A root, or one seed per draw (:func:`draw_generators`): draw j's normals (z of w₀,
        then e₀) come from its own generator, so a draw does not depend on the others.
    extra : ndarray of shape (N,), optional
        Extra noise variance per record in units of σ² (``[model] at_risk_nugget =
        "marginal"``: 1 at records of sites with d = 0).
    nugget_weight : ndarray of shape (N,), optional
        ω_i: record i's noise variance is τ² ω_i (the pseudo-likelihood's 1/α_i; the full
        conditional of w is then that of the weighted likelihood).

    Returns
    -------
    ndarray of shape (L, S)
        w on the model scale, before the D scaling.
    """
    d_of = scale_function(scale, sites.n_sites)
    dist_km = sites.distance_km()
    idx = sites.site_index
    n_draws = draws["sigma2"].shape[0]
    rngs = draw_generators(random_seed, n_draws)
    sigma2 = np.asarray(draws["sigma2"], float)
    nugget = np.asarray(draws["alpha"], float) * sigma2
    # every random number first, each draw from its own generator, so that threads cannot
    # change the result
    noise = [_prior_noise(rngs[j], sites.n_sites, y.shape[0], float(sigma2[j]),
                          float(nugget[j]), extra, nugget_weight) for j in range(n_draws)]

    def one(j: int) -> np.ndarray:
        d = d_of(float(draws["alpha"][j]))
        K, KD, cf = _factor(dist_km, idx, d, float(sigma2[j]), float(nugget[j]),
                            float(draws["phi_km"][j]), extra, nugget_weight)
        return _w_given_beta(*noise[j], y - X @ draws["beta"][j], K, KD, d, idx, cf,
                             float(sigma2[j]))

    out = np.empty((n_draws, sites.n_sites))
    for j, w in enumerate(thread_map()(one, list(range(n_draws)))):
        out[j] = w
    return out


def recover_effects(
    posterior: xr.Dataset,
    y: np.ndarray,
    X: np.ndarray,
    sites: Sites,
    *,
    scale: np.ndarray,
    priors: GPPriors,
    coef_names: list[str],
    random_seed: int | np.random.Generator | None = None,
    progressbar: bool = False,
    desc: str = "recover β, w",
    prior_form: str = "independent",
    extra: np.ndarray | None = None,
) -> xr.Dataset:
    """Draw β and w at every site for every retained posterior draw.

    Parameters
    ----------
    posterior : xarray.Dataset
        Posterior group with ``sigma2``, ``nugget`` (response units²) and ``range_km`` (effective
        range, km), dims (chain, draw).
    y : ndarray of shape (n_records,)
        Response on the model scale.
    X : ndarray of shape (n_records, n_coef)
        Design matrix.
    sites : Sites
        Sites (metres) and record-to-site map.
    scale : ndarray of shape (n_sites,)
        Diagonal of D used in the fit.
    priors : GPPriors
        Priors (β's normal prior enters the β draw).
    coef_names : list of str
        Names for the ``coef`` dimension.
    random_seed : int, Generator or None
        Seed.
    progressbar : bool, default=False
        tqdm bar over the draws on stderr.
    desc : str
        The bar's label.
    prior_form : {"independent", "conjugate"}
        β's prior: N(beta_mean, beta_sd² I), or the grid route's N(beta_mean, σ² v I)
        (see :func:`synthgeo.model.restricted_gp.build_model`).
    extra : ndarray of shape (n_records,), optional
        Extra noise variance per record in units of σ² (see :func:`draw_effects_exact`).

    Returns
    -------
    xarray.Dataset
        ``beta`` (chain, draw, coef) and ``w`` (chain, draw, site): w on the model scale,
        *before* the D scaling (the effect entering the data is ``scale * w``).
    """
    rng = np.random.default_rng(random_seed)
    d = np.asarray(scale, dtype=float)
    dist_km = sites.distance_km()
    idx = sites.site_index
    n_chain, n_draw = posterior.sizes["chain"], posterior.sizes["draw"]
    beta = np.empty((n_chain, n_draw, X.shape[1]))
    w = np.empty((n_chain, n_draw, sites.n_sites))
    s2 = posterior["sigma2"].values
    t2 = posterior["nugget"].values
    phi = 3.0 / posterior["range_km"].values
    pairs = [(c, j) for c in range(n_chain) for j in range(n_draw)]
    for c, j in progress_iter(pairs, enabled=progressbar, desc=desc, unit="draw"):
        beta[c, j], w[c, j] = _draw_one(
            rng, y, X, dist_km, idx, d, s2[c, j], t2[c, j], phi[c, j], priors, prior_form,
            extra,
        )
    coords = {"chain": posterior["chain"].values, "draw": posterior["draw"].values}
    return xr.Dataset(
        {
            "beta": (("chain", "draw", "coef"), beta),
            "w": (("chain", "draw", "site"), w),
        },
        coords={**coords, "coef": coef_names, "site": np.arange(sites.n_sites)},
    )
