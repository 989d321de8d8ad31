"""Numerical integration over hyper-parameters θ given a batch log-density (INLA's grid strategy).

Interface. A *target* is any object with

- ``axes``: tuple of axis names (1 to 3 axes);
- ``log_density(thetas) -> ndarray (k,)``: the unnormalised log posterior log p(y | θ) + log p(θ)
  at a batch of points ``thetas`` (k, n_axes), −inf outside the prior support;
- ``draw_latent(thetas, rng) -> dict``: one draw of the latent field per row;

such as :class:`synthgeo.inference.laplace.LaplaceGLMM`. This module is synthgeo's own simple
quadrature behind that interface until the shared quadrature module of issue 13 (item 1: "one
quadrature module that takes any log-marginal on up to 3 axes") lands; it then only has to call
``log_density`` in batches and ``draw_latent`` at the θ it draws.

Strategy (Rue, Martino & Chopin 2009, JRSS-B 71(2), doi:10.1111/j.1467-9868.2008.00700.x,
Sect. 3.1 "grid"):

1. mode θ* of log p(θ | y) by L-BFGS-B within ``box`` (central finite-difference gradients, each
   a batch of 2 n_axes points);
2. negative Hessian H at θ* by central differences; z-coordinates θ = θ* + V Λ^(-1/2) z with
   H = V Λ Vᵀ (the rotation makes correlated axes, e.g. the σ²–range ridge, cheap to cover);
3. breadth-first walk over the lattice z ∈ δz ℤ^d from 0, keeping every point whose log density is
   within ``log_drop`` of the maximum and expanding from kept points only, so skewed
   posteriors are followed.

All lattice cells have equal volume in z, so the weights are ∝ exp(log p). Draws of θ are
lattice points (INLA's approach); the θ quantiles spread each point's weight uniformly over its
z-cell.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
from scipy.optimize import minimize

__all__ = ["LogPosterior", "ThetaGridSettings", "ThetaGrid", "explore_grid", "find_mode"]


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


def _fd_gradient(f, x, h):
    d = x.size
    pts = np.vstack([x + h * e for e in np.eye(d)] + [x - h * e for e in np.eye(d)])
    v = f(pts)
    return (v[:d] - v[d:]) / (2 * h)


def _fd_hessian(f, x, h, f0):
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
    v = f(np.array(pts))
    H = np.empty((d, d))
    for i in range(d):
        H[i, i] = (v[idx[("p", i)]] - 2 * f0 + v[idx[("m", i)]]) / h**2
        for j in range(i + 1, d):
            H[i, j] = H[j, i] = (v[idx[("pp", i, j)]] - v[idx[("pm", i, j)]]
                                 - v[idx[("mp", i, j)]] + v[idx[("mm", i, j)]]) / (4 * h**2)
    return H


def find_mode(f, box: np.ndarray, *, fd_step: float = 0.05, start: np.ndarray | None = None,
              mark=None) -> tuple[np.ndarray, float, np.ndarray]:
    """Mode of a batch log density within ``box`` and the negative Hessian there.

    L-BFGS-B with central finite-difference gradients (each a batch of 2 d points), then a
    central finite-difference Hessian (one batch of 2 d + 4 d(d − 1)/2 points): steps 1–2 of
    :func:`explore_grid`, also used to place the first box of
    :func:`synthgeo.inference.quadrature.laplace_box`.

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
    n_eval = [0]

    def f(pts):
        pts = np.atleast_2d(pts)
        n_eval[0] += pts.shape[0]
        return np.asarray(target.log_density(pts), float)

    stages: dict = {}
    clock = [time.perf_counter(), 0]

    def mark(name):
        now = time.perf_counter()
        stages[name] = {"evaluations": n_eval[0] - clock[1], "seconds": now - clock[0]}
        clock[0], clock[1] = now, n_eval[0]

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
    w = np.exp(lps - lps.max())
    return ThetaGrid(axes=tuple(target.axes), points=np.array(pts), log_density=lps,
                     weights=w / w.sum(), mode=mode, transform=T, step=s.step,
                     n_evaluations=n_eval[0], stages=stages, problems=problems)


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
