"""Numerical integration of a log posterior over up to 3 hyper-parameter axes.

The one home of synthgeo's "INLA-style" grids (Rue, Martino & Chopin 2009, JRSS-B 71(2),
doi:10.1111/j.1467-9868.2008.00700.x, Sect. 3.1). Method and why there are two layouts:
``docs/inference.md`` ("The quadrature" and "The θ lattice of the Laplace families"). Both share
the mode search (:func:`find_mode`: L-BFGS-B, finite-difference gradient and Hessian), the
evaluation counting and the cell masses:

- :func:`integrate`, the **box grid**, for a log density that is a pure, batchable function of
  the points (the conjugate GP route, :mod:`synthgeo.inference.grid_posterior`); described
  below;
- :func:`explore_grid`, the **θ lattice** in Hessian-standardised coordinates about the mode,
  walked breadth-first, for the Laplace-approximated families
  (:class:`synthgeo.inference.laplace.LaplaceGLMM` through :class:`LogPosterior`), whose log
  density is costly and stateful (each point warm-started from the nearest one evaluated);
  draws of θ are lattice points, each point's mass spread uniformly over its z-cell for
  quantiles.

**Rule.** The box ``[lower, upper]`` of each axis is split into ``n`` equal cells and the density
is evaluated at the cell *centres* (midpoint rule): a prior bound is a cell edge, never a node
carrying a whole cell's weight. (The pre-issue-13 rule put nodes on the bounds with full
weight, over-weighting the bounds; SBC rejected it, ``benchmarks/bench_calibration.py``. It is
kept as ``rule="lattice"`` only so that the calibration check can be shown to fail on it.)

**Refinement.** The first grid spans the whole prior box (or a ``start`` box); each further grid
spans the cells within ``log_drop`` of the largest log density plus ``margin`` cells, widened
where mass reaches a box edge that is not a prior bound. It stops when the largest cell holds
≤ ``max_cell_mass`` of the mass and the cells along such edges ≤ ``max_edge_mass``; otherwise
the checks that failed are returned as ``problems``.

**Continuous posterior.** A tensor-product cubic spline through the final grid's log densities
(``scipy.interpolate.make_interp_spline`` along each axis), evaluated on a lattice ``refine``
times finer, gives the posterior as a piecewise-constant density on small cells: marginal CDFs
(linear inside a fine cell) and quantiles without Monte Carlo error, and the proposal of the
draws (a fine cell by its mass, uniform inside it). The draws are corrected towards the exact
density by importance resampling (:func:`synthgeo.inference.importance.importance_resample`),
whose Kish effective sample size
(Kish 1965, *Survey Sampling*, Sect. 11.7) measures how well the grid resolved the posterior.

Cell evaluation is a pure function of the points: ``log_density(points (k, d)) -> (k,)`` is
called on batches of cells through ``map_batches`` (default: a thread pool; a Dask client's
``map`` + ``gather`` fits the same slot).

Examples
--------
>>> import numpy as np
>>> q = integrate(lambda x: -x[:, 0], [Axis(name="x", lower=0.0, upper=2.0)])
>>> bool(abs(np.exp(q.log_integral) - (1 - np.exp(-2.0))) < 1e-4)
True
>>> round(float(q.quantile("x", 0.5)), 3)  # median of Exp(1) truncated to [0, 2]
0.566
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
from scipy.interpolate import make_interp_spline
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits

__all__ = ["Axis", "QuadratureSettings", "Quadrature", "Frame", "integrate", "thread_map",
           "evaluate_points", "laplace_box", "find_mode", "newton_mode", "LogPosterior",
           "ThetaGridSettings", "ThetaGrid", "explore_grid"]

#: ``log_density(points) -> log densities``: points (k, d) on the axes' scale, result (k,);
#: unnormalised log density with respect to Lebesgue measure on the axes (Jacobians included).
LogDensity = Callable[[np.ndarray], np.ndarray]
#: ``map_batches(fn, batches) -> [fn(b) for b in batches]``, in order.
MapBatches = Callable[[Callable, list], list]


@dataclass(frozen=True, kw_only=True)
class Axis:
    """One axis of the box: a name and the prior support on the (unconstrained) axis scale."""

    name: str
    lower: float
    upper: float

    def __post_init__(self) -> None:
        """Refuse an empty or infinite interval (ValueError)."""
        if not (np.isfinite(self.lower) and np.isfinite(self.upper) and self.lower < self.upper):
            raise ValueError(f"axis `{self.name}` needs finite lower < upper, got "
                             f"{self.lower!r}, {self.upper!r}")


@dataclass(frozen=True, kw_only=True)
class QuadratureSettings:
    """Layout, refinement and checks of the grid.

    Attributes
    ----------
    n_coarse, n_fine : int
        Cells per axis of the first grid and of each refined grid (≥ 4: the spline is cubic).
        A grid costs n^d evaluations; for 3 axes use smaller values (e.g. 6 and 8). 10/14
        (296 cells on the GP grid) kept quantiles within 0.005 posterior sd of a 200 x 200
        brute-force integration; 14/18 (520 cells) within 0.002
        (``benchmarks/bench_grid_accuracy.py``).
    log_drop : float
        Cells more than this below the largest log density are left out of the next box.
    tail_mass : float
        On each axis, end cells whose marginal tail mass is below this are left out too
        (midpoint rule).
    margin : int
        Cells of margin kept around them.
    max_stages : int
        Grids evaluated at most (the first included).
    max_cell_mass, max_edge_mass : float
        Checks on the final grid (see the module docstring).
    refine : int or None
        Fine cells per grid cell per axis for the spline lattice; None = 8 for 1–2 axes, 4 for 3.
    rule : {"midpoint", "lattice"}
        ``"lattice"`` is the pre-issue-13 rule (nodes on the bounds, draws at nodes), kept only
        for the calibration benchmark and its test.
    batch_size : int
        Cells per call of ``log_density``.
    n_laplace : int
        Cells per axis of the first grid on a Laplace box (``start="laplace"`` of
        :func:`integrate`; ≥ 4): the box is mode ± 5 marginal sd; 10 cells (1 sd each) held
        0.23 of the mass in one cell on Lucas County (a skewed, correlated posterior), 14 held
        0.12.
    laplace_frame : bool
        Lay a Laplace start's grid in Hessian-standardised coordinates (:class:`Frame`; 2
        axes). False: the axis-aligned Laplace box and the L-BFGS-B mode search
        (:func:`find_mode`) of before 2026-12-07, kept only for
        ``benchmarks/bench_large_n_grid.py``'s comparison.
    """

    n_coarse: int = 10
    n_fine: int = 14
    log_drop: float = 12.0
    margin: int = 1
    tail_mass: float = 1e-6
    max_stages: int = 6
    max_cell_mass: float = 0.2
    max_edge_mass: float = 0.01
    refine: int | None = None
    rule: str = "midpoint"
    batch_size: int = 64
    n_laplace: int = 14
    laplace_frame: bool = True

    def __post_init__(self) -> None:
        """Refuse impossible settings (ValueError)."""
        if not (self.n_coarse >= 4 and self.n_fine >= 4 and self.n_laplace >= 4):
            raise ValueError(f"`n_coarse`, `n_fine` and `n_laplace` must be >= 4, got "
                             f"{self.n_coarse}, {self.n_fine}, {self.n_laplace}")
        if self.rule not in ("midpoint", "lattice"):
            raise ValueError(f"`rule` must be 'midpoint' or 'lattice', got {self.rule!r}")
        if not (self.max_stages >= 1 and self.batch_size >= 1 and self.margin >= 0):
            raise ValueError("`max_stages`, `batch_size` must be >= 1 and `margin` >= 0")
        if self.refine is not None and self.refine < 1:
            raise ValueError(f"`refine` must be >= 1, got {self.refine!r}")


def thread_map(n_threads: int = 2) -> MapBatches:
    """Return a ``map_batches`` running batches in a thread pool (LAPACK releases the GIL).

    BLAS is limited to one thread meanwhile: multi-threaded OpenBLAS on these small
    factorisations was measured 37x slower per cell on 2 shared cores.
    """
    def run(fn, batches):
        with threadpool_limits(limits=1):
            if n_threads <= 1 or len(batches) <= 1:
                return [fn(b) for b in batches]
            with ThreadPoolExecutor(max_workers=n_threads) as ex:
                return list(ex.map(fn, batches))
    run.n_threads = n_threads
    return run


def evaluate_points(log_density: LogDensity, points: np.ndarray, *, batch_size: int = 64,
                    map_batches: MapBatches | None = None) -> list:
    """Apply ``log_density`` (or any batch function) to ``points`` in batches; list of results.

    On local threads (:func:`thread_map`, the default) the points are cut into one contiguous
    batch per thread, so that the threads finish together (100 points in batches of 64 kept
    one thread busy for 64 while the other did 36); ``batch_size`` sizes the batches sent
    elsewhere (a Dask cluster). The results do not depend on the batching.
    """
    map_batches = map_batches or thread_map()
    n_threads = getattr(map_batches, "n_threads", None)
    if n_threads is not None and len(points):
        batches = np.array_split(points, min(n_threads, len(points)))
    else:
        batches = [points[i:i + batch_size] for i in range(0, len(points), batch_size)]
    return map_batches(log_density, batches)


def _counted(fn: LogDensity) -> LogDensity:
    """Wrap a batch log density so that it counts the points it is given (attribute ``n``)."""
    def f(pts):
        pts = np.atleast_2d(pts)
        f.n += pts.shape[0]
        return fn(pts)
    f.n = 0
    return f


def _masses(lp: np.ndarray) -> np.ndarray:
    """Normalised cell masses ∝ exp(log density) (equal cell volumes), same shape as ``lp``."""
    w = np.exp(lp - lp.max())
    return w / w.sum()


def _fd_gradient(f, x, h):
    d = x.size
    pts = np.vstack([x + h * e for e in np.eye(d)] + [x - h * e for e in np.eye(d)])
    v = f(pts)
    return (v[:d] - v[d:]) / (2 * h)


def _stencil(x, h):
    """Points of the central finite-difference gradient and Hessian about x, and their index."""
    d = x.size
    E = np.eye(d) * h
    pts, idx = [], {}
    for i in range(d):
        idx[("p", i)], idx[("m", i)] = len(pts), len(pts) + 1
        pts += [x + E[i], x - E[i]]
        for j in range(i + 1, d):
            for s in ("pp", "pm", "mp", "mm"):
                idx[(s, i, j)] = len(pts)
                si, sj = (1 if s[0] == "p" else -1), (1 if s[1] == "p" else -1)
                pts.append(x + si * E[i] + sj * E[j])
    return np.array(pts), idx


def _from_stencil(v, idx, d, h, f0):
    """Central-difference gradient and Hessian from the stencil's values ``v``."""
    g = np.array([(v[idx[("p", i)]] - v[idx[("m", i)]]) / (2 * h) for i in range(d)])
    H = np.empty((d, d))
    for i in range(d):
        H[i, i] = (v[idx[("p", i)]] - 2 * f0 + v[idx[("m", i)]]) / h**2
        for j in range(i + 1, d):
            H[i, j] = H[j, i] = (v[idx[("pp", i, j)]] - v[idx[("pm", i, j)]]
                                 - v[idx[("mp", i, j)]] + v[idx[("mm", i, j)]]) / (4 * h**2)
    return g, H


def _fd_hessian(f, x, h, f0):
    pts, idx = _stencil(x, h)
    return _from_stencil(f(pts), idx, x.size, h, f0)[1]


def find_mode(f, box: np.ndarray, *, fd_step: float = 0.05, start: np.ndarray | None = None,
              mark=None) -> tuple[np.ndarray, float, np.ndarray]:
    """Mode of a batch log density within ``box`` and the negative Hessian there.

    L-BFGS-B with central finite-difference gradients (each a batch of 2 d points), then a
    central finite-difference Hessian (one batch of 2 d + 4 d(d − 1)/2 points): steps 1–2 of
    :func:`explore_grid`, also used to place the first box of :func:`laplace_box`.

    Parameters
    ----------
    f : callable
        ``f(points (k, d)) -> (k,)`` log density, −inf (or nan) outside its support.
    box : ndarray of shape (d, 2)
        Bounds of the search.
    fd_step : float, default=0.05
        Finite-difference step on the axes.
    start : ndarray of shape (d,), optional
        Starting point (default: centre of ``box``).
    mark : callable, optional
        ``mark("mode")`` is called when the search ends (stage timing of :func:`explore_grid`).

    Returns
    -------
    mode : ndarray of shape (d,)
        Clipped ``fd_step`` inside the box so that the Hessian's stencil stays in it.
    f0 : float
        Log density at ``mode``.
    H : ndarray of shape (d, d)
        Negative Hessian at ``mode`` (positive definite at an interior maximum).
    """
    box = np.asarray(box, float)

    def neg(x):
        v = f(x[None, :])[0]
        return -v if np.isfinite(v) else 1e300

    def neg_grad(x):
        return -_fd_gradient(f, x, fd_step)

    x0 = box.mean(axis=1) if start is None else np.asarray(start, float)
    # The walk re-centres on the best point it finds, so the mode is needed to ~0.1 sd only:
    # stop when an iteration gains < 1e-3 in log density (absolute) or the gradient < 0.05
    # (SciPy's defaults are relative to |log p| ≈ 10⁴ at city scale and cost ~2x the steps).
    f_start = abs(neg(x0))
    opt = minimize(neg, x0, jac=neg_grad, method="L-BFGS-B",
                   bounds=[tuple(b) for b in box],
                   options={"maxiter": 100, "ftol": 1e-3 / max(1.0, f_start), "gtol": 0.05})
    # keep the Hessian's stencil inside the box
    mode = np.clip(opt.x, box[:, 0] + fd_step, box[:, 1] - fd_step)
    if mark is not None:
        mark("mode")
    f0 = float(f(mode[None, :])[0])
    return mode, f0, -_fd_hessian(f, mode, fd_step, f0)



def newton_mode(f, box: np.ndarray, *, fd_step: float = 0.05, start: np.ndarray | None = None,
                tol: float = 1e-3, max_iter: int = 30) -> tuple[np.ndarray, float, np.ndarray]:
    """Mode of a batch log density by Newton steps on batched finite differences.

    Each iteration evaluates one batch, the central-difference stencil about the current point
    (1 + 2d + 2d(d − 1) points: value, gradient and Hessian; 9 for d = 2), and a second batch
    of four points along the Newton step (lengths 1, ½, ¼, ⅛ of it), keeping the best if it
    improves. The Hessian is made negative definite by taking the absolute values of its
    eigenvalues (Nocedal & Wright 2006, *Numerical Optimization*, 2nd ed., Sect. 3.4), and a
    step is at most a quarter of the box on every axis. It stops when the predicted gain
    ½ gᵀH⁻¹g falls below ``tol`` nats at a point where the Hessian is negative definite.
    Where the posterior is near Gaussian (large N) it converges in a few iterations whose
    points run in parallel, where :func:`find_mode`'s line searches run one point at a time
    (145 evaluations against about 60 on 10⁵ records, docs/inference.md). Once the marginal
    sds are known, a last stencil with a step of one sd (when that is below ``fd_step``)
    measures the curvature on the scale the grid will resolve.

    Parameters
    ----------
    f : callable
        ``f(points (k, d)) -> (k,)`` log density.
    box : ndarray of shape (d, 2)
        Bounds of the search.
    fd_step : float, default=0.05
        Largest finite-difference step (axis units).
    start : ndarray of shape (d,), optional
        Starting point (default: centre of ``box``), e.g. a close model's mode.
    tol : float, default=1e-3
        Predicted gain (nats) below which the search stops.
    max_iter : int, default=30

    Returns
    -------
    mode : ndarray of shape (d,)
    f0 : float
        Log density at ``mode``.
    H : ndarray of shape (d, d)
        Negative Hessian at ``mode`` (not modified: the caller checks it is positive definite).

    Examples
    --------
    >>> import numpy as np
    >>> f = lambda p: -0.5 * (((p - [1.0, -1.0]) / [0.1, 0.3]) ** 2).sum(axis=1)
    >>> mode, f0, H = newton_mode(f, np.array([[-5.0, 5.0], [-5.0, 5.0]]))
    >>> np.round(mode, 3).tolist(), np.round(np.diag(H), 1).tolist()
    ([1.0, -1.0], [100.0, 11.1])
    """
    box = np.asarray(box, float)
    d = box.shape[0]
    h = float(fd_step)
    x = box.mean(axis=1) if start is None else np.asarray(start, float).copy()

    def inside(p, step):
        return np.clip(p, box[:, 0] + step, box[:, 1] - step)

    def derivatives(p, step):
        pts, idx = _stencil(p, step)
        v = f(np.vstack([p[None, :], pts]))
        g, Hs = _from_stencil(v[1:], idx, d, step, float(v[0]))
        return float(v[0]), g, -Hs

    x = inside(x, h)
    f0, g, H = derivatives(x, h)
    for _ in range(max_iter):
        lam, U = np.linalg.eigh(0.5 * (H + H.T))
        if not (np.all(np.isfinite(lam)) and np.isfinite(f0)):
            break
        floor = max(1e-8 * float(np.abs(lam).max()), 1e-12)
        step = U @ ((U.T @ g) / np.maximum(np.abs(lam), floor))
        over = np.abs(step) / (0.25 * (box[:, 1] - box[:, 0]))
        step = step / max(1.0, float(over.max()))
        if np.all(lam > 0) and 0.5 * float(g @ step) < tol:
            break
        cands = np.array([inside(x + t * step, h) for t in (1.0, 0.5, 0.25, 0.125)])
        v = np.asarray(f(cands), float)
        v = np.where(np.isfinite(v), v, -np.inf)
        best = int(np.argmax(v))
        if not v[best] > f0:
            break
        x = cands[best]
        f0, g, H = derivatives(x, h)
    lam = np.linalg.eigvalsh(0.5 * (H + H.T))
    if np.all(lam > 0):
        sd_min = float(np.sqrt(np.diag(np.linalg.inv(H))).min())
        if sd_min < h:  # the curvature on the grid's own scale, one sd about the mode
            h = max(sd_min, 1e-4)
            x = inside(x, h)
            f0, _, H = derivatives(x, h)
    return x, f0, H


@dataclass(frozen=True, kw_only=True, eq=False)
class Frame:
    """Hessian-standardised coordinates z of the axes' θ: θ = shift + C z.

    ``C`` is the lower Cholesky factor of the Laplace covariance H⁻¹ (positive diagonal), so
    θ₀ depends on z₀ only: a row of the grid (z₀ fixed) keeps the first axis fixed, and a
    log density that shares work along rows of its first axis (the GP grid's range) still
    does.

    Attributes
    ----------
    shift : ndarray of shape (d,)
        The mode.
    C : ndarray of shape (d, d)
        Lower triangular, positive diagonal.
    """

    shift: np.ndarray
    C: np.ndarray

    @property
    def log_det(self) -> float:
        """Log |det C|: log dθ/dz."""
        return float(np.log(np.diag(self.C)).sum())

    def to_axes(self, z: np.ndarray) -> np.ndarray:
        """Points z of shape (k, d) as θ on the axes."""
        return self.shift + np.atleast_2d(z) @ self.C.T

    def bounding_box(self, zbox: np.ndarray) -> np.ndarray:
        """Return the smallest θ box holding the z box (d, 2)."""
        lo = self.shift + np.minimum(self.C * zbox[:, 0], self.C * zbox[:, 1]).sum(axis=1)
        hi = self.shift + np.maximum(self.C * zbox[:, 0], self.C * zbox[:, 1]).sum(axis=1)
        return np.column_stack([lo, hi])


def _sum_of_uniforms_cdf(x, lo, width):
    """CDF at x of Σ_k U_k, U_k ~ Uniform(lo_k, lo_k + width_k), one or two terms per cell.

    ``lo``, ``width``: (cells, 2); x: (m,) → (m, cells). With one width 0 the sum is uniform;
    with two, its CDF is the trapezoid's: (G(t) − G(t − w₁) − G(t − w₂) + G(t − w₁ − w₂)) /
    (w₁w₂), G(t) = max(t, 0)²/2, t = x − lo₁ − lo₂.
    """
    t = x[:, None] - lo.sum(axis=1)[None, :]
    w1, w2 = width[:, 0][None, :], width[:, 1][None, :]
    big, small = np.maximum(w1, w2), np.minimum(w1, w2)
    thin = small <= 1e-12 * big
    G = lambda u: 0.5 * np.maximum(u, 0.0) ** 2  # noqa: E731
    with np.errstate(divide="ignore", invalid="ignore"):
        trap = (G(t) - G(t - w1) - G(t - w2) + G(t - w1 - w2)) / (w1 * w2)
        flat = np.clip(t / big, 0.0, 1.0)
    return np.where(thin, flat, np.clip(trap, 0.0, 1.0))


@dataclass(frozen=True, kw_only=True)
class Quadrature:
    """The normalised posterior on the final grid and its spline refinement.

    Attributes
    ----------
    axes : tuple of Axis
    box : ndarray of shape (d, 2)
        Bounds of the final grid.
    nodes : list of ndarray
        Node coordinates per axis (cell centres; the bounds themselves under ``"lattice"``).
    log_density : ndarray of shape (n_1, ..., n_d)
        Evaluated log density at the nodes.
    weights : ndarray of shape (n_1, ..., n_d)
        Posterior mass per cell (sums to 1).
    fine_edges : list of ndarray
        Edges of the fine lattice per axis.
    fine_mass : ndarray
        Posterior mass per fine cell (sums to 1).
    log_integral : float
        log ∫ exp(log_density) over the final box.
    stages : list of dict
        Per grid: ``stage``, ``n_per_axis``, ``box``, ``max_cell_mass``, ``edge_mass``.
    problems : list of str
        Checks the final grid failed.
    n_evaluations : int
    rule : str
    laplace : dict
        With ``start="laplace"``: the mode, marginal sds and evaluations of
        :func:`laplace_box` (empty otherwise).
    frame : Frame or None
        Set when the grid lies in Hessian-standardised coordinates (a Laplace start, 2 axes):
        ``box``, ``nodes``, ``fine_edges``, ``log_density`` and the masses are then in z, and
        each stage's ``box`` is the θ box holding its z box (``box_z`` the z box itself);
        :meth:`quantile` and :meth:`propose` answer on the axes' own scale either way.
    """

    axes: tuple[Axis, ...]
    box: np.ndarray
    nodes: list[np.ndarray]
    log_density: np.ndarray
    weights: np.ndarray
    fine_edges: list[np.ndarray]
    fine_mass: np.ndarray
    log_integral: float
    stages: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    n_evaluations: int = 0
    rule: str = "midpoint"
    laplace: dict = field(default_factory=dict)
    frame: Frame | None = None

    def _axis(self, axis: int | str) -> int:
        if isinstance(axis, str):
            names = [a.name for a in self.axes]
            if axis not in names:
                raise ValueError(f"unknown axis {axis!r}; axes: {names}")
            return names.index(axis)
        return int(axis)

    @property
    def max_cell_mass(self) -> float:
        """Largest single cell's posterior mass on the final grid."""
        return float(self.weights.max())

    @property
    def edge_mass(self) -> float:
        """Mass in the final grid's cells along edges that are not prior bounds."""
        return float(self.stages[-1]["edge_mass"]) if self.stages else 0.0

    def quantile(self, axis: int | str, q) -> np.ndarray:
        """Posterior quantiles of one axis (its own scale), from the continuous marginal."""
        j = self._axis(axis)
        q = np.asarray(q, dtype=float)
        if self.frame is not None and np.count_nonzero(self.frame.C[j]) > 1:
            return self._rotated_quantile(j, q)
        other = tuple(k for k in range(self.fine_mass.ndim) if k != j)
        marg = self.fine_mass.sum(axis=other)
        if self.rule == "lattice":  # a distribution on the nodes: the inverted CDF
            cdf = np.cumsum(marg)
            return self.nodes[j][np.minimum(np.searchsorted(cdf, q * cdf[-1]), cdf.size - 1)]
        cdf = np.concatenate([[0.0], np.cumsum(marg)])
        if self.frame is None:
            return np.interp(q * cdf[-1], cdf, self.fine_edges[j])
        # θ_j = shift_j + C_jj z_j: the z marginal's quantile, moved to the axis
        return self.frame.shift[j] + self.frame.C[j, j] * np.interp(q * cdf[-1], cdf,
                                                                      self.fine_edges[j])

    def cdf(self, axis: int | str, x: float) -> float:
        """Posterior probability that the axis (its own scale) is at most `x`.

        From the same continuous marginal as :meth:`quantile` (exact for a tilted frame).

        Examples
        --------
        >>> q = integrate(lambda p: -p[:, 0], [Axis(name="x", lower=0.0, upper=2.0)])
        >>> round(q.cdf("x", float(q.quantile("x", 0.25))), 3)
        0.25
        """
        j = self._axis(axis)
        if self.frame is not None and np.count_nonzero(self.frame.C[j]) > 1:
            lo, width, w, _, _ = self._rotated_cells(j)
            return float(_sum_of_uniforms_cdf(np.array([float(x)]), lo, width)[0] @ w)
        other = tuple(k for k in range(self.fine_mass.ndim) if k != j)
        marg = self.fine_mass.sum(axis=other)
        if self.rule == "lattice":
            return float(marg[self.nodes[j] <= x].sum() / marg.sum())
        cdf = np.concatenate([[0.0], np.cumsum(marg)]) / marg.sum()
        if self.frame is not None:  # θ_j = shift_j + C_jj z_j
            x = (x - self.frame.shift[j]) / self.frame.C[j, j]
        return float(np.interp(x, self.fine_edges[j], cdf))

    def _rotated_cells(self, j: int):
        """θ_j's sum-of-uniforms terms per fine cell: lo, width, weight; θ_j's support."""
        if self.fine_mass.ndim != 2:
            raise ValueError("rotated quantiles are implemented for 2 axes")
        mass = self.fine_mass.ravel()
        keep = mass > 0
        idx = np.unravel_index(np.flatnonzero(keep), self.fine_mass.shape)
        c = self.frame.C[j]
        lo_z = np.column_stack([self.fine_edges[k][i] for k, i in enumerate(idx)])
        wz = np.array([np.diff(e)[0] for e in self.fine_edges])
        a, b = c * lo_z, c * (lo_z + wz)
        lo, width = np.minimum(a, b), np.abs(b - a)
        w = mass[keep] / mass[keep].sum()
        left = float(self.frame.shift[j] + lo.sum(axis=1).min())
        right = float(self.frame.shift[j] + (lo + width).sum(axis=1).max())
        lo = lo + np.array([self.frame.shift[j], 0.0])
        return lo, width, w, left, right

    def _rotated_quantile(self, j: int, q: np.ndarray) -> np.ndarray:
        """Quantiles of θ_j = shift_j + Σ_k C_jk z_k under the piecewise-uniform z posterior.

        Each fine cell is uniform in z, so θ_j is a sum of uniforms on it (a trapezoid for two
        axes): its CDF is exact, and the quantiles are found by bisection (no Monte Carlo).
        """
        lo, width, w, left, right = self._rotated_cells(j)
        out = np.empty(q.size)
        flat = q.ravel()
        for s0 in range(0, flat.size, 32):  # (points, cells) arrays of at most 32 rows
            qq = flat[s0:s0 + 32]
            x_lo, x_hi = np.full(qq.size, left), np.full(qq.size, right)
            for _ in range(60):
                mid = 0.5 * (x_lo + x_hi)
                below = _sum_of_uniforms_cdf(mid, lo, width) @ w < qq
                x_lo, x_hi = np.where(below, mid, x_lo), np.where(below, x_hi, mid)
            out[s0:s0 + 32] = 0.5 * (x_lo + x_hi)
        return out.reshape(q.shape)

    def propose(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Draw n points from the fine piecewise-constant posterior.

        Returns
        -------
        points : ndarray of shape (n, d)
        log_q : ndarray of shape (n,)
            Log proposal density at the points (for :func:`importance_resample`).
        """
        flat = self.fine_mass.ravel()
        cell = rng.choice(flat.size, size=n, p=flat / flat.sum())
        idx = np.unravel_index(cell, self.fine_mass.shape)
        if self.rule == "lattice":
            pts = np.column_stack([self.nodes[j][i] for j, i in enumerate(idx)])
            return pts, np.log(flat[cell])
        lo = np.column_stack([self.fine_edges[j][i] for j, i in enumerate(idx)])
        width = np.array([np.diff(e)[0] for e in self.fine_edges])
        pts = lo + rng.random((n, len(self.axes))) * width
        log_q = np.log(flat[cell]) - float(np.log(width).sum())
        if self.frame is None:
            return pts, log_q
        return self.frame.to_axes(pts), log_q - self.frame.log_det


#: Half-width of the Laplace start's box in marginal sds (z units in a :class:`Frame`).
_LAPLACE_N_SD = 5.0


def laplace_box(log_density: LogDensity, prior: np.ndarray, *,
                n_sd: float = _LAPLACE_N_SD,
                fd_step: float = 0.05, map_batches: MapBatches | None = None,
                start: np.ndarray | None = None,
                newton: bool = True) -> tuple[np.ndarray | None, dict]:
    """First box from a Laplace approximation: the mode ± ``n_sd`` marginal posterior sd.

    At large N the posterior fills a tiny part of the prior box, and the coarse first grid and
    the refinements that zoom in on it cost most of the evaluations. The mode and the negative
    Hessian H (:func:`newton_mode`: Newton steps on batched central finite differences, a few
    dozen evaluations) give marginal sds √(H⁻¹)_jj; the box mode ± ``n_sd``
    sd (clipped to the prior) is the grid's first box, and the grid's own checks still decide
    (a box the mass reaches the edge of is widened, docs/inference.md). ``n_sd`` = 5 holds
    the cells within 12.5 of the maximum log density of a Gaussian posterior, like ``log_drop``.

    Parameters
    ----------
    log_density : callable
        As :func:`integrate`.
    prior : ndarray of shape (d, 2)
        Prior box (the search's bounds).
    n_sd : float, default=5.0
        Half-width of the box in marginal posterior sds.
    fd_step : float, default=0.05
        Largest finite-difference step (axis units).
    map_batches : callable, optional
        As :func:`integrate` (each batch of the search runs in parallel).
    start : ndarray of shape (d,), optional
        Where the mode search starts (default: the prior box's centre).
    newton : bool, default=True
        False: :func:`find_mode`'s L-BFGS-B search (``QuadratureSettings.laplace_frame``).

    Returns
    -------
    box : ndarray of shape (d, 2) or None
        None when H is not positive definite (no Laplace box: use the prior box).
    info : dict
        ``mode``, ``sd``, ``correlation`` (2 axes), ``evaluations``; ``H`` (the negative
        Hessian, as nested lists) when positive definite.

    Examples
    --------
    >>> import numpy as np
    >>> f = lambda p: -0.5 * (((p - [1.0, -1.0]) / [0.1, 0.3]) ** 2).sum(axis=1)
    >>> box, info = laplace_box(f, np.array([[-5.0, 5.0], [-5.0, 5.0]]))
    >>> np.round(box, 2).tolist()
    [[0.5, 1.5], [-2.5, 0.5]]
    """
    @_counted
    def f(pts):
        out = evaluate_points(log_density, pts, batch_size=1, map_batches=map_batches)
        return np.concatenate([np.asarray(o, float).ravel() for o in out])

    prior = np.asarray(prior, float)
    search = newton_mode if newton else find_mode
    mode, _, H = search(f, prior, fd_step=fd_step, start=start)
    info: dict = {"mode": mode.tolist(), "evaluations": f.n}
    H = 0.5 * (H + H.T)
    if not (np.all(np.isfinite(H)) and np.all(np.linalg.eigvalsh(H) > 0)):
        return None, info
    cov = np.linalg.inv(H)
    sd = np.sqrt(np.diag(cov))
    info["sd"] = sd.tolist()
    if sd.size == 2:
        info["correlation"] = float(cov[0, 1] / (sd[0] * sd[1]))
    info["H"] = H.tolist()
    box = np.column_stack([np.maximum(prior[:, 0], mode - n_sd * sd),
                           np.minimum(prior[:, 1], mode + n_sd * sd)])
    return (box if np.all(box[:, 1] > box[:, 0]) else None), info


def _laplace_frame(info: dict, prior: np.ndarray, n_sd: float) -> Frame | None:
    """Return the Hessian-standardised frame of a Laplace start if its z box fits the prior.

    Two axes only (the rotated quantiles are written for two); otherwise, or where the tilted
    box would cross a prior bound, None (the axis-aligned Laplace box is used).
    """
    if "H" not in info or len(info["mode"]) != 2:
        return None
    C = np.linalg.cholesky(np.linalg.inv(np.asarray(info["H"], float)))
    frame = Frame(shift=np.asarray(info["mode"], float), C=C)
    bb = frame.bounding_box(np.array([[-n_sd, n_sd]] * 2, float))
    return frame if np.all(bb[:, 0] > prior[:, 0]) and np.all(bb[:, 1] < prior[:, 1]) else None


def _nodes(lo: float, hi: float, n: int, rule: str) -> np.ndarray:
    if rule == "lattice":
        return np.linspace(lo, hi, n)
    return lo + (np.arange(n) + 0.5) * (hi - lo) / n


def _evaluate_grid(log_density, nodes, settings, map_batches) -> np.ndarray:
    mesh = np.meshgrid(*nodes, indexing="ij")
    pts = np.column_stack([m.ravel() for m in mesh])
    out = evaluate_points(log_density, pts, batch_size=settings.batch_size,
                          map_batches=map_batches)
    lp = np.concatenate([np.asarray(o, float).ravel() for o in out])
    lp = np.where(np.isfinite(lp), lp, -np.inf)
    if not np.isfinite(lp).any():
        raise ValueError("the log density is not finite at any grid node")
    return lp.reshape([len(n) for n in nodes])


def _edge_mask(shape, box, prior) -> np.ndarray:
    """Cells along box edges that are not prior bounds."""
    edge = np.zeros(shape, bool)
    for j in range(len(shape)):
        sl = [slice(None)] * len(shape)
        if box[j, 0] > prior[j, 0] + 1e-9 * (prior[j, 1] - prior[j, 0]):
            sl[j] = 0
            edge[tuple(sl)] = True
        if box[j, 1] < prior[j, 1] - 1e-9 * (prior[j, 1] - prior[j, 0]):
            sl[j] = -1
            edge[tuple(sl)] = True
    return edge


def _kept_span(lp: np.ndarray, j: int, s: QuadratureSettings) -> np.ndarray:
    """Return the indices along axis j of the cells kept for the next box.

    Cells within ``log_drop`` of the maximum, with tails of mass below ``tail_mass`` trimmed
    (midpoint rule): a long, slowly falling tail holding almost no mass would otherwise keep
    the box wide and its cells coarse.
    """
    keep = lp >= lp.max() - s.log_drop
    other = tuple(k for k in range(lp.ndim) if k != j)
    hit = np.flatnonzero(keep.any(axis=other))
    if s.rule == "lattice":
        return hit
    marg = np.where(keep, np.exp(lp - lp.max()), 0.0).sum(axis=other)
    marg /= marg.sum()
    upto, beyond = np.cumsum(marg), np.cumsum(marg[::-1])[::-1]  # cell i included in both
    trimmed = hit[(upto[hit] >= s.tail_mass) & (beyond[hit] >= s.tail_mass)]
    return trimmed if trimmed.size else np.array([int(np.argmax(marg))])


def _next_box(lp, nodes, box, prior, s: QuadratureSettings) -> np.ndarray:
    """Box of the cells kept by :func:`_kept_span`, plus margin; widened at open edges."""
    top = np.unravel_index(np.argmax(lp), lp.shape)
    new = box.copy()
    half = 0.5 if s.rule == "midpoint" else 0.0
    for j in range(lp.ndim):
        hit = _kept_span(lp, j, s)
        h = (box[j, 1] - box[j, 0]) / (len(nodes[j]) - (1 if s.rule == "lattice" else 0))
        lo = nodes[j][hit.min()] - (s.margin + half) * h
        hi = nodes[j][hit.max()] + (s.margin + half) * h
        width = box[j, 1] - box[j, 0]
        if s.rule == "midpoint":  # mass reaching an open edge: look further out, far if the
            last = len(nodes[j]) - 1  # mode itself is on that edge
            if hit.min() == 0 and box[j, 0] > prior[j, 0]:
                lo = box[j, 0] - (2.0 if top[j] == 0 else 0.5) * width
            if hit.max() == last and box[j, 1] < prior[j, 1]:
                hi = box[j, 1] + (2.0 if top[j] == last else 0.5) * width
        new[j] = max(prior[j, 0], lo), min(prior[j, 1], hi)
    return new


def _fine(lp: np.ndarray, nodes, box, refine: int):
    """Spline of the log density on the lattice ``refine`` times finer: edges, masses, log ∫."""
    edges, centres = [], []
    for j in range(lp.ndim):
        n_f = len(nodes[j]) * refine
        e = np.linspace(box[j, 0], box[j, 1], n_f + 1)
        edges.append(e)
        centres.append(0.5 * (e[1:] + e[:-1]))
    v = np.where(np.isfinite(lp), lp, lp[np.isfinite(lp)].min() - 50.0)
    for j in range(lp.ndim):
        k = 3 if len(nodes[j]) >= 4 else 1
        v = make_interp_spline(nodes[j], v, k=k, axis=j)(centres[j])
    top = v.max()
    mass = np.exp(v - top)
    vol = float(np.prod([e[1] - e[0] for e in edges]))
    total = mass.sum()
    return edges, mass / total, float(top + np.log(total * vol))


def integrate(
    log_density: LogDensity,
    axes: Sequence[Axis],
    *,
    settings: QuadratureSettings | None = None,
    start: np.ndarray | str | None = None,
    map_batches: MapBatches | None = None,
    mode_start: np.ndarray | None = None,
) -> Quadrature:
    """Evaluate, refine and normalise a log density on a grid over up to 3 axes.

    Parameters
    ----------
    log_density : callable
        ``log_density(points)`` with points of shape (k, d) on the axes' scales → (k,) log
        density (unnormalised; prior and Jacobian included). Must be a pure function of the
        points: batches may run in threads or on other machines.
    axes : sequence of Axis
        1 to 3 axes; their bounds are the prior support.
    settings : QuadratureSettings, optional
    start : ndarray of shape (d, 2) or "laplace", optional
        First box (e.g. from a variogram fit, or another fit's final box), clipped to the
        prior box; default the prior box. It is widened where the posterior reaches its edges.
        ``"laplace"``: the box of :func:`laplace_box` (the prior box where the Hessian at the
        mode is not positive definite); its evaluations count in ``n_evaluations`` and its mode
        and sds are kept as ``laplace``. With 2 axes, and where the tilted box fits inside
        the prior, the grid is laid in the Hessian-standardised coordinates z of
        :class:`Frame` (θ = mode + C z, C Cholesky of H⁻¹) over z ∈ [−5, 5]², as INLA's
        grid is (Rue, Martino & Chopin 2009, Sect. 3.1): a correlated posterior then fills the
        box instead of its diagonal (docs/inference.md, "Large N").
    map_batches : callable, optional
        How batches are evaluated (default :func:`thread_map` with 2 threads).
    mode_start : ndarray of shape (d,), optional
        Where the Laplace start's mode search begins (e.g. a close model's mode).

    Returns
    -------
    Quadrature

    Raises
    ------
    ValueError
        For 0 or more than 3 axes, a ``start`` box outside the prior, or a log density that is
        nowhere finite.

    Examples
    --------
    >>> q = integrate(lambda p: -0.5 * (p ** 2).sum(axis=1),
    ...               [Axis(name="a", lower=-8, upper=8), Axis(name="b", lower=-8, upper=8)])
    >>> bool(abs(q.log_integral - np.log(2 * np.pi)) < 1e-4)
    True
    """
    s = settings or QuadratureSettings()
    d = len(axes)
    if not 1 <= d <= 3:
        raise ValueError(f"quadrature takes 1 to 3 axes, got {d}")
    prior = np.array([[a.lower, a.upper] for a in axes], dtype=float)
    n_eval, laplace = 0, {}
    if isinstance(start, str):
        if start != "laplace":
            raise ValueError(f"`start` must be a box or 'laplace', got {start!r}")
        start, laplace = (None, {}) if s.rule == "lattice" else laplace_box(
            log_density, prior, map_batches=map_batches, start=mode_start,
            newton=s.laplace_frame)
        n_eval = int(laplace.get("evaluations", 0))
        frame = (_laplace_frame(laplace, prior, _LAPLACE_N_SD)
                 if start is not None and s.laplace_frame else None)
        laplace.pop("H", None)
        if frame is not None:
            tilted = _integrate_in_frame(log_density, axes, prior, frame, s, map_batches,
                                         laplace, n_eval)
            if np.all(np.isfinite(tilted.log_density)) and not tilted.problems:
                laplace["grid"] = "tilted"
                return tilted
            # the mass reached a prior bound (the widened tilted box crossed it: cells at −∞,
            # which the spline cannot follow) or the checks failed: the axis-aligned Laplace
            # box, whose edges can be prior bounds; the tilted grid's cells count too
            laplace["grid"] = ("axis-aligned: the tilted grid reached a prior bound"
                               if not np.all(np.isfinite(tilted.log_density)) else
                               "axis-aligned: the tilted grid failed its checks")
            n_eval = tilted.n_evaluations
    box = prior.copy() if start is None else np.asarray(start, float).reshape(d, 2).copy()
    given = box.copy()
    box[:, 0] = np.maximum(box[:, 0], prior[:, 0])  # a start box is clipped to the prior's
    box[:, 1] = np.minimum(box[:, 1], prior[:, 1])
    if np.any(box[:, 0] >= box[:, 1]):
        raise ValueError(f"`start` box {given.tolist()} must overlap the prior box "
                         f"{prior.tolist()} (lower < upper on every axis)")
    stages: list[dict] = []
    size = s.n_coarse if start is None else (s.n_laplace if laplace.get("sd") else s.n_fine)
    for stage in range(s.max_stages):
        nodes = [_nodes(box[j, 0], box[j, 1], size, s.rule) for j in range(d)]
        lp = _evaluate_grid(log_density, nodes, s, map_batches)
        n_eval += lp.size
        w = _masses(lp)
        edge = _edge_mask(lp.shape, box, prior)
        stages.append({"stage": stage + 1, "n_per_axis": size, "box": box.tolist(),
                       "max_cell_mass": float(w.max()), "edge_mass": float(w[edge].sum())})
        first_ok = stage > 0 or start is not None
        if first_ok and w.max() <= s.max_cell_mass and w[edge].sum() <= s.max_edge_mass:
            break
        if stage == s.max_stages - 1:
            break
        new = _next_box(lp, nodes, box, prior, s)
        stuck = (stage > 0 and s.rule == "midpoint" and w.max() > s.max_cell_mass
                 and np.prod(np.diff(new, axis=1)) >= 0.7 * np.prod(np.diff(box, axis=1)))
        # a box that cannot shrink (mass spread thinly over it, peaked in one place) needs
        # more cells instead
        box, size = new, int(np.ceil(1.5 * size)) if stuck else max(size, s.n_fine)
    problems = []
    last = stages[-1]
    if last["max_cell_mass"] > s.max_cell_mass:
        problems.append(f"grid too coarse: one cell holds {last['max_cell_mass']:.2f} of the "
                        f"posterior (> {s.max_cell_mass}) after {len(stages)} grids")
    if last["edge_mass"] > s.max_edge_mass:
        problems.append(f"posterior mass {last['edge_mass']:.3f} on the grid's edge "
                        f"(> {s.max_edge_mass})")
    if s.rule == "lattice":
        edges = [np.concatenate([[nd[0]], 0.5 * (nd[1:] + nd[:-1]), [nd[-1]]]) for nd in nodes]
        fine_mass, vol = w, float(np.prod([nd[1] - nd[0] for nd in nodes]))
        log_int = float(lp.max() + np.log(np.exp(lp - lp.max()).sum() * vol))
    else:
        refine = s.refine or (8 if d <= 2 else 4)
        edges, fine_mass, log_int = _fine(lp, nodes, box, refine)
    return Quadrature(axes=tuple(axes), box=box, nodes=nodes, log_density=lp, weights=w,
                      fine_edges=edges, fine_mass=fine_mass, log_integral=log_int,
                      stages=stages, problems=problems, n_evaluations=n_eval, rule=s.rule,
                      laplace=laplace)


#: Half-width of the z "prior" box of a frame: its edges are never prior bounds (the θ prior
#: bounds are kept by the log density, −∞ beyond them).
_FRAME_Z_LIMIT = 60.0


class _FramedMap:
    """``map_batches`` for a grid in a :class:`Frame`: z batches evaluated as θ batches.

    The points are moved to the axes here, in the calling process, and ``log_density`` itself
    is what ``inner`` maps (on a cluster: the function already scattered for the mode search,
    with its data, not a second closure carrying another copy); points outside the prior box
    get −∞.
    """

    def __init__(self, inner: MapBatches | None, log_density: LogDensity, frame: Frame,
                 prior: np.ndarray):
        self.inner = inner or thread_map()
        self.log_density, self.frame, self.prior = log_density, frame, prior
        self.n_threads = getattr(self.inner, "n_threads", None)

    def __call__(self, fn, batches):
        """Evaluate each z batch at its θ points (``fn`` is the z density's placeholder)."""
        thetas = [self.frame.to_axes(b) for b in batches]
        oks = [np.all((t > self.prior[:, 0]) & (t < self.prior[:, 1]), axis=1) for t in thetas]
        todo = [i for i, ok in enumerate(oks) if ok.any()]
        done = self.inner(self.log_density, [thetas[i][oks[i]] for i in todo]) if todo else []
        out = [np.full(t.shape[0], -np.inf) for t in thetas]
        for i, v in zip(todo, done):
            out[i][oks[i]] = np.asarray(v, float).ravel()
        return out


def _integrate_in_frame(log_density, axes, prior, frame: Frame, s: QuadratureSettings,
                        map_batches, laplace: dict, n_eval: int) -> Quadrature:
    """:func:`integrate` of the density of z = C⁻¹(θ − mode), starting on z ∈ [−5, 5]^d."""
    d = len(axes)
    framed = _FramedMap(map_batches, log_density, frame, prior)

    def in_z(z):  # what ``framed`` computes, for a direct call
        return framed(None, [np.atleast_2d(z)])[0]

    z_axes = [Axis(name=a.name, lower=-_FRAME_Z_LIMIT, upper=_FRAME_Z_LIMIT) for a in axes]
    inner = integrate(in_z, z_axes, settings=s,
                      start=np.array([[-_LAPLACE_N_SD, _LAPLACE_N_SD]] * d, float),
                      map_batches=framed)
    stages = [{**st, "box": frame.bounding_box(np.asarray(st["box"], float)).tolist(),
               "box_z": st["box"]} for st in inner.stages]
    return Quadrature(axes=tuple(axes), box=inner.box, nodes=inner.nodes,
                      log_density=inner.log_density, weights=inner.weights,
                      fine_edges=inner.fine_edges, fine_mass=inner.fine_mass,
                      log_integral=inner.log_integral + frame.log_det, stages=stages,
                      problems=inner.problems, n_evaluations=n_eval + inner.n_evaluations,
                      rule=inner.rule, laplace=laplace, frame=frame)


# ---- the θ lattice of the Laplace families (docs/inference.md) ----

@runtime_checkable
class LogPosterior(Protocol):
    """What a quadrature over θ needs from a model (see the module docstring).

    ``log_density`` may be called with any batch, in any order; an implementation may keep
    state between calls (the Laplace model warm-starts each point from the nearest one
    evaluated), so points that are close should preferably come in one batch or in sequence.
    """

    axes: tuple

    def log_density(self, thetas: np.ndarray) -> np.ndarray:
        """Unnormalised log p(θ | y) at rows of ``thetas`` (k, len(axes)); −inf outside."""
        ...

    def draw_latent(self, thetas: np.ndarray, rng: np.random.Generator) -> dict:
        """One draw of the latent field given each row of ``thetas``; arrays with k rows."""
        ...


@dataclass(frozen=True, kw_only=True)
class ThetaGridSettings:
    """How the θ grid is laid out.

    Attributes
    ----------
    step : float
        δz, lattice spacing in standardised units (INLA's default is 1; 0.75 here, measured
        against a brute-force posterior in ``benchmarks/bench_families.py``).
    log_drop : float
        Points more than this below the maximum log density are not kept (INLA: 2.5).
    max_points : int
        Stop the walk after this many evaluated points (reported as a problem).
    fd_step : float
        Finite-difference step on the axes (log units) for the gradient and Hessian.
    """

    step: float = 0.75
    log_drop: float = 4.0
    max_points: int = 600
    fd_step: float = 0.05

    def __post_init__(self) -> None:
        """Refuse non-positive spacings (ValueError)."""
        for name in ("step", "log_drop", "fd_step"):
            if not getattr(self, name) > 0:
                raise ValueError(f"`{name}` must be > 0, got {getattr(self, name)!r}")
        if self.max_points < 1:
            raise ValueError(f"`max_points` must be >= 1, got {self.max_points!r}")


@dataclass(frozen=True, kw_only=True)
class ThetaGrid:
    """Quadrature points over θ with normalised weights.

    Attributes
    ----------
    axes : tuple of str
    points : ndarray of shape (n, n_axes)
    log_density : ndarray of shape (n,)
    weights : ndarray of shape (n,)
        Posterior probability of each point's cell (sums to 1).
    mode : ndarray of shape (n_axes,)
    transform : ndarray of shape (n_axes, n_axes)
        V Λ^(-1/2): θ = mode + transform @ z.
    step : float
    n_evaluations : int
        Log-density evaluations in all (mode search, Hessian and walk).
    stages : dict
        Per stage (``mode``, ``hessian``, ``walk``): evaluations and wall-clock seconds.
    problems : list of str
    """

    axes: tuple
    points: np.ndarray
    log_density: np.ndarray
    weights: np.ndarray
    mode: np.ndarray
    transform: np.ndarray
    step: float
    n_evaluations: int
    stages: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)

    def draw_points(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``n`` point indices with probability ``weights``; shape (n,)."""
        return rng.choice(self.weights.size, size=n, p=self.weights)

    def quantiles(self, q, n_draws: int = 20_000, seed: int = 0) -> np.ndarray:
        """Posterior quantiles per axis, each point's mass spread uniformly over its z-cell.

        Parameters
        ----------
        q : array_like of probabilities
        n_draws, seed : int
            Monte Carlo size and seed of the within-cell spread.

        Returns
        -------
        ndarray of shape (len(q), n_axes)
        """
        rng = np.random.default_rng(seed)
        i = self.draw_points(n_draws, rng)
        jit = (rng.random((n_draws, self.points.shape[1])) - 0.5) * self.step
        th = self.points[i] + jit @ self.transform.T
        return np.quantile(th, np.asarray(q, float), axis=0)


def explore_grid(target, box: np.ndarray, settings: ThetaGridSettings | None = None,
                 start: np.ndarray | None = None) -> ThetaGrid:
    """Find the posterior mode of θ and lay the INLA grid around it.

    Parameters
    ----------
    target : object
        With ``axes`` and ``log_density(thetas) -> (k,)`` (see the module docstring).
    box : ndarray of shape (n_axes, 2)
        Where the mode is searched (e.g. prior bounds of the range and wide quantiles of the
        variances); the walk itself may leave it wherever the density is finite.
    settings : ThetaGridSettings, optional
    start : ndarray of shape (n_axes,), optional
        Starting point of the mode search (default: centre of ``box``).

    Returns
    -------
    ThetaGrid

    Examples
    --------
    >>> import numpy as np
    >>> class Gauss:                       # a 2-D correlated Gaussian log density
    ...     axes = ("a", "b")
    ...     P = np.linalg.inv([[1.0, 0.8], [0.8, 1.0]])
    ...     def log_density(self, t):
    ...         t = np.atleast_2d(t) - [1.0, -1.0]
    ...         return -0.5 * np.einsum("ki,ij,kj->k", t, self.P, t)
    >>> g = explore_grid(Gauss(), np.array([[-5.0, 5.0], [-5.0, 5.0]]))
    >>> np.round(g.weights @ g.points, 2)
    array([ 1., -1.])
    """
    s = settings or ThetaGridSettings()
    box = np.asarray(box, float)
    f = _counted(lambda pts: np.asarray(target.log_density(pts), float))
    stages: dict = {}
    clock = [time.perf_counter(), 0]

    def mark(name):
        now = time.perf_counter()
        stages[name] = {"evaluations": f.n - clock[1], "seconds": now - clock[0]}
        clock[0], clock[1] = now, f.n

    mode, f0, H = find_mode(f, box, fd_step=s.fd_step, start=start, mark=mark)
    problems: list[str] = []
    mark("hessian")
    lam, V = np.linalg.eigh(0.5 * (H + H.T))
    if np.any(~np.isfinite(lam)) or np.any(lam <= 0):
        problems.append("the posterior of θ is not log-concave at its mode (Hessian not "
                        "positive definite); axes with no curvature were given unit scale")
        lam = np.where(np.isfinite(lam) & (lam > 0), lam, 1.0)
    T = V / np.sqrt(lam)
    pts, lps = _walk(f, mode, T, f0, s, problems)
    mark("walk")
    lps = np.array(lps)
    return ThetaGrid(axes=tuple(target.axes), points=np.array(pts), log_density=lps,
                     weights=_masses(lps), mode=mode, transform=T, step=s.step,
                     n_evaluations=f.n, stages=stages, problems=problems)


def _walk(f, mode, T, f0, s: ThetaGridSettings, problems):
    """Breadth-first walk over the z-lattice, one batch of log densities per layer."""
    d = mode.size
    seen = {(0,) * d: f0}
    kept = [(0,) * d]
    frontier = [(0,) * d]
    best = f0
    unit = [tuple(int(v) for v in row) for row in np.vstack([np.eye(d), -np.eye(d)])]
    while frontier:
        cand = []
        for k in frontier:
            for u in unit:
                nk = tuple(a + b for a, b in zip(k, u))
                if nk not in seen and nk not in cand:
                    cand.append(nk)
        if not cand:
            break
        if len(seen) + len(cand) > s.max_points:
            problems.append(f"the θ grid stopped at {s.max_points} points before its "
                            f"log density fell {s.log_drop} below the maximum")
            break
        z = np.array(cand, float) * s.step
        vals = f(mode + z @ T.T)
        frontier = []
        best = max(best, float(np.max(vals, initial=-np.inf)))
        for k, v in zip(cand, vals):
            seen[k] = v
            if np.isfinite(v) and v >= best - s.log_drop:
                kept.append(k)
                frontier.append(k)
    kept = [k for k in kept if seen[k] >= best - s.log_drop]
    z = np.array(kept, float) * s.step
    return list(mode + z @ T.T), [seen[k] for k in kept]
