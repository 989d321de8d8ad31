"""Nearest-neighbour (Vecchia) approximation of the exponential covariance.

The NNGP (Datta, Banerjee, Finley & Gelfand 2016, JASA 111(514), doi:10.1080/01621459.2015.1044091;
response form: Finley, Datta, Cook, Morton, Andersen & Banerjee 2019, JCGS 28(2),
doi:10.1080/10618600.2018.1537924) orders the points and replaces each point's conditional
on *all* earlier points by its conditional on its ``n_neighbors`` nearest earlier points::

    p(z) ≈ Π_i p(z_i | z_N(i)),   z_i | z_N(i) ~ N(b_iᵀ z_N(i), F_i)
    b_i = C_N(i),N(i)⁻¹ C_N(i),i,   F_i = C_ii − C_i,N(i) b_i

so that C̃⁻¹ = (I − B)ᵀ F⁻¹ (I − B) with B sparse (≤ ``n_neighbors`` entries a row, strictly
lower triangular in the ordering) and log|C̃| = Σ log F_i. Everything here is O(n m³) with
m = ``n_neighbors``; the m x m systems are built, Cholesky-factored and solved one at a time
in compiled code (:mod:`synthgeo.model.vecchia_kernel`), an LU solve kept for a block that is
numerically singular.

Covariance used (in units of σ², docs/model.md)::

    C_ij = d_i d_j exp(−φ h_ij) + α δ_ij,    α = τ²/σ²

with d the differential-smoothing scale: points with d_i = 0 (at-risk under γ = ∞) carry no
spatial signal, so they are never anyone's neighbour and their own conditional is N(0, α).
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.spatial import cKDTree

from synthgeo.model.kernels import exponential_correlation

__all__ = ["NeighbourGraph", "ordered_neighbours", "maxmin_order", "VecchiaFactors",
           "vecchia_factors"]

#: The graphs alive in this process, by their inputs (:func:`ordered_neighbours`): the fits,
#: the effect draws and the other consumers of one run that ask for the graph of the same
#: coordinates, m, eligible points and ordering share one (weak references: a graph goes
#: when its last consumer does).
_GRAPHS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_GRAPHS_LOCK = threading.Lock()

#: Relative jitter on the diagonal of each neighbour block when α = 0 (latent field over
#: distinct sites): guards round-off for sites a few metres apart, nothing more.
LATENT_JITTER = 1e-8


@dataclass(frozen=True, kw_only=True)
class NeighbourGraph:
    """An ordering of n points and each point's nearest earlier neighbours.

    Attributes
    ----------
    order : ndarray of int, shape (n,)
        ``order[r]`` is the input index of the point ranked r.
    neighbours : ndarray of int, shape (n, m)
        For the point ranked r, the ranks of its (up to) m nearest earlier *eligible* points,
        nearest first; -1 pads rows with fewer (the first points, and ineligible rows).
    points : ndarray of shape (n, 2)
        The coordinates in the ordering (``coords[order]``). The compiled kernels compute each
        block's distances from these as they go (:mod:`synthgeo.model.vecchia_kernel`): the
        graph holds 8 (m + 3) bytes a point (144 at m = 15), no (n, m, m) distance array
        (1.8 KB a point, 1.8 GB at 10⁶ points); :meth:`distances` gives it for some rows.
    """

    order: np.ndarray
    neighbours: np.ndarray
    points: np.ndarray

    @property
    def n(self) -> int:
        """Number of points."""
        return int(self.order.shape[0])

    @property
    def m(self) -> int:
        """Neighbours per point."""
        return int(self.neighbours.shape[1])

    def distances(self, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Return (dist_nn, dist_in) of the points ranked ``rows`` (default all).

        ``dist_nn`` (r, m, m): distances between each row's neighbours; ``dist_in`` (r, m):
        from the point to each neighbour; in the coordinates' unit, 0 on padding. The doubles
        the kernels compute (:func:`~synthgeo.model.vecchia_kernel.neighbour_distances`);
        8 (m² + m) bytes a row.
        """
        from synthgeo.model.vecchia_kernel import neighbour_distances  # numba: on first use

        return neighbour_distances(self.points, self.neighbours, rows)


def maxmin_order(coords: np.ndarray) -> np.ndarray:
    """Max-min distance ordering: each next point is the one farthest from all earlier ones.

    Guinness (2018), "Permutation and grouping methods for sharpening Gaussian process
    approximations", Technometrics 60(4), doi:10.1080/00401706.2018.1437476: under this ordering
    the Vecchia approximation is markedly more accurate than under a coordinate ordering at the
    same m. Starts at the point nearest the centroid (as GpGp's ``order_maxmin``). Exact, with a
    lazy max-heap and k-d tree ball queries: after a point is chosen at distance ℓ only points
    within ℓ of it can get closer to the chosen set.

    Parameters
    ----------
    coords : ndarray of shape (n, 2)

    Returns
    -------
    ndarray of int, shape (n,)
        ``order[r]`` is the input index of the point ranked r.

    Examples
    --------
    >>> maxmin_order(np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [4.0, 0.0]])).tolist()
    [2, 0, 3, 1]
    """
    import heapq

    coords = np.asarray(coords, dtype=float)
    n = coords.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    tree = cKDTree(coords)
    first = int(np.argmin(np.linalg.norm(coords - coords.mean(axis=0), axis=1)))
    dist = np.linalg.norm(coords - coords[first], axis=1)
    chosen = np.zeros(n, bool)
    chosen[first] = True
    order = [first]
    heap = [(-float(dist[i]), i) for i in range(n) if i != first]
    heapq.heapify(heap)
    while heap:
        neg, i = heapq.heappop(heap)
        if chosen[i] or -neg != dist[i]:
            continue  # stale entry
        chosen[i] = True
        order.append(i)
        if dist[i] <= 0.0:
            continue
        nb = np.asarray(tree.query_ball_point(coords[i], r=float(dist[i])), dtype=np.int64)
        nb = nb[~chosen[nb]]
        d_new = np.linalg.norm(coords[nb] - coords[i], axis=1)
        closer = d_new < dist[nb]
        for j, dj in zip(nb[closer].tolist(), d_new[closer].tolist()):
            dist[j] = dj
            heapq.heappush(heap, (-dj, j))
    return np.asarray(order, dtype=np.int64)


def ordered_neighbours(
    coords: np.ndarray, n_neighbors: int = 15, *, eligible: np.ndarray | None = None,
    ordering: str = "coord",
) -> NeighbourGraph:
    """Order points and find each one's nearest earlier points.

    Parameters
    ----------
    coords : ndarray of shape (n, 2)
        Coordinates (any metric unit; kilometres inside synthgeo).
    n_neighbors : int, default=15
        m, the conditioning-set size (Datta et al. 2016 find m ≈ 10–20 enough for the
        exponential kernel).
    eligible : ndarray of bool, shape (n,), optional
        Points that may be neighbours (default: all). Rows of ineligible points get none.
    ordering : {"coord", "maxmin"}, default="coord"
        By the sum of the coordinates (spNNGP's default) or max-min distance
        (:func:`maxmin_order`).

    Returns
    -------
    NeighbourGraph

    Notes
    -----
    Ordering by x + y is spNNGP's default (``ord = order(coords[,1] + coords[,2])``). Neighbours
    are found with one cKDTree query of k candidates, keeping the earlier ones; rows still short
    of min(m, number of earlier eligible points) are queried again with k doubled (the
    approach of GpGp's ``find_ordered_nn``). Ties (coincident points) are broken by the tree.

    A graph is a pure function of its inputs, so a graph of the same coordinates (the same
    doubles), m, eligible points and ordering that is still alive in the process is returned
    instead of a new one (the unrestricted fit and its effect draws, when every record is its
    own site). Its arrays are read-only: consumers share them.
    """
    coords = np.ascontiguousarray(coords, dtype=float)
    n = coords.shape[0]
    m = int(n_neighbors)
    if m < 1:
        raise ValueError(f"`n_neighbors` must be a positive integer, got {n_neighbors!r}")
    if ordering not in ("coord", "maxmin"):
        raise ValueError(f"`ordering` must be 'coord' or 'maxmin', got {ordering!r}")
    elig_in = np.ones(n, bool) if eligible is None else np.asarray(eligible, bool)
    digest = hashlib.blake2b(coords.tobytes(), digest_size=32)
    digest.update(np.ascontiguousarray(elig_in).tobytes())
    key = (coords.shape, m, ordering, digest.hexdigest())
    with _GRAPHS_LOCK:
        graph = _GRAPHS.get(key)
    if graph is None:
        graph = _build_graph(coords, m, elig_in, ordering)
        with _GRAPHS_LOCK:
            graph = _GRAPHS.setdefault(key, graph)
    return graph


def _build_graph(coords: np.ndarray, m: int, elig_in: np.ndarray,
                 ordering: str) -> NeighbourGraph:
    """Build the graph of :func:`ordered_neighbours` (validated inputs), arrays read-only."""
    n = coords.shape[0]
    if ordering == "coord":
        order = np.lexsort((coords[:, 1], coords[:, 0], coords.sum(axis=1)))
    else:
        order = maxmin_order(coords)
    pts = coords[order]
    elig = elig_in[order]
    cand = np.flatnonzero(elig)  # ranks of eligible points (sorted)
    nbr = np.full((n, m), -1, dtype=np.int64)
    if cand.size:
        tree = cKDTree(pts[cand])
        n_before = np.searchsorted(cand, np.arange(n))  # eligible points ranked before r
        need = np.minimum(m, n_before)
        todo = np.flatnonzero(need > 0)
        k = min(cand.size, 2 * m + 1)
        while todo.size:
            _, j = tree.query(pts[todo], k=k, workers=-1)
            j = np.asarray(j).reshape(todo.size, k)
            ranks = cand[np.minimum(j, cand.size - 1)]
            ranks = np.where(j < cand.size, ranks, n)  # missing → not earlier
            earlier = ranks < todo[:, None]
            got = earlier.sum(axis=1)
            done = (got >= need[todo]) | (k >= cand.size)
            rows = todo[done]
            e, r = earlier[done], ranks[done]
            # first `need` earlier candidates, nearest first (query returns sorted distances)
            pos = np.cumsum(e, axis=1) - 1
            keep = e & (pos < need[rows][:, None])
            rr, cc = np.nonzero(keep)
            nbr[rows[rr], pos[rr, cc]] = r[rr, cc]
            todo = todo[~done]
            k = min(cand.size, 2 * k)
    for a in (order, nbr, pts):
        a.flags.writeable = False
    return NeighbourGraph(order=order, neighbours=nbr, points=pts)


@dataclass(frozen=True, kw_only=True)
class VecchiaFactors:
    """B and F of C̃⁻¹ = (I − B)ᵀ F⁻¹ (I − B), in the graph's ordering.

    Attributes
    ----------
    graph : NeighbourGraph
    b : ndarray of shape (n, m)
        Conditional-mean weights (0 on padding).
    F : ndarray of shape (n,)
        Conditional variances (units of σ²).
    """

    graph: NeighbourGraph
    b: np.ndarray
    F: np.ndarray

    @property
    def logdet(self) -> float:
        """log|C̃| = Σ log F_i (units of σ²)."""
        return float(np.log(self.F).sum())

    def whiten(self, v: np.ndarray) -> np.ndarray:
        """F^(-1/2) (I − B) v for v in the *ordered* space.

        Parameters
        ----------
        v : ndarray of shape (n,) or (n, k)

        Returns
        -------
        ndarray of the same shape: so that ``whiten(u) · whiten(v) = uᵀ C̃⁻¹ v``.
        """
        nbr = self.graph.neighbours
        safe = np.where(nbr >= 0, nbr, 0)
        if v.ndim == 1:
            u = v - np.einsum("nm,nm->n", self.b, v[safe])
            return u / np.sqrt(self.F)
        u = v - np.einsum("nm,nmk->nk", self.b, v[safe])
        return u / np.sqrt(self.F)[:, None]

    def gram(self, v: np.ndarray) -> np.ndarray:
        """Return vᵀ C̃⁻¹ v = ``whiten(v).T @ whiten(v)`` for v of shape (n, k) in the ordered space.

        Compiled, in one pass and without the whitened array
        (:func:`synthgeo.model.vecchia_kernel.whitened_gram`); equal to round-off.
        """
        from synthgeo.model.vecchia_kernel import whitened_gram

        return whitened_gram(self.b, self.F, self.graph.neighbours, v)

    def i_minus_b(self) -> sp.csr_matrix:
        """Return the sparse matrix I − B (n x n, ordered space), CSR with sorted indices.

        Filled row by row in compiled code (:func:`synthgeo.model.vecchia_kernel.
        i_minus_b_csr`) instead of through a COO matrix, its conversion and a sort of every
        row: the same matrix, entry for entry.
        """
        from synthgeo.model.vecchia_kernel import i_minus_b_csr

        n = self.b.shape[0]
        data, indices, indptr = i_minus_b_csr(self.b, self.graph.neighbours)
        return sp.csr_matrix((data, indices, indptr), shape=(n, n))

    def precision(self) -> sp.csr_matrix:
        """C̃⁻¹ = (I − B)ᵀ F⁻¹ (I − B) as a sparse matrix (ordered space, units of 1/σ²)."""
        ib = self.i_minus_b()
        return (ib.T @ sp.diags(1.0 / self.F) @ ib).tocsr()


def vecchia_factors(
    graph: NeighbourGraph, phi: float, alpha: float, d: np.ndarray | None = None,
    nugget_weight: np.ndarray | None = None,
) -> VecchiaFactors:
    """Vecchia factors of C = D R(φ) D + α Ω (units of σ²) for one (φ, α); Ω = I by default.

    Parameters
    ----------
    graph : NeighbourGraph
        Ordering and neighbours (coordinates in the unit of 1/φ).
    phi : float
        Decay φ (reciprocal unit of the coordinates), > 0.
    alpha : float
        Noise-to-signal ratio τ²/σ² ≥ 0 (0 for the latent field over distinct sites; a jitter
        of ``LATENT_JITTER`` is then used).
    d : ndarray of shape (n,), optional
        Smoothing scale per point *in input order* (default ones).
    nugget_weight : ndarray of shape (n,), optional
        ω_i per point in input order: point i's nugget is α ω_i (the pseudo-likelihood's
        heteroscedastic nugget τ²/α_i, ω_i = 1/α_i; :mod:`synthgeo.model.pseudo_likelihood`).

    Returns
    -------
    VecchiaFactors
    """
    from synthgeo.model.vecchia_kernel import factor_rows  # numba: imported on first use

    nug = _nugget(alpha)
    dd = np.ones(graph.n) if d is None else np.asarray(d, float)[graph.order]
    om = (np.ones(graph.n) if nugget_weight is None
          else np.asarray(nugget_weight, float)[graph.order])
    b, F, failed = factor_rows(graph.points, graph.neighbours, dd, om, nug, float(phi))
    if failed.any():  # a numerically singular block: LU with pivoting, as before the kernel
        rows = np.flatnonzero(failed)
        b[rows], F[rows] = _solve_rows(graph, rows, phi, nug, dd, om)
    return VecchiaFactors(graph=graph, b=b, F=F)


def _solve_rows(graph: NeighbourGraph, rows: np.ndarray, phi: float, nug: float,
                dd: np.ndarray, om: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return b and F of the points ``rows`` by a batched LU solve of their neighbour blocks."""
    nbr = graph.neighbours[rows]
    valid = nbr >= 0
    d_nb = np.where(valid, dd[np.where(valid, nbr, 0)], 0.0)
    dist_nn, dist_in = graph.distances(rows)
    C = exponential_correlation(dist_nn, phi) * (d_nb[:, :, None] * d_nb[:, None, :])
    idx = np.arange(nbr.shape[1])
    C[:, idx, idx] += np.where(valid, nug * om[np.where(valid, nbr, 0)], 1.0)  # padding: I
    c = exponential_correlation(dist_in, phi) * d_nb * dd[rows, None]
    b = np.linalg.solve(C, c[:, :, None])[:, :, 0]
    own = nug * om[rows]
    F = dd[rows] ** 2 + own - np.einsum("nm,nm->n", b, c)
    return b, np.maximum(F, own * 1e-6)


def _nugget(alpha: float) -> float:
    """Return the diagonal added to each block: α, or :data:`LATENT_JITTER` for the latent field."""
    return alpha if alpha > 0 else LATENT_JITTER
