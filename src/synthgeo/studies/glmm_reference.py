"""Brute-force reference for the Laplace approximation on small problems (importance sampling).

For a fixed θ, the marginal likelihood of a latent Gaussian model is an integral over the latent
field x, estimated without bias by importance sampling::

    p(y | θ) = ∫ p(y | x) N(x; μ, Q_θ⁻¹) dx ≈ (1/n) Σ_k p(y | x_k) N(x_k; μ, Q_θ⁻¹) / g(x_k)

with g a multivariate t (ν degrees of freedom) centred at the Laplace mode with the Laplace
covariance: heavier tails than the target, so the weights have finite variance. Whatever the
quality of the Laplace approximation, the estimate converges to the exact integral; its Monte
Carlo error and the Kish effective sample size are reported. Exact (dense) covariance and no
overdispersion only: meant for N ≲ 100. The θ posterior on a fine grid then follows by
quadrature, which is the reference ``benchmarks/bench_families.py accuracy`` compares the
nested Laplace fit with.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln, logsumexp

__all__ = ["importance_log_marginal"]


def importance_log_marginal(model, theta, *, n_draws: int = 20_000, df: float = 5.0,
                            seed: int = 0) -> dict:
    """Importance-sampling estimate of log p(y | θ) and of E[x | y, θ].

    Parameters
    ----------
    model : LaplaceGLMM
        With ``covariance="exact"`` and no overdispersion.
    theta : ndarray of shape (2,)
    n_draws : int, default=20000
    df : float, default=5
        Degrees of freedom of the t proposal.
    seed : int

    Returns
    -------
    dict
        ``log_marginal`` (float), ``se`` (its Monte Carlo standard error, delta method),
        ``ess`` (Kish), ``mean_x`` (n_latent,) posterior mean of x = (w, β) given θ,
        ``laplace`` (the Laplace log p(y | θ) at the same θ).

    Raises
    ------
    ValueError
        For the NNGP engine or an overdispersed model.

    Examples
    --------
    >>> import numpy as np
    >>> from synthgeo.inference.laplace import LaplaceGLMM
    >>> from synthgeo.model.families import Poisson
    >>> from synthgeo.model.glmm_priors import GLMMPriors
    >>> from synthgeo.model.kernels import make_sites
    >>> rng = np.random.default_rng(0)
    >>> xy = rng.uniform(0, 3000, (15, 2))
    >>> m = LaplaceGLMM(rng.poisson(4.0, 15).astype(float), np.ones((15, 1)),
    ...                 make_sites(xy), family=Poisson(), covariance="exact",
    ...                 priors=GLMMPriors(range_min_m=100, range_max_m=5000))
    >>> r = importance_log_marginal(m, np.array([0.0, -1.0]), n_draws=4000)
    >>> bool(abs(r["log_marginal"] - r["laplace"]) < 0.1)
    True
    """
    if model.covariance != "exact" or model.overdispersion:
        raise ValueError("the importance-sampling reference needs covariance='exact' and no "
                         "overdispersion")
    theta = np.asarray(theta, float)
    st = model.laplace(theta)
    phi_km, sigma2, _ = model._split(theta)
    Q, logdet_Q, _, mu = model._prior(phi_km, sigma2)
    L = st.factor._dense[0]
    Lt = np.tril(L)  # Qpost = L Lᵀ
    n = st.x.size
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n_draws, n))
    u = rng.chisquare(df, n_draws) / df
    from scipy.linalg import solve_triangular

    dev = solve_triangular(Lt.T, z.T, lower=False).T / np.sqrt(u)[:, None]  # cov Qpost⁻¹
    x = st.x[None, :] + dev
    eta = (st.J @ x.T).T + model.offset
    loglik = model.family.loglik(model.y[None, :], eta).sum(axis=1)
    r = x - mu
    log_prior = 0.5 * logdet_Q - 0.5 * n * np.log(2 * np.pi) - 0.5 * np.einsum(
        "ki,ij,kj->k", r, Q, r)
    # multivariate t density with scale matrix Qpost⁻¹
    maha = (z**2).sum(axis=1) / u
    logdet_post = 2.0 * np.log(np.diag(Lt)).sum()
    log_g = (gammaln((df + n) / 2) - gammaln(df / 2) - 0.5 * n * np.log(df * np.pi)
             + 0.5 * logdet_post - 0.5 * (df + n) * np.log1p(maha / df))
    lw = loglik + log_prior - log_g
    lm = float(logsumexp(lw) - np.log(n_draws))
    w = np.exp(lw - lw.max())
    wn = w / w.sum()
    ess = float(1.0 / (wn**2).sum())
    se = float(np.std(w) / (np.sqrt(n_draws) * np.mean(w)))
    return {"log_marginal": lm, "se": se, "ess": ess, "mean_x": wn @ x,
            "laplace": st.log_marginal}


def reference_posterior(model, axis_values: list, *, n_draws: int = 5000, seed: int = 0
                        ) -> dict:
    """θ posterior on a full rectangular grid, by importance sampling at every node.

    Parameters
    ----------
    model : LaplaceGLMM
        Exact covariance, no overdispersion (2 axes).
    axis_values : list of 2 ndarrays
        Node values on (logit_range, log σ²), evenly spaced.
    n_draws, seed : int
        Importance draws per node (same seed at every node: common random numbers).

    Returns
    -------
    dict
        ``points`` (n, 2), ``weights`` (n,) by importance sampling, ``weights_laplace`` (n,)
        with the Laplace marginal at the same nodes, ``beta_mean`` (p,) posterior mean of β,
        ``max_se`` (largest Monte Carlo error of a node's log p(y | θ) with weight > 1e-3),
        ``min_ess``.
    """
    T, V = np.meshgrid(*axis_values, indexing="ij")
    pts = np.column_stack([T.ravel(), V.ravel()])
    lp_prior = model.priors.log_density(pts)
    res = [importance_log_marginal(model, th, n_draws=n_draws, seed=seed) for th in pts]
    lis = np.array([r["log_marginal"] for r in res]) + lp_prior
    llap = np.array([r["laplace"] for r in res]) + lp_prior
    w = np.exp(lis - lis.max())
    w /= w.sum()
    wl = np.exp(llap - llap.max())
    wl /= wl.sum()
    p = model.X.shape[1]
    mean_x = np.array([r["mean_x"][-p:] for r in res])
    big = w > 1e-3
    return {"points": pts, "weights": w, "weights_laplace": wl, "beta_mean": w @ mean_x,
            "max_se": float(max(r["se"] for r, b in zip(res, big) if b)),
            "min_ess": float(min(r["ess"] for r, b in zip(res, big) if b))}


def weighted_quantiles(values: np.ndarray, weights: np.ndarray, q, spacing: float) -> np.ndarray:
    """Quantiles of a grid posterior on one axis, each node's mass spread over its cell.

    Parameters
    ----------
    values : ndarray of shape (n,)
        Node coordinates on the axis (an evenly spaced grid, possibly repeated).
    weights : ndarray of shape (n,)
    q : array_like
    spacing : float
        Node spacing on that axis.

    Returns
    -------
    ndarray of shape (len(q),)

    Examples
    --------
    >>> weighted_quantiles(np.array([0.0, 1.0]), np.array([0.5, 0.5]), [0.5], 1.0)
    array([0.5])
    """
    u, inv = np.unique(values, return_inverse=True)
    m = np.bincount(inv.ravel(), weights=weights, minlength=u.size)
    edges = np.concatenate([u - spacing / 2, [u[-1] + spacing / 2]])
    cdf = np.concatenate([[0.0], np.cumsum(m) / m.sum()])
    return np.interp(np.asarray(q, float), cdf, edges)
