r"""Choosing records by risk: at-risk records beyond spatial isolation, and unbiased showcases.

**At-risk rule** (``[model] at_risk``, docs/risk-and-utility.md): ``"spatial"`` keeps the
paper's rule; ``"risk"`` makes at risk every record whose Rao-Blackwellised attributable
risk under the *unrestricted* fit *possibly* exceeds a ``[risk.targets] record_threshold``
— its upper Monte Carlo bound a_i + z se_i does (:mod:`synthgeo.risk.noise`: protection
errs on the safe side); ``"both"`` takes either. The Rao-Blackwellised risk is used, not the
realised share: with L = 100 the share's Monte Carlo sd reaches 0.05, so a threshold on shares
flags noise.

**Showcase records** (the report's histograms): choosing records by their *unrestricted* risk
and then showing both models' risk shows a "fall" even between identical models (regression to
the mean: the records picked are those whose unrestricted figure came out high by chance). The
rule here is symmetric in the two models: at-risk records first, then the others by the larger
of the two models' Rao-Blackwellised risk, max(r̃ᵘ_i, r̃ʳ_i).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["AtRiskChoice", "choose_at_risk", "HistogramSelection", "histogram_records",
           "HISTOGRAM_RULE"]

RULES = ("spatial", "risk", "both")
#: The caption a report prints under the histograms.
HISTOGRAM_RULE = ("records shown: the at-risk records first, then the others by the larger of "
                  "the two models' Rao-Blackwellised risk (no selection on either model's "
                  "realised share)")


def _bool(mask, name: str, n: int | None = None) -> np.ndarray:
    arr = np.asarray(mask)
    if arr.dtype != bool or arr.ndim != 1 or (n is not None and arr.shape != (n,)):
        raise ValueError(f"`{name}` must be a 1-D bool array"
                         + (f" of shape ({n},)" if n is not None else "")
                         + f", got {arr.dtype} {arr.shape}.")
    return arr


@dataclass(frozen=True, kw_only=True, eq=False)
class AtRiskChoice:
    """At-risk records under ``[model] at_risk``.

    Attributes
    ----------
    rule : {"spatial", "risk", "both"}
    at_risk : ndarray of bool, shape (n_records,)
        The records the restricted model protects.
    spatial : ndarray of bool
        The spatial rule's flags.
    by_risk : ndarray of bool
        Attributable risk above a threshold (all False under "spatial").
    """

    rule: str
    at_risk: np.ndarray
    spatial: np.ndarray
    by_risk: np.ndarray

    @property
    def n_at_risk(self) -> int:
        """Number of at-risk records."""
        return int(self.at_risk.sum())

    def to_dataframe(self) -> pd.DataFrame:
        """Per-record flags: ``at_risk``, ``spatial``, ``by_risk``."""
        return pd.DataFrame({"at_risk": self.at_risk, "spatial": self.spatial,
                             "by_risk": self.by_risk})


def choose_at_risk(rule: str, spatial: np.ndarray, *, attributable: np.ndarray | None = None,
                   record_threshold: float | np.ndarray | None = None,
                   se: np.ndarray | None = None, z: float = 0.0) -> AtRiskChoice:
    """Apply the at-risk rule.

    Parameters
    ----------
    rule : {"spatial", "risk", "both"}
    spatial : ndarray of bool, shape (n_records,)
        The spatial rule's at-risk records.
    attributable : ndarray of shape (n_records,) or (n_targets, n_records), optional
        Rao-Blackwellised attributable risk under the unrestricted fit, one row per target
        (needed unless ``rule = "spatial"``).
    record_threshold : float or ndarray of shape (n_targets,), optional
        A record is at risk by risk when its upper bound ``attributable + z * se`` exceeds the
        threshold of any row.
    se : ndarray shaped like ``attributable``, optional
        Monte Carlo se of a_i (default 0: the point estimate).
    z : float, default=0.0
        Per-record one-sided quantile (:func:`synthgeo.risk.noise.z_value`).

    Returns
    -------
    AtRiskChoice

    Raises
    ------
    ValueError
        For an unknown rule, a missing or mis-shaped input.

    Examples
    --------
    >>> c = choose_at_risk("both", np.array([True, False, False]),
    ...                    attributable=np.array([0.0, 0.2, 0.05]), record_threshold=0.1)
    >>> c.at_risk.tolist(), c.by_risk.tolist()
    ([True, True, False], [False, True, False])
    >>> c = choose_at_risk("risk", np.zeros(3, bool), attributable=np.array([0.0, 0.2, 0.05]),
    ...                    record_threshold=0.1, se=np.array([0.0, 0.0, 0.04]), z=1.645)
    >>> c.by_risk.tolist()  # record 2: 0.05 + 1.645 * 0.04 = 0.116 > 0.1
    [False, True, True]
    """
    if rule not in RULES:
        raise ValueError(f"`rule` must be one of {RULES}, got {rule!r}.")
    sp_mask = _bool(spatial, "spatial")
    n = sp_mask.size
    if rule == "spatial":
        return AtRiskChoice(rule=rule, at_risk=sp_mask.copy(), spatial=sp_mask,
                            by_risk=np.zeros(n, bool))
    if attributable is None or record_threshold is None:
        raise ValueError(f'at_risk = "{rule}" needs `attributable` and `record_threshold`.')
    a = np.atleast_2d(np.asarray(attributable, dtype=float))
    t = np.atleast_1d(np.asarray(record_threshold, dtype=float))
    if a.shape[1] != n or t.shape != (a.shape[0],):
        raise ValueError(f"`attributable` must be (n_targets, {n}) with one threshold per row, "
                         f"got {a.shape} and {t.shape}.")
    s = np.zeros_like(a) if se is None else np.atleast_2d(np.asarray(se, dtype=float))
    if s.shape != a.shape:
        raise ValueError(f"`se` must have the shape of `attributable` {a.shape}, got {s.shape}.")
    by_risk = (a + float(z) * s > t[:, None]).any(axis=0)
    at_risk = by_risk if rule == "risk" else (by_risk | sp_mask)
    return AtRiskChoice(rule=rule, at_risk=at_risk, spatial=sp_mask, by_risk=by_risk)


@dataclass(frozen=True, kw_only=True, eq=False)
class HistogramSelection:
    """Records chosen for the report's histograms, and the rule that chose them.

    Attributes
    ----------
    records : ndarray of int
        Record positions, in display order.
    at_risk : ndarray of bool
        Whether each chosen record is at risk.
    key : ndarray of float
        max(r̃ᵘ_i, r̃ʳ_i) of each chosen record (the sort key after the at-risk records).
    rule : str
        The caption (:data:`HISTOGRAM_RULE`).
    """

    records: np.ndarray
    at_risk: np.ndarray
    key: np.ndarray
    rule: str = HISTOGRAM_RULE

    def to_dataframe(self) -> pd.DataFrame:
        """``record``, ``at_risk``, ``key`` in display order."""
        return pd.DataFrame({"record": self.records, "at_risk": self.at_risk, "key": self.key})


def histogram_records(at_risk: np.ndarray, rb_unrestricted: np.ndarray,
                      rb_restricted: np.ndarray, n: int) -> HistogramSelection:
    """Choose ``n`` records to show without selection bias between the two models.

    Parameters
    ----------
    at_risk : ndarray of bool, shape (n_records,)
    rb_unrestricted, rb_restricted : ndarray of shape (n_records,)
        Rao-Blackwellised risk of each model (:func:`synthgeo.risk.rao_blackwell.rb_risk`).
    n : int
        Records to show (at least every at-risk record is listed first, up to ``n``).

    Returns
    -------
    HistogramSelection

    Raises
    ------
    ValueError
        If the shapes disagree or ``n`` < 1.

    Examples
    --------
    >>> sel = histogram_records(np.array([False, True, False, False]),
    ...                         np.array([0.1, 0.0, 0.5, 0.2]), np.array([0.3, 0.0, 0.1, 0.2]), 3)
    >>> sel.records.tolist()  # at-risk record 1, then by max(u, r): 0.5, 0.3
    [1, 2, 0]
    """
    flags = _bool(at_risk, "at_risk")
    u, r = (np.asarray(v, dtype=float) for v in (rb_unrestricted, rb_restricted))
    if u.shape != flags.shape or r.shape != flags.shape:
        raise ValueError(f"risk arrays must have shape {flags.shape}, got {u.shape}, {r.shape}.")
    if int(n) < 1:
        raise ValueError(f"`n` must be a positive number of records, got {n!r}.")
    key = np.maximum(u, r)
    # at-risk first, then by the symmetric key (descending); stable on record position
    order = np.lexsort((np.arange(flags.size), -key, ~flags))[: int(n)]
    return HistogramSelection(records=order, at_risk=flags[order], key=key[order])
