r"""The leave-one-out baseline: what the unrestricted GP predicts for y_i without y_i.

For y ~ N(μ, K) with precision Q = K⁻¹ and a block B of records (record i and the records left
out with it: :func:`leave_out_blocks`, ``[risk] loo_unit``), the conditional of y_B given all
other responses is, in closed form (Rasmussen & Williams 2006, *Gaussian Processes for Machine
Learning*, MIT Press, Sect. 5.4.2, eq. 5.12, there for single records; the block form is the
same partitioned-inverse identity):

.. math::

    y_B \mid y_{-B} \sim N\bigl(y_B - Q_{BB}^{-1}[Q(y-\mu)]_B,\; Q_{BB}^{-1}\bigr).

Per posterior draw ℓ of the unrestricted model, K = σ²(R(φ) + αI) over records (α = τ²/σ²,
exponential correlation, docs/model.md), so the mean does not depend on σ² and the variance
scales with it: one precision per distinct (φ, α) serves every draw that shares it. Q comes
from the engine's own factorisation: a dense Cholesky inverse for the exact GP
(:func:`exact_precision`), or the NNGP's sparse (I − B)ᵀF⁻¹(I − B) (:func:`nngp_precision`,
from :mod:`synthgeo.model.vecchia`), whose blocks are read off without any inversion.

Baseline framing: Reiter, Wang & Zhang (2014), *Bayesian estimation of disclosure risks for
multiply imputed, synthetic data*, J. Privacy and Confidentiality 6(1),
doi:10.29012/jpc.v6i1.635; the control attack of Giomi, Boenisch, Wehmeyer & Tasnádi (2022),
*A unified framework for quantifying privacy risk in synthetic data*, PoPETs 2023(2),
doi:10.56553/popets-2023-0055 (docs/risk-and-utility.md, "Baseline and attributable risk").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.spatial.distance import cdist
from threadpoolctl import threadpool_limits

from synthgeo.config.risk import LOO_UNITS
from synthgeo.inference.factor import cho_factor, cho_inverse
from synthgeo.model.vecchia import ordered_neighbours, vecchia_factors
from synthgeo.risk.predictive import Predictive

__all__ = ["loo_blocks", "leave_out_blocks", "block_differs", "LOO_UNITS", "loo_conditional",
           "exact_precision", "nngp_precision", "baseline_loo", "baseline_loo_sets",
           "block_solve", "calibration_own_weight", "block_log_density"]

#: ``precision_of(phi_per_m, alpha)``: precision of y over records in units of 1/σ², input order.
PrecisionFn = Callable[[float, float], "np.ndarray | sp.spmatrix"]


def loo_blocks(site_index: np.ndarray, subject: np.ndarray | None = None) -> np.ndarray:
    """Blocks left out together: records linked by a shared site or a shared subject.

    The leave-out unit ``"site"`` (:func:`leave_out_blocks`, which chooses among the units).

    Parameters
    ----------
    site_index : ndarray of int, shape (n_records,)
        Each record's site.
    subject : ndarray of shape (n_records,), optional
        Subject ids (records of one person); None: every record its own subject.

    Returns
    -------
    ndarray of int, shape (n_records,)
        Block label per record: the connected components of the record–site–subject graph,
        so that leaving out a block leaves out every record at i's site and of i's subject
        (and, transitively, theirs).

    Examples
    --------
    >>> loo_blocks(np.array([0, 0, 1, 2])).tolist()
    [0, 0, 1, 2]
    >>> loo_blocks(np.array([0, 1, 2, 3]), subject=np.array(["a", "b", "a", "c"])).tolist()
    [0, 1, 0, 2]
    """
    site = np.asarray(site_index)
    n = site.shape[0]
    if n == 0:
        return np.zeros(0, dtype=int)
    _, s = np.unique(site, return_inverse=True)
    rows, cols = [np.arange(n)], [n + s]
    n_nodes = n + s.max() + 1
    if subject is not None:
        _, u = np.unique(np.asarray(subject), return_inverse=True)
        rows.append(np.arange(n))
        cols.append(n_nodes + u)
        n_nodes += u.max() + 1
    r, c = np.concatenate(rows), np.concatenate(cols)
    graph = sp.coo_matrix((np.ones(r.size), (r, c)), shape=(n_nodes, n_nodes))
    _, labels = connected_components(graph, directed=False)
    _, block = np.unique(labels[:n], return_inverse=True)
    return block


def leave_out_blocks(unit: str, site_index: np.ndarray,
                     subject: np.ndarray | None = None) -> np.ndarray:
    """Blocks of records left out together under a leave-out unit (``[risk] loo_unit``).

    The one home of the leave-out unit: the risk stage's baseline and any other leave-out
    predictive (a cross-fitted synthesis) take their blocks from here
    (docs/risk-and-utility.md, "Baseline and attributable risk").

    Parameters
    ----------
    unit : {"site", "subject", "record"}
        ``"record"``: each record alone; ``"site"``: every record at the record's geocode and,
        when ``subject`` is given, every record of its subject, transitively
        (:func:`loo_blocks`; the conservative choice when the file cannot say whether a shared
        geocode is one property sold again or several properties); ``"subject"``: the records
        of the record's subject (needs ``subject``).
    site_index : ndarray of int, shape (n_records,)
        Each record's site (distinct geocode).
    subject : ndarray of shape (n_records,), optional
        Subject ids (``[data] subject``); None: no subject column.

    Returns
    -------
    ndarray of int, shape (n_records,)
        Block label per record, 0..n_blocks − 1 in order of first appearance for "record" and
        "site", sorted subject order for "subject".

    Raises
    ------
    ValueError
        If ``unit`` is not one of :data:`LOO_UNITS`, ``unit = "subject"`` without ``subject``,
        or ``subject`` has another length than ``site_index``.

    Examples
    --------
    Records 0 and 1 share a geocode; records 1 and 3 are one subject:

    >>> site, subj = np.array([0, 0, 1, 2]), np.array(["a", "b", "c", "b"])
    >>> leave_out_blocks("record", site, subj).tolist()
    [0, 1, 2, 3]
    >>> leave_out_blocks("site", site, subj).tolist()
    [0, 0, 1, 0]
    >>> leave_out_blocks("subject", site, subj).tolist()
    [0, 1, 2, 1]
    """
    site = np.asarray(site_index)
    if unit not in LOO_UNITS:
        raise ValueError(f"`unit` must be one of {LOO_UNITS!r}, got {unit!r}.")
    if subject is not None and np.shape(subject) != site.shape:
        raise ValueError(f"`subject` must have shape {site.shape}, got {np.shape(subject)}.")
    if unit == "record":
        return np.arange(site.shape[0])
    if unit == "site":
        return loo_blocks(site, subject)
    if subject is None:
        raise ValueError('unit "subject" needs subject ids (a `[data] subject` column); use '
                         'unit "site" or "record" without one.')
    return np.unique(np.asarray(subject), return_inverse=True)[1].reshape(-1)


def block_differs(blocks_a: np.ndarray, blocks_b: np.ndarray) -> np.ndarray:
    """Whether each record's block (the set of records left out with it) differs between two.

    Parameters
    ----------
    blocks_a, blocks_b : ndarray of int, shape (n_records,)
        Block labels (:func:`leave_out_blocks`); the labels themselves need not agree.

    Returns
    -------
    ndarray of bool, shape (n_records,)
        True where record i's block under ``blocks_a`` is not the same set of records as
        under ``blocks_b``; all False when the two partitions are the same ("same blocks").

    Examples
    --------
    >>> block_differs(np.array([0, 0, 1, 2]), np.array([0, 1, 2, 3])).tolist()
    [True, True, False, False]
    >>> bool(block_differs(np.array([0, 0, 1]), np.array([5, 5, 2])).any())
    False
    """
    a, b = np.asarray(blocks_a), np.asarray(blocks_b)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"block labels must be two arrays of one length, got {a.shape} and "
                         f"{b.shape}.")
    if a.size == 0:
        return np.zeros(0, bool)
    _, ia, na = np.unique(a, return_inverse=True, return_counts=True)
    _, ib, nb = np.unique(b, return_inverse=True, return_counts=True)
    _, iab, nab = np.unique(np.column_stack([ia.ravel(), ib.ravel()]), axis=0,
                            return_inverse=True, return_counts=True)
    # i's two blocks are one set iff both hold exactly the records they share with each other
    size_a, size_b, size_ab = na[ia.ravel()], nb[ib.ravel()], nab[iab.ravel()]
    return ~((size_a == size_ab) & (size_b == size_ab))


def _entries(Q, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Q[rows, cols] elementwise for a dense or sparse Q (same-shape index arrays)."""
    if sp.issparse(Q):
        return np.asarray(Q[rows.ravel(), cols.ravel()]).reshape(rows.shape)
    return Q[rows, cols]


def _checked(residual, precision, blocks):
    """Return r, r as (n, k), Q (dense or CSR) and the block labels, checked against each other."""
    r = np.asarray(residual, dtype=float)
    r2 = r[:, None] if r.ndim == 1 else r
    n = r2.shape[0]
    Q = precision.tocsr() if sp.issparse(precision) else np.asarray(precision, dtype=float)
    if Q.shape != (n, n):
        raise ValueError(f"`precision` must have shape ({n}, {n}), got {Q.shape}.")
    labels = np.arange(n) if blocks is None else np.asarray(blocks)
    if labels.shape != (n,):
        raise ValueError(f"`blocks` must have shape ({n},), got {labels.shape}.")
    return r, r2, Q, labels


def _blocks_by_size(labels: np.ndarray):
    """Yield (s, idx): the records of every block of size s, idx of shape (n_blocks, s)."""
    _, inv, counts = np.unique(labels, return_inverse=True, return_counts=True)
    order = np.argsort(inv, kind="stable")
    sizes = counts[inv[order]]
    for s in np.unique(sizes):
        yield int(s), order[sizes == s].reshape(-1, s)


def _block_matrices(Q, idx: np.ndarray) -> np.ndarray:
    """Q_BB of every block in ``idx`` (n_blocks, s), as (n_blocks, s, s)."""
    s = idx.shape[1]
    return _entries(Q, np.repeat(idx[:, :, None], s, 2), np.repeat(idx[:, None, :], s, 1))


def loo_conditional(residual: np.ndarray, precision, blocks: np.ndarray | None = None):
    """Leave-block-out conditional mean and variance of a zero-mean Gaussian vector.

    Parameters
    ----------
    residual : ndarray of shape (n,) or (n, k)
        r = y − μ (k columns: k mean vectors sharing one precision).
    precision : ndarray or scipy sparse matrix, shape (n, n)
        Q = Cov(r)⁻¹.
    blocks : ndarray of int, shape (n,), optional
        Block labels (:func:`loo_blocks`); default: every record alone.

    Returns
    -------
    cond_mean : ndarray, shape of ``residual``
        E[r_i | r outside i's block] = r_B − Q_BB⁻¹ (Q r)_B at i (module docstring).
    cond_var : ndarray of shape (n,)
        Var[r_i | r outside i's block] = (Q_BB⁻¹)_ii.

    Examples
    --------
    >>> K = np.array([[1.0, 0.5], [0.5, 1.0]])
    >>> m, v = loo_conditional(np.array([1.0, 0.0]), np.linalg.inv(K))
    >>> m.round(12).tolist(), v.round(12).tolist()  # E[r0|r1=0] = 0, E[r1|r0=1] = 0.5
    ([0.0, 0.5], [0.75, 0.75])
    """
    r, r2, Q, labels = _checked(residual, precision, blocks)
    n = r2.shape[0]
    a = Q @ r2
    mean, var = np.empty_like(r2), np.empty(n)
    for s, idx in _blocks_by_size(labels):  # idx (n_blocks, s): records of each block
        if s == 1:
            d = (Q.diagonal() if sp.issparse(Q) else np.diagonal(Q))[idx[:, 0]]
            mean[idx[:, 0]] = r2[idx[:, 0]] - a[idx[:, 0]] / d[:, None]
            var[idx[:, 0]] = 1.0 / d
            continue
        qbb = _block_matrices(Q, idx)
        mean[idx] = r2[idx] - np.linalg.solve(qbb, a[idx])
        var[idx] = np.diagonal(np.linalg.inv(qbb), axis1=1, axis2=2)
    return (mean[:, 0] if r.ndim == 1 else mean), var


def block_log_density(residual: np.ndarray, precision, blocks: np.ndarray | None = None,
                      *, scale: np.ndarray | float = 1.0) -> np.ndarray:
    r"""Log density of each record's leave-out block given all other records, per column.

    For r ~ N(0, s Q⁻¹) (s a variance scale, per column) and block B, r_B | r_−B ~
    N(r_B − Q_BB⁻¹a_B, s Q_BB⁻¹) with a = Qr, so the residual of the block against its
    conditional mean is Q_BB⁻¹a_B and

    .. math::

        \log p(r_B \mid r_{-B}) = -\tfrac{b}{2}\log(2\pi s) + \tfrac12\log\det Q_{BB}
        - \frac{a_B^\top Q_{BB}^{-1} a_B}{2s}

    (b = |B|; the partitioned-inverse identity of :func:`loo_conditional`; Rue & Held 2005,
    *Gaussian Markov Random Fields*, Thm. 2.5). It is the importance weight's denominator of the
    leave-out posterior (:mod:`synthgeo.risk.loo_posterior`): the density of the data left out,
    not of record i alone, so co-sited records get the same value.

    Parameters
    ----------
    residual : ndarray of shape (n,) or (n, k)
        r = y − μ (k columns: k draws sharing one precision).
    precision : ndarray or scipy sparse matrix, shape (n, n)
        Q, the precision of r in units of 1/s.
    blocks : ndarray of int, shape (n,), optional
        Block labels (:func:`leave_out_blocks`); default: every record alone.
    scale : float or ndarray of shape (k,), default=1.0
        The variance scale s of each column (σ² of each posterior draw).

    Returns
    -------
    ndarray, shape of ``residual``
        At each record, its block's log density (natural log).

    Raises
    ------
    ValueError
        If ``precision`` or ``blocks`` do not match ``residual``.

    Examples
    --------
    >>> K = np.array([[1.0, 0.5], [0.5, 1.0]])
    >>> lp = block_log_density(np.array([1.0, 0.0]), np.linalg.inv(K))
    >>> from scipy.stats import norm
    >>> bool(np.isclose(lp[1], norm.logpdf(0.0, 0.5, 0.75 ** 0.5)))  # r1 | r0 = 1
    True
    """
    r, r2, Q, labels = _checked(residual, precision, blocks)
    s = np.broadcast_to(np.asarray(scale, dtype=float), (r2.shape[1],))
    a = Q @ r2
    out = np.empty_like(r2)
    diag = Q.diagonal() if sp.issparse(Q) else np.diagonal(Q)
    for b, idx in _blocks_by_size(labels):
        if b == 1:
            d = diag[idx[:, 0]]
            quad = a[idx[:, 0]] ** 2 / d[:, None]  # (n_blocks, k)
            logdet = np.log(d)
        else:
            qbb = _block_matrices(Q, idx)
            c = np.linalg.cholesky(qbb)
            z = np.linalg.solve(c, a[idx])  # (n_blocks, b, k): c z = a_B
            quad = np.einsum("nbk,nbk->nk", z, z)
            logdet = 2.0 * np.log(np.diagonal(c, axis1=1, axis2=2)).sum(axis=1)
        lp = (-0.5 * b * np.log(2 * np.pi * s)[None, :] + 0.5 * logdet[:, None]
              - quad / (2 * s[None, :]))
        out[idx.ravel()] = np.repeat(lp, b, axis=0)
    return out[:, 0] if r.ndim == 1 else out


def block_solve(precision, A: np.ndarray, blocks: np.ndarray | None = None) -> np.ndarray:
    """Λ A with Λ = blockdiag(Q_BB⁻¹): each block's rows of A solved with its own Q_BB.

    Parameters
    ----------
    precision : ndarray or scipy sparse matrix, shape (n, n)
        Q.
    A : ndarray of shape (n,) or (n, k)
    blocks : ndarray of int, shape (n,), optional
        Block labels (:func:`leave_out_blocks`); default: every record alone (Λ = diag(Q)⁻¹).

    Returns
    -------
    ndarray, shape of ``A``

    Examples
    --------
    >>> Q = np.array([[2.0, 0.5, 0.0], [0.5, 2.0, 0.1], [0.0, 0.1, 1.0]])
    >>> block_solve(Q, np.ones(3), np.array([0, 0, 1])).round(3).tolist()
    [0.4, 0.4, 1.0]
    """
    A = np.asarray(A, dtype=float)
    A2 = A[:, None] if A.ndim == 1 else A
    n = A2.shape[0]
    Q = precision.tocsr() if sp.issparse(precision) else np.asarray(precision, dtype=float)
    labels = np.arange(n) if blocks is None else np.asarray(blocks)
    out = np.empty_like(A2)
    diag = Q.diagonal() if sp.issparse(Q) else np.diagonal(Q)
    for s, idx in _blocks_by_size(labels):
        if s == 1:
            out[idx[:, 0]] = A2[idx[:, 0]] / diag[idx[:, 0], None]
            continue
        qbb = _block_matrices(Q, idx)
        out[idx] = np.linalg.solve(qbb, A2[idx])
    return out[:, 0] if A.ndim == 1 else out


def calibration_own_weight(X: np.ndarray, precision, blocks: np.ndarray | None = None
                           ) -> np.ndarray:
    r"""Weight of each record's own value in its covariate-calibrated cross-fitted mean.

    The calibrated mean (:func:`synthgeo.synthesis.cross_fit.calibrate_covariates`) is
    μ^c = μ̃ + H e with H = X(XᵀX)⁻¹Xᵀ and e = y − μ̃ = ΛQr the leave-out errors
    (r = y − Xβ, Λ = blockdiag(Q_BB⁻¹); :func:`loo_conditional`). The raw mean μ̃_i does not
    depend on y_i (nor on its block), so with β and the other responses fixed

    .. math::

        w_i = \partial\mu^c_i/\partial y_i = [H\Lambda Q]_{ii}
            = \sum_j [X(X^	op X)^{-1}]_{i\cdot}\,[Q\Lambda X]_{j\cdot}\,\mathbb 1[j=i]
            = \mathrm{rowsum}igl(X(X^	op X)^{-1} \circ Q\Lambda Xigr)_i,

    and replacing y_i by its leave-out mean μ̃_i would move μ^c_i by w_i e_i (the mean is
    linear in y given β): the record's own contribution to its released mean.

    Parameters
    ----------
    X : ndarray of shape (n, p)
        The model's design (the calibration's regressors).
    precision : ndarray or scipy sparse matrix, shape (n, n)
        Q, the precision of y over records (any positive scale: w does not depend on it).
    blocks : ndarray of int, shape (n,), optional
        Leave-out blocks; default: every record alone.

    Returns
    -------
    ndarray of shape (n,)
        w_i (dimensionless).

    Examples
    --------
    >>> X = np.column_stack([np.ones(3), [0.0, 1.0, 2.0]])
    >>> calibration_own_weight(X, np.eye(3)).round(3).tolist()  # Q = I: w = leverage h_ii
    [0.833, 0.333, 0.833]
    """
    X = np.asarray(X, dtype=float)
    XG = X @ np.linalg.inv(X.T @ X)
    QLX = precision @ block_solve(precision, X, blocks)
    return np.einsum("ij,ij->i", XG, np.asarray(QLX))


def exact_precision(coords_m: np.ndarray) -> PrecisionFn:
    """``precision_of(φ, α)`` for the exact GP: (R(φ) + αI)⁻¹ over records, dense.

    Parameters
    ----------
    coords_m : ndarray of shape (n_records, 2)
        Each record's location (metres; records at one site share it).

    Returns
    -------
    callable
        ``(phi_per_m, alpha) -> ndarray (n, n)``, the inverse from LAPACK's Cholesky
        (``dpotrf``, ``dpotri``): O(n³) per distinct (φ, α).

    Examples
    --------
    >>> Q = exact_precision(np.array([[0.0, 0.0], [100.0, 0.0]]))(0.01, 0.5)
    >>> K = np.exp(-0.01 * np.array([[0.0, 100.0], [100.0, 0.0]])) + 0.5 * np.eye(2)
    >>> bool(np.allclose(Q, np.linalg.inv(K)))
    True
    """
    dist = cdist(np.asarray(coords_m, float), np.asarray(coords_m, float))

    def precision_of(phi: float, alpha: float) -> np.ndarray:
        K = np.exp(-phi * dist)
        K[np.diag_indices_from(K)] += alpha
        try:  # in place, without the GIL: the cells of baseline_loo run in threads
            return cho_inverse(cho_factor(K, check_finite=False))
        except np.linalg.LinAlgError as exc:
            raise np.linalg.LinAlgError(f"covariance at phi={phi!r}, alpha={alpha!r} is not "
                                        f"positive definite ({exc}).") from exc

    return precision_of


def nngp_precision(coords_m: np.ndarray, n_neighbors: int = 15) -> PrecisionFn:
    """``precision_of(φ, α)`` for the response-form NNGP: (I − B)ᵀF⁻¹(I − B), sparse.

    Parameters
    ----------
    coords_m : ndarray of shape (n_records, 2)
        Each record's location (metres).
    n_neighbors : int, default=15
        m, as the fit's engine (:class:`synthgeo.inference.grid_posterior.NNGPCovariance`
        builds the same graph over records).

    Returns
    -------
    callable
        ``(phi_per_m, alpha) -> scipy.sparse.csr_matrix (n, n)`` in input order: the precision
        of the NNGP's implied covariance C̃ (units of 1/σ²), O(n m³) per (φ, α).

    Examples
    --------
    >>> xy = np.array([[0.0, 0.0], [50.0, 0.0], [0.0, 80.0]])
    >>> Q = nngp_precision(xy, n_neighbors=2)(0.01, 0.1).toarray()
    >>> K = np.exp(-0.01 * np.linalg.norm(xy[:, None] - xy[None], axis=-1)) + 0.1 * np.eye(3)
    >>> bool(np.allclose(Q, np.linalg.inv(K)))  # m = n - 1: the NNGP is exact
    True
    """
    from synthgeo.model.vecchia_kernel import PrecisionPattern  # numba: on first use

    graph = ordered_neighbours(np.asarray(coords_m, float), n_neighbors)
    # the pattern in input order (rank r's row is order[r]), found once; each (φ, α) then
    # adds Σ_i u_i u_iᵀ / F_i into place (no sparse product per cell)
    pattern = PrecisionPattern(graph.neighbours, graph.order)

    def precision_of(phi: float, alpha: float) -> sp.csr_matrix:
        f = vecchia_factors(graph, phi, alpha)
        return pattern.values(f.b, f.F)

    return precision_of


def baseline_loo(
    y: np.ndarray, X: np.ndarray, *, beta: np.ndarray, sigma2: np.ndarray, phi: np.ndarray,
    alpha: np.ndarray, precision_of: PrecisionFn, blocks: np.ndarray | None = None,
    n_threads: int = 2,
) -> Predictive:
    """Leave-one-out predictive of each y_i under the unrestricted GP, per posterior draw.

    Parameters
    ----------
    y : ndarray of shape (n_records,)
        Confidential response, model scale.
    X : ndarray of shape (n_records, p)
        Design matrix (intercept included).
    beta : ndarray of shape (L, p)
    sigma2 : ndarray of shape (L,)
        Partial sill σ²^(ℓ).
    phi : ndarray of shape (L,)
        Decay φ^(ℓ) in 1/metre.
    alpha : ndarray of shape (L,)
        τ²^(ℓ)/σ²^(ℓ).
    precision_of : callable
        ``(phi_per_m, alpha) -> Q`` (:func:`exact_precision` or :func:`nngp_precision`).
    blocks : ndarray of int, shape (n_records,), optional
        :func:`leave_out_blocks` labels; default: each record alone.
    n_threads : int, default=2
        Distinct (φ, α) cells evaluated concurrently, each with single-threaded BLAS (as the
        grid posterior does: nested BLAS threads oversubscribe the cores and ran 10-20x slower
        on small matrices when measured).

    Returns
    -------
    Predictive
        ``name="baseline_loo"``; mean x_iβ^(ℓ) + E[r_i | rest], sd (σ²^(ℓ) (Q_BB⁻¹)_ii)^½.

    Raises
    ------
    ValueError
        If the draw arrays differ in length or do not match ``X``.

    Examples
    --------
    >>> xy = np.array([[0.0, 0.0], [10.0, 0.0], [5000.0, 0.0]])
    >>> g = baseline_loo(np.array([1.0, 1.2, 3.0]), np.ones((3, 1)), beta=np.array([[1.0]]),
    ...                  sigma2=np.array([1.0]), phi=np.array([1e-3]), alpha=np.array([0.01]),
    ...                  precision_of=exact_precision(xy))
    >>> g.mean.round(3).tolist()  # the near pair predict each other; the far one gets ~β
    [[1.196, 1.0, 1.001]]
    """
    return baseline_loo_sets(y, X, beta=beta, sigma2=sigma2, phi=phi, alpha=alpha,
                             precision_of=precision_of, block_sets={"": blocks},
                             n_threads=n_threads)[""]


def baseline_loo_sets(
    y: np.ndarray, X: np.ndarray, *, beta: np.ndarray, sigma2: np.ndarray, phi: np.ndarray,
    alpha: np.ndarray, precision_of: PrecisionFn, block_sets: Mapping[str, np.ndarray | None],
    n_threads: int = 2, seconds: dict[str, float] | None = None,
    own_weight: dict[str, np.ndarray] | None = None,
    log_density: dict[str, np.ndarray] | None = None,
) -> dict[str, Predictive]:
    """:func:`baseline_loo` under several block sets, each precision built once.

    The precision of a (φ, α) cell (the cost: a dense Cholesky inverse, or the NNGP factors)
    serves every block set; only the block solves are repeated (the leave-out units compared
    side by side, :mod:`synthgeo.risk.loo_units`).

    Parameters
    ----------
    y, X, beta, sigma2, phi, alpha, precision_of, n_threads
        As :func:`baseline_loo`.
    block_sets : mapping of str to ndarray of int (or None)
        Name → :func:`leave_out_blocks` labels (None: each record alone).
    seconds : dict, optional
        Filled with name → the seconds of that set's block solves, summed over the threads.
    own_weight : dict, optional
        Filled with name → (L, n) :func:`calibration_own_weight` at each draw's (φ, α): the
        weight of a record's own value in its covariate-calibrated cross-fitted mean, with
        ``X`` as the calibration's regressors (one extra block solve of X per cell).
    log_density : dict, optional
        Filled with name → (L, n) :func:`block_log_density` of each record's leave-out block
        at each draw (the leave-out posterior's importance weights,
        :mod:`synthgeo.risk.loo_posterior`).

    Returns
    -------
    dict of str to Predictive
        By name, as :func:`baseline_loo` would return for each set.

    Raises
    ------
    ValueError
        As :func:`baseline_loo`.

    Examples
    --------
    >>> xy = np.array([[0.0, 0.0], [0.0, 0.0], [5000.0, 0.0]])  # records 0, 1 share a site
    >>> g = baseline_loo_sets(np.array([1.0, 1.2, 3.0]), np.ones((3, 1)),
    ...                       beta=np.array([[1.0]]), sigma2=np.array([1.0]),
    ...                       phi=np.array([1e-3]), alpha=np.array([0.01]),
    ...                       precision_of=exact_precision(xy),
    ...                       block_sets={"record": None, "site": np.array([0, 0, 1])})
    >>> g["record"].mean.round(3).tolist(), g["site"].mean.round(3).tolist()
    ([[1.198, 1.0, 1.001]], [[1.013, 1.013, 1.001]])
    """
    X = np.asarray(X, float)
    beta = np.atleast_2d(np.asarray(beta, float))
    sigma2, phi, alpha = (np.atleast_1d(np.asarray(v, float)) for v in (sigma2, phi, alpha))
    L = beta.shape[0]
    if not (sigma2.shape == phi.shape == alpha.shape == (L,)) or beta.shape[1] != X.shape[1]:
        raise ValueError(
            f"posterior draws must be beta (L, {X.shape[1]}) and sigma2, phi, alpha (L,); got "
            f"beta {beta.shape}, sigma2 {sigma2.shape}, phi {phi.shape}, alpha {alpha.shape}."
        )
    names = list(block_sets)
    # x_iβ^(ℓ) is made in the first set's mean array, which each cell then overwrites with its
    # rows' own means: no separate (L, n) array (800 MB at 10⁶ records and L = 100)
    mu = beta @ X.T  # (L, n)
    y = np.asarray(y, float)[None, :]
    out = {k: (mu if k == names[0] else np.empty_like(mu), np.empty_like(mu)) for k in names}
    weights = {k: np.empty_like(mu) for k in block_sets} if own_weight is not None else None
    dens = {k: np.empty_like(mu) for k in block_sets} if log_density is not None else None
    spent = {k: [] for k in block_sets}
    cells, cell = np.unique(np.column_stack([phi, alpha]), axis=0, return_inverse=True)

    def one_cell(c: int) -> None:
        rows = np.flatnonzero(cell.ravel() == c)
        Q = precision_of(*cells[c])
        mu_rows = mu[rows]  # a copy (fancy index): the first set's mean overwrites mu[rows]
        resid = (y - mu_rows).T  # (n, draws of the cell): no (L, n) residual array
        for name, blocks in block_sets.items():
            t0 = time.perf_counter()
            cond, var = loo_conditional(resid, Q, blocks)
            mean, sd = out[name]
            mean[rows] = mu_rows + cond.T
            sd[rows] = np.sqrt(sigma2[rows, None] * var[None, :])
            if weights is not None:
                weights[name][rows] = calibration_own_weight(X, Q, blocks)[None, :]
            if dens is not None:
                dens[name][rows] = block_log_density(resid, Q, blocks, scale=sigma2[rows]).T
            spent[name].append(time.perf_counter() - t0)  # list.append: thread-safe

    with threadpool_limits(limits=1), ThreadPoolExecutor(max_workers=max(1, n_threads)) as ex:
        list(ex.map(one_cell, range(len(cells))))
    if seconds is not None:
        seconds.update({k: float(sum(v)) for k, v in spent.items()})
    if weights is not None:
        own_weight.update(weights)
    if dens is not None:
        log_density.update(dens)
    return {k: Predictive(mean=m, sd=sd, name="baseline_loo") for k, (m, sd) in out.items()}
