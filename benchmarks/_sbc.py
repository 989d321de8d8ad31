"""Simulation-based calibration of the grid route (Talts et al. 2018, arXiv:1804.06788).

Truth drawn from the grid route's own *fixed* prior (σ²'s scale fixed, not scaled from the
data: a data-scaled prior makes the check invalid), data simulated from the model, the grid
fitted, and the rank of the truth among the posterior draws recorded for σ², τ², range, nugget
share, β₀ and β₁. Under a correct posterior every rank is uniform on 0..n_draws. Used by
``bench_calibration.py`` and ``tests/test_calibration.py``.
"""

from __future__ import annotations

import numpy as np
from scipy import stats
from scipy.spatial.distance import cdist

from synthgeo.config import SamplingConfig
from synthgeo.inference.grid import fit_gp_grid
from synthgeo.inference.grid_posterior import GridSettings
from synthgeo.model.kernels import exponential_correlation, make_sites
from synthgeo.model.restricted_gp import GPPriors

PARAMETERS = ("sigma2", "nugget", "range", "nugget_share", "beta0", "beta1")

#: Fixed priors of the calibration study (metres; σ²'s scale fixed).
PRIORS = GPPriors(beta_mean=0.0, beta_sd=1.0, sigma2_shape=2.0, sigma2_scale=1.0,
                  nugget_sd_scale=1.0, range_min_m=50.0, range_max_m=1500.0)
NUGGET_SHARE = (1e-4, 0.999)


def layout(n: int, seed: int = 0):
    """Fixed sites (uniform on a 1 km square) and design [1, x], x standard normal."""
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 1000.0, size=(n, 2))
    X = np.column_stack([np.ones(n), rng.standard_normal(n)])
    return make_sites(xy), X


def draw_truth(rng: np.random.Generator, p: int) -> dict[str, float | np.ndarray]:
    """One draw from the grid route's prior."""
    sigma2 = float(PRIORS.sigma2_scale / rng.gamma(PRIORS.sigma2_shape))
    share = float(rng.uniform(*NUGGET_SHARE))
    rng_m = float(rng.uniform(PRIORS.range_min_m, PRIORS.range_max_m))
    v = PRIORS.beta_v_scale()
    beta = PRIORS.beta_mean + np.sqrt(sigma2 * v) * rng.standard_normal(p)
    return {"sigma2": sigma2, "nugget": sigma2 * share / (1 - share), "range": rng_m,
            "nugget_share": share, "beta": beta}


def simulate(rng, sites, X, truth) -> np.ndarray:
    """y = Xβ + w + e from the truth."""
    R = exponential_correlation(cdist(sites.coords_m, sites.coords_m), 3.0 / truth["range"])
    L = np.linalg.cholesky(truth["sigma2"] * R + 1e-10 * np.eye(sites.n_sites))
    w = L @ rng.standard_normal(sites.n_sites)
    e = rng.normal(0.0, np.sqrt(truth["nugget"]), X.shape[0])
    return X @ truth["beta"] + w[sites.site_index] + e


def ranks_one(rng, sites, X, *, n_draws: int, rule: str, settings: GridSettings | None = None):
    """(ranks per parameter, grid problems) for one prior draw."""
    truth = draw_truth(rng, X.shape[1])
    y = simulate(rng, sites, X, truth)
    if settings is None:  # the old rule with its old layout, the new one with the default
        settings = (GridSettings(rule="lattice", n_coarse=14, n_fine=18) if rule == "lattice"
                    else GridSettings())
    s = GridSettings(**{**{f: getattr(settings, f) for f in settings.__dataclass_fields__},
                        "rule": rule})
    fit = fit_gp_grid(y, X, sites, priors=PRIORS, coef_names=["b0", "b1"], gp="exact",
                      config=SamplingConfig(chains=1, draws=n_draws,
                                           on_convergence_failure="warn"),
                      settings=s, random_seed=int(rng.integers(2**31)))
    post = fit.idata.posterior
    draws = {
        "sigma2": post["sigma2"].values.ravel(), "nugget": post["nugget"].values.ravel(),
        "range": post["range"].values.ravel(),
        "nugget_share": (post["nugget"] / (post["sigma2"] + post["nugget"])).values.ravel(),
        "beta0": post["beta"].values[..., 0].ravel(), "beta1": post["beta"].values[..., 1].ravel(),
    }
    want = {**{k: truth[k] for k in ("sigma2", "nugget", "range", "nugget_share")},
            "beta0": truth["beta"][0], "beta1": truth["beta"][1]}
    ranks = {k: int(np.sum(draws[k] < want[k])) for k in PARAMETERS}
    return ranks, list(fit.engine["grid_problems"])


def sbc(n_reps: int, *, n_records: int = 60, n_draws: int = 199, rule: str = "midpoint",
        seed: int = 2018, settings: GridSettings | None = None) -> dict:
    """Run the study; every rule sees the same data sets for one seed.

    Returns
    -------
    dict
        ``ranks`` {parameter: ndarray (n_reps,)}, ``grid_failures`` (fits whose grid checks
        failed), ``n_reps``, ``n_draws``.
    """
    sites, X = layout(n_records, seed)
    rng = np.random.default_rng(seed)
    out = {k: [] for k in PARAMETERS}
    failures = 0
    for _ in range(n_reps):
        ranks, problems = ranks_one(np.random.default_rng(rng.integers(2**63)), sites, X,
                                    n_draws=n_draws, rule=rule, settings=settings)
        failures += bool(problems)
        for k in PARAMETERS:
            out[k].append(ranks[k])
    return {"ranks": {k: np.asarray(v) for k, v in out.items()}, "grid_failures": failures,
            "n_reps": n_reps, "n_draws": n_draws}


def chi2_uniform(ranks: np.ndarray, n_draws: int, n_bins: int = 20) -> float:
    """p-value of Pearson's χ² test that ranks in 0..n_draws are uniform over ``n_bins`` bins.

    ``n_draws + 1`` must be divisible by ``n_bins`` (equal bins).
    """
    if (n_draws + 1) % n_bins:
        raise ValueError(f"n_draws + 1 = {n_draws + 1} is not divisible by {n_bins} bins")
    counts = np.bincount(ranks // ((n_draws + 1) // n_bins), minlength=n_bins)
    return float(stats.chisquare(counts).pvalue)


def verdict(result: dict, n_bins: int = 20, level: float = 0.01) -> dict:
    """χ² p per parameter, Bonferroni-adjusted over the parameters, pass at adjusted p > level."""
    p = {k: chi2_uniform(v, result["n_draws"], n_bins) for k, v in result["ranks"].items()}
    adj = {k: min(1.0, v * len(p)) for k, v in p.items()}
    return {"p": p, "p_bonferroni": adj, "passed": all(v > level for v in adj.values()),
            "grid_failures": result["grid_failures"], "n_reps": result["n_reps"]}
