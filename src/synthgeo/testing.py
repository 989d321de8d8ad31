"""Seeded simulated data for tests, benchmarks and examples."""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist

__all__ = ["simulate_gp"]


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
