"""Prior precision of the latent field x = (w, u, β) of the spatial GLMM at one θ.

    w ~ N(0, σ² R(φ))  over the active sites (exact R, or the latent NNGP
                        R̃⁻¹ = (I − B)ᵀ F⁻¹ (I − B), Datta et al. 2016, JASA 111,
                        doi:10.1080/01621459.2015.1044091)
    u ~ N(0, σ² I)     independent at-risk effects (optional, docs/model.md)
    β ~ N(μ_β, s_β² I)

so Q_θ = blockdiag(R⁻¹/σ², I/σ², I/s_β²) and log|Q_θ| = −log|R| − (n_w + n_u) log σ² −
2 p log s_β. ``sqrt_apply`` maps standard normals z to Lᵀ-type draws with covariance Q_θ (for
the perturbation–optimisation draws of :mod:`synthgeo.inference.laplace`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.sparse as sp
from scipy.linalg import cho_factor, solve_triangular

from synthgeo.model.vecchia import LATENT_JITTER, NeighbourGraph, vecchia_factors

__all__ = ["LatentPrior", "latent_prior"]


@dataclass(frozen=True)
class LatentPrior:
    """Q_θ (sparse for the NNGP, dense for the exact GP), log|Q_θ|, the mean and a square root."""

    Q: object
    logdet: float
    sqrt_apply: Callable[[np.ndarray], np.ndarray]
    mean: np.ndarray


def latent_prior(*, phi_km: float, sigma2: float, n_u: int, p: int, beta_sd: float,
                 beta_mean: float, graph: NeighbourGraph | None = None,
                 dist_km: np.ndarray | None = None) -> LatentPrior:
    """Build the prior precision of x = (w, u, β) at (φ, σ²).

    Parameters
    ----------
    phi_km, sigma2 : float
        Decay (1/km) and GP variance.
    n_u, p : int
        Number of independent at-risk effects and of coefficients.
    beta_sd, beta_mean : float
    graph : NeighbourGraph, optional
        NNGP engine (w in the graph's ordering).
    dist_km : ndarray of shape (n_w, n_w), optional
        Exact engine (distances between the active sites).

    Returns
    -------
    LatentPrior

    Examples
    --------
    >>> import numpy as np
    >>> pr = latent_prior(phi_km=1.0, sigma2=2.0, n_u=1, p=1, beta_sd=10.0, beta_mean=0.0,
    ...                   dist_km=np.array([[0.0, 1.0], [1.0, 0.0]]))
    >>> C = np.linalg.inv(pr.Q)
    >>> np.round([C[0, 1], C[2, 2], C[3, 3]], 4)        # σ² e^(−1), σ², s_β²
    array([  0.7358,   2.    , 100.    ])
    >>> round(pr.logdet, 6) == round(float(np.linalg.slogdet(pr.Q)[1]), 6)
    True
    """
    tail = np.concatenate([np.full(n_u, 1.0 / sigma2), np.full(p, 1.0 / beta_sd**2)])
    if graph is not None:
        n = graph.n
        f = vecchia_factors(graph, phi_km, 0.0)
        ib = f.i_minus_b()
        Qw = ib.T @ sp.diags(1.0 / (f.F * sigma2)) @ ib
        logdet_w = -float(np.log(f.F).sum()) - n * np.log(sigma2)
        Q = sp.block_diag([Qw, sp.diags(tail)], format="csc")

        def sqrt_apply(z):
            zw = ib.T @ (z[:n] / np.sqrt(f.F * sigma2)[:, None])
            return np.vstack([zw, z[n:] * np.sqrt(tail)[:, None]])
    else:
        n = dist_km.shape[0]
        R = np.exp(-phi_km * dist_km)
        R[np.diag_indices(n)] += LATENT_JITTER
        L = np.tril(cho_factor(R, lower=True, check_finite=False)[0])
        Linv = solve_triangular(L, np.eye(n), lower=True, check_finite=False)
        logdet_w = -2.0 * float(np.log(np.diag(L)).sum()) - n * np.log(sigma2)
        Q = np.zeros((n + tail.size, n + tail.size))
        Q[:n, :n] = (Linv.T @ Linv) / sigma2
        Q[n:, n:] = np.diag(tail)

        def sqrt_apply(z):
            zw = Linv.T @ z[:n] / np.sqrt(sigma2)
            return np.vstack([zw, z[n:] * np.sqrt(tail)[:, None]])
    logdet = logdet_w - n_u * np.log(sigma2) - 2.0 * p * np.log(beta_sd)
    mean = np.concatenate([np.zeros(n + n_u), np.full(p, beta_mean)])
    return LatentPrior(Q=Q, logdet=float(logdet), sqrt_apply=sqrt_apply, mean=mean)
