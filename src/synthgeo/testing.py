"""Seeded simulated data for tests, benchmarks and examples."""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist

__all__ = ["simulate_gp", "clustered_points"]


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
    R = np.exp(-phi_per_m * cdist(coords, coords))
    w = np.linalg.cholesky(sigma2 * R + 1e-10 * np.eye(n)) @ rng.standard_normal(n)
    y = X @ np.asarray(beta) + w + rng.normal(0, np.sqrt(nugget), n)
    return {"coords_m": coords, "X": X, "y": y, "w": w}


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
