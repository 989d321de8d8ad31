"""Kriged spatial effects at at-risk sites, for ``at_risk_effect = "kriged"`` (docs/model.md).

Beyond the paper. Under γ = ∞ the at-risk sites (d_s = 0) carry no effect in the data, so the
posterior of w_I at those sites given y is its *prior* conditional given the effects at the
active sites A: w_I | w_A, y ~ N(R_IA R_AA⁻¹ w_A, σ²(R_II − R_IA R_AA⁻¹ R_AI)). The effect
draws of :mod:`synthgeo.inference.conditionals` (exact) and :mod:`synthgeo.inference.nngp_effects`
(m nearest active sites) already sample from it; "kriged" synthesis uses its conditional
**mean** (simple kriging of the active sites' effects; Cressie 1993, *Statistics for Spatial
Data*, Sect. 3.2), so that an at-risk record gets the neighbourhood's level without its own
influence and without extra noise from the conditional variance.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.spatial import cKDTree
from scipy.spatial.distance import cdist

from synthgeo.model.kernels import METRES_PER_KM

__all__ = ["kriged_effects"]

_JITTER = 1e-8


def kriged_effects(
    w: np.ndarray,
    phi_per_m: np.ndarray,
    site_coords_m: np.ndarray,
    inactive: np.ndarray,
    *,
    n_neighbors: int | None = None,
) -> np.ndarray:
    """Replace w at inactive sites by its kriging mean from the active sites, per draw.

    Parameters
    ----------
    w : ndarray of shape (L, n_sites)
        Effect draws (model scale).
    phi_per_m : ndarray of shape (L,)
        Decay φ of each draw, 1/metre (exponential correlation exp(−φ h)).
    site_coords_m : ndarray of shape (n_sites, 2)
        Site coordinates, metres.
    inactive : ndarray of bool, shape (n_sites,)
        Sites whose effect is kriged (d_s = 0).
    n_neighbors : int, optional
        Krige from the m nearest active sites (NNGP engine); ``None`` uses all active sites
        (exact).

    Returns
    -------
    ndarray of shape (L, n_sites)
        A copy of ``w`` with w_I = R_IA R_AA⁻¹ w_A at the inactive sites (0 when no site is
        active).
    """
    out = np.array(w, dtype=float, copy=True)
    inactive = np.asarray(inactive, bool)
    act = np.flatnonzero(~inactive)
    ina = np.flatnonzero(inactive)
    if ina.size == 0:
        return out
    if act.size == 0:
        out[:, ina] = 0.0
        return out
    c_km = np.asarray(site_coords_m, float) / METRES_PER_KM
    phi_km = np.asarray(phi_per_m, float) * METRES_PER_KM
    if n_neighbors is None:
        d_aa, d_ia = cdist(c_km[act], c_km[act]), cdist(c_km[ina], c_km[act])
        for phi in np.unique(phi_km):
            rows = np.flatnonzero(phi_km == phi)
            R = np.exp(-phi * d_aa)
            R[np.diag_indices_from(R)] += _JITTER
            weights = cho_solve(cho_factor(R, lower=True), np.exp(-phi * d_ia).T)  # (A, I)
            out[np.ix_(rows, ina)] = w[np.ix_(rows, act)] @ weights
        return out
    k = min(int(n_neighbors), act.size)
    dist, j = cKDTree(c_km[act]).query(c_km[ina], k=k)
    dist, j = np.asarray(dist).reshape(ina.size, k), np.asarray(j).reshape(ina.size, k)
    nb = c_km[act][j]
    d_nn = np.linalg.norm(nb[:, :, None, :] - nb[:, None, :, :], axis=-1)
    for phi in np.unique(phi_km):
        rows = np.flatnonzero(phi_km == phi)
        C = np.exp(-phi * d_nn)
        C[:, np.arange(k), np.arange(k)] += _JITTER
        b = np.linalg.solve(C, np.exp(-phi * dist)[:, :, None])[:, :, 0]  # (I, k)
        wa = w[np.ix_(rows, act)][:, j]  # (r, I, k)
        out[np.ix_(rows, ina)] = np.einsum("ik,rik->ri", b, wa)
    return out
