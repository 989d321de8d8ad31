"""Compiled Vecchia factors: each neighbour block built, Cholesky-factored and solved in place.

:func:`synthgeo.model.vecchia.vecchia_factors` needs, for every point i of the ordering, the
conditional-mean weights b_i = C_N(i),N(i)⁻¹ c_i and the conditional variance
F_i = d_i² + α ω_i − b_iᵀ c_i (Datta et al. 2016, JASA 111(514),
doi:10.1080/01621459.2015.1044091), with

    C_N(i),N(i) = d_N d_Nᵀ ∘ exp(−φ H_N(i),N(i)) + α diag(ω_N),   c_i = d_i d_N ∘ exp(−φ h_i,N(i))

(``docs/model.md``: the exponential correlation of :func:`synthgeo.model.kernels.
exponential_correlation`, in units of σ²). In NumPy this is an (n, m, m) array of
exponentials, its product with d_N d_Nᵀ and a batched LU solve (``numpy.linalg.solve``): three
or four (n, m, m) temporaries — 180 MB each at 10⁵ points and m = 15 — and ~1 s per (φ, α) at
10⁵ points. Here each block is built in a small buffer, factored by Cholesky (the block is
symmetric positive definite: a correlation matrix plus a positive diagonal; Golub & Van Loan,
*Matrix Computations*, 4th ed., Alg. 4.2.1) and solved by two triangular sweeps, one point after
another, in compiled code without the GIL (numba): no temporaries, half the exponentials (one
triangle), a third of the flops of LU. Measured at 10⁵ points, m = 15:
``benchmarks/bench_nngp.py factors``. The distances H and h are computed in the same loop from
the coordinates and the neighbour indices (√(Δx² + Δy²), the doubles
:func:`neighbour_distances` gives), so no (n, m, m) distance array is stored: 1.8 KB a point
at m = 15, which every neighbour graph of a run held before.

The result agrees with the LU solve to round-off (relative differences of order cond(C)·ε;
``tests/test_nngp.py``). A block whose Cholesky meets a non-positive pivot (possible only for a
numerically singular block: coincident neighbours with α ≈ 0) is flagged, and the caller solves
that row by LU as before.
"""

from __future__ import annotations

import numba
import numpy as np

#: From this many α in one call, :func:`row_statistics` factors the α's blocks side by side.
LANES_MIN_ALPHAS = 6

__all__ = ["factor_rows", "whitened_gram", "row_statistics", "i_minus_b_csr",
           "neighbour_distances", "PrecisionPattern"]


@numba.njit(cache=True, nogil=True)
def _cholesky_in_place(A, k):  # pragma: no cover - compiled
    """Factor A[:k, :k] = L Lᵀ into its lower triangle; False at a non-positive pivot."""
    for c in range(k):
        s = A[c, c]
        for t in range(c):
            s -= A[c, t] * A[c, t]
        if not s > 0.0:
            return False
        s = np.sqrt(s)
        A[c, c] = s
        r = c + 1
        while r + 3 < k:  # four rows at once: four independent chains of subtractions
            v0, v1, v2, v3 = A[r, c], A[r + 1, c], A[r + 2, c], A[r + 3, c]
            for t in range(c):
                f = A[c, t]
                v0 -= A[r, t] * f
                v1 -= A[r + 1, t] * f
                v2 -= A[r + 2, t] * f
                v3 -= A[r + 3, t] * f
            A[r, c], A[r + 1, c], A[r + 2, c], A[r + 3, c] = v0 / s, v1 / s, v2 / s, v3 / s
            r += 4
        for r in range(r, k):
            v = A[r, c]
            for t in range(c):
                v -= A[r, t] * A[c, t]
            A[r, c] = v / s
    return True


@numba.njit(cache=True, nogil=True)
def _cholesky_solve(A, rhs, x, k):  # pragma: no cover - compiled
    """x[:k] = (L Lᵀ)⁻¹ rhs[:k] with L in A's lower triangle: L y = c, then Lᵀ x = y."""
    for a in range(k):
        x[a] = rhs[a]
    for t in range(k):  # by columns of L: x[a] still receives its terms in the order t = 0, 1, …
        xt = x[t] / A[t, t]
        x[t] = xt
        for a in range(t + 1, k):
            x[a] -= A[a, t] * xt
    for a in range(k - 1, -1, -1):
        v = x[a]
        for t in range(a + 1, k):
            v -= A[t, a] * x[t]
        x[a] = v / A[a, a]


@numba.njit(cache=True, nogil=True)
def _distance(x0, y0, x1, y1):  # pragma: no cover - compiled
    """√(Δx² + Δy²), Δ = (x0 − x1, y0 − y1): the one formula of every graph distance."""
    dx = x0 - x1
    dy = y0 - y1
    return np.sqrt(dx * dx + dy * dy)


@numba.njit(cache=True, nogil=True)
def _rows(src, pts, h_in, nbr, dd, d_src, om, om_src, nug, phi, b, F):  # pragma: no cover
    n, m = nbr.shape
    given = h_in.shape[0] > 0  # point-to-neighbour distances given (kriging's tree's)
    A = np.empty((m, m))
    rhs = np.empty(m)
    x = np.empty(m)
    d_nb = np.empty(m)
    xy = np.empty((2, m))  # the neighbours' x and y, each contiguous
    h = np.empty(m)
    pos = np.empty(m, np.int64)
    failed = np.zeros(n, np.bool_)
    one = np.exp(-phi * 0.0)  # the diagonal's correlation: a point's distance to itself is 0
    for i in range(n):
        k = 0
        for a in range(m):
            j = nbr[i, a]
            if j >= 0:
                pos[k] = a
                d_nb[k] = d_src[j]
                xy[0, k] = src[j, 0]
                xy[1, k] = src[j, 1]
                k += 1
        for a in range(m):
            b[i, a] = 0.0
        own = nug * om[i]
        if k == 0:
            F[i] = max(dd[i] * dd[i] + own, own * 1e-6)
            continue
        # lower triangle of C and the right-hand side c; distances from the coordinates
        for a in range(k):
            pa = pos[a]
            xa, ya = xy[0, a], xy[1, a]
            for c in range(a):  # the distances first: a loop the compiler vectorises
                h[c] = _distance(xa, ya, xy[0, c], xy[1, c])
            for c in range(a):
                A[a, c] = np.exp(-phi * h[c]) * (d_nb[a] * d_nb[c])
            A[a, a] = one * (d_nb[a] * d_nb[a]) + nug * om_src[nbr[i, pa]]
            h_a = h_in[i, pa] if given else _distance(xa, ya, pts[i, 0], pts[i, 1])
            rhs[a] = np.exp(-phi * h_a) * d_nb[a] * dd[i]
        if not _cholesky_in_place(A, k):  # C = L Lᵀ in place (lower triangle)
            failed[i] = True
            continue
        _cholesky_solve(A, rhs, x, k)
        bc = 0.0
        for a in range(k):
            b[i, pos[a]] = x[a]
            bc += x[a] * rhs[a]
        F[i] = max(dd[i] * dd[i] + own - bc, own * 1e-6)
    return failed


@numba.njit(cache=True, nogil=True)
def _gram(b, F, nbr, v):  # pragma: no cover - compiled
    n, m = nbr.shape
    k = v.shape[1]
    G = np.zeros((k, k))
    u = np.empty(k)
    for i in range(n):
        for c in range(k):
            u[c] = v[i, c]
        for a in range(m):
            j = nbr[i, a]
            if j >= 0:
                for c in range(k):
                    u[c] -= b[i, a] * v[j, c]
        s = 1.0 / F[i]
        for c in range(k):
            for e in range(c + 1):
                G[c, e] += u[c] * u[e] * s
    for c in range(k):
        for e in range(c):
            G[e, c] = G[c, e]
    return G


def whitened_gram(b: np.ndarray, F: np.ndarray, neighbours: np.ndarray,
                  v: np.ndarray) -> np.ndarray:
    """Return vᵀ (I − B)ᵀ F⁻¹ (I − B) v = vᵀ C̃⁻¹ v without forming (I − B) v.

    One pass over the points: row i of (I − B) v is v_i − Σ_a b_ia v_N(i)a, needing only
    point i's own weights, so the (n, k) whitened array and the (n, m, k) gather of its
    neighbours' rows that NumPy needs are never made.

    Parameters
    ----------
    b : ndarray of shape (n, m)
        Conditional-mean weights (:class:`~synthgeo.model.vecchia.VecchiaFactors`).
    F : ndarray of shape (n,)
        Conditional variances.
    neighbours : ndarray of int, shape (n, m)
        Ranks of the neighbours; -1 pads.
    v : ndarray of shape (n, k)
        Columns in the ordering of the factors.

    Returns
    -------
    ndarray of shape (k, k)
        Symmetric.

    Examples
    --------
    >>> b = np.array([[0.0], [0.5]])
    >>> G = whitened_gram(b, np.array([1.0, 0.75]), np.array([[-1], [0]]), np.eye(2))
    >>> (G * 3).round(6).tolist()  # the inverse of [[1, 0.5], [0.5, 1]], times 3
    [[4.0, -2.0], [-2.0, 4.0]]
    """
    return _gram(np.ascontiguousarray(b, dtype=float), np.ascontiguousarray(F, dtype=float),
                 np.ascontiguousarray(neighbours, dtype=np.int64),
                 np.ascontiguousarray(v, dtype=float))


def factor_rows(points: np.ndarray, neighbours: np.ndarray, dd: np.ndarray, om: np.ndarray,
                nug: float, phi: float, *, source: np.ndarray | None = None,
                dist_in: np.ndarray | None = None, d_source: np.ndarray | None = None,
                om_source: np.ndarray | None = None,
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """b, F and the rows whose block Cholesky failed, for every point of an ordering.

    The distances are computed inside the compiled loop from the coordinates and the
    neighbour indices, √(Δx² + Δy²) as :func:`neighbour_distances` computes them (the same
    doubles): nothing of size (n, m, m) is stored.

    Parameters
    ----------
    points : ndarray of shape (n, 2)
        Coordinates of the points (the unit of 1/φ), in the ordering.
    neighbours : ndarray of int, shape (n, m)
        Indices of the neighbours (ranks in the ordering, or rows of ``source``); -1 pads.
    dd : ndarray of shape (n,)
        Smoothing scale d per point, in the ordering.
    om : ndarray of shape (n,)
        Nugget weight ω per point, in the ordering (ones for a common nugget).
    nug : float
        α (> 0; the latent field's jitter where α = 0).
    phi : float
        Decay φ, > 0.
    source : ndarray of shape (S, 2), optional
        Coordinates of the points ``neighbours`` indexes, when they are not the points
        themselves (kriging targets from sources); default ``points``.
    dist_in : ndarray of shape (n, m), optional
        Distance from each point to each neighbour, when the caller has it (kriging: the
        k-d tree's); default computed from the coordinates.
    d_source, om_source : ndarray of shape (S,), optional
        d and ω of the points ``neighbours`` indexes, when they are not the points
        themselves; default ``dd`` and ``om``.

    Returns
    -------
    b : ndarray of shape (n, m)
        Conditional-mean weights (0 on padding and on failed rows).
    F : ndarray of shape (n,)
        Conditional variances F_i = d_i² + α ω_i − b_iᵀ c_i, floored at 10⁻⁶ α ω_i (units of σ²).
    failed : ndarray of bool, shape (n,)
        Rows whose block was not numerically positive definite (b, F not set): solve them
        otherwise.

    Examples
    --------
    >>> pts = np.array([[0.0, 0.0], [1.0, 0.0]])
    >>> nbr = np.array([[-1, -1], [0, -1]])
    >>> b, F, failed = factor_rows(pts, nbr, np.ones(2), np.ones(2), 0.5, 1.0)
    >>> round(float(b[1, 0]), 6), round(float(F[1]), 6), failed.tolist()  # e⁻¹/1.5, 1.5 − e⁻²/1.5
    (0.245253, 1.409776, [False, False])
    """
    n, m = neighbours.shape
    b = np.empty((n, m))
    F = np.empty(n)
    dd = np.ascontiguousarray(dd, dtype=float)
    om = np.ascontiguousarray(om, dtype=float)
    pts = np.ascontiguousarray(points, dtype=float)
    failed = _rows(pts if source is None else np.ascontiguousarray(source, dtype=float), pts,
                   np.zeros((0, m)) if dist_in is None
                   else np.ascontiguousarray(dist_in, dtype=float),
                   np.ascontiguousarray(neighbours, dtype=np.int64), dd,
                   dd if d_source is None else np.ascontiguousarray(d_source, dtype=float),
                   om, om if om_source is None else np.ascontiguousarray(om_source, dtype=float),
                   float(nug), float(phi), b, F)
    return b, F, failed


@numba.njit(cache=True, nogil=True)
def _gather_block(pts, nbr, om, v, phi, i, pos, R, r, om_nb, v_nb,
                  xy):  # pragma: no cover - compiled
    """Point i's neighbour block, once for every α: positions, correlations, ω and values.

    Fills ``pos`` (the real neighbours' columns), ``xy`` (their coordinates), R's lower
    triangle exp(−φ H) and r = exp(−φ h) with the distances computed here from the
    coordinates (:func:`_distance`), the neighbours' ω and rows of v; returns how many
    neighbours i has. Distances and exponentials in one loop here: the split loops of
    :func:`_rows` measured ~5 % slower on a grid row of 14 α at 10⁵ points.
    """
    m = nbr.shape[1]
    k = v.shape[1]
    cnt = 0
    for a in range(m):
        if nbr[i, a] >= 0:
            pos[cnt] = a
            cnt += 1
    xi, yi = pts[i, 0], pts[i, 1]
    for a in range(cnt):
        ja = nbr[i, pos[a]]
        xa, ya = pts[ja, 0], pts[ja, 1]
        xy[a, 0] = xa
        xy[a, 1] = ya
        for c in range(a + 1):
            R[a, c] = np.exp(-phi * _distance(xa, ya, xy[c, 0], xy[c, 1]))
        r[a] = np.exp(-phi * _distance(xa, ya, xi, yi))
        om_nb[a] = om[ja]
        for c in range(k):
            v_nb[a, c] = v[ja, c]
    return cnt


@numba.njit(cache=True, nogil=True)
def _row_stats(pts, nbr, D, om, extra, alphas, phi, v, logdet, G):  # pragma: no cover
    n, m = nbr.shape
    n_a = alphas.shape[0]
    k = v.shape[1]
    shared = D.shape[0] == 1  # one d for every α: the scaled block is built once per point
    R = np.empty((m, m))
    S = np.empty((m, m))
    A = np.empty((m, m))
    r = np.empty(m)
    rhs = np.empty(m)
    x = np.empty(m)
    u = np.empty(k)
    d_nb = np.empty(m)
    om_nb = np.empty(m)
    v_nb = np.empty((m, k))
    xy = np.empty((m, 2))
    pos = np.empty(m, np.int64)
    for i in range(n):
        cnt = _gather_block(pts, nbr, om, v, phi, i, pos, R, r, om_nb, v_nb, xy)
        if shared:
            di = D[0, i]
            for a in range(cnt):
                da = D[0, nbr[i, pos[a]]]
                d_nb[a] = da
                for c in range(a):
                    S[a, c] = R[a, c] * (da * d_nb[c])
                S[a, a] = R[a, a] * (da * da)
                rhs[a] = r[a] * da * di
        for q in range(n_a):
            nug = alphas[q]
            if shared:
                for a in range(cnt):
                    for c in range(a):
                        A[a, c] = S[a, c]
                    A[a, a] = S[a, a] + nug * om_nb[a]
            else:
                di = D[q, i]
                for a in range(cnt):
                    da = D[q, nbr[i, pos[a]]]
                    d_nb[a] = da
                    for c in range(a):
                        A[a, c] = R[a, c] * (da * d_nb[c])
                    A[a, a] = R[a, a] * (da * da) + nug * om_nb[a]
                    rhs[a] = r[a] * da * di
            own = nug * om[i]
            if not _cholesky_in_place(A, cnt):  # lower triangle in place
                return False
            _cholesky_solve(A, rhs, x, cnt)
            bc = 0.0
            for a in range(cnt):
                bc += x[a] * rhs[a]
            F = max(di * di + own - bc, own * 1e-6) + extra[i]
            logdet[q] += np.log(F)
            for c in range(k):
                u[c] = v[i, c]
            for a in range(cnt):
                for c in range(k):
                    u[c] -= x[a] * v_nb[a, c]
            for c in range(k):
                for e in range(c + 1):
                    G[q, c, e] += u[c] * u[e] / F
    for q in range(n_a):
        for c in range(k):
            for e in range(c):
                G[q, e, c] = G[q, c, e]
    return True


@numba.njit(cache=True, nogil=True)
def _row_stats_lanes(pts, nbr, D, om, extra, alphas, phi, v, logdet,
                     G):  # pragma: no cover
    n, m = nbr.shape
    n_a = alphas.shape[0]
    k = v.shape[1]
    shared = D.shape[0] == 1  # one d for every α: the scaled block is built once per point
    # every α's block side by side, α innermost: the same arithmetic per α, one α per SIMD lane
    R = np.empty((m, m))
    S = np.empty((m, m))
    A = np.empty((m, m, n_a))
    rhs = np.empty((m, n_a))
    x = np.empty((m, n_a))
    u = np.empty((k, n_a))
    s = np.empty(n_a)
    w = np.empty(n_a)
    F = np.empty(n_a)
    r = np.empty(m)
    d_nb = np.empty(m)
    om_nb = np.empty(m)
    v_nb = np.empty((m, k))
    xy = np.empty((m, 2))
    pos = np.empty(m, np.int64)
    for i in range(n):
        cnt = _gather_block(pts, nbr, om, v, phi, i, pos, R, r, om_nb, v_nb, xy)
        if shared:
            di = D[0, i]
            for a in range(cnt):
                da = D[0, nbr[i, pos[a]]]
                d_nb[a] = da
                for c in range(a):
                    S[a, c] = R[a, c] * (da * d_nb[c])
                S[a, a] = R[a, a] * (da * da)
                ra = r[a] * da * di
                for q in range(n_a):
                    rhs[a, q] = ra
                for c in range(a):
                    sac = S[a, c]
                    for q in range(n_a):
                        A[a, c, q] = sac
                saa, oma = S[a, a], om_nb[a]
                for q in range(n_a):
                    A[a, a, q] = saa + alphas[q] * oma
        else:
            for q in range(n_a):
                di = D[q, i]
                for a in range(cnt):
                    da = D[q, nbr[i, pos[a]]]
                    d_nb[a] = da
                    for c in range(a):
                        A[a, c, q] = R[a, c] * (da * d_nb[c])
                    A[a, a, q] = R[a, a] * (da * da) + alphas[q] * om_nb[a]
                    rhs[a, q] = r[a] * da * di
        # Cholesky of every α's block at once (Golub & Van Loan Alg. 4.2.1, column by column)
        for c in range(cnt):
            for q in range(n_a):
                s[q] = A[c, c, q]
            for t in range(c):
                for q in range(n_a):
                    s[q] -= A[c, t, q] * A[c, t, q]
            for q in range(n_a):
                if not s[q] > 0.0:
                    return False
            for q in range(n_a):
                s[q] = np.sqrt(s[q])
                A[c, c, q] = s[q]
            for rr in range(c + 1, cnt):
                for q in range(n_a):
                    w[q] = A[rr, c, q]
                for t in range(c):
                    for q in range(n_a):
                        w[q] -= A[rr, t, q] * A[c, t, q]
                for q in range(n_a):
                    A[rr, c, q] = w[q] / s[q]
        # x = (L Lᵀ)⁻¹ rhs: L y = rhs by columns of L, then Lᵀ x = y
        for a in range(cnt):
            for q in range(n_a):
                x[a, q] = rhs[a, q]
        for t in range(cnt):
            for q in range(n_a):
                x[t, q] = x[t, q] / A[t, t, q]
            for a in range(t + 1, cnt):
                for q in range(n_a):
                    x[a, q] -= A[a, t, q] * x[t, q]
        for a in range(cnt - 1, -1, -1):
            for q in range(n_a):
                w[q] = x[a, q]
            for t in range(a + 1, cnt):
                for q in range(n_a):
                    w[q] -= A[t, a, q] * x[t, q]
            for q in range(n_a):
                x[a, q] = w[q] / A[a, a, q]
        for q in range(n_a):
            s[q] = 0.0  # bᵀc
        for a in range(cnt):
            for q in range(n_a):
                s[q] += x[a, q] * rhs[a, q]
        for q in range(n_a):
            di = D[0, i] if shared else D[q, i]
            own = alphas[q] * om[i]
            F[q] = max(di * di + own - s[q], own * 1e-6) + extra[i]
            logdet[q] += np.log(F[q])
        for c in range(k):
            for q in range(n_a):
                u[c, q] = v[i, c]
        for a in range(cnt):
            for c in range(k):
                vac = v_nb[a, c]
                for q in range(n_a):
                    u[c, q] -= x[a, q] * vac
        for c in range(k):
            for e in range(c + 1):
                for q in range(n_a):
                    G[q, c, e] += u[c, q] * u[e, q] / F[q]
    for q in range(n_a):
        for c in range(k):
            for e in range(c):
                G[q, e, c] = G[q, c, e]
    return True


def row_statistics(points: np.ndarray, neighbours: np.ndarray, D: np.ndarray, om: np.ndarray,
                   extra: np.ndarray, alphas: np.ndarray, phi: float,
                   v: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """log|C̃| and vᵀC̃⁻¹v at one φ and several α, in one pass over the points.

    What a grid row needs from :func:`~synthgeo.model.vecchia.vecchia_factors` and
    :func:`whitened_gram` at each α, without either's arrays: for each point the neighbour
    block's distances (from the coordinates, as :func:`neighbour_distances`: the same
    doubles, nothing stored) and correlations exp(−φ h) are computed once and serve every α
    (they are about 40 % of a block's work), then per α the block is scaled by d, factored
    (Cholesky), solved, and the point's F_i and whitened row are added to Σ log F_i and to
    the Gram matrix. Same
    arithmetic as the two-step route, so equal to round-off (only the order of the sums
    differs). From :data:`LANES_MIN_ALPHAS` α (a grid row holds 14) every α's block is
    factored side by side, α innermost, so that each step runs over the α's in SIMD lanes:
    the same operations in the same order for each α, so the same bits as one α at a time
    (test), about 1.4x faster per row of 14 at 10⁵ points; with fewer α (the draws' and the
    mode search's points, one each) the one-at-a-time kernel is faster and is used.

    Parameters
    ----------
    points : ndarray of shape (n, 2)
        Coordinates in the ordering (the graph's ``points``).
    neighbours : ndarray of int, shape (n, m)
        Ranks of the neighbours; -1 pads (the graph's ``neighbours``).
    D : ndarray of shape (A, n)
        d per α and point, in the ordering (rows equal where d does not depend on α).
    om : ndarray of shape (n,)
        Nugget weight ω per point (ones for a common nugget).
    extra : ndarray of shape (n,)
        Added to F_i after its floor (the marginal at-risk nugget; zeros otherwise).
    alphas : ndarray of shape (A,)
        α values, each > 0.
    phi : float
        Decay φ, > 0.
    v : ndarray of shape (n, k)
        Columns in the ordering.

    Returns
    -------
    (logdet, G) or None
        ``logdet`` (A,) = Σ log F_i and ``G`` (A, k, k) = vᵀ C̃⁻¹ v per α; None when a block
        was not numerically positive definite (use the two-step route, which solves such a
        block by LU).

    Examples
    --------
    >>> nbr = np.array([[-1], [0]])
    >>> pts = np.array([[0.0, 0.0], [np.log(2.0), 0.0]])  # correlation ½
    >>> logdet, G = row_statistics(pts, nbr, np.ones((1, 2)), np.ones(2), np.zeros(2),
    ...                            np.array([1e-12]), 1.0, np.eye(2))
    >>> (G[0] * 3).round(6).tolist()  # the inverse of [[1, ½], [½, 1]], times 3
    [[4.0, -2.0], [-2.0, 4.0]]
    """
    n_a, k = len(alphas), v.shape[1]
    logdet = np.zeros(n_a)
    G = np.zeros((n_a, k, k))
    D = np.asarray(D, dtype=float)
    if D.shape[0] > 1 and np.array_equal(D, np.broadcast_to(D[:1], D.shape)):
        D = D[:1]  # d does not depend on α: the kernel scales each block once (same bits)
    kernel = _row_stats_lanes if n_a >= LANES_MIN_ALPHAS else _row_stats
    ok = kernel(np.ascontiguousarray(points, dtype=float),
                np.ascontiguousarray(neighbours, dtype=np.int64),
                np.ascontiguousarray(D, dtype=float), np.ascontiguousarray(om, dtype=float),
                np.ascontiguousarray(extra, dtype=float),
                np.ascontiguousarray(alphas, dtype=float), float(phi),
                np.ascontiguousarray(v, dtype=float), logdet, G)
    return (logdet, G) if ok else None


@numba.njit(cache=True, nogil=True)
def _csr_rows(b, nbr, data, indices, indptr):  # pragma: no cover - compiled
    n, m = nbr.shape
    at = 0
    for i in range(n):
        start = at
        for a in range(-1, m):  # the point itself (1), then its neighbours (−b)
            col = i if a < 0 else nbr[i, a]
            if col < 0:
                continue
            val = 1.0 if a < 0 else -b[i, a]
            t = at  # insertion sort: a row holds at most m + 1 entries
            while t > start and indices[t - 1] > col:
                indices[t] = indices[t - 1]
                data[t] = data[t - 1]
                t -= 1
            indices[t] = col
            data[t] = val
            at += 1
        indptr[i + 1] = at


def i_minus_b_csr(b: np.ndarray, neighbours: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return the CSR arrays (data, indices, indptr) of I − B, indices sorted in each row.

    Row i holds 1 at column i and −b_ia at each neighbour column ``neighbours[i, a]`` ≥ 0
    (padding, -1, skipped): what ``scipy.sparse.csr_matrix((vals, (rows, cols)))`` makes
    of the same triplets (its duplicate summing sorts every row's indices), built in one
    pass. Indices are int32 while they fit, as SciPy's.

    Parameters
    ----------
    b : ndarray of shape (n, m)
        Conditional-mean weights.
    neighbours : ndarray of int, shape (n, m)
        Column of each weight; -1 pads. Columns of a row must be distinct and differ from i.

    Returns
    -------
    data : ndarray of shape (nnz,)
    indices : ndarray of int32 (int64 from 2³¹ entries), shape (nnz,)
    indptr : ndarray of the same int type, shape (n + 1,)

    Examples
    --------
    >>> data, indices, indptr = i_minus_b_csr(np.array([[0.0, 0.0], [0.5, 0.0], [0.25, 0.5]]),
    ...                                       np.array([[-1, -1], [0, -1], [1, 0]]))
    >>> data.tolist(), indices.tolist(), indptr.tolist()
    ([1.0, -0.5, 1.0, -0.5, -0.25, 1.0], [0, 0, 1, 0, 1, 2], [0, 1, 3, 6])
    """
    nbr = np.ascontiguousarray(neighbours, dtype=np.int64)
    n = nbr.shape[0]
    nnz = n + int(np.count_nonzero(nbr >= 0))
    idx_type = np.int32 if max(nnz, n) < 2**31 - 1 else np.int64
    data = np.empty(nnz)
    indices = np.empty(nnz, idx_type)
    indptr = np.zeros(n + 1, idx_type)
    _csr_rows(np.ascontiguousarray(b, dtype=float), nbr, data, indices, indptr)
    return data, indices, indptr


@numba.njit(cache=True, nogil=True)
def _neighbour_distances(pts, nbr, rows, dist_nn, dist_in):  # pragma: no cover - compiled
    m = nbr.shape[1]
    for t in range(rows.shape[0]):
        i = rows[t]
        for a in range(m):
            ja = nbr[i, a]
            if ja < 0:
                dist_in[t, a] = 0.0
                for c in range(m):
                    dist_nn[t, a, c] = 0.0
                continue
            xa, ya = pts[ja, 0], pts[ja, 1]
            dist_in[t, a] = _distance(xa, ya, pts[i, 0], pts[i, 1])
            for c in range(m):
                jc = nbr[i, c]
                if jc < 0:
                    dist_nn[t, a, c] = 0.0
                    continue
                dist_nn[t, a, c] = _distance(xa, ya, pts[jc, 0], pts[jc, 1])


def neighbour_distances(pts: np.ndarray, neighbours: np.ndarray, rows: np.ndarray | None = None,
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Return the neighbour-to-neighbour and point-to-neighbour distances of some points.

    √(Δx² + Δy²) per pair, as NumPy's ``norm`` and ``einsum`` of the differences compute it
    (the same doubles, checked in ``tests/test_nngp.py``), in one compiled pass. The kernels
    (:func:`factor_rows`, :func:`row_statistics`) compute the same doubles from the
    coordinates as they go and need none of this; it is for a block of rows that another
    route solves (the LU fallback) and for checks. Memory: 8 (m² + m) bytes a row, 1.9 KB at
    m = 15, so ask for the rows needed, not all of them at 10⁶ points.

    Parameters
    ----------
    pts : ndarray of shape (n, 2)
        Coordinates in the graph's ordering.
    neighbours : ndarray of int, shape (n, m)
        Ranks of each point's neighbours; -1 pads.
    rows : ndarray of int, shape (r,), optional
        The points (ranks) wanted; default all n.

    Returns
    -------
    dist_nn : ndarray of shape (r, m, m)
        0 where either neighbour is padding.
    dist_in : ndarray of shape (r, m)
        0 on padding.

    Examples
    --------
    >>> d_nn, d_in = neighbour_distances(np.array([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]]),
    ...                                  np.array([[-1, -1], [0, -1], [0, 1]]))
    >>> d_in.round(4).tolist(), d_nn[2].tolist()
    ([[0.0, 0.0], [5.0, 0.0], [1.0, 4.2426]], [[0.0, 5.0], [5.0, 0.0]])
    """
    nbr = np.ascontiguousarray(neighbours, dtype=np.int64)
    n, m = nbr.shape
    rows = np.arange(n) if rows is None else np.asarray(rows, dtype=np.int64).ravel()
    dist_nn = np.empty((rows.size, m, m))
    dist_in = np.empty((rows.size, m))
    _neighbour_distances(np.ascontiguousarray(pts, dtype=float), nbr, rows, dist_nn, dist_in)
    return dist_nn, dist_in


@numba.njit(cache=True)
def _pattern_positions(members, indptr, indices, pos):  # pragma: no cover - compiled
    n, s = members.shape
    for i in range(n):
        for a in range(s):
            row = members[i, a]
            if row < 0:
                continue
            lo0, hi0 = indptr[row], indptr[row + 1]
            for c in range(s):
                col = members[i, c]
                if col < 0:
                    pos[i, a, c] = -1
                    continue
                lo, hi = lo0, hi0
                while lo < hi:  # binary search of col in the row's sorted indices
                    mid = (lo + hi) // 2
                    if indices[mid] < col:
                        lo = mid + 1
                    else:
                        hi = mid
                pos[i, a, c] = lo - lo0  # offset within the row: fits 16 bits (see caller)


@numba.njit(cache=True, nogil=True)
def _precision_values(b, F, members, offset, indptr, nnz):  # pragma: no cover - compiled
    n, s = members.shape
    data = np.zeros(nnz)
    u = np.empty(s)
    for i in range(n):
        u[0] = 1.0
        for a in range(s - 1):
            u[a + 1] = -b[i, a] if members[i, a + 1] >= 0 else 0.0
        f_inv = 1.0 / F[i]
        for a in range(s):
            row = members[i, a]
            if row < 0:
                continue
            base = indptr[row]
            for c in range(s):
                if members[i, c] < 0:
                    continue
                data[base + offset[i, a, c]] += u[a] * u[c] * f_inv
    return data


class PrecisionPattern:
    """The sparsity pattern of C̃⁻¹ = (I − B)ᵀ F⁻¹ (I − B), found once for a neighbour graph.

    C̃⁻¹ = Σ_i u_i u_iᵀ / F_i, with u_i row i of I − B (1 at i, −b_ia at its neighbours), so
    its non-zeros are the pairs within each point's set {i} ∪ N(i), whatever φ and α. The
    pattern (CSR, sorted indices) and each pair's position in it are computed once; then the
    precision at any (φ, α) is one compiled pass adding u_ia u_ic / F_i into place
    (:meth:`values`), instead of a sparse matrix product (``(I − B)ᵀ F⁻¹ (I − B)`` with
    SciPy: ~2.6 s at 10⁵ points, m = 15, against ~0.1 s; ``benchmarks/bench_nngp.py
    factors``). Equal to the product to round-off (the order of the sums differs).

    Parameters
    ----------
    neighbours : ndarray of int, shape (n, m)
        The graph's neighbours (ranks in its ordering; -1 pads).
    index : ndarray of int, shape (n,)
        The row/column of rank r in the matrix (``graph.order`` for input order).

    Attributes
    ----------
    indptr, indices : ndarray
        The CSR pattern (n x n), sorted indices, shared by every matrix made here (read-only).
    """

    def __init__(self, neighbours: np.ndarray, index: np.ndarray):
        import scipy.sparse as sp

        nbr = np.ascontiguousarray(neighbours, dtype=np.int64)
        n = nbr.shape[0]
        index = np.asarray(index, dtype=np.int64)
        members = np.column_stack([np.arange(n), nbr])  # (n, m + 1) ranks, -1 pads
        members = np.where(members >= 0, index[np.maximum(members, 0)], -1)
        valid = members >= 0
        # symbolic (I − B)ᵀ(I − B) with every value 1: all products positive, no cancellation
        ib = sp.csr_matrix((np.ones(int(valid.sum())),
                            (np.broadcast_to(members[:, :1], members.shape)[valid],
                             members[valid])), shape=(n, n))
        pattern = (ib.T @ ib).tocsr()
        pattern.sort_indices()
        self.n = n
        self.indptr = pattern.indptr
        self.indices = pattern.indices
        self.indptr.flags.writeable = False
        self.indices.flags.writeable = False
        # each pair's place as an offset within its row: int16 while no row holds 2^15
        # entries (half of int32's (n, m + 1, m + 1) array: 0.5 GB at 10⁶ records, m = 15)
        self._indptr = self.indptr.astype(np.int64)
        longest = int(np.diff(self._indptr).max(initial=0))
        self._members = members.astype(np.int32 if n < 2**31 else np.int64)
        self._offset = np.empty((n, members.shape[1], members.shape[1]),
                                np.int16 if longest < 2**15 else np.int32)
        _pattern_positions(self._members, self._indptr, self.indices.astype(np.int64),
                           self._offset)

    def values(self, b: np.ndarray, F: np.ndarray):
        """Return C̃⁻¹ (scipy.sparse.csr_matrix, n x n, units of 1/σ²) for factors b, F.

        ``b`` (n, m) and ``F`` (n,) in the graph's ordering
        (:class:`~synthgeo.model.vecchia.VecchiaFactors`).
        """
        import scipy.sparse as sp

        data = _precision_values(np.ascontiguousarray(b, dtype=float),
                                 np.ascontiguousarray(F, dtype=float), self._members,
                                 self._offset, self._indptr, int(self.indices.size))
        return sp.csr_matrix((data, self.indices, self.indptr), shape=(self.n, self.n),
                             copy=False)
