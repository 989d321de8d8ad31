"""Seeded simulated data for the bernoulli / poisson spatial GLMM, with an isolated record.

Design (in the spirit of Quick, Holan & Wikle 2018, Sect. 4, for discrete responses): S sites
uniform on a square of side ``extent_m`` metres, ``records_per_site`` records at each, one
standard-normal covariate, a GP on the linear predictor::

    η = β₀ + β₁ x + w(s) [+ ε],   w ~ N(0, σ² exp(−3 d / range_m)),   ε ~ N(0, τ²)
    y ~ Bernoulli(expit(η))  or  Poisson(E e^η),   E ~ Uniform(0.5, 2)

plus, when ``isolated`` holds, one extra site far from every other (1.5 × extent from the
square's corner) whose ``isolated_records`` records carry a value the agency would call rare:
all 1 (yes) for bernoulli, ``isolated_count`` for poisson.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist
from scipy.special import expit

__all__ = ["simulate_glmm"]


def simulate_glmm(family: str, *, n_sites: int = 300, records_per_site: int = 1,
                  beta=(-1.0, 0.5), sigma2: float = 1.0, range_m: float = 3000.0,
                  tau2: float = 0.0, extent_m: float = 10_000.0, isolated: bool = False,
                  isolated_records: int = 3, isolated_count: int = 25,
                  seed: int = 0) -> dict:
    """Draw one data set of the design above.

    Parameters
    ----------
    family : {"bernoulli", "poisson"}
    n_sites, records_per_site : int
    beta : sequence of 2 floats
        (β₀, β₁) in logit / log units.
    sigma2, range_m, tau2 : float
        GP variance, effective range in metres (correlation 0.05), overdispersion variance.
    extent_m : float
        Side of the square (metres).
    isolated : bool
        Add the isolated site (last site; its records are the last records).
    isolated_records, isolated_count : int
    seed : int

    Returns
    -------
    dict
        ``coords_m`` (N, 2), ``X`` (N, 2), ``y`` (N,), ``exposure`` (N,) (ones for
        bernoulli), ``w`` (S,) true effects (0 at the isolated site), ``site`` (N,) site per
        record, ``isolated_records`` (indices), ``truth`` dict of the generating values.

    Examples
    --------
    >>> d = simulate_glmm("bernoulli", n_sites=10, records_per_site=2, seed=1)
    >>> d["y"].shape, sorted(set(d["y"].tolist())) <= [0.0, 1.0]
    ((20,), True)
    """
    if family not in ("bernoulli", "poisson"):
        raise ValueError(f"`family` must be 'bernoulli' or 'poisson', got {family!r}")
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, extent_m, (n_sites, 2))
    R = np.exp(-3.0 * cdist(xy, xy) / range_m)
    w = np.linalg.cholesky(R + 1e-9 * np.eye(n_sites)) @ rng.standard_normal(n_sites)
    w *= np.sqrt(sigma2)
    site = np.repeat(np.arange(n_sites), records_per_site)
    n = site.size
    x = rng.standard_normal(n)
    eta = beta[0] + beta[1] * x + w[site] + np.sqrt(tau2) * rng.standard_normal(n)
    expo = rng.uniform(0.5, 2.0, n) if family == "poisson" else np.ones(n)
    if family == "bernoulli":
        y = (rng.random(n) < expit(eta)).astype(float)
    else:
        y = rng.poisson(expo * np.exp(eta)).astype(float)
    coords = xy[site]
    iso = np.array([], int)
    if isolated:
        far = np.array([[2.5 * extent_m, 2.5 * extent_m]])
        k = isolated_records
        coords = np.vstack([coords, np.repeat(far, k, axis=0)])
        site = np.concatenate([site, np.full(k, n_sites)])
        x = np.concatenate([x, np.zeros(k)])
        val = 1.0 if family == "bernoulli" else float(isolated_count)
        y = np.concatenate([y, np.full(k, val)])
        expo = np.concatenate([expo, np.ones(k)])
        w = np.append(w, 0.0)
        iso = np.arange(n, n + k)
    return {
        "coords_m": coords, "X": np.column_stack([np.ones(x.size), x]), "y": y,
        "exposure": expo, "w": w, "site": site, "isolated_records": iso,
        "truth": {"beta": tuple(beta), "sigma2": sigma2, "range_m": range_m, "tau2": tau2},
    }
