"""Laplace approximation of a spatial GLMM at given hyper-parameters (the INLA inner step).

Model (docs/model.md, "Families beyond Gaussian"; Quick, Holan & Wikle 2018 for D)::

    y_i | η_i ~ Bernoulli(expit(η_i))  or  Poisson(E_i e^(η_i))
    η = X β + A D w [+ ε],   w ~ N(0, σ² R(φ)),   β ~ N(μ_β, s_β² I),   ε ~ N(0, τ² I)

with A the record-to-site incidence, D = diag(d_s) the differential smoothing (d_s = 0 at sites
at risk under γ = ∞: those sites drop out of the latent field; finite γ and continuous weights
scale them), R the exponential correlation over the *active* sites, exactly (dense) or by a
latent NNGP, R̃⁻¹ = (I − B)ᵀ F⁻¹ (I − B) (Datta, Banerjee, Finley & Gelfand 2016, JASA 111,
doi:10.1080/01621459.2015.1044091; :mod:`synthgeo.model.vecchia`). The latent field is
x = (w, β): prior precision Q_θ = blockdiag(R⁻¹/σ², I/s_β²), a sparse matrix for the NNGP.

Given θ = (logit_range, log σ² [, log τ²]) (axes of :class:`GLMMPriors`), the mode x̂ of
p(x | y, θ) is found by Newton's method (system Q_θ + Jᵀ W J, J = [A D, X],
W = −∂²ℓ/∂η²; a step-halving line search keeps the objective increasing), warm-started from
the mode of the nearest θ already evaluated. Under the NNGP each Newton system is solved by
conjugate gradients preconditioned with the sparse factor of the previous θ's mode, so a θ
point costs one sparse factorisation (at its mode, for log|Q_θ + Jᵀ Ŵ J| and the draws)
instead of one per Newton step (measured in ``benchmarks/bench_families.py``).

The Laplace approximation of the marginal likelihood (Tierney & Kadane 1986; Rue, Martino &
Chopin 2009, JRSS-B 71(2), doi:10.1111/j.1467-9868.2008.00700.x, eq. 3) is::

    log p(y | θ) ≈ ℓ(η̂) − ½ (x̂ − μ)ᵀ Q_θ (x̂ − μ) + ½ log|Q_θ| − ½ log|Q_θ + Jᵀ Ŵ J|

Overdispersion (poisson): the per-record ε is eliminated exactly inside each Newton step by its
Schur complement, W̃ = W / (1 + τ² W), so the factorised system keeps the size of (w, β); the
terms −½ Σ ε̂²/τ² − (N/2) log τ² − ½ Σ log(W + 1/τ²) join the formula above.

Latent draws at θ from the Gaussian approximation N(x̂, (Q_θ + Jᵀ W̃ J)⁻¹) use one solve with
the mode's factor ("perturbation–optimisation", Papandreou & Yuille 2010)::

    x = x̂ + (Q_θ + Jᵀ W̃ J)⁻¹ (Lᵀ z₁ + Jᵀ W̃^(1/2) z₂),   L Lᵀ = Q_θ,  z ~ N(0, I)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, cg

from synthgeo.inference.factor import SPDFactor
from synthgeo.inference.latent_prior import latent_prior
from synthgeo.model.families import Family
from synthgeo.model.glmm_priors import GLMMPriors
from synthgeo.model.kernels import METRES_PER_KM, Sites
from synthgeo.model.smoothing import Smoothing, scale_function
from synthgeo.model.vecchia import ordered_neighbours

__all__ = ["LaplaceGLMM", "LaplaceState"]


@dataclass(frozen=True, kw_only=True)
class LaplaceState:
    """The Gaussian approximation of p(x | y, θ) at one θ.

    Attributes
    ----------
    theta : ndarray of shape (n_axes,)
    log_marginal : float
        Laplace log p(y | θ).
    x : ndarray of shape (n_active + n_u + p,)
        Mode (w at the active sites in the engine's order, the independent at-risk effects u,
        then β).
    eps : ndarray of shape (N,) or None
        Mode of ε (overdispersion only).
    n_newton : int
        Newton steps taken.
    """

    theta: np.ndarray
    log_marginal: float
    x: np.ndarray
    eps: np.ndarray | None
    n_newton: int
    factor: SPDFactor
    w_tilde: np.ndarray
    prior: tuple
    J: sp.csr_matrix


class LaplaceGLMM:
    """Laplace-approximated log posterior of θ for a spatial GLMM, with latent draws.

    Parameters
    ----------
    y : ndarray of shape (N,)
        Responses (0/1 or counts).
    X : ndarray of shape (N, p)
        Design matrix (intercept included).
    sites : Sites
    family : Family
    priors : GLMMPriors
    exposure : ndarray of shape (N,), optional
        Poisson exposure E (offset log E); default 1.
    scale : None, ndarray of shape (S,) or Smoothing
        D's diagonal per site (None = unrestricted). A Smoothing with γ = "auto" needs
        ``overdispersion`` (γ = max(0, σ²/τ² − 1) per θ).
    covariance : {"exact", "nngp"}
    n_neighbors : int, default=15
    overdispersion : bool, default=False
        Add ε ~ N(0, τ² I) on η (poisson only); θ gets the axis log τ².
    newton_tol : float, default=1e-8
        Newton stops when the largest step in x (logit / log units) is below this.
    at_risk_effect : {"none", "independent"}, default="none"
        "independent" (beyond the paper; measured in ``tests/test_laplace.py``): at sites
        with d_s < 1 the linear predictor gets d_s w_s + (1 − d_s²)^(1/2) u_s,
        u_s ~ N(0, σ²) iid, so the site keeps its prior variance σ² but only the share d_s²
        of it is spatially linked; u is redrawn afresh for synthesis (never from its
        posterior). Without it, under γ = ∞ an isolated high count can only move β₀, and a
        long-range GP shifts everywhere else to compensate: the count leaks through β₀.

    Raises
    ------
    ValueError
        On mismatched shapes, an unknown engine, overdispersion for a bernoulli, or
        γ = "auto" without a nugget.

    Examples
    --------
    >>> import numpy as np
    >>> from synthgeo.model.families import Bernoulli
    >>> from synthgeo.model.glmm_priors import GLMMPriors
    >>> from synthgeo.model.kernels import make_sites
    >>> rng = np.random.default_rng(1)
    >>> xy = rng.uniform(0, 5000, (40, 2))
    >>> y = (rng.random(40) < 0.4).astype(float)
    >>> model = LaplaceGLMM(y, np.ones((40, 1)), make_sites(xy), family=Bernoulli(),
    ...                     priors=GLMMPriors(range_min_m=100, range_max_m=8000),
    ...                     covariance="exact")
    >>> lp = model.log_density(np.array([[-1.0, 0.0], [0.0, 0.0]]))
    >>> lp.shape, bool(np.all(np.isfinite(lp)))
    ((2,), True)
    """

    def __init__(self, y, X, sites: Sites, *, family: Family, priors: GLMMPriors,
                 exposure=None, scale=None, covariance: str = "nngp", n_neighbors: int = 15,
                 overdispersion: bool = False, newton_tol: float = 1e-8,
                 at_risk_effect: str = "none"):
        self.y = family.check(y, exposure)
        self.X = np.asarray(X, float)
        if self.X.ndim != 2 or self.X.shape[0] != self.y.shape[0]:
            raise ValueError("`X` must have shape (N, p) with N = len(y)")
        if sites.n_records != self.y.shape[0]:
            raise ValueError("`sites` must map every record (site_index of length N)")
        if at_risk_effect not in ("none", "independent"):
            raise ValueError("`at_risk_effect` must be 'none' or 'independent', got "
                             f"{at_risk_effect!r}")
        if covariance not in ("exact", "nngp"):
            raise ValueError(f"`covariance` must be 'exact' or 'nngp', got {covariance!r}")
        if overdispersion and family.name != "poisson":
            raise ValueError("`overdispersion` applies to the poisson family only")
        if (isinstance(scale, Smoothing) and scale.depends_on_nugget and not overdispersion):
            raise ValueError("gamma = 'auto' needs a nugget: use a fixed gamma (bernoulli has "
                             "no nugget) or set overdispersion for poisson")
        self.family, self.priors, self.sites = family, priors, sites
        self.offset = 0.0 if exposure is None else np.log(np.asarray(exposure, float))
        self.covariance, self.overdispersion, self.newton_tol = (covariance, overdispersion,
                                                                 newton_tol)
        self.axes = ("logit_range", "log_sigma2") + (("log_tau2",) if overdispersion else ())
        self._d_of = scale_function(scale, sites.n_sites)
        active = (scale.active if isinstance(scale, Smoothing)
                  else self._d_of(None) > 0)
        act = np.flatnonzero(active)
        coords_km = sites.coords_m[act] / METRES_PER_KM
        if covariance == "nngp":
            self._graph = ordered_neighbours(coords_km, n_neighbors)
            self.perm = act[self._graph.order]
        else:
            self.perm = act
            c = coords_km
            self._dist_km = np.sqrt(((c[:, None, :] - c[None, :, :]) ** 2).sum(-1))
        pos = np.full(sites.n_sites, -1)
        pos[self.perm] = np.arange(self.perm.size)
        self._rec = pos[sites.site_index]  # latent index of each record's site, -1 inactive
        # sites with an independent effect u (d_s < 1 for some θ)
        if at_risk_effect == "independent":
            if isinstance(scale, Smoothing):
                partial = np.asarray(scale.a) > 0
                if scale.gamma != "auto" and float(scale.gamma) == 0:
                    partial[:] = False
            else:
                partial = self._d_of(None) < 1
            self.u_sites = np.flatnonzero(partial)
        else:
            self.u_sites = np.array([], dtype=int)
        upos = np.full(sites.n_sites, -1)
        upos[self.u_sites] = np.arange(self.u_sites.size)
        self._rec_u = upos[sites.site_index]
        self._cache: dict[tuple, tuple] = {}
        self._J_cache: tuple | None = None
        self.n_factorisations = 0
        self.n_pcg_iterations = 0
        self._precond: SPDFactor | None = None

    # ------------------------------------------------------------------ building blocks
    @property
    def n_active(self) -> int:
        """Sites in the latent field (d_s > 0)."""
        return int(self.perm.size)

    def _split(self, theta):
        range_m, sigma2 = float(self.priors.range_m(theta[0])), np.exp(theta[1])
        tau2 = np.exp(theta[2]) if self.overdispersion else None
        return 3.0 / (range_m / METRES_PER_KM), sigma2, tau2

    def _design(self, d_sites: np.ndarray) -> sp.csr_matrix:
        key = d_sites.tobytes()
        if self._J_cache is not None and self._J_cache[0] == key:
            return self._J_cache[1]
        rows = np.flatnonzero(self._rec >= 0)
        vals = d_sites[self.sites.site_index[rows]]
        Aw = sp.csr_matrix((vals, (rows, self._rec[rows])),
                           shape=(self.y.size, self.n_active))
        rows_u = np.flatnonzero(self._rec_u >= 0)
        vals_u = np.sqrt(np.maximum(0.0, 1.0 - d_sites[self.sites.site_index[rows_u]] ** 2))
        Au = sp.csr_matrix((vals_u, (rows_u, self._rec_u[rows_u])),
                           shape=(self.y.size, self.u_sites.size))
        J = sp.hstack([Aw, Au, sp.csr_matrix(self.X)], format="csr")
        self._J_cache = (key, J)
        return J

    def _prior(self, phi_km: float, sigma2: float):
        """(Q_θ, log|Q_θ|, sqrt_apply, mean) of x = (w, u, β); see :mod:`.latent_prior`."""
        pr = latent_prior(phi_km=phi_km, sigma2=sigma2, n_u=self.u_sites.size,
                          p=self.X.shape[1], beta_sd=self.priors.beta_sd,
                          beta_mean=self.priors.beta_mean,
                          graph=self._graph if self.covariance == "nngp" else None,
                          dist_km=self._dist_km if self.covariance == "exact" else None)
        return pr.Q, pr.logdet, pr.sqrt_apply, pr.mean

    def _objective(self, x, eps, J, Q, mu, tau2):
        eta = J @ x + self.offset + (eps if eps is not None else 0.0)
        r = x - mu
        val = self.family.loglik(self.y, eta).sum() - 0.5 * r @ (Q @ r)
        if eps is not None:
            val -= 0.5 * (eps @ eps) / tau2
        return float(val)

    # ------------------------------------------------------------------ the inner step
    def laplace(self, theta, x0=None, eps0=None, *, record: bool = True) -> LaplaceState:
        """Find the mode of p(x | y, θ) by Newton's method and return the Laplace state.

        Parameters
        ----------
        theta : ndarray of shape (n_axes,)
            (logit_range, log σ² [, log τ²]).
        x0, eps0 : ndarray, optional
            Starting point; default: the mode of the nearest θ evaluated so far, else the
            prior mean.
        record : bool, default=True
            Keep the mode for warm starts and its factor as the next preconditioner. With
            False nothing is kept and every Newton system is factorised afresh, so the result
            depends only on (θ, start): draws and summaries use this, which makes repeated
            synthesis from one fit bit-identical.

        Returns
        -------
        LaplaceState
        """
        theta = np.asarray(theta, float)
        phi_km, sigma2, tau2 = self._split(theta)
        d = self._d_of(tau2 / sigma2 if tau2 is not None else None)
        J = self._design(d)
        Q, logdet_Q, sqrt_apply, mu = self._prior(phi_km, sigma2)
        if x0 is None:
            x0, eps0 = self._warm_start(theta, mu)
        x = x0.copy()
        eps = (np.zeros(self.y.size) if eps0 is None else eps0.copy()) \
            if self.overdispersion else None
        f_old = self._objective(x, eps, J, Q, mu, tau2)
        sparse = sp.issparse(Q)
        precond = self._precond if sparse and record else None
        fresh = None  # (factor, weights, De) computed at the current x in this call
        for it in range(1, 101):
            grad, W, Wt, ge, De, Qpost = self._newton_terms(x, eps, J, Q, mu, tau2)
            dx = self._pcg(Qpost, grad, precond) if precond is not None else None
            fresh = None
            if dx is None:
                precond = self._factor(Qpost)
                fresh = (precond, Wt, De)
                dx = precond.solve(grad)
            de = (ge - W * (J @ dx)) / De if eps is not None else None
            t = 1.0
            while True:
                x_new = x + t * dx
                e_new = eps + t * de if eps is not None else None
                f_new = self._objective(x_new, e_new, J, Q, mu, tau2)
                if f_new >= f_old - 1e-12 * abs(f_old) or t < 1e-6:
                    break
                t *= 0.5
            step = t * np.max(np.abs(dx))
            if eps is not None:
                step = max(step, t * np.max(np.abs(de)))
            x, eps, f_old = x_new, e_new, f_new
            if step < self.newton_tol:
                break
        # the Gaussian approximation uses the Hessian at the mode itself (or at the last
        # iterate, when that was factorised and the step from it is below newton_tol)
        if fresh is not None and step < self.newton_tol:
            fac, Wt, De = fresh
        else:
            _, _, Wt, _, De, Qpost = self._newton_terms(x, eps, J, Q, mu, tau2)
            fac = self._factor(Qpost)
        if sparse and record:
            self._precond = fac
        logml = f_old + 0.5 * logdet_Q - 0.5 * fac.logdet
        if eps is not None:
            logml += -0.5 * self.y.size * np.log(tau2) - 0.5 * float(np.log(De).sum())
        if record:
            self._cache[tuple(theta)] = (x, eps)
        return LaplaceState(theta=theta, log_marginal=float(logml), x=x, eps=eps, n_newton=it,
                            factor=fac, w_tilde=Wt, prior=(sqrt_apply,), J=J)

    def _newton_terms(self, x, eps, J, Q, mu, tau2):
        """Gradient, weights and the (Schur-reduced) negative Hessian at (x, ε)."""
        eta = J @ x + self.offset + (eps if eps is not None else 0.0)
        g, h = self.family.derivatives(self.y, eta)
        W = -h
        grad = J.T @ g - Q @ (x - mu)
        ge = De = None
        if eps is not None:
            ge, De = g - eps / tau2, W + 1.0 / tau2
            Wt = W / (1.0 + tau2 * W)
            grad = grad - J.T @ (W * ge / De)
        else:
            Wt = W
        H = J.T @ sp.diags(Wt) @ J
        Qpost = (Q + H).tocsc() if sp.issparse(Q) else Q + H.toarray()
        return grad, W, Wt, ge, De, Qpost

    def _factor(self, Qpost) -> SPDFactor:
        self.n_factorisations += 1
        return SPDFactor(Qpost)

    def _pcg(self, Qpost, rhs, precond: SPDFactor):
        """Solve Qpost dx = rhs by CG preconditioned with an older factor; None on failure.

        The factor is that of a neighbouring θ's mode or an earlier Newton iterate; 40
        iterations at most.
        """
        M = LinearOperator(Qpost.shape, matvec=precond.solve, dtype=float)
        n_it = [0]

        def count(_):
            n_it[0] += 1

        dx, info = cg(Qpost, rhs, M=M, rtol=1e-10, atol=0.0, maxiter=40, callback=count)
        self.n_pcg_iterations += n_it[0]
        return dx if info == 0 else None

    def _replay(self, theta) -> LaplaceState:
        """Laplace state at θ from the recorded mode of the nearest evaluated θ.

        Nothing is recorded, so the result is the same however often it is asked for.
        """
        mu = self._prior(*self._split(theta)[:2])[3]
        x0, eps0 = self._warm_start(theta, mu)
        return self.laplace(theta, x0, eps0, record=False)

    def _warm_start(self, theta, mu):
        if not self._cache:
            return mu.copy(), None
        keys = np.array(list(self._cache))
        k = int(np.argmin(((keys - theta) ** 2).sum(axis=1)))
        x, eps = self._cache[tuple(keys[k])]
        return x, eps

    # ------------------------------------------------------------------ the interface
    def log_density(self, thetas: np.ndarray) -> np.ndarray:
        """Unnormalised log posterior log p(y | θ) + log p(θ) at a batch of θ points.

        Parameters
        ----------
        thetas : ndarray of shape (k, n_axes)
            Rows on the axes ``self.axes``.

        Returns
        -------
        ndarray of shape (k,)
            −inf outside the prior support (no Laplace step is run there).
        """
        thetas = np.atleast_2d(np.asarray(thetas, float))
        lp = self.priors.log_density(thetas)
        out = np.full(thetas.shape[0], -np.inf)
        for i in np.flatnonzero(np.isfinite(lp)):
            out[i] = lp[i] + self.laplace(thetas[i]).log_marginal
        return out

    def draw_latent(self, thetas: np.ndarray, rng: np.random.Generator) -> dict:
        """One draw of (β, w) from the Gaussian approximation at each θ row.

        Rows with the same θ share one Laplace step (and one factorisation).

        Parameters
        ----------
        thetas : ndarray of shape (k, n_axes)
        rng : numpy.random.Generator

        Returns
        -------
        dict
            ``beta`` (k, p); ``w`` (k, S) at every site (0 at sites outside the latent field,
            i.e. d_s = 0), before the D scaling; ``eta`` (k, N) = Xβ + A D w (no offset,
            no ε, no u); ``d`` (k, S) the smoothing scale used; ``eta_synth`` (k, N): ``eta``
            plus the independent at-risk effect drawn afresh from its prior (= ``eta``
            without it), the predictor synthesis uses.
        """
        thetas = np.atleast_2d(np.asarray(thetas, float))
        k, (n, p) = thetas.shape[0], (self.n_active, self.X.shape[1])
        nu = self.u_sites.size
        eta_synth = np.empty((k, self.y.size))
        beta = np.empty((k, p))
        w = np.zeros((k, self.sites.n_sites))
        eta = np.empty((k, self.y.size))
        dd = np.empty((k, self.sites.n_sites))
        uniq, inv = np.unique(thetas, axis=0, return_inverse=True)
        for u in range(uniq.shape[0]):
            rows = np.flatnonzero(inv.ravel() == u)
            st = self._replay(uniq[u])
            z1 = rng.standard_normal((n + nu + p, rows.size))
            z2 = rng.standard_normal((self.y.size, rows.size))
            b = st.prior[0](z1) + st.J.T @ (np.sqrt(st.w_tilde)[:, None] * z2)
            x = st.x[:, None] + st.factor.solve(b)
            w[np.ix_(rows, self.perm)] = x[:n].T
            beta[rows] = x[n + nu:].T
            x[n:n + nu] = 0.0  # the independent effect u is redrawn afresh, never reused
            eta[rows] = (st.J @ x).T
            _, sigma2, tau2 = self._split(uniq[u])
            dd[rows] = self._d_of(tau2 / sigma2 if tau2 is not None else None)
            eta_synth[rows] = eta[rows]
            if nu:  # u afresh from its prior N(0, σ² I), one value per site
                u_new = np.sqrt(sigma2) * rng.standard_normal((nu, rows.size))
                eta_synth[rows] += (st.J[:, n:n + nu] @ u_new).T
        return {"beta": beta, "w": w, "eta": eta, "d": dd, "eta_synth": eta_synth}

    def beta_moments(self, theta) -> tuple[np.ndarray, np.ndarray]:
        """Mean (p,) and covariance (p, p) of β under the Gaussian approximation at θ."""
        st = self._replay(np.asarray(theta, float))
        p = self.X.shape[1]
        E = np.zeros((st.x.size, p))
        E[-p:, :] = np.eye(p)
        cov = st.factor.solve(E)[-p:, :]
        return st.x[-p:], 0.5 * (cov + cov.T)
