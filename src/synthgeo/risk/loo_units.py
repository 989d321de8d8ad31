r"""The leave-out unit's effect: the attributable risk under each unit, side by side.

The leave-one-out baseline leaves out, with record i, the records of its block
(:func:`synthgeo.risk.loo.leave_out_blocks`, ``[risk] loo_unit``). Which block is right
depends on what a shared geocode or a shared subject means in the file, and the file often
cannot say; so the release states the unit it ran with and, beside its attributable risk, the
largest (and mean) per-record attributable risk a_i = r̃_i − r̃_i^{b*} of the share attack under
each other unit the data allow, both models (docs/risk-and-utility.md, "Baseline and
attributable risk"). A unit whose blocks are the same partition as the unit run ("same blocks":
e.g. "record" and "site" when no two records share a geocode) gives the same figures and is not
computed again.

Everything here but :meth:`LooUnitComparison.to_record` and :meth:`LooUnitComparison.table`
(aggregates) is confidential: the per-record a_i stay in memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from synthgeo.risk.attributable import AttributableSummary

__all__ = ["UnitFigures", "LooUnitComparison", "unit_figures", "unit_rule"]

def unit_rule(unit: str, subject: bool = False) -> str:
    """Return a leave-out unit in words (release.json, the report and the console).

    Parameters
    ----------
    unit : {"site", "subject", "record"}
    subject : bool, default=False
        Whether the data have a ``[data] subject`` column (the "site" unit then also leaves
        out the subject's records).

    Examples
    --------
    >>> unit_rule("site", subject=True)
    "every record at the record's geocode and every record of its subject, transitively"
    """
    if unit == "record":
        return "the record alone"
    if unit == "subject":
        return "every record of the record's subject ([data] subject)"
    if unit == "site":
        return ("every record at the record's geocode" + (
            " and every record of its subject, transitively" if subject else ""))
    raise ValueError(f"`unit` must be 'site', 'subject' or 'record', got {unit!r}.")


@dataclass(frozen=True, kw_only=True, eq=False)
class UnitFigures:
    """The share attack's per-record attributable risk under one leave-out unit.

    Attributes
    ----------
    unit : {"site", "subject", "record"}
    same_blocks : bool
        True when the unit's blocks are the same partition as the unit run (then
        ``attributable`` is the unit run's and nothing was computed again).
    n_records_block_differs : int
        Records whose block (the set of records left out with them) differs from the unit
        run's.
    attributable : dict of (str, str) to ndarray
        (model, measure key) → a_i (n_records,), confidential.
    baseline_source : dict of str to str
        Measure key → the stronger baseline b* on all records ("loo" or "public").
    seconds : float
        Wall time of this unit's baseline and scoring (0 when the blocks are the same).
    """

    unit: str
    same_blocks: bool
    n_records_block_differs: int
    attributable: dict[tuple[str, str], np.ndarray] = field(repr=False)
    baseline_source: dict[str, str]
    seconds: float = 0.0

    def rows(self) -> list[dict[str, Any]]:
        """``{model, measure, largest_attributable, attributable, baseline_source}`` rows."""
        return [{"model": model, "measure": key,
                 "largest_attributable": float(np.max(a)) if a.size else float("nan"),
                 "attributable": float(np.mean(a)) if a.size else float("nan"),
                 "baseline_source": self.baseline_source[key]}
                for (model, key), a in self.attributable.items()]


def unit_figures(unit: str, summary: AttributableSummary, models: Sequence[str],
                 keys: Sequence[str], *, differs: np.ndarray, same_blocks: bool = False,
                 seconds: float = 0.0) -> UnitFigures:
    """Read the share attack's a_i under one unit off its :class:`AttributableSummary`.

    Parameters
    ----------
    unit : str
        The leave-out unit ``summary`` was scored under.
    summary : AttributableSummary
        Of the models scored with that unit's leave-one-out baseline (group ``"all"``).
    models : sequence of str
        Model names in ``summary.records``.
    keys : sequence of str
        Measure keys (``"rel:0.1"``).
    differs : ndarray of bool, shape (n_records,)
        :func:`~synthgeo.risk.loo.block_differs` against the unit run.
    same_blocks : bool, default=False
        The unit's blocks are the unit run's (``summary`` is then the unit run's own).
    seconds : float, default=0.0

    Returns
    -------
    UnitFigures

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> s = NS(record_attributable=lambda m, k, a: np.array([0.1, 0.3]),
    ...        choices={("rel:0.1", "share"): "loo"})
    >>> f = unit_figures("record", s, ["restricted"], ["rel:0.1"],
    ...                  differs=np.array([True, False]))
    >>> f.rows()[0]["largest_attributable"], f.n_records_block_differs
    (0.3, 1)
    """
    att = {(m, k): np.asarray(summary.record_attributable(m, k, "share"), float)
           for m in models for k in keys}
    return UnitFigures(unit=unit, same_blocks=bool(same_blocks),
                       n_records_block_differs=int(np.count_nonzero(differs)),
                       attributable=att,
                       baseline_source={k: summary.choices[(k, "share")] for k in keys},
                       seconds=float(seconds))


@dataclass(frozen=True, kw_only=True, eq=False)
class LooUnitComparison:
    """The leave-out unit run and the attributable risk under every other unit allowed.

    Attributes
    ----------
    unit : {"site", "subject", "record"}
        The unit run (``ReleaseSpec.loo_unit``).
    source : {"spec", "default"}
        ``[risk] loo_unit`` given, or its default ("subject" with a ``[data] subject`` column,
        else "site").
    as_run : UnitFigures
        The unit run's figures (the attributable table's ``all`` group, share attack).
    others : tuple of UnitFigures
        Every other unit the data allow ("subject" only with a subject column).
    subject : bool
        Whether the data have a ``[data] subject`` column.
    """

    unit: str
    source: str
    as_run: UnitFigures
    others: tuple[UnitFigures, ...]
    subject: bool = False

    def rule(self, unit: str | None = None) -> str:
        """Return ``unit`` (default: the unit run) in words, for these data."""
        return unit_rule(unit or self.unit, self.subject)

    @property
    def units(self) -> tuple[UnitFigures, ...]:
        """The unit run first, then the others."""
        return (self.as_run, *self.others)

    def to_record(self) -> dict[str, Any]:
        """Return ``risk_attributable.loo_unit`` of release.json: aggregates only."""
        def entry(f: UnitFigures) -> dict[str, Any]:
            return {"unit": f.unit, "rule": self.rule(f.unit), "same_blocks": f.same_blocks,
                    "n_records_block_differs": f.n_records_block_differs,
                    "seconds": f.seconds, "figures": [] if f.same_blocks else f.rows()}
        return {"unit": self.unit, "source": self.source, "rule": self.rule(),
                "attack": "share", "as_run": self.as_run.rows(),
                "other_units": [entry(f) for f in self.others]}

    def table(self) -> pd.DataFrame:
        """One row per unit × model × measure (the report's table): largest and mean a_i.

        Columns ``unit``, ``model``, ``measure``, ``largest_attributable``, ``attributable``,
        ``baseline_source``, ``records_block_differs``; a unit with the same blocks as the
        unit run says so in ``note`` and repeats its figures.
        """
        rows = []
        for f in self.units:
            note = ("as run" if f is self.as_run else
                    f"same blocks as {self.unit}" if f.same_blocks else "")
            figures = self.as_run.rows() if f.same_blocks else f.rows()
            rows += [{"unit": f.unit, **r, "records_block_differs": f.n_records_block_differs,
                      "note": note} for r in figures]
        return pd.DataFrame(rows, columns=["unit", "model", "measure", "largest_attributable",
                                           "attributable", "baseline_source",
                                           "records_block_differs", "note"])

    def line(self, model: str = "restricted", *, label: str | None = None) -> str:
        """One line for the console: the unit run and the largest a_i under each other unit.

        ``model`` picks the rows; ``label`` names them (default: ``model``; e.g.
        ``"cross_fitted"`` for a cross-fitted release's "restricted" rows).
        """
        def largest(f: UnitFigures) -> str:
            return ", ".join(f"{r['measure']} {r['largest_attributable']:.3f}"
                             for r in f.rows() if r["model"] == model)
        head = (f"leave-out unit: {self.unit} ({'spec' if self.source == 'spec' else 'default'}"
                f"; {self.rule()}); largest attributable a_i (share, {label or model}): "
                f"{largest(self.as_run)}")
        for f in self.others:
            head += (f"; under {f.unit}: same blocks" if f.same_blocks else
                     f"; under {f.unit} ({f.n_records_block_differs} records' blocks differ): "
                     f"{largest(f)}")
        return head

