"""Importance resampling of proposal points towards the exact posterior (Kish ESS reported).

The grid quadrature (:mod:`synthgeo.inference.quadrature`) proposes continuous points from its
spline posterior; the exact log density at each point gives importance weights
w ∝ exp(log p − log q), whose Kish effective sample size (Σw)² / Σw² (Kish 1965, *Survey
Sampling*, Sect. 11.7) says how well the grid resolved the posterior. Method:
``docs/inference.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ImportanceSummary", "importance_resample"]


@dataclass(frozen=True, kw_only=True)
class ImportanceSummary:
    """Importance weights of the proposal points: Kish ESS = (Σw)² / Σw²."""

    n_points: int
    ess: float
    n_distinct_kept: int

    @property
    def ess_fraction(self) -> float:
        """Kish ESS over the number of proposal points (1 = the proposal was the posterior)."""
        return self.ess / self.n_points


def importance_resample(log_p: np.ndarray, log_q: np.ndarray, n: int,
                        rng: np.random.Generator) -> tuple[np.ndarray, ImportanceSummary]:
    """Return indices of n draws from weighted proposal points (systematic resampling).

    Weights w ∝ exp(log_p − log_q). Systematic resampling keeps each point ⌊n w⌋ or ⌈n w⌉
    times (Kitagawa 1996, JCGS 5(1), doi:10.1080/10618600.1996.10474692), the fewest repeats
    of any unbiased scheme; the order is then shuffled so that draws are exchangeable.

    Examples
    --------
    >>> import numpy as np
    >>> idx, s = importance_resample(np.zeros(4), np.zeros(4), 4, np.random.default_rng(0))
    >>> sorted(idx.tolist()), s.ess
    ([0, 1, 2, 3], 4.0)
    """
    lw = np.asarray(log_p, float) - np.asarray(log_q, float)
    w = np.exp(lw - lw.max())
    w /= w.sum()
    ess = float(1.0 / np.sum(w**2))
    u = (rng.random() + np.arange(n)) / n
    idx = np.minimum(np.searchsorted(np.cumsum(w), u), w.size - 1)
    idx = rng.permutation(idx)
    return idx, ImportanceSummary(n_points=int(w.size), ess=ess,
                                  n_distinct_kept=int(np.unique(idx).size))
