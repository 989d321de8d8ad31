"""Simple kriging of spatial effects, per posterior draw: the one home of GP prediction.

Given effects w_S at source points S and decay φ, the GP's conditional mean at target points T
is E[w_T | w_S, φ] = R_TS R_SS⁻¹ w_S (σ² cancels; Cressie 1993, *Statistics for Spatial
Data*, Sect. 3.2; ``docs/model.md``). :func:`krige` computes it for every draw, from all sources
(exact) or from each target's ``n_neighbors`` nearest sources (the NNGP predictive mean).
Two callers:

- ``at_risk_effect = "kriged"`` (:func:`kriged_effects`, beyond the paper): under γ = ∞ the
  at-risk sites (d_s = 0) carry no effect in the data, so w_I | w_A, y is w_I's *prior*
  conditional given the active sites; synthesis uses its mean, the neighbourhood's level
  without the record's own influence and without the conditional variance's noise.
- the report's posterior mean surface (:mod:`synthgeo.release.report._surface`), averaging
  the kriged surface over draws (Rao–Blackwellised E[w(s) | y]).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.spatial import cKDTree
from scipy.spatial.distance import cdist

from synthgeo.model.kernels import METRES_PER_KM, exponential_correlation

__all__ = ["krige", "kriged_effects", "KRIGING_JITTER"]

#: Relative jitter on R_SS's diagonal (guards round-off for sources a few metres apart).
KRIGING_JITTER = 1e-8


def krige(
    source: np.ndarray,
    values: np.ndarray,
    phi: np.ndarray,
    target: np.ndarray,
    *,
    n_neighbors: int | None = None,
    n_threads: int = 1,
) -> np.ndarray:
    """Simple-kriging mean R_TS R_SS⁻¹ w_S at the targets, for each draw.

    Parameters
    ----------
    source : ndarray of shape (S, 2)
        Source coordinates (any unit; ``phi`` in its reciprocal).
    values : ndarray of shape (L, S)
        Effects at the sources, one row per draw.
    phi : ndarray of shape (L,)
        Decay of each draw (exponential correlation exp(−φ h)); draws sharing a φ share one
        factorisation.
    target : ndarray of shape (T, 2)
        Prediction points.
    n_neighbors : int, optional
        Krige each target from its m nearest sources only; ``None`` uses all sources.
    n_threads : int, default=1
        With ``n_neighbors``, distinct φ values kriged concurrently (the compiled block
        solves release the GIL; each φ writes only its own draws' rows, so the result does
        not depend on it).

    Returns
    -------
    ndarray of shape (L, T)

    Examples
    --------
    >>> import numpy as np
    >>> src = np.array([[0.0, 0.0], [1.0, 0.0]])
    >>> krige(src, np.array([[1.0, -1.0]]), np.array([2.0]), src).round(6).tolist()
    [[1.0, -1.0]]
    """
    source, target = np.asarray(source, float), np.asarray(target, float)
    values = np.asarray(values, float)
    phi = np.asarray(phi, float).ravel()
    out = np.empty((values.shape[0], target.shape[0]))
    if n_neighbors is None:
        d_ss, d_ts = cdist(source, source), cdist(target, source)
        eye = np.eye(source.shape[0])
        for ph in np.unique(phi):
            rows = np.flatnonzero(phi == ph)
            R = exponential_correlation(d_ss, ph) + KRIGING_JITTER * eye
            # R_TS (R_SS⁻¹ w_S): solve for the r value vectors, not the T targets (with
            # continuous φ draws each φ is its own factorisation: T right-hand sides per draw
            # made the report's surfaces take seconds)
            alpha = cho_solve(cho_factor(R, lower=True, check_finite=False),
                              values[rows].T, check_finite=False)  # (S, r)
            out[rows] = (exponential_correlation(d_ts, ph) @ alpha).T  # (T, S) @ (S, r)
        return out
    from synthgeo.model.vecchia_kernel import factor_rows  # numba: imported on first use

    k = min(int(n_neighbors), source.shape[0])
    dist, j = cKDTree(source).query(target, k=k, workers=-1)
    dist, j = np.asarray(dist).reshape(-1, k), np.asarray(j).reshape(-1, k)
    diag = np.arange(k)
    ones_t, ones_s = np.ones(target.shape[0]), np.ones(source.shape[0])

    def one_phi(ph: float) -> None:
        rows = np.flatnonzero(phi == ph)
        # each target's block C b = c: Cholesky in compiled code (model.vecchia_kernel), the
        # sources' distances computed there from their coordinates (no (T, k, k) array)
        b, _, failed = factor_rows(target, j, ones_t, ones_t, KRIGING_JITTER, ph,
                                   source=source, dist_in=dist, d_source=ones_s,
                                   om_source=ones_s)
        if failed.any():  # a numerically singular block (coincident sources): LU, as before
            nb = source[j[failed]]  # (f, k, 2)
            d_nn = np.linalg.norm(nb[:, :, None, :] - nb[:, None, :, :], axis=-1)
            C = exponential_correlation(d_nn, ph)
            C[:, diag, diag] += KRIGING_JITTER
            b[failed] = np.linalg.solve(
                C, exponential_correlation(dist[failed], ph)[:, :, None])[:, :, 0]
        out[rows] = np.einsum("tk,rtk->rt", b, values[rows][:, j])  # (T, k) weights

    distinct = np.unique(phi)
    if n_threads > 1 and distinct.size > 1:
        with ThreadPoolExecutor(max_workers=n_threads) as ex:
            list(ex.map(one_phi, distinct))
    else:
        for ph in distinct:
            one_phi(ph)
    return out


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

    Examples
    --------
    >>> import numpy as np
    >>> xy = np.array([[0.0, 0.0], [10.0, 0.0], [20.0, 0.0]])
    >>> out = kriged_effects(np.array([[1.0, 5.0, 1.0]]), np.array([0.01]), xy,
    ...                      np.array([False, True, False]))
    >>> bool(0.5 < out[0, 1] < 1.0)  # between the prior mean 0 and the neighbours' level 1
    True
    """
    out = np.array(w, dtype=float, copy=True)
    inactive = np.asarray(inactive, bool)
    act, ina = np.flatnonzero(~inactive), np.flatnonzero(inactive)
    if ina.size == 0:
        return out
    if act.size == 0:
        out[:, ina] = 0.0
        return out
    c_km = np.asarray(site_coords_m, float) / METRES_PER_KM
    phi_km = np.asarray(phi_per_m, float) * METRES_PER_KM
    out[:, ina] = krige(c_km[act], out[:, act], phi_km, c_km[ina], n_neighbors=n_neighbors)
    return out
