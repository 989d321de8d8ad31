"""Draws of the spatial effects w at all sites under a latent NNGP prior (sparse precision).

For sites with d_s > 0 ("active"), with the latent NNGP prior w ~ N(0, σ² R̃),
R̃⁻¹ = (I − B)ᵀ F⁻¹ (I − B) (Datta et al. 2016), the full conditional of docs/inference.md is

    Q = R̃⁻¹/σ² + D AᵀA D/τ²,   w | y, θ, β ~ N(Q⁻¹ D Aᵀ (y − Xβ)/τ², Q⁻¹).

With α = τ²/σ², Q = Q̄/σ² where Q̄ = R̃⁻¹ + diag(d_s² n_s / α) depends on (φ, α) only (n_s:
records at site s), so one factorisation serves every draw of a grid cell. A draw is one solve
("perturbation–optimisation", Papandreou & Yuille 2010; Gaussian sampling by solving a
perturbed system, Vono, Dobigeon & Chainais 2022)::

    w = Q̄⁻¹ [ D Aᵀ r / α + σ (I − B)ᵀ F^(-1/2) z₁ + σ (d n^(1/2) / α^(1/2)) ∘ z₂ ],  z ~ N(0, I)

whose law is exactly N(Q⁻¹ D Aᵀ r/τ², Q⁻¹). The solve is a sparse LU (SuperLU, fill-reducing
COLAMD ordering) or preconditioned conjugate gradients (Jacobi); ``benchmarks/bench_nngp.py``
measures both. At inactive sites (d_s = 0) w follows its NNGP prior conditional given the
m nearest active sites (kriging plus conditional noise) — it never enters the data or the
synthetic values under γ = ∞, but it is the "kriged" effect when that variant is asked for.

Each posterior draw takes its normals from its own generator, indexed by *site* (z₁, z₂ and the
inactive sites' noise are three standard normals per site, the active or inactive ones used):
two models fitted with one seed, whose active sets differ (the restricted model's at-risk
sites are inactive under γ = ∞), use the same normal at the same site in draw d (common random
numbers; :func:`synthgeo.inference.conditionals.draw_generators`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, cg, splu
from scipy.spatial import cKDTree

from synthgeo.inference.conditionals import draw_generators
from synthgeo.inference.quadrature import thread_map
from synthgeo.model.kernels import METRES_PER_KM, Sites, exponential_correlation
from synthgeo.model.smoothing import Smoothing, scale_function
from synthgeo.model.vecchia import LATENT_JITTER, ordered_neighbours, vecchia_factors

__all__ = ["NNGPEffects"]


class NNGPEffects:
    """Sampler of w | y, θ, β under the latent NNGP prior, for many posterior draws.

    Parameters
    ----------
    y : ndarray of shape (N,)
    X : ndarray of shape (N, p)
    sites : Sites
    scale : ndarray of shape (S,) or Smoothing
        D's diagonal per site, or a :class:`~synthgeo.model.smoothing.Smoothing` evaluated at
        each grid cell's α (γ = "auto"); the active set is the sites with d > 0 for every α.
    n_neighbors : int, default=15
    solver : {"splu", "cg"}, default="cg"
        Sparse LU per grid cell, or Jacobi-preconditioned conjugate gradients per draw
        (relative tolerance ``cg_rtol``). CG is the default: the implicates' draws spread
        over many grid cells, and one LU per cell cost 1.0 s/draw against CG's 0.19 s/draw
        at the 25,357 Lucas sites (``benchmarks/bench_nngp.py solvers``).
    cg_rtol : float, default=1e-8
    n_threads : int, default=2
        Grid cells drawn concurrently (single-threaded BLAS each); every random number is
        drawn before the threads start, so the draws do not depend on it.
    nugget_weight : ndarray of shape (N,), optional
        ω_i: record i's noise variance is τ² ω_i (the pseudo-likelihood's 1/α_i). Then
        AᵀA/τ² becomes Aᵀ diag(1/ω) A/τ² and Aᵀr becomes Aᵀ diag(1/ω) r: each site's record
        count n_s is its records' total weight Σ α_i, and the draw stays exact.
    """

    def __init__(self, y, X, sites: Sites, scale, *, n_neighbors: int = 15,
                 solver: str = "cg", cg_rtol: float = 1e-8, n_threads: int = 2,
                 nugget_weight: np.ndarray | None = None):
        if solver not in ("splu", "cg"):
            raise ValueError(f"`solver` must be 'splu' or 'cg', got {solver!r}")
        self.y, self.X, self.sites = y, X, sites
        self.d_of = scale_function(scale, sites.n_sites)
        self.solver, self.cg_rtol, self.n_threads = solver, cg_rtol, n_threads
        act = scale.active if isinstance(scale, Smoothing) else self.d_of(None) > 0
        self.active = np.flatnonzero(act)
        self.inactive = np.flatnonzero(~act)
        coords_km = sites.coords_m / METRES_PER_KM
        self.graph = ordered_neighbours(coords_km[self.active], n_neighbors)
        self.perm = self.active[self.graph.order]  # site id of each ordered active point
        self.record_weight = (None if nugget_weight is None
                              else 1.0 / np.asarray(nugget_weight, float))  # α_i
        self.n_per_site = np.bincount(sites.site_index, weights=self.record_weight,
                                      minlength=sites.n_sites).astype(float)
        self.cg_iterations: list[int] = []
        if self.inactive.size and self.active.size:
            k = min(n_neighbors, self.active.size)
            dist, j = cKDTree(coords_km[self.active]).query(coords_km[self.inactive], k=k)
            self._krig_j = np.asarray(j).reshape(self.inactive.size, k)
            self._krig_dist = np.asarray(dist).reshape(self.inactive.size, k)
            nb = coords_km[self.active][self._krig_j]
            self._krig_dnn = np.linalg.norm(nb[:, :, None, :] - nb[:, None, :, :], axis=-1)

    def _kriging(self, phi_km: float):
        C = exponential_correlation(self._krig_dnn, phi_km)
        idx = np.arange(C.shape[1])
        C[:, idx, idx] += LATENT_JITTER
        c = exponential_correlation(self._krig_dist, phi_km)
        b = np.linalg.solve(C, c[:, :, None])[:, :, 0]
        F = np.maximum(1.0 - np.einsum("nm,nm->n", b, c), 0.0)
        return b, F

    def draw(self, draws: dict[str, np.ndarray], rng) -> np.ndarray:
        """Draw w at every site for each posterior draw.

        Parameters
        ----------
        draws : dict
            ``sigma2`` (L,), ``alpha`` (L,), ``phi_km`` (L,), ``beta`` (L, p), ``cell`` (L,).
        rng : int, Generator, SeedSequence, None, or sequence of L of them
            A root, or one seed per draw
            (:func:`~synthgeo.inference.conditionals.draw_generators`): draw j's normals
            (3 per site: z₁, z₂, the inactive sites' noise) come from its own generator.

        Returns
        -------
        ndarray of shape (L, S)
            w on the model scale, before the D scaling.
        """
        L = draws["sigma2"].shape[0]
        S = self.sites.n_sites
        rngs = draw_generators(rng, L)
        w = np.zeros((L, S))
        resid = self.y[None, :] - draws["beta"] @ self.X.T  # (L, N)
        if self.record_weight is not None:  # Aᵀ diag(α) r: the weighted residual sums
            resid = resid * self.record_weight[None, :]
        cells = [np.flatnonzero(draws["cell"] == c) for c in np.unique(draws["cell"])]
        run = thread_map(self.n_threads)
        chunk = 2 * max(1, self.n_threads)
        for start in range(0, len(cells), chunk):
            # every random number first, each draw from its own generator, by site (z₁, z₂,
            # the inactive sites' noise): neither the threads nor the cells change the draws
            plan = []
            for rows in cells[start:start + chunk]:
                normals = np.stack([rngs[r].standard_normal((3, S)) for r in rows])  # (k, 3, S)
                z = ((normals[:, 0, self.perm], normals[:, 1, self.perm]) if self.active.size
                     else None)
                noise = normals[:, 2, self.inactive] if self.inactive.size else None
                plan.append((rows, z, noise))
            for rows, w_rows, its in run(lambda item: self._draw_cell(draws, resid, *item),
                                         plan):
                w[rows] = w_rows
                self.cg_iterations.extend(its)
        return w

    def _draw_cell(self, draws, resid, rows, z, noise):
        """Draw w (k, S) for the draws ``rows`` of one grid cell, given their normals."""
        S = self.sites.n_sites
        idx = self.sites.site_index
        w = np.zeros((rows.size, S))
        its: list[int] = []
        phi_km, alpha = float(draws["phi_km"][rows[0]]), float(draws["alpha"][rows[0]])
        sig = np.sqrt(draws["sigma2"][rows])
        d = self.d_of(alpha)
        if self.active.size:
            f = vecchia_factors(self.graph, phi_km, 0.0)
            ib = f.i_minus_b()
            obs = (d[self.perm] ** 2) * self.n_per_site[self.perm] / alpha
            # D Aᵀ r / α on the ordered active sites, for all draws of this cell
            At_r = np.stack([np.bincount(idx, weights=resid[r], minlength=S)
                             for r in rows])  # (k, S)
            rhs = (d[self.perm] * At_r[:, self.perm]) / alpha
            z1, z2 = z
            rhs += sig[:, None] * ((ib.T @ (z1 / np.sqrt(f.F)).T).T
                                   + np.sqrt(obs)[None, :] * z2)
            w[:, self.perm] = self._solve(ib, 1.0 / f.F, obs, rhs, its)
        if self.inactive.size and self.active.size:
            b, F = self._kriging(phi_km)
            wa = w[:, self.active]  # (k, n_active)
            mean = np.einsum("im,kim->ki", b, wa[:, self._krig_j])
            w[:, self.inactive] = mean + sig[:, None] * (noise * np.sqrt(F))
        elif self.inactive.size:
            w[:, self.inactive] = sig[:, None] * noise
        return rows, w, its

    def _solve(self, ib: sp.csr_matrix, f_inv: np.ndarray, obs: np.ndarray, rhs: np.ndarray,
               its: list[int]) -> np.ndarray:
        """Solve Q̄ x = rhs (k right-hand sides), Q̄ = (I − B)ᵀ F⁻¹ (I − B) + diag(obs)."""
        if self.solver == "splu":
            Q = (ib.T @ sp.diags(f_inv) @ ib + sp.diags(obs)).tocsc()
            lu = splu(Q, permc_spec="COLAMD")
            return lu.solve(rhs.T).T
        # CG on the factored operator: two sparse products with I − B per step instead of one
        # with Q̄ (3x the non-zeros); 6.7 vs 11 ms per product at 10⁵ sites
        ibt = ib.T.tocsr()
        n = ib.shape[0]
        Q = LinearOperator((n, n), matvec=lambda v: ibt @ (f_inv * (ib @ v)) + obs * v,
                           dtype=float)
        diag = np.asarray(ib.multiply(ib).T @ f_inv).ravel() + obs
        M = sp.diags(1.0 / diag)
        out = np.empty_like(rhs)
        for k in range(rhs.shape[0]):
            n_it = [0]

            def count(_x, n_it=n_it):
                n_it[0] += 1

            out[k], info = cg(Q, rhs[k], rtol=self.cg_rtol, atol=0.0, M=M, maxiter=5000,
                              callback=count)
            if info != 0:
                raise RuntimeError(f"conjugate gradients did not converge ({info})")
            its.append(n_it[0])
        return out
