r"""What the input noise does to each released mean: its variance and its realised shift.

Under ``[synthesis] input_noise`` (:mod:`synthgeo.synthesis.input_noise`) the cross-fitted means
of implicate ℓ are, at its posterior draw and with β = OLS(y*), a *linear* function of
y* = y + e and of the calibration's target t:

.. math::

    m_\ell = A_\ell\, y^* + B\, t,

where, with K the cross-fit's map at the implicate's (φ, α + κ²/σ̄²)
(:func:`synthgeo.risk.release_attacker.mechanism_map`), H = X(XᵀX)⁻¹Xᵀ, P = I − H and
D = diag(h/(1 − h)) (h the leverages):

============================  =========================  ====================
calibration                   A                          B
============================  =========================  ====================
"none"                        XG + KR                    0
"covariates"                  PKR                        H
"covariates_loo"              (I + D)PKR                 H − DP
============================  =========================  ====================

with β = G y* (G = (XᵀQX)⁻¹XᵀQ, the GLS at the cell's precision Q, or the OLS map) and
R = I − XG (μ̃ = Xβ + K(y* − Xβ) = (XG + KR)y*; the calibration adds H(t − μ̃), and its
leave-own-out form subtracts D P(t − μ̃); PX = 0, RP = R, RH = 0). Under
``input_noise_ols = "shared"`` t = y*, so A + B multiplies y*; under "separate" t = y + e_β
with e_β ~ N(0, κ_β²I) independent of e.

Over the two noises (the mechanism's own randomness, drawn once for all implicates) record i's
mean therefore varies by

.. math::

    v_{i\ell} = \kappa^2 \lVert (A_\ell)_{i\cdot}\rVert^2 + \kappa_\beta^2 \lVert B_{i\cdot}
    \rVert^2 + 2\kappa^2 [A_\ell B^\top]_{ii}\,[\text{shared}],

and the noise moved it by A_ℓ e + B e_β on this draw. Both are computed in O(nnz(K)·p) with
no n × n product: ‖(PKR)_{i·}‖² = [PNP]_ii with N = KRRᵀKᵀ, expanded in X's p columns.
The own-value risk in expectation over the noise scores implicate ℓ of record i against
N(m_iℓ − shift_iℓ, s_iℓ² + v_iℓ) (docs/risk-and-utility.md, "Input noise: luck or leak").
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["noise_spread"]

_CALIBRATIONS = ("none", "covariates", "covariates_loo")


def _rowsq(K) -> np.ndarray:
    return (np.asarray(K.multiply(K).sum(axis=1)).ravel() if sp.issparse(K)
            else np.einsum("ij,ij->i", K, K))


def _diag(K) -> np.ndarray:
    return np.asarray(K.diagonal()).ravel()


def noise_spread(K, X: np.ndarray, *, calibration: str, kappa: float, ols_sd: float | None,
                 e: np.ndarray, e_ols: np.ndarray | None = None,
                 beta_map: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""Per record: the variance of its released mean over the input noise, and its shift.

    Parameters
    ----------
    K : ndarray or scipy sparse matrix, shape (n, n)
        The cross-fit's map at one (φ, α) cell
        (:func:`synthgeo.risk.release_attacker.mechanism_map`), dimensionless.
    X : ndarray of shape (n, p)
        The model's design (the calibration's regressors), intercept included.
    calibration : {"none", "covariates", "covariates_loo"}
        The cross-fit's covariate calibration (table in the module docstring).
    kappa : float
        κ, the input noise's sd (model scale, e.g. log-dollars).
    ols_sd : float or None
        κ_β, the separate noise of the calibration's target; None: the target is y*
        ("shared").
    e : ndarray of shape (n,)
        The input noise drawn (model scale).
    e_ols : ndarray of shape (n,), optional
        The calibration target's noise e_β (with ``ols_sd``).
    beta_map : ndarray of shape (p, n), optional
        G, the means' β = G y*: the GLS map (XᵀQX)⁻¹XᵀQ at the cell's precision Q; default
        the OLS map (XᵀX)⁻¹Xᵀ. R = I − XG replaces P on the right of K (module docstring).

    Returns
    -------
    variance : ndarray of shape (n,)
        v_i, the mean's variance over (e, e_β), model scale squared.
    shift : ndarray of shape (n,)
        A e + B e_β: how far this draw of the noise moved each mean (model scale).

    Raises
    ------
    ValueError
        For an unknown ``calibration``, "covariates_loo" with a separate target (its B is a
        full-rank map of t), or shapes that disagree.

    Examples
    --------
    >>> K = np.array([[0.0, 0.5, 0.0], [0.5, 0.0, 0.5], [0.0, 0.5, 0.0]])
    >>> X = np.ones((3, 1))
    >>> v, s = noise_spread(K, X, calibration="none", kappa=1.0, ols_sd=None, e=np.ones(3))
    >>> v.round(3).tolist(), s.round(3).tolist()
    ([0.5, 0.5, 0.5], [1.0, 1.0, 1.0])
    """
    if calibration not in _CALIBRATIONS:
        raise ValueError(f"`calibration` must be one of {_CALIBRATIONS}, got {calibration!r}")
    separate = ols_sd is not None
    if separate and calibration == "covariates_loo":
        raise ValueError('a separate calibration target needs calibration "covariates" or '
                         '"none" (under "covariates_loo" its map is full rank)')
    X = np.asarray(X, float)
    e = np.asarray(e, float)
    n = X.shape[0]
    C = np.linalg.pinv(X.T @ X)
    G = C @ X.T if beta_map is None else np.asarray(beta_map, float)
    if (K.shape != (n, n) or e.shape != (n,) or (separate and np.shape(e_ols) != (n,))
            or G.shape != (X.shape[1], n)):
        raise ValueError(f"`K` must be ({n}, {n}), `e`, `e_ols` ({n},) and `beta_map` "
                         f"({X.shape[1]}, {n}) for {n} rows of X")
    XC = X @ C
    h = np.einsum("ij,ij->i", XC, X)
    KX = np.asarray(K @ X)
    KtX = np.asarray(K.T @ X)
    KGt = np.asarray(K @ G.T)  # (n, p): row i is G K_iᵀ
    GGt = G @ G.T
    # N = (KR)(KR)ᵀ with R = I − XG: its diagonal, and N X, in X's p columns
    n_diag = np.maximum(_rowsq(K) - 2.0 * np.einsum("ij,ij->i", KX, KGt)
                        + np.einsum("ij,jk,ik->i", KX, GGt, KX), 0.0)
    M = KtX - G.T @ (X.T @ KtX)  # Rᵀ Kᵀ X
    NX = np.asarray(K @ M) - KX @ (G @ M)
    hn = np.einsum("ij,ij->i", XC, NX)  # [HN]_ii
    hnh = np.einsum("ij,jk,ik->i", XC, X.T @ NX, XC)  # [HNH]_ii
    pnp = np.maximum(n_diag - 2.0 * hn + hnh, 0.0)  # ‖(PKR)_i·‖²
    k2 = float(kappa) ** 2

    def proj(v: np.ndarray) -> np.ndarray:  # P v
        return v - XC @ (X.T @ v)

    Ge = G @ e
    Kre = np.asarray(K @ (e - X @ Ge)).ravel()  # K R e
    if calibration == "none":
        # A = XG + KR: ‖A_i·‖² = x_iᵀGGᵀx_i + 2 x_iᵀ G (KR)_iᵀ + N_ii
        cross = np.einsum("ij,ij->i", X, KGt - KX @ GGt)
        xg = np.einsum("ij,jk,ik->i", X, GGt, X)
        return k2 * np.maximum(xg + 2.0 * cross + n_diag, 0.0), X @ Ge + Kre
    pkre = proj(Kre)
    if calibration == "covariates":
        if separate:
            e_ols = np.asarray(e_ols, float)
            return k2 * pnp + float(ols_sd) ** 2 * h, pkre + (e_ols - proj(e_ols))
        # A + B = PKR + H: the cross term PKRH vanishes (RH = 0, since GX = I)
        return k2 * (pnp + h), pkre + (e - proj(e))
    # covariates_loo, shared: A + B = (I + D)PKR + H − DP (RP = R)
    d = h / (1.0 - h)
    # [PKR]_ii = K_ii − [KXG]_ii − [HK]_ii + [HKXG]_ii
    pkr = (_diag(K) - np.einsum("ij,ji->i", KX, G) - np.einsum("ij,ij->i", XC, KtX)
           + np.einsum("ij,jk,ki->i", XC, X.T @ KX, G))
    var = (1.0 + d) ** 2 * pnp - 2.0 * (1.0 + d) * d * pkr + h / (1.0 - h)
    shift = (1.0 + d) * pkre + (e - proj(e)) - d * proj(e)
    return k2 * np.maximum(var, 0.0), shift
