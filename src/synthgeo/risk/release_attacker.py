r"""The release attacker: a record's value read back from *every* record's released implicates.

Every other risk figure scores a record's **own** released values. A record's value also
reaches the other records' released values: each record's synthetic mean krigs its
neighbours' responses, so with β and θ fixed the vector of released means is linear in y,

.. math::

    \bar y^\dagger = a + M y + \text{noise},\qquad
    \operatorname{Var}(\text{noise}_j) = s_j^2 / L,

with s_j² the variance of record j's L implicates. An attacker who knows the method and every
other record's value (the leave-one-out attacker's knowledge; Kerckhoffs) reads y_i off
column i of M: each ȳ†_j − a_j − Σ_{k≠i} M_jk y_k is M_ji y_i plus noise, and generalised
least squares over all j gives an estimate of y_i with precision

.. math::

    I_i = L \sum_j M_{ji}^2 / s_j^2 ,

combined with the leave-one-out predictive N(μ_i, s_i²) (the baseline: what the attacker
knows without the release) into a normal posterior. Its draws are the attacker's guesses:
for a guess drawn from that posterior, guess − y_i ~ N((1 − ω)(μ_i − y_i),
ω²/I_i + 1/(1/s_i² + I_i)), ω = I_i/(1/s_i² + I_i), averaged over the GLS noise. The
attack was built in the break-it trial of 2026-12-03 (``benchmarks/attack_neighbours.py``,
which estimates θ itself and found the targets' prices within 10 % several times as often as
the baseline) and is scored here per record with the engine's own precision.

M is the mechanism's (β fixed; the dependence of β on y is O(p/n) and left out):

- **cross-fit** (:mod:`synthgeo.synthesis.cross_fit`): m_B = r_B − Q_BB⁻¹[Qr]_B, so
  M₀ = I − ΛQ with Λ = blockdiag(Q_BB⁻¹) (zero on a record's own block);
- **covariate calibration** μ^c = μ̃ + He (e = y − μ̃, H = X(XᵀX)⁻¹Xᵀ): M = M₀ + H(I − M₀);
  with the leave-own-out shift − D(e − He), D = diag(h/(1 − h)):
  M = M₀ + ((I + D)H − D)(I − M₀);
- **posterior predictive** of the unrestricted fit: E[x'β + w | y] = y − αQ(y − Xβ), so
  M = I − αQ (α = τ²/σ²).

Averaged over the implicates' posterior draws (M̄ = Σ_cells (count/L) M_cell). Q is the
engine's own precision (dense for the exact GP, the NNGP's sparse (I − B)ᵀF⁻¹(I − B)), so
the information is an O(nnz(Q)) computation per (φ, α) cell.

**Input noise** (``[synthesis] input_noise``, :mod:`synthgeo.synthesis.input_noise`): when the
synthesis reads y* = y + e, e ~ N(0, κ²I) drawn once, every released value is a function of y*
and of the posterior draws, so whatever the attacker does with however many implicates, it
cannot learn more about y_i than y*_i tells (the data-processing inequality): the information
becomes J_i = 1/(1/I_i + κ²) ≤ 1/κ², for any L and any number of repeated draws.

**Several responses** (``[[data.responses]]``). A later response k is fitted with the earlier
responses' confidential values among its covariates, X = [C, y_e …] with coefficients b_e, and
each implicate's mean is moved to the earlier responses' *synthetic* values of the same
implicate, + (y†_e − y_e) b_e,ℓ (:func:`synthgeo.pipeline.responses.shift_to_earlier`). Every
mechanism here has raw means M₀ y_k + (I − M₀) X β (cross-fit M₀ = I − ΛQ; posterior
predictive I − αQ), so with z_k = y_k − Σ_e b_e y_e the raw released means *less*
Σ_e b_e,ℓ y†_e,ℓ (which the attacker computes from the release) are M₀ z_k + terms in C:
linear in y_k through M₀, and in an earlier response's y_e through −b_e M₀. A later
response's map in its own values is therefore the one-response map on its design (its
calibration's projection H does not involve y_k). Its means also tell about each earlier
response's values: −Σ_ℓ b_e,ℓ M_ℓ / L, plus, under a calibration, the derivative of the
projection itself, whose design holds y_e (:func:`earlier_response_information`; checked
against finite differences of the production synthesis in tests/test_cross_fit_several.py).
That information is added to the earlier response's own. Adding it treats the record's other
responses as known to the attacker (the Kerckhoffs reading, everyone's values but the one
targeted): an over-statement where they are not. Under input noise a later response's design
holds the earlier responses' y*, so its release is a function of y* and the bound 1/κ_e²
still holds.

What this attacker is not: it weights the records' means as independent (diagonal GLS); under
the posterior predictive the implicates of neighbours share a draw of w, and an attacker who
modelled that correlation could do better or worse. It takes θ and β as known (the break-it
script estimated them from the other records and did as well). It is the strongest
neighbour-signal attacker synthgeo has built, not a bound over all attackers — except under
input noise, where the unlimited-implicate figure (J_i = 1/κ²) is one.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from synthgeo.risk.loo import _block_matrices, _blocks_by_size, block_solve
from synthgeo.risk.predictive import Predictive
from synthgeo.synthesis.cross_fit import leverage

__all__ = ["MECHANISMS", "block_inverse", "mechanism_map", "release_information",
           "earlier_response_information",
           "attacker_predictive", "implicate_budget", "unlimited_bound"]

#: The released means' linear map this module knows: the cross-fit under each calibration and
#: the unrestricted posterior predictive.
MECHANISMS = ("cross_fit", "posterior")


def block_inverse(Q, blocks: np.ndarray | None = None):
    """Λ = blockdiag(Q_BB⁻¹) over the leave-out blocks, as a sparse CSR matrix.

    Parameters
    ----------
    Q : ndarray or scipy sparse matrix, shape (n, n)
        Precision of y over records.
    blocks : ndarray of int, shape (n,), optional
        :func:`synthgeo.risk.loo.leave_out_blocks` labels; default: every record alone.

    Returns
    -------
    scipy.sparse.csr_matrix of shape (n, n)

    Examples
    --------
    >>> Q = np.array([[2.0, 0.5, 0.0], [0.5, 2.0, 0.1], [0.0, 0.1, 1.0]])
    >>> block_inverse(Q, np.array([0, 0, 1])).toarray().round(3).tolist()
    [[0.533, -0.133, 0.0], [-0.133, 0.533, 0.0], [0.0, 0.0, 1.0]]
    """
    n = Q.shape[0]
    Q = Q.tocsr() if sp.issparse(Q) else np.asarray(Q, float)
    labels = np.arange(n) if blocks is None else np.asarray(blocks)
    diag = Q.diagonal() if sp.issparse(Q) else np.diagonal(Q)
    rows, cols, vals = [], [], []
    for s, idx in _blocks_by_size(labels):
        if s == 1:
            rows.append(idx[:, 0])
            cols.append(idx[:, 0])
            vals.append(1.0 / diag[idx[:, 0]])
            continue
        inv = np.linalg.inv(_block_matrices(Q, idx))  # (n_blocks, s, s)
        rows.append(np.repeat(idx[:, :, None], s, 2).ravel())
        cols.append(np.repeat(idx[:, None, :], s, 1).ravel())
        vals.append(inv.ravel())
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(n, n))


def mechanism_map(Q, alpha: float, *, mechanism: str, blocks: np.ndarray | None = None,
                  consume: bool = False):
    """M₀: the derivative of the released means in y at one (φ, α), before calibration.

    Parameters
    ----------
    Q : ndarray or scipy sparse matrix, shape (n, n)
        Precision of y over records in units of 1/σ² (:func:`synthgeo.risk.loo.exact_precision`
        or :func:`~synthgeo.risk.loo.nngp_precision` at the cell's φ, α).
    alpha : float
        τ²/σ² of the cell (the posterior predictive's smoother I − αQ).
    mechanism : {"cross_fit", "posterior"}
    blocks : ndarray of int, shape (n,), optional
        The cross-fit's leave-out blocks.
    consume : bool, default=False
        ``Q`` (a CSR matrix) is the caller's to give up: the posterior predictive's I − αQ is
        then written into its value array (the same numbers and pattern, without two more
        matrices of its size) where that is exact, and ``Q`` must not be used again.

    Returns
    -------
    scipy.sparse.csr_matrix or ndarray of shape (n, n)
        M₀[j, i] = ∂ mean_j / ∂ y_i (dimensionless); dense for a dense ``Q``.

    Raises
    ------
    ValueError
        For an unknown ``mechanism``.

    Examples
    --------
    >>> Q = np.linalg.inv(np.array([[1.1, 0.5], [0.5, 1.1]]))
    >>> mechanism_map(Q, 0.1, mechanism="cross_fit").round(3).tolist()
    [[0.0, 0.455], [0.455, 0.0]]
    """
    n = Q.shape[0]
    if mechanism not in MECHANISMS:
        raise ValueError(f"`mechanism` must be one of {MECHANISMS}, got {mechanism!r}")
    if not sp.issparse(Q):  # the exact GP: dense throughout (a sparse copy only costs)
        Q = np.asarray(Q, float)
        if mechanism == "cross_fit":
            return np.eye(n) - block_solve(Q, Q, blocks)
        return np.eye(n) - float(alpha) * Q
    Qs = Q.tocsr()
    if mechanism == "cross_fit":
        return (sp.identity(n, format="csr") - block_inverse(Qs, blocks) @ Qs).tocsr()
    if consume and Qs is Q:
        M = _smoother_in_place(Qs, float(alpha))
        if M is not None:
            return M
    return (sp.identity(n, format="csr") - float(alpha) * Qs).tocsr()


#: Values checked at once by :func:`_smoother_in_place` (an 8 MB temporary).
_CHUNK = 1 << 20


def _smoother_in_place(Q: sp.csr_matrix, alpha: float) -> sp.csr_matrix | None:
    """I − αQ in Q's own value array (Q is overwritten), or None where that cannot be exact.

    The same numbers and stored positions as SciPy's ``identity − alpha * Q`` on a canonical
    CSR matrix (sorted, no duplicates) with every diagonal entry stored: SciPy multiplies the
    values by α, then stores 1 − αq on the diagonal and 0 − αq = −αq elsewhere, dropping the
    entries that come out 0 — so where any does, or the pattern is not canonical, None (the
    caller takes SciPy's route; Q is then left unchanged). No second and third matrix of Q's
    size: the released map's largest temporaries (issue 28).
    """
    n = Q.shape[0]
    if not Q.has_canonical_format:
        return None
    rows = np.repeat(np.arange(n, dtype=Q.indices.dtype), np.diff(Q.indptr))
    diag = np.flatnonzero(rows == Q.indices)
    del rows
    if diag.size != n:  # a diagonal entry not stored: SciPy would insert it
        return None
    data = Q.data
    scaled_diag = data[diag] * alpha
    if np.count_nonzero(scaled_diag == 1.0) or any(  # an entry 0 after: SciPy drops it
            np.count_nonzero(data[a:a + _CHUNK] * alpha) != data[a:a + _CHUNK].size
            for a in range(0, data.size, _CHUNK)):
        return None
    data *= alpha
    np.negative(data, out=data)
    data[diag] = 1.0 - scaled_diag
    return sp.csr_matrix((data, Q.indices, Q.indptr), shape=Q.shape)


def release_information(M0, X: np.ndarray, weight: np.ndarray, *,
                        calibration: str = "none", eye_weight: float = 1.0) -> np.ndarray:
    r"""I_i = Σ_j M_ji² w_j: what every released mean tells about y_i, per record.

    Parameters
    ----------
    M0 : scipy sparse matrix or ndarray, shape (n, n)
        :func:`mechanism_map` (averaged over the implicates' cells).
    X : ndarray of shape (n, p)
        The model's design (the calibration's regressors).
    weight : ndarray of shape (n,)
        w_j = L / s_j², the precision of record j's implicate mean (1/log-dollars² for a
        log response).
    calibration : {"none", "covariates", "covariates_loo"}, default="none"
        The cross-fit's covariate calibration (module docstring: M from M₀).
    eye_weight : float, default=1.0
        c in the calibration's ∂e/∂y = cI − M₀. 1 for a response's own values; for an earlier
        response's values read off a later response's means (module docstring, "Several
        responses"), M₀ is Σ_ℓ b_ℓ M₀,ℓ / L and c = b̄, the mean of the earlier response's
        coefficients b_ℓ over the implicates.

    Returns
    -------
    ndarray of shape (n,)
        I_i ≥ 0, in the response's units⁻².

    Raises
    ------
    ValueError
        For an unknown ``calibration`` or mismatched shapes.

    Examples
    --------
    >>> M0 = np.array([[0.0, 0.5], [0.5, 0.0]])
    >>> release_information(M0, np.ones((2, 1)), np.array([100.0, 100.0])).tolist()
    [25.0, 25.0]
    """
    dense = not sp.issparse(M0)
    M0 = np.asarray(M0, float) if dense else sp.csr_matrix(M0)
    X = np.asarray(X, float)
    w = np.asarray(weight, float)
    n = M0.shape[0]
    if X.shape[0] != n or w.shape != (n,):
        raise ValueError(f"`X` must have {n} rows and `weight` shape ({n},); got {X.shape} "
                         f"and {w.shape}")

    def sq(A) -> np.ndarray:  # Σ_j A_ji² w_j
        return (A * A).T @ w if dense else np.asarray(A.multiply(A).T @ w).ravel()

    if calibration == "none":
        return sq(M0)
    if calibration not in ("covariates", "covariates_loo"):
        raise ValueError("`calibration` must be 'none', 'covariates' or 'covariates_loo', "
                         f"got {calibration!r}")
    eye = float(eye_weight) * (np.eye(n) if dense else sp.identity(n, format="csr"))
    U = eye - M0  # ∂e/∂y
    G = np.linalg.pinv(X.T @ X)
    A = G @ np.asarray((U.T @ X).T)  # (p, n): a_i = G Xᵀ U e_i
    if calibration == "covariates":
        V, Z = M0, X
    else:
        h = leverage(X)
        d = h / (1.0 - h)
        V = M0 - d[:, None] * U if dense else (M0 - sp.diags(d) @ U).tocsr()
        Z = X * (1.0 + d)[:, None]
    vv = sq(V)
    ZWV = np.asarray((V.T @ (Z * w[:, None])).T)  # (p, n): Zᵀ W V
    ZWZ = Z.T @ (Z * w[:, None])
    cross = np.einsum("ki,ki->i", A, ZWV)
    quad = np.einsum("ki,kl,li->i", A, ZWZ, A)
    return np.maximum(vv + 2.0 * cross + quad, 0.0)


def earlier_response_information(M0, X: np.ndarray, weight: np.ndarray, *, column: int,
                                 eye_weight: float, error: np.ndarray,
                                 calibration: str = "none") -> np.ndarray:
    r"""I_i of an *earlier* response's values read off a later response's released means.

    The later response is synthesised on X = [C, y_e, …] (its design holds the earlier
    response's confidential values in ``column``); its means less the attacker-computed
    Σ_ℓ b_ℓ y†_ℓ have, with β and the leave-out errors held as in :func:`release_information`,
    the derivative in y_e,i (column i of the Jacobian J):

    - raw cross-fit: −M e_i with M = Σ_ℓ b_ℓ M₀,ℓ / L (``M0``);
    - calibrated: −(M₀ + K U) e_i + c_i, U = b̄I − M₀, K = H ("covariates") or
      (I + D)H − D ("covariates_loo", D = diag(h/(1 − h))), and c_i the derivative of the
      calibration's own projection, which holds y_e in X:
      c_i = κ_i e_i + Z(r̄_i g − δ̄_p G x_i) + diag(q) X G x_i, with G = (XᵀX)⁻¹,
      g = G u_p (p = ``column``), ē the mean leave-out error (``error``), δ̄ = G Xᵀ ē,
      r̄ = ē − X δ̄, Z = (I + D) X, q_j = 2 r̄_j gᵀx_j / (1 − h_j)² (0 under "covariates"),
      κ_i = δ̄_p (1 + d_i) − q_i. From dH = (I − H) dX G Xᵀ + X G dXᵀ (I − H) and
      dh_j = 2 (δ_ij − H_ij) gᵀx_j at dX = e_i u_pᵀ.

    I_i = Σ_j J_ji² w_j, in O(nnz(M₀) p + n p²).

    Parameters
    ----------
    M0 : scipy sparse matrix or ndarray, shape (n, n)
        Σ_ℓ b_ℓ M₀,ℓ / L (:func:`synthgeo.pipeline.release_attack.released_map` with the
        earlier response's coefficients as weights).
    X : ndarray of shape (n, p)
        The later response's design as its synthesis used it.
    weight : ndarray of shape (n,)
        w_j = 1 / s_j² of the later response (one implicate).
    column : int
        The earlier response's column of ``X``.
    eye_weight : float
        b̄, the mean of b_ℓ.
    error : ndarray of shape (n,)
        ē: the later response's target (y, or y* under input noise) less the mean over
        implicates of its raw leave-out means (before the calibration).
    calibration : {"none", "covariates", "covariates_loo"}, default="none"

    Returns
    -------
    ndarray of shape (n,)
        I_i ≥ 0 per implicate, in the earlier response's units⁻².

    Raises
    ------
    ValueError
        For an unknown ``calibration``.

    Examples
    --------
    >>> M0 = np.array([[0.0, 0.5], [0.5, 0.0]])
    >>> earlier_response_information(M0, np.ones((2, 1)), np.array([100.0, 100.0]), column=0,
    ...                              eye_weight=1.0, error=np.zeros(2)).tolist()
    [25.0, 25.0]
    """
    if calibration == "none":
        return release_information(M0, X, weight)
    if calibration not in ("covariates", "covariates_loo"):
        raise ValueError("`calibration` must be 'none', 'covariates' or 'covariates_loo', "
                         f"got {calibration!r}")
    dense = not sp.issparse(M0)
    M0 = np.asarray(M0, float) if dense else sp.csr_matrix(M0)
    X, w, e = (np.asarray(v, float) for v in (X, weight, error))
    n = X.shape[0]
    eye = float(eye_weight) * (np.eye(n) if dense else sp.identity(n, format="csr"))
    U = eye - M0
    G = np.linalg.pinv(X.T @ X)
    A = G @ np.asarray((U.T @ X).T)  # (p, n): G Xᵀ U e_i
    g = G[:, column]
    delta = G @ (X.T @ e)
    r = e - X @ delta
    GX = G @ X.T  # (p, n): G x_i
    if calibration == "covariates":
        d, q = np.zeros(n), np.zeros(n)
        V = M0
    else:
        h = leverage(X)
        d = h / (1.0 - h)
        q = 2.0 * r * (X @ g) / (1.0 - h) ** 2
        V = M0 - d[:, None] * U if dense else (M0 - sp.diags(d) @ U).tocsr()
    Z = X * (1.0 + d)[:, None]
    Z2 = np.hstack([Z, X * q[:, None]])  # (n, 2p)
    kappa = delta[column] * (1.0 + d) - q
    # column i: −V e_i + κ_i e_i + Z2 β_i, β_i = [r̄_i g − δ̄_p G x_i − A_i ; G x_i]
    B = np.vstack([np.outer(g, r) - delta[column] * GX - A, GX])  # (2p, n)
    vv = (V * V).T @ w if dense else np.asarray(V.multiply(V).T @ w).ravel()
    v_diag = V.diagonal() if not dense else np.diagonal(V)
    Z2WV = np.asarray((V.T @ (Z2 * w[:, None])).T)  # (2p, n): Z2ᵀ W V e_i
    Z2WZ2 = Z2.T @ (Z2 * w[:, None])
    out = (vv - 2.0 * kappa * w * v_diag - 2.0 * np.einsum("ki,ki->i", B, Z2WV)
           + kappa ** 2 * w + 2.0 * kappa * w * np.einsum("ik,ki->i", Z2, B)
           + np.einsum("ki,kl,li->i", B, Z2WZ2, B))
    return np.maximum(out, 0.0)


def attacker_predictive(loo: Predictive, truth: np.ndarray, information: np.ndarray,
                        *, kappa: float = 0.0, point: bool = False,
                        ols_information: np.ndarray | float = 0.0) -> Predictive:
    r"""Return the release attacker's guesses, per implicate row of the baseline and record.

    Parameters
    ----------
    loo : Predictive
        The leave-one-out baseline N(μ_iℓ, s_iℓ²) (model scale), shape (L, n).
    truth : ndarray of shape (n,)
        y, model scale (confidential: the guesses are centred by it, since the attacker's GLS
        estimate is y_i plus noise).
    information : ndarray of shape (n,)
        I_i (:func:`release_information`); ``np.inf`` for unlimited implicates.
    kappa : float, default=0.0
        The input noise's sd κ (model scale): J_i = 1/(1/I_i + κ²).
    point : bool, default=False
        The attacker guesses its posterior mean (the "average" attack) instead of a draw from
        its posterior (the "share" attack).
    ols_information : float or ndarray of shape (n,), default=0.0
        What the covariate calibration's separate target tells about y_i, h_ii/κ_β²
        (``input_noise_ols = "separate"``, :mod:`synthgeo.synthesis.input_noise`): added to J_i
        (its noise is independent of e's; exact in the unlimited-implicate limit, where the
        release splits into the kriging part P m and the calibration part H m, and an upper
        bound at finite L).

    Returns
    -------
    Predictive
        ``name="release_attacker"``: mean μ + ω(y − μ), sd (ω²/J + 1/(1/s² + J))^½ (a draw)
        or (ω²/J)^½ (the mean) with ω = J/(1/s² + J) (module docstring).

    Examples
    --------
    >>> loo = Predictive(mean=np.zeros((1, 2)), sd=np.ones((1, 2)))
    >>> g = attacker_predictive(loo, np.array([1.0, 1.0]), np.array([0.0, 3.0]))
    >>> g.mean.round(3).tolist(), g.sd.round(3).tolist()
    ([[0.0, 0.75]], [[1.0, 0.661]])
    """
    y = np.asarray(truth, float)[None, :]
    info = np.asarray(information, float)
    with np.errstate(divide="ignore"):
        J = (1.0 / (1.0 / info + kappa ** 2) if kappa > 0 else info) + ols_information
    J = np.broadcast_to(J, loo.mean.shape[1:])[None, :]
    prior = 1.0 / loo.sd ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        omega = np.where(np.isinf(J), 1.0, J / (prior + J))
        noise = np.where(J > 0, omega ** 2 / np.where(J > 0, J, 1.0), 0.0)  # ω²/J
        noise = np.where(np.isinf(J), 0.0, noise)
        spread = 0.0 if point else np.where(np.isinf(J), 0.0, 1.0 / (prior + J))
    mean = loo.mean + omega * (y - loo.mean)
    return Predictive(mean=mean, sd=np.sqrt(np.maximum(noise + spread, 0.0)),
                      name="release_attacker")


def implicate_budget(info_at, attributable_at, threshold: float, *,
                     max_implicates: int = 100_000) -> np.ndarray:
    """Per record: the most pooled implicates that keep this attacker within the threshold.

    Parameters
    ----------
    info_at : callable
        ``L (int) -> information (n,)``: I_i with L implicates pooled (L I_i/L without mean
        noise; :func:`synthgeo.pipeline.release_attack.information_with_mean_noise` with it).
    attributable_at : callable
        ``information (n,) -> attributable risk (n,)``, increasing in the information.
    threshold : float
        The attributable risk that counts (e.g. ``record_threshold``).
    max_implicates : int, default=100000
        Records within the threshold even there get this value.

    Returns
    -------
    ndarray of int, shape (n,)
        B_i on the grid 1, 2, …, 16, then steps of 25 % (rounded up): the largest grid value
        at which record i is still within the threshold (0: not even at one implicate). The
        implicates pooled over this release and every later draw from its synthesiser must
        stay at or below min_i B_i.

    Examples
    --------
    >>> from synthgeo.risk.rao_blackwell import rb_risk
    >>> from synthgeo.config.measure import Measure
    >>> loo = Predictive(mean=np.zeros((1, 1)), sd=np.full((1, 1), 0.3))
    >>> m, y = Measure.parse("rel:0.1"), np.zeros(1)
    >>> f = lambda info: (rb_risk(attacker_predictive(loo, y, info), y, m)
    ...                   - rb_risk(loo, y, m))
    >>> int(implicate_budget(lambda L: np.array([1.0]) * L, f, 0.10)[0])  # crosses at 27
    25
    """
    grid = list(range(1, 17))
    while grid[-1] < max_implicates:
        grid.append(min(max_implicates, int(np.ceil(grid[-1] * 1.25))))
    out = done = None
    last = 0
    for L in grid:
        above = attributable_at(np.asarray(info_at(L), float)) > threshold
        if out is None:
            out = np.full(above.size, max_implicates, dtype=np.int64)
            done = np.zeros(above.size, bool)
        newly = above & ~done
        out[newly] = last
        done |= above
        if done.all():
            break
        last = L
    return out


def unlimited_bound(loo: Predictive, y: np.ndarray, kappa: float, risk_of) -> np.ndarray:
    """Per record: the attributable risk of an attacker who knows y*_i exactly (any L).

    Parameters
    ----------
    loo : Predictive
        The leave-one-out baseline, (L, n), model scale.
    y : ndarray of shape (n,)
    kappa : float
        κ > 0.
    risk_of : callable
        ``Predictive -> ndarray (n,)``: the Rao-Blackwellised risk of the judged measure.

    Returns
    -------
    ndarray of shape (n,)
        risk(attacker with information 1/κ²) − risk(baseline).

    Examples
    --------
    >>> from synthgeo.risk.rao_blackwell import rb_risk
    >>> from synthgeo.config.measure import Measure
    >>> loo = Predictive(mean=np.zeros((1, 1)), sd=np.full((1, 1), 0.3))
    >>> f = lambda p: rb_risk(p, np.zeros(1), Measure.parse("rel:0.1"))
    >>> float(unlimited_bound(loo, np.zeros(1), 0.3, f)[0].round(3))
    0.039
    """
    info = np.full(np.asarray(y).size, np.inf)
    return risk_of(attacker_predictive(loo, y, info, kappa=kappa)) - risk_of(loo)
