"""Seeded simulated data for tests, benchmarks and examples."""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.spatial.distance import cdist

from synthgeo.model.kernels import exponential_correlation

__all__ = ["simulate_gp", "fake_fitter", "fake_release_result", "fake_spec", "clustered_points",
           "fake_fit", "reiter_agreement"]


def simulate_gp(
    n: int = 100,
    *,
    beta: tuple[float, ...] = (1.0, 0.5),
    sigma2: float = 4.0,
    nugget: float = 0.0625,
    phi_per_m: float = 12.7e-3,
    extent_m: float = 1000.0,
    random_seed: int | np.random.Generator | None = 0,
) -> dict[str, np.ndarray]:
    """Draw one data set from the unrestricted exponential GP regression.

    Parameters
    ----------
    n : int, default=100
        Number of records, uniformly located on a square of side ``extent_m`` metres.
    beta : tuple of float, default=(1.0, 0.5)
        Intercept and slopes; covariates are standard normal.
    sigma2, nugget : float
        Partial sill σ² and nugget τ² (response units²).
    phi_per_m : float, default=0.0127
        Decay φ in 1/metre (the paper's φ = 12.7 on the unit square, with unit = 1 km).
    extent_m : float, default=1000
        Side of the square, metres.
    random_seed : int, Generator or None
        Seed.

    Returns
    -------
    dict
        ``coords_m`` (n, 2), ``X`` (n, p) with intercept, ``y`` (n,), ``w`` (n,).
    """
    rng = np.random.default_rng(random_seed)
    coords = rng.uniform(0, extent_m, size=(n, 2))
    X = np.column_stack([np.ones(n), rng.standard_normal((n, len(beta) - 1))])
    R = exponential_correlation(cdist(coords, coords), phi_per_m)
    w = np.linalg.cholesky(sigma2 * R + 1e-10 * np.eye(n)) @ rng.standard_normal(n)
    y = X @ np.asarray(beta) + w + rng.normal(0, np.sqrt(nugget), n)
    return {"coords_m": coords, "X": X, "y": y, "w": w}


def fake_fitter(*, n_draws: int = 300, random_seed: int = 0):
    """Return a fitter that replaces sampling by fixed, data-scaled draws (tests, examples).

    The returned function has the :data:`synthgeo.pipeline.Fitter` signature. It draws the
    hyper-parameters independently from a fixed log-normal distribution (σ² and τ² around half
    the OLS residual variance, the effective range around the geometric mean of its prior
    bounds, each with log-sd 0.2), stratified (each of 2 chains holds the same normal quantiles
    in a random order) so that the convergence checks pass. Everything after sampling is
    synthgeo's own code: exact recovery of β and w, the at-risk rule, synthesis, risk and
    utility. The numbers are not a posterior.

    Parameters
    ----------
    n_draws : int, default=300
        Draws per chain (2 chains); 300 gives R-hat < 1.01 and ESS above the release
        thresholds.
    random_seed : int, default=0
        Seed of the fake hyper-parameter draws (the spec's seed drives the rest). The
        generator advances with each fit, so use a new fitter per job for repeatable jobs.

    Returns
    -------
    callable
        ``fit(y, X, sites, *, priors, coef_names, scale=None, random_seed=None, **ignored)
        -> GPFit``.

    Examples
    --------
    >>> fit = fake_fitter(n_draws=50)
    >>> callable(fit)
    True
    """
    import xarray as xr
    from scipy.stats import norm
    from threadpoolctl import threadpool_limits

    from synthgeo.inference.conditionals import recover_effects
    from synthgeo.inference.result import build_fit
    from synthgeo.model.kernels import METRES_PER_KM
    from synthgeo.model.smoothing import Smoothing

    rng = np.random.default_rng(random_seed)
    quantiles = norm.ppf((np.arange(n_draws) + 0.5) / n_draws)

    def z() -> np.ndarray:  # (2, n_draws) stratified standard normal draws
        return np.stack([rng.permutation(quantiles) for _ in range(2)])

    def fake_fit_gp(y, X, sites, *, priors, coef_names, scale=None, random_seed=None,
                    **_ignored):
        s2 = priors.sigma2_scale  # half the OLS residual variance
        centre_range = np.sqrt(priors.range_min_m * priors.range_max_m)
        chain_draw = {"chain": [0, 1], "draw": np.arange(n_draws)}
        post = xr.Dataset(
            {"sigma2": (("chain", "draw"), s2 * np.exp(0.2 * z())),
             "nugget": (("chain", "draw"), s2 * np.exp(0.2 * z())),
             "range_km": (("chain", "draw"),
                          centre_range / METRES_PER_KM * np.exp(0.2 * z()))},
            coords=chain_draw,
        )
        extra, engine = None, {"sampler": "nutpie", "gp": "exact"}
        if isinstance(scale, Smoothing):  # the fake posterior has no nugget ratio per cell
            extra = scale.extra_variance(sites.site_index)
            if extra is not None:
                engine["at_risk_nugget"] = "marginal"
            scale = scale.scale() if not scale.depends_on_nugget else scale.scale(0.5)
        d = np.ones(sites.n_sites) if scale is None else np.asarray(scale, float)
        post["range"] = post["range_km"] * METRES_PER_KM
        post["phi"] = 3.0 / post["range"]
        with threadpool_limits(limits=1):  # as fit_gp: multi-threaded BLAS is far slower here
            effects = recover_effects(post, y, X, sites, scale=d, priors=priors,
                                      coef_names=coef_names, random_seed=random_seed,
                                      extra=extra)
        post = post.drop_vars("range_km").merge(effects)
        stats = xr.Dataset({"diverging": (("chain", "draw"), np.zeros((2, n_draws), bool))},
                           coords={"chain": [0, 1], "draw": np.arange(n_draws)})
        return build_fit(post, y=y, sites=sites, scale=d, priors=priors, sample_stats=stats,
                         seconds={"compile": 0.0, "sample": 0.0, "recover": 0.0},
                         engine=engine)

    return fake_fit_gp


def fake_release_result(
    spec=None,
    *,
    n_draws: int = 300,
    n_implicates: int = 20,
    random_seed: int = 0,
):
    """Build a :class:`~synthgeo.pipeline.ReleaseResult` in seconds: the pipeline without NUTS.

    Runs :func:`synthgeo.pipeline.run_release` with :func:`fake_fitter` as the fitter, with
    2 chains of `n_draws` and `n_implicates` implicates. For tests of the report and the
    release writer; the numbers are not a posterior.

    Parameters
    ----------
    spec : ReleaseSpec, optional
        Default: the bundled Sacramento spec.
    n_draws : int, default=300
        Draws per chain (see :func:`fake_fitter`).
    n_implicates : int, default=20
        L.
    random_seed : int, default=0
        Seed of the fake hyper-parameter draws (the spec's seed drives the rest).

    Returns
    -------
    ReleaseResult
    """
    import warnings

    from synthgeo.config import bundled_spec_path, load_spec
    from synthgeo.pipeline import run_release

    spec = fake_spec(spec or load_spec(bundled_spec_path()), n_draws=n_draws,
                     n_implicates=n_implicates)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the bundled file's known duplicate
        return run_release(spec, fitter=fake_fitter(n_draws=n_draws, random_seed=random_seed))


def fake_spec(spec, *, n_draws: int = 300, n_implicates: int = 20):
    """`spec` with the ``[sampling]`` and ``[synthesis]`` keys :func:`fake_release_result` uses.

    2 chains of `n_draws` (tune 10), ``on_convergence_failure = "warn"``, `n_implicates`.

    Examples
    --------
    >>> from synthgeo.config import bundled_spec_path, load_spec
    >>> spec = fake_spec(load_spec(bundled_spec_path()), n_draws=100, n_implicates=5)
    >>> spec.sampling.draws, spec.sampling.on_convergence_failure, spec.synthesis.n_implicates
    (100, 'warn', 5)
    """
    sampling = dataclasses.replace(spec.sampling, chains=2, draws=n_draws, tune=10,
                                   on_convergence_failure="warn")
    synthesis = dataclasses.replace(spec.synthesis, n_implicates=n_implicates)
    return dataclasses.replace(spec, sampling=sampling, synthesis=synthesis)  # checked together


def clustered_points(
    n: int,
    *,
    n_clusters: int = 20,
    cluster_sd_m: float = 500.0,
    clustered_share: float = 0.7,
    extent_m: float = 50_000.0,
    random_seed: int | np.random.Generator | None = 0,
) -> np.ndarray:
    """Seeded city-like layout: Gaussian clusters plus uniform background (benchmarks, tests).

    Parameters
    ----------
    n : int
        Number of points.
    n_clusters : int, default=20
        Cluster centres, uniform over the square.
    cluster_sd_m : float, default=500
        Standard deviation of each cluster, metres (isotropic).
    clustered_share : float, default=0.7
        Share of points in clusters (each assigned a centre at random); the rest are uniform.
    extent_m : float, default=50000
        Side of the square, metres (clustered points may fall slightly outside it).
    random_seed : int, Generator or None
        Seed.

    Returns
    -------
    ndarray of shape (n, 2)
        Coordinates in metres.
    """
    rng = np.random.default_rng(random_seed)
    n_c = int(round(clustered_share * n))
    centres = rng.uniform(0, extent_m, size=(n_clusters, 2))
    clustered = centres[rng.integers(0, n_clusters, n_c)] + rng.normal(0, cluster_sd_m, (n_c, 2))
    background = rng.uniform(0, extent_m, size=(n - n_c, 2))
    return np.vstack([clustered, background])


def fake_fit(n_chain: int = 2, n_draw: int = 50, n_site: int = 3, *, nugget: float = 1e-12,
             scale=(1.0, 0.0, 1.0), site_index=(0, 1, 1, 2), random_seed: int = 0):
    """Return a :class:`~synthgeo.inference.result.GPFit` of random numbers (not a posterior).

    For tests and examples of what comes after a fit (synthesis, risk): ``beta`` (2 coefs),
    ``w``, ``sigma2``, ``range`` and ``phi`` drawn at random, ``nugget`` constant.

    Parameters
    ----------
    n_chain, n_draw, n_site : int
    nugget : float, default=1e-12
        τ² of every draw.
    scale : sequence of float of length n_site
        D's diagonal.
    site_index : sequence of int
        Site of each record (its length is the number of records).
    random_seed : int, default=0

    Returns
    -------
    GPFit

    Examples
    --------
    >>> fake_fit().idata.posterior["w"].shape
    (2, 50, 3)
    """
    import xarray as xr

    from synthgeo.inference.result import GPFit, check_convergence

    rng = np.random.default_rng(random_seed)
    shape = (n_chain, n_draw)
    post = xr.Dataset({
        "beta": (("chain", "draw", "coef"), rng.normal(size=(*shape, 2))),
        "w": (("chain", "draw", "site"), rng.normal(size=(*shape, n_site))),
        "nugget": (("chain", "draw"), np.full(shape, nugget)),
        "sigma2": (("chain", "draw"), rng.gamma(2, size=shape)),
        "range": (("chain", "draw"), rng.gamma(2, size=shape)),
    }, coords={"chain": range(n_chain), "draw": range(n_draw), "coef": ["a", "b"]})
    post["phi"] = 3.0 / post["range"]
    groups = {
        "posterior": post,
        "sample_stats": xr.Dataset({"diverging": (("chain", "draw"), np.zeros(shape, bool))}),
        "constant_data": xr.Dataset({"site_index": ("record", list(site_index)),
                                     "scale": ("site", list(scale))}),
    }
    return GPFit(groups=groups, scale=np.asarray(scale, float), priors=None,
                 convergence=check_convergence(post, groups["sample_stats"]), seconds={})


def _ols_per_implicate(frames, response: str, covariates: list[str]):
    """q_l (coefficients, intercept first) and u_l (their squared OLS se) per implicate."""
    q, u = [], []
    for f in frames:
        X = np.column_stack([np.ones(len(f)), *(f[c].to_numpy(float) for c in covariates)])
        y = f[response].to_numpy(float)
        beta, rss, *_ = np.linalg.lstsq(X, y, rcond=None)
        s2 = float(rss[0]) / (len(y) - X.shape[1])
        q.append(beta)
        u.append(s2 * np.diag(np.linalg.inv(X.T @ X)))
    return np.array(q), np.array(u)


def reiter_agreement(frames_a, frames_b, *, response: str, covariates: list[str]) -> dict:
    """Compare Reiter's rules over two sets of implicates, in Monte Carlo standard errors.

    The analyst's OLS ``response ~ covariates`` on every implicate (q_l, u_l), combined with
    :func:`synthgeo.utility.reiter.combine_reiter` for each set; each difference of q_bar,
    b_m, u_bar and T_p is divided by its Monte Carlo se with the two sets taken as
    independent (sets that share posterior draws are closer than that): q_bar and u_bar from
    the per-implicate variances of q_l and u_l over m, b_m from the normal-theory se
    b_m (2 / (m − 1))^½ (Reiter 2003's b_m is a sample variance of m estimates), T_p =
    u_bar + b_m/m from those two.

    Parameters
    ----------
    frames_a, frames_b : list of pandas.DataFrame
        One frame per implicate, with ``response`` and ``covariates``.
    response : str
    covariates : list of str

    Returns
    -------
    dict
        ``m`` (the two counts) and, per quantity, ``a`` and ``b`` (one value per coefficient,
        intercept first) and ``diff_in_se``.

    Examples
    --------
    >>> import pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=50)
    >>> sets = [[pd.DataFrame({"x": x, "y": x + rng.normal(size=50)}) for _ in range(20)]
    ...         for _ in range(2)]
    >>> out = reiter_agreement(*sets, response="y", covariates=["x"])
    >>> bool(np.all(np.abs(out["q_bar"]["diff_in_se"]) < 4))
    True
    """
    from synthgeo.utility.reiter import combine_reiter

    (q1, u1), (q2, u2) = (_ols_per_implicate(f, response, covariates)
                          for f in (frames_a, frames_b))
    a, b = combine_reiter(q1, u1), combine_reiter(q2, u2)
    m1, m2 = q1.shape[0], q2.shape[0]
    var_b = a.b_m**2 * 2 / (m1 - 1), b.b_m**2 * 2 / (m2 - 1)
    var_u = u1.var(0, ddof=1) / m1 + u2.var(0, ddof=1) / m2
    se = {"q_bar": np.sqrt(q1.var(0, ddof=1) / m1 + q2.var(0, ddof=1) / m2),
          "u_bar": np.sqrt(var_u), "b_m": np.sqrt(var_b[0] + var_b[1]),
          "T_p": np.sqrt(var_u + var_b[0] / m1**2 + var_b[1] / m2**2)}
    out: dict = {"m": (m1, m2)}
    for name in ("q_bar", "b_m", "u_bar", "T_p"):
        x, y = np.asarray(getattr(a, name)), np.asarray(getattr(b, name))
        out[name] = {"a": x.tolist(), "b": y.tolist(), "diff_in_se": ((x - y) / se[name]).tolist()}
    return out
