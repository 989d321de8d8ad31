r"""Selection on one set of posterior draws, judgement on independent ones (issue 24, item 3).

The risk rule (``[model] at_risk = "risk" | "both"``) flags the records whose attributable risk
a_i under the unrestricted fit is possibly above a ``record_threshold``. A record flagged
because its estimate came out high on *these* draws and then judged on the same draws is
judged optimistically (regression to the mean: part of its high figure was Monte Carlo error
that the same draws repeat), and any mechanism that replaces the flagged records' draws —
e.g. copies the baseline's predictive into them — passes an in-sample check by construction.

So the selection and the judgement use disjoint posterior draws: the risk rule scores the
unrestricted model on the *selection draws*
(:func:`synthgeo.synthesis.implicates.selection_draw_index`), and the release is judged on the
implicates' draws (:func:`~synthgeo.synthesis.implicates.implicate_draw_index`), fresh for the
selected records. :func:`fresh_draw_judgement` sets the two side by side for the records
selected by risk, per ``record_threshold`` target:

- **selection draws** (unrestricted model): the figures that selected them;
- **fresh draws, unrestricted**: the same records and model on independent draws. The fall of
  their mean a_i from the selection draws is the regression to the mean of the selection
  (``regression_to_mean``);
- **fresh draws, released**: the released (restricted) model on the fresh draws: the
  judgement. **PASS** when no selected record is *possibly* above the threshold there (upper
  Monte Carlo bound a_i + t_{1−α} se_i ≤ threshold, :mod:`synthgeo.risk.noise`, the risk rule's
  own bound), otherwise **FAIL** with the count; a check that can fail because its draws are
  not the ones the selection (or a mechanism tuned to them) saw.

Figures per group: ``n_records``, ``mean`` and ``largest`` a_i (point), ``largest_upper``
(max_i(a_i + t_{1−α/n} se_i), the simultaneous bound over the group's n records),
``n_above`` (point), ``n_certain`` (lower bound above), ``n_possible`` (upper bound above).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from synthgeo.risk.noise import max_bounds, threshold_counts

__all__ = ["FreshDrawJudgement", "fresh_draw_judgement", "group_figures", "SIDES"]

#: The three columns of the comparison: (draws, model).
SIDES = (("selection", "unrestricted"), ("fresh", "unrestricted"), ("fresh", "restricted"))


def group_figures(attributable, se, selected, threshold: float, confidence: float = 0.95,
                  n_rows: int | None = None) -> dict:
    """Figures of the selected records' a_i against ``threshold`` (aggregates only).

    Parameters
    ----------
    attributable, se : ndarray of shape (n_records,)
        a_i and its Monte Carlo se on one set of draws.
    selected : ndarray of bool, shape (n_records,)
    threshold : float
    confidence : float, default=0.95
    n_rows : int, optional
        L behind each se (Student t quantiles, :mod:`synthgeo.risk.noise`).

    Returns
    -------
    dict
        ``n_records``, ``mean``, ``largest``, ``largest_upper``, ``n_above``, ``n_certain``,
        ``n_possible`` (null figures for an empty group).

    Examples
    --------
    >>> f = group_figures([0.3, 0.05, 0.2], [0.01, 0.01, 0.01], [True, False, True], 0.1)
    >>> f["n_records"], round(f["mean"], 2), f["n_certain"]
    (2, 0.25, 2)
    """
    a = np.asarray(attributable, float)
    s = np.asarray(se, float)
    sel = np.asarray(selected, bool)
    if a.shape != s.shape or a.shape != sel.shape or a.ndim != 1:
        raise ValueError(f"`attributable`, `se` and `selected` must be 1-D of one shape, got "
                         f"{a.shape}, {s.shape}, {sel.shape}.")
    if not sel.any():
        return {"n_records": 0, "mean": None, "largest": None, "largest_upper": None,
                "n_above": 0, "n_certain": 0, "n_possible": 0}
    counts, _, _ = threshold_counts(a[sel], s[sel], threshold, confidence, n_rows)
    top = max_bounds(a[sel], s[sel], confidence, n_rows)
    return {"n_records": int(sel.sum()), "mean": float(a[sel].mean()),
            "largest": top["point"], "largest_upper": top["upper"],
            "n_above": counts["n_point"], "n_certain": counts["n_certain"],
            "n_possible": counts["n_possible"]}


@dataclass(frozen=True, kw_only=True, eq=False)
class FreshDrawJudgement:
    """The records selected by risk, on the selection draws and on fresh ones, for one target.

    Attributes
    ----------
    measure : str
        The target's measure key (``"rel:0.1"``).
    threshold : float
        Its ``record_threshold``.
    confidence : float
        ``[risk] confidence``.
    figures : dict of str to dict
        :func:`group_figures` by side: ``"selection_unrestricted"``, ``"fresh_unrestricted"``,
        ``"fresh_restricted"`` (:data:`SIDES`).
    status : {"PASS", "FAIL", "NOTHING SELECTED"}
        PASS: no selected record possibly above the threshold on the fresh draws of the
        released model.
    selected : ndarray of bool
        The records judged (confidential; not in :meth:`to_dict`).
    """

    measure: str
    threshold: float
    confidence: float
    figures: dict[str, dict]
    status: str
    selected: np.ndarray = field(repr=False)

    @property
    def regression_to_mean(self) -> float | None:
        """Mean a_i of the selected records, selection draws minus fresh draws (unrestricted)."""
        sel, fresh = self.figures["selection_unrestricted"], self.figures["fresh_unrestricted"]
        if sel["mean"] is None:
            return None
        return float(sel["mean"] - fresh["mean"])

    def to_dict(self) -> dict:
        """Return the aggregates for release.json (no per-record value)."""
        return {"measure": self.measure, "threshold": self.threshold,
                "confidence": self.confidence, "status": self.status,
                "regression_to_mean": self.regression_to_mean,
                **{k: dict(v) for k, v in self.figures.items()}}


def fresh_draw_judgement(selected, selection: tuple, fresh: dict[str, tuple], *,
                         threshold: float, measure: str, confidence: float = 0.95,
                         n_rows: int | None = None) -> FreshDrawJudgement:
    """Judge the selected records on fresh draws, beside the figures that selected them.

    Parameters
    ----------
    selected : ndarray of bool, shape (n_records,)
        The records the risk rule flagged (before the site rule).
    selection : tuple of two ndarray of shape (n_records,)
        (a_i, se_i) of the unrestricted model on the selection draws.
    fresh : dict
        ``"unrestricted"`` and ``"restricted"`` → (a_i, se_i) on the fresh draws (the
        implicates' draws; the restricted model's are the release's).
    threshold : float
        The target's ``record_threshold``.
    measure : str
    confidence : float, default=0.95
    n_rows : int, optional
        L behind each se.

    Returns
    -------
    FreshDrawJudgement

    Raises
    ------
    ValueError
        If ``fresh`` lacks a model or the shapes disagree.

    Examples
    --------
    A record selected at a_i = 0.3 whose released a_i on fresh draws is 0.02:

    >>> import numpy as np
    >>> se = np.full(2, 0.01)
    >>> j = fresh_draw_judgement(np.array([True, False]), (np.array([0.3, 0.0]), se),
    ...                          {"unrestricted": (np.array([0.25, 0.0]), se),
    ...                           "restricted": (np.array([0.02, 0.0]), se)},
    ...                          threshold=0.1, measure="rel:0.1")
    >>> j.status, round(j.regression_to_mean, 2)
    ('PASS', 0.05)
    """
    missing = [m for m in ("unrestricted", "restricted") if m not in fresh]
    if missing:
        raise ValueError(f"`fresh` needs the models {missing} (a_i, se_i on the fresh draws).")
    sel = np.asarray(selected, bool)
    figures = {f"{draws}_{model}": group_figures(*(selection if draws == "selection"
                                                   else fresh[model]), sel, threshold,
                                                 confidence, n_rows)
               for draws, model in SIDES}
    if not sel.any():
        status = "NOTHING SELECTED"
    else:
        status = "PASS" if figures["fresh_restricted"]["n_possible"] == 0 else "FAIL"
    return FreshDrawJudgement(measure=measure, threshold=float(threshold),
                              confidence=float(confidence), figures=figures, status=status,
                              selected=sel)
