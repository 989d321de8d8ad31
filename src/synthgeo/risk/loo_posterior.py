r"""The leave-out posterior: the baseline attacker's parameters fitted without the record.

The leave-one-out baseline (:mod:`synthgeo.risk.loo`) predicts y_i from everyone else,
p(y_i | y_−B(i)) = ∫ p(y_i | y_−B(i), θ) p(θ | y_−B(i)) dθ. Evaluated at the full posterior's
draws θ_ℓ ~ p(θ | y) — what the baseline did until issue 25 — it lends the baseline attacker
the record's own value through θ (β, σ², φ, τ² were fitted with y_i). Against a mechanism
that draws every record from that very predictive (the cross-fit,
:mod:`synthgeo.synthesis.cross_fit`) the attributable risk is then 0 by construction and
measures nothing.

The leave-out posterior is reached from the full one by importance sampling (Gelfand, Dey &
Chang 1992, *Model determination using predictive distributions with implementation via
sampling-based methods*, Bayesian Statistics 4, 147–167): p(θ | y_−B) ∝ p(θ | y) /
p(y_B | y_−B, θ), so draw ℓ gets weight

.. math::

    w_{i\ell} \propto 1 / p(y_{B(i)} \mid y_{-B(i)}, \theta_\ell)

(the block's joint density, :func:`synthgeo.risk.loo.block_log_density`). The raw weights
have heavy tails; they are Pareto-smoothed (PSIS; Vehtari, Gelman & Gabry 2017, *Practical
Bayesian model evaluation using leave-one-out cross-validation and WAIC*, Statistics and
Computing 27, 1413–1432; Vehtari et al. 2024, JMLR 25(72)) by ArviZ's ``psislw`` (its
algorithm run on all records at once, :mod:`synthgeo.risk.psis`), whose
shape estimate k̂ says per record whether the estimate can be trusted (k̂ > 0.7: not).

The scorer averages a predictive's rows with equal weight and pairs row ℓ of the release with
row ℓ of the baseline (the Monte Carlo se of a difference, :mod:`synthgeo.risk.noise`). So the
weights are turned into rows by **systematic resampling with fixed positions**: row ℓ of
record i takes the draw at which the cumulative weight first reaches (ℓ + ½)/L (Kitagawa
1996, *J. Comput. Graph. Statist.* 5(1), 1–25; no random number: the same input gives the
same rows). Each draw appears ⌊Lw⌋ or ⌈Lw⌉ times, so the equal-weight average of the rows is
the weighted average to within 1/L per draw; with equal weights row ℓ is draw ℓ and the
pairing with the release's rows is kept exactly.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from synthgeo.risk.predictive import Predictive, record_slices
from synthgeo.risk.psis import psislw_rows

__all__ = ["LeaveOutPosterior", "reweight_leave_out", "resample_rows", "PARETO_K_LIMIT"]

#: PSIS's threshold on k̂ above which an importance-sampling estimate is not reliable
#: (Vehtari et al. 2024, Sect. 3: 0.7 for any sample size above ~2,200 draws; smaller samples
#: have a lower threshold, 1 − 1/log10(S), which ``summary`` also reports).
PARETO_K_LIMIT = 0.7


def resample_rows(log_weights: np.ndarray) -> np.ndarray:
    """Row indices of a systematic resample with fixed positions (ℓ + ½)/L, per column.

    Parameters
    ----------
    log_weights : ndarray of shape (L, n)
        Normalised log weights of the L draws, per record (each column sums to 1 in exp).

    Returns
    -------
    ndarray of int, shape (L, n)
        Row ℓ, column i: the draw that row ℓ of record i takes (non-decreasing in ℓ).

    Examples
    --------
    >>> resample_rows(np.log(np.full((4, 1), 0.25))).ravel().tolist()  # equal weights: identity
    [0, 1, 2, 3]
    >>> resample_rows(np.log(np.array([[0.5], [0.5], [0.0], [0.0]]) + 1e-300)).ravel().tolist()
    [0, 0, 1, 1]
    """
    lw = np.asarray(log_weights, dtype=float)
    L = lw.shape[0]
    cw = np.cumsum(np.exp(lw - lw.max(axis=0, keepdims=True)), axis=0)
    cw /= cw[-1:]
    out = np.empty(lw.shape, dtype=np.int64)
    for row in range(L):
        out[row] = (cw < (row + 0.5) / L).sum(axis=0)
    return np.minimum(out, L - 1)


@dataclass(frozen=True, eq=False)
class LeaveOutPosterior:
    """The leave-one-out baseline at the leave-out posterior (:func:`reweight_leave_out`).

    Attributes
    ----------
    predictive : Predictive
        (L, n_records): row ℓ of record i is the full-posterior baseline at the draw
        :func:`resample_rows` assigns it; ``name = "baseline_loo"``.
    pareto_k : ndarray of shape (n_records,)
        PSIS k̂ per record (confidential through y; only aggregates leave the object).
    ess : ndarray of shape (n_records,)
        Effective number of draws 1 / Σ_ℓ w_iℓ² after smoothing.
    rows : ndarray of int, shape (L, n_records), optional
        The full-posterior draw behind each row of each record (:func:`resample_rows`), so
        that a later term paired with row ℓ can use that draw's parameters; int16 up to
        L = 32,768 draws.
    """

    predictive: Predictive
    pareto_k: np.ndarray
    ess: np.ndarray
    rows: np.ndarray | None = None

    def __repr__(self) -> str:
        """Show counts only: the per-record figures depend on the confidential values."""
        s = self.summary()
        return (f"LeaveOutPosterior(n_records={s['n_records']}, n_draws={s['n_draws']}, "
                f"records_k_above_{PARETO_K_LIMIT}={s['records_k_above_limit']})")

    def summary(self) -> dict:
        """Return aggregates for release.json and the report (no per-record value).

        Returns
        -------
        dict
            ``method``, ``n_records``, ``n_draws``, ``records_k_above_limit`` (k̂ > 0.7),
            ``records_k_above_small_sample_limit`` (k̂ > 1 − 1/log10 L),
            ``records_k_not_estimated`` (too few draws in the tail for PSIS: ArviZ's k̂ = ∞;
            flat weights are not counted), ``largest_k`` (of the estimated),
            ``median_ess``, ``smallest_ess``.
        """
        L = self.predictive.n_implicates
        small = 1.0 - 1.0 / np.log10(L) if L > 10 else 0.0
        k = self.pareto_k
        finite = k[np.isfinite(k)]
        return {
            "method": "leave-out posterior by Pareto-smoothed importance sampling of the "
                      "full posterior's draws (weights 1 / p(y_B | y_-B, theta)), resampled "
                      "systematically at fixed positions (docs/risk-and-utility.md)",
            "n_records": int(self.pareto_k.size), "n_draws": int(L),
            "records_k_above_limit": int((finite > PARETO_K_LIMIT).sum()),
            "records_k_above_small_sample_limit": int((finite > small).sum()),
            "records_k_not_estimated": int((k == np.inf).sum()),
            "small_sample_limit": round(float(small), 3),
            "largest_k": round(float(finite.max()), 3) if finite.size else None,
            "median_ess": round(float(np.median(self.ess)), 1) if self.ess.size else None,
            "smallest_ess": round(float(np.min(self.ess)), 1) if self.ess.size else None,
        }


def reweight_leave_out(loo: Predictive, log_density: np.ndarray, *,
                       reff: float = 1.0, overwrite: bool = False) -> LeaveOutPosterior:
    """Move the leave-one-out baseline from the full posterior to the leave-out posterior.

    Parameters
    ----------
    loo : Predictive
        (L, n_records): the baseline at the full posterior's draws θ_ℓ
        (:func:`synthgeo.risk.loo.baseline_loo_sets`), model scale.
    log_density : ndarray of shape (L, n_records)
        log p(y_B(i) | y_−B(i), θ_ℓ) (:func:`synthgeo.risk.loo.block_log_density`; the
        ``log_density`` output of ``baseline_loo_sets``).
    reff : float, default=1.0
        Relative efficiency of the draws for PSIS (1: independent draws, as the grid
        posterior's are).
    overwrite : bool, default=False
        Write the reweighted baseline into ``loo``'s own arrays (a block of records at a time:
        a record's rows are gathered from its own column before it is written), so that no
        second pair of (L, n_records) arrays is made; ``loo`` is then the result. For a
        caller that holds the only reference to ``loo``'s arrays.

    Returns
    -------
    LeaveOutPosterior

    Raises
    ------
    ValueError
        If ``log_density`` does not have ``loo``'s shape or holds a non-finite value.

    Examples
    --------
    >>> import numpy as np
    >>> from synthgeo.risk.predictive import Predictive
    >>> base = Predictive(mean=np.zeros((20, 3)), sd=np.ones((20, 3)))
    >>> r = reweight_leave_out(base, np.zeros((20, 3)))  # flat weights: rows unchanged
    >>> bool(np.array_equal(r.predictive.mean, base.mean)), r.summary()["median_ess"]
    (True, 20.0)
    """
    lp = np.asarray(log_density, dtype=float)
    if lp.shape != loo.mean.shape:
        raise ValueError(f"`log_density` must have the baseline's shape {loo.mean.shape}, got "
                         f"{lp.shape}.")
    L, n = lp.shape
    blocks = record_slices(n)
    n_bad = sum(int(np.count_nonzero(~np.isfinite(lp[:, c]))) for c in blocks)
    if n_bad:
        raise ValueError(f"`log_density` holds {n_bad} non-finite values; the leave-out "
                         "posterior's weights need finite densities.")
    # flat weights everywhere: PSIS would not fit a tail
    flat = max(float(np.ptp(lp[:, c], axis=0).max(initial=0.0)) for c in blocks) == 0.0
    k, ess = np.empty(n), np.empty(n)
    # a draw's index needs 16 bits up to L = 32,768: a quarter of int64's (L, n) array
    rows = np.empty((L, n), dtype=np.int16 if L <= 2**15 else np.int64)
    if overwrite and not (loo.mean.flags.writeable and loo.sd.flags.writeable):
        raise ValueError("`overwrite=True` needs writeable baseline arrays")
    mean, sd = (loo.mean, loo.sd) if overwrite else (np.empty((L, n)), np.empty((L, n)))
    for c in blocks:  # each record on its own: blocks of records, (L, block) temporaries
        if flat:
            lw, k[c] = np.full((c.stop - c.start, L), -np.log(L)), -np.inf  # -inf: no tail
        else:
            with warnings.catch_warnings():  # k̂ is reported (summary), not warned per record
                warnings.simplefilter("ignore")
                lw, kc = psislw_rows((-lp[:, c]).T, reff=reff)  # ArviZ's psislw, by rows
            lw, k[c] = np.asarray(lw), np.asarray(kc, dtype=float)
        w = np.exp(lw - lw.max(axis=1, keepdims=True))
        w /= w.sum(axis=1, keepdims=True)
        ess[c] = 1.0 / (w ** 2).sum(axis=1)
        del w
        r = resample_rows(lw.T)  # (L, block)
        del lw
        rows[:, c] = r
        cols = np.broadcast_to(np.arange(c.start, c.stop), r.shape)
        mean[:, c] = loo.mean[r, cols]
        sd[:, c] = loo.sd[r, cols]
    pred = Predictive(mean=mean, sd=sd, name="baseline_loo")
    return LeaveOutPosterior(predictive=pred, pareto_k=k, ess=ess, rows=rows)
