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
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import cg, splu
from scipy.spatial import cKDTree

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
    """

    def __init__(self, y, X, sites: Sites, scale, *, n_neighbors: int = 15,
                 solver: str = "cg", cg_rtol: float = 1e-8):
        if solver not in ("splu", "cg"):
            raise ValueError(f"`solver` must be 'splu' or 'cg', got {solver!r}")
        self.y, self.X, self.sites = y, X, sites
        self.d_of = scale_function(scale, sites.n_sites)
        self.solver, self.cg_rtol = solver, cg_rtol
        act = scale.active if isinstance(scale, Smoothing) else self.d_of(None) > 0
        self.active = np.flatnonzero(act)
        self.inactive = np.flatnonzero(~act)
        coords_km = sites.coords_m / METRES_PER_KM
        self.graph = ordered_neighbours(coords_km[self.active], n_neighbors)
        self.perm = self.active[self.graph.order]  # site id of each ordered active point
        self.n_per_site = np.bincount(sites.site_index, minlength=sites.n_sites).astype(float)
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

    def draw(self, draws: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
        """Draw w at every site for each posterior draw.

        Parameters
        ----------
        draws : dict
            ``sigma2`` (L,), ``alpha`` (L,), ``phi_km`` (L,), ``beta`` (L, p), ``cell`` (L,).
        rng : numpy.random.Generator

        Returns
        -------
        ndarray of shape (L, S)
            w on the model scale, before the D scaling.
        """
        L = draws["sigma2"].shape[0]
        S = self.sites.n_sites
        w = np.zeros((L, S))
        idx = self.sites.site_index
        resid = self.y[None, :] - draws["beta"] @ self.X.T  # (L, N)
        for cell in np.unique(draws["cell"]):
            rows = np.flatnonzero(draws["cell"] == cell)
            phi_km, alpha = float(draws["phi_km"][rows[0]]), float(draws["alpha"][rows[0]])
            sig = np.sqrt(draws["sigma2"][rows])
            d = self.d_of(alpha)
            if self.active.size:
                f = vecchia_factors(self.graph, phi_km, 0.0)
                ib = f.i_minus_b()
                obs = (d[self.perm] ** 2) * self.n_per_site[self.perm] / alpha
                Qbar = (ib.T @ sp.diags(1.0 / f.F) @ ib + sp.diags(obs)).tocsc()
                # D Aᵀ r / α on the ordered active sites, for all draws of this cell
                At_r = np.stack([np.bincount(idx, weights=resid[r], minlength=S)
                                 for r in rows])  # (k, S)
                rhs = (d[self.perm] * At_r[:, self.perm]) / alpha
                z1 = rng.standard_normal(rhs.shape)
                z2 = rng.standard_normal(rhs.shape)
                rhs += sig[:, None] * ((ib.T @ (z1 / np.sqrt(f.F)).T).T
                                       + np.sqrt(obs)[None, :] * z2)
                x = self._solve(Qbar, rhs)
                w[np.ix_(rows, self.perm)] = x
            if self.inactive.size and self.active.size:
                b, F = self._kriging(phi_km)
                wa = w[np.ix_(rows, self.active)]  # (k, n_active)
                mean = np.einsum("im,kim->ki", b, wa[:, self._krig_j])
                noise = rng.standard_normal((rows.size, self.inactive.size)) * np.sqrt(F)
                w[np.ix_(rows, self.inactive)] = mean + sig[:, None] * noise
            elif self.inactive.size:
                w[np.ix_(rows, self.inactive)] = sig[:, None] * rng.standard_normal(
                    (rows.size, self.inactive.size))
        return w

    def _solve(self, Q: sp.csc_matrix, rhs: np.ndarray) -> np.ndarray:
        if self.solver == "splu":
            lu = splu(Q, permc_spec="COLAMD")
            return lu.solve(rhs.T).T
        diag = Q.diagonal()
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
            self.cg_iterations.append(n_it[0])
        return out
