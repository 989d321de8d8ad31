r"""The risk verdict: PASS / FAIL per board target, and the ``on_risk_failure`` gate.

Targets (``[risk.targets]``, :class:`synthgeo.config.RiskTarget`) are set before the run and
apply to the released model's per-record attributable risk a_i
(:meth:`synthgeo.risk.attributable.AttributableSummary.record_attributable`):

- ``max_attributable_record``: PASS when the simultaneous upper bound
  max_i(a_i + z_{1−α/n} se_i) ≤ the limit (the point max_i a_i, biased upwards, and the lower
  bound are reported);
- ``record_threshold`` with ``max_share_above``: PASS when the share of records *possibly*
  above the threshold (a_i + z_{1−α/(m+1)} se_i > threshold, m = ⌊limit · n⌋) is ≤ the limit,
  so the target holds with the Monte Carlo margin: a false PASS needs m + 1 records truly
  above to look below at once, and Bonferroni over them keeps its probability ≤ α (a
  per-record z_{1−α} would allow 1 − (1 − α)^{m+1}, 40 % at m = 9); the point and *certain*
  (a_i − z se_i > threshold) counts are reported beside it at the same level (a threshold
  alone is reported, not judged, at z_{1−α}).

se_i is the Monte Carlo standard error of a_i
(:meth:`~synthgeo.risk.attributable.AttributableSummary.record_attributable_se`), the level
1 − α is ``[risk] confidence``; the rules are :mod:`synthgeo.risk.noise`.

With no target the verdict is "NOT ASSESSED", never PASS. Cumulative figures (repeated
releases) are the same measures over pooled implicates
(:func:`synthgeo.risk.predictive.pool_synthetic`,
:func:`~synthgeo.risk.predictive.pool_predictives`); ``cumulative=True`` records that the
verdict is on them. Source: docs/risk-and-utility.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from synthgeo._errors import RiskError
from synthgeo._warn import warn
from synthgeo.risk.attributable import AttributableSummary
from synthgeo.risk.joint import JointCount
from synthgeo.risk.measure import Measure
from synthgeo.risk.noise import max_bounds, threshold_counts

__all__ = ["TargetCheck", "RiskVerdict", "assess_risk", "apply_risk_gate", "STATUSES", "ATTACKERS",
           "combine_statuses", "reported_checks", "paired_checks", "decided_by", "pair_text"]

STATUSES = ("PASS", "FAIL", "NOT ASSESSED")
#: Whose attributable risk a criterion judges (:attr:`TargetCheck.attacker`), in words.
ATTACKERS = {"own_values": "own values", "release_attacker": "release attacker"}


def combine_statuses(statuses) -> str:
    """One verdict from several (a release of several responses): FAIL, PASS or NOT ASSESSED.

    FAIL if any is FAIL; PASS only if there is at least one and every one is PASS; else NOT
    ASSESSED (a response not judged leaves the release not assessed, never PASS).

    Examples
    --------
    >>> combine_statuses(["PASS", "FAIL"]), combine_statuses(["PASS", "PASS"])
    ('FAIL', 'PASS')
    >>> combine_statuses(["PASS", "NOT ASSESSED"]), combine_statuses([])
    ('NOT ASSESSED', 'NOT ASSESSED')
    """
    statuses = list(statuses)
    unknown = set(statuses) - set(STATUSES)
    if unknown:
        raise ValueError(f"statuses must be among {STATUSES}, got {sorted(unknown)}.")
    if "FAIL" in statuses:
        return "FAIL"
    if statuses and all(s == "PASS" for s in statuses):
        return "PASS"
    return "NOT ASSESSED"


@dataclass(frozen=True, kw_only=True)
class TargetCheck:
    """One criterion of one target, judged.

    Attributes
    ----------
    measure : str
        ``"rel:0.1"`` / ``"abs:10000"``.
    attack : {"share", "average"}
    criterion : {"max_attributable_record", "max_share_above", "record_threshold"}
    limit : float or None
        The board's limit (None for a threshold reported alone).
    record_threshold : float or None
    value : float
        The point estimate: the largest a_i (biased upwards), or the share of records with
        a_i above the threshold.
    n_above : int or None
        Records with a_i above ``record_threshold`` (None for the first criterion).
    status : {"PASS", "FAIL", "NOT ASSESSED"}
        Judged on ``upper``.
    lower, upper : float
        Monte Carlo bounds at ``confidence``: for the largest, max_i(a_i ∓ z_{1−α/n} se_i);
        for a share, the share certainly (a_i − z se_i > t) and possibly (a_i + z se_i > t)
        above the threshold.
    n_certain, n_possible : int or None
        Records certainly / possibly above the threshold (None for the first criterion).
    confidence : float
        1 − α (``[risk] confidence``).
    attacker : {"own_values", "release_attacker"}
        Whose attributable risk is judged: the per-record measure on the record's own released
        values (with Monte Carlo bounds), or the release attacker
        (:mod:`synthgeo.risk.release_attacker`: exact given the release, so lower = upper).
    """

    measure: str
    attack: str
    criterion: str
    limit: float | None
    record_threshold: float | None
    value: float
    n_above: int | None
    status: str
    lower: float = float("nan")
    upper: float = float("nan")
    n_certain: int | None = None
    n_possible: int | None = None
    confidence: float = 0.95
    attacker: str = "own_values"

    def __post_init__(self) -> None:
        """Refuse an unknown status."""
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}.")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return dict(self.__dict__)

    def to_dataframe(self) -> pd.DataFrame:
        """One row with the fields of :meth:`to_dict`."""
        return pd.DataFrame([self.to_dict()])


@dataclass(frozen=True, kw_only=True)
class RiskVerdict:
    """The board's answer on disclosure risk for one released model.

    Attributes
    ----------
    status : {"PASS", "FAIL", "NOT ASSESSED"}
        FAIL if any criterion fails; PASS if at least one passes and none fails; else
        NOT ASSESSED (no targets).
    model : str
        The model judged (``"restricted"``: the released one).
    checks : tuple of TargetCheck
    cumulative : bool
        True when judged on implicates pooled over releases.
    joint : JointCount or None
        Records both identifiable by location and above the attributable threshold.

    Examples
    --------
    >>> RiskVerdict(status="NOT ASSESSED", model="restricted", checks=()).to_dict()["status"]
    'NOT ASSESSED'
    """

    status: str
    model: str
    checks: tuple[TargetCheck, ...]
    cumulative: bool = False
    joint: JointCount | None = None

    def __post_init__(self) -> None:
        """Check the status agrees with the checks."""
        statuses = {c.status for c in self.checks}
        expect = ("FAIL" if "FAIL" in statuses else "PASS" if "PASS" in statuses
                  else "NOT ASSESSED")
        if self.status != expect:
            raise ValueError(f"verdict status {self.status!r} contradicts its checks "
                             f"(expected {expect!r}).")

    def to_dict(self) -> dict[str, Any]:
        """``{"status", "model", "cumulative", "targets": [...], "joint": {...} | None}``."""
        return {"status": self.status, "model": self.model, "cumulative": self.cumulative,
                "targets": [c.to_dict() for c in self.checks],
                "joint": None if self.joint is None else self.joint.to_dict()}

    def to_dataframe(self) -> pd.DataFrame:
        """One row per criterion (no rows without targets)."""
        cols = list(TargetCheck.__dataclass_fields__)
        return pd.DataFrame([c.to_dict() for c in self.checks], columns=cols)


def _checks(target, a: np.ndarray, se: np.ndarray | None = None,
            confidence: float = 0.95, n_rows: int | None = None,
            attacker: str = "own_values") -> list[TargetCheck]:
    """Judge one target on a_i (n,) with its Monte Carlo se (zeros when None)."""
    key = Measure.parse(target.measure).key
    se = np.zeros_like(a, dtype=float) if se is None else np.asarray(se, float)
    common = {"measure": key, "attack": target.attack, "attacker": attacker,
              "record_threshold": target.record_threshold, "confidence": float(confidence)}
    out = []
    if target.max_attributable_record is not None:
        b = max_bounds(a, se, confidence, n_rows)
        limit = float(target.max_attributable_record)
        out.append(TargetCheck(**common, criterion="max_attributable_record", limit=limit,
                               value=b["point"], lower=b["lower"], upper=b["upper"],
                               n_above=None, status="PASS" if b["upper"] <= limit else "FAIL"))
    if target.record_threshold is not None:
        n = max(a.size, 1)
        limit = target.max_share_above
        # a false PASS needs ⌊limit·n⌋ + 1 records truly above to all look below: Bonferroni
        # over those keeps P(false PASS) ≤ α (docs/risk-and-utility.md, "Monte Carlo error")
        level = (confidence if limit is None
                 else 1.0 - (1.0 - confidence) / (math.floor(limit * n) + 1))
        counts, _, _ = threshold_counts(a, se, target.record_threshold, level, n_rows)
        share_possible = counts["n_possible"] / n
        status = ("NOT ASSESSED" if limit is None
                  else "PASS" if share_possible <= limit else "FAIL")
        out.append(TargetCheck(**common, criterion=("record_threshold" if limit is None
                                                    else "max_share_above"),
                               limit=None if limit is None else float(limit),
                               value=counts["n_point"] / n, lower=counts["n_certain"] / n,
                               upper=share_possible, n_above=counts["n_point"],
                               n_certain=counts["n_certain"], n_possible=counts["n_possible"],
                               status=status))
    return out


def assess_risk(summary: AttributableSummary, targets: Sequence[Any], *,
                model: str = "restricted", cumulative: bool = False,
                joint: JointCount | None = None, confidence: float = 0.95,
                release_attacker: Mapping[tuple[str, str], np.ndarray] | None = None
                ) -> RiskVerdict:
    """Judge each target on the released model's per-record attributable risk.

    Parameters
    ----------
    summary : AttributableSummary
        Scored on the measures the targets name.
    targets : sequence of RiskTarget
        ``[risk.targets]`` (objects with ``measure``, ``attack``, ``max_attributable_record``,
        ``record_threshold``, ``max_share_above``).
    model : str, default="restricted"
        The released model.
    cumulative : bool, default=False
        Set when ``summary`` was scored on implicates pooled over releases.
    joint : JointCount, optional
    confidence : float, default=0.95
        1 − α of the Monte Carlo bounds (``[risk] confidence``; :mod:`synthgeo.risk.noise`).
    release_attacker : mapping of (measure key, attack) to ndarray (n,), optional
        The release attacker's attributable risk per record
        (:attr:`synthgeo.pipeline.release_attack.ReleaseAttack.by_target`): each target with
        an entry is judged on it as well (``attacker = "release_attacker"``, no Monte Carlo
        margin: the figure is exact given the release).

    Returns
    -------
    RiskVerdict

    Raises
    ------
    KeyError
        If a target names a measure the summary did not score, or ``model`` is unknown.

    Examples
    --------
    >>> from synthgeo.config import RiskTarget
    >>> from synthgeo.risk.attributable import attributable_summary
    >>> from synthgeo.risk.predictive import Predictive
    >>> from synthgeo.risk.records import score_records
    >>> m = Measure(kind="abs", tol=0.5)
    >>> point = lambda mu: Predictive(mean=np.array([mu]), sd=np.full((1, 2), 1e-9))
    >>> rr = score_records(np.zeros(2), synthetic=np.zeros((1, 2)), release=point([0.0, 0.0]),
    ...                    baseline_loo=point([0.0, 9.0]), baseline_public=point([9.0, 9.0]),
    ...                    measures=[m], g="identity")
    >>> s = attributable_summary({"restricted": rr})
    >>> v = assess_risk(s, [RiskTarget(measure="abs:0.5", max_attributable_record=0.1)])
    >>> v.status, v.checks[0].value
    ('FAIL', 1.0)
    >>> assess_risk(s, []).status
    'NOT ASSESSED'
    """
    checks: list[TargetCheck] = []
    for t in targets:
        key = Measure.parse(t.measure).key
        a = summary.record_attributable(model, key, t.attack)
        se = summary.record_attributable_se(model, key, t.attack)
        checks.extend(_checks(t, a, se, confidence, summary.records[model].n_implicates))
        if release_attacker is not None and (key, t.attack) in release_attacker:
            checks.extend(_checks(t, np.asarray(release_attacker[(key, t.attack)], float),
                                  None, confidence, None, attacker="release_attacker"))
    statuses = {c.status for c in checks}
    status = "FAIL" if "FAIL" in statuses else "PASS" if "PASS" in statuses else "NOT ASSESSED"
    return RiskVerdict(status=status, model=model, checks=tuple(checks), cumulative=cumulative,
                       joint=joint)


def reported_checks(targets: Sequence[Any],
                    release_attacker: Mapping[tuple[str, str], np.ndarray] | None,
                    confidence: float = 0.95) -> tuple[TargetCheck, ...]:
    """Return the release attacker's figure on every target criterion, reported, not judged.

    Under ``[risk] release_attacker = "report"`` the verdict judges own values only; these
    checks (``attacker = "release_attacker"``, exact given the release) are printed beside
    them (:func:`pair_text`) and never enter the verdict's status.

    Parameters
    ----------
    targets : sequence of RiskTarget
    release_attacker : mapping of (measure key, attack) to ndarray (n,) or None
        :attr:`synthgeo.pipeline.release_attack.ReleaseAttack.by_target`.
    confidence : float, default=0.95

    Returns
    -------
    tuple of TargetCheck
        Empty without a release attacker.
    """
    out: list[TargetCheck] = []
    for t in targets if release_attacker else ():
        a = release_attacker.get((Measure.parse(t.measure).key, t.attack))
        if a is not None:
            out.extend(_checks(t, np.asarray(a, float), None, confidence, None,
                               attacker="release_attacker"))
    return tuple(out)


def paired_checks(checks: Sequence[TargetCheck], reported: Sequence[TargetCheck] = ()
                  ) -> list[tuple[TargetCheck, TargetCheck | None, bool]]:
    """Pair each own-value check with the release attacker's on the same criterion.

    Parameters
    ----------
    checks : sequence of TargetCheck
        A verdict's checks (own values, and the release attacker's when judged).
    reported : sequence of TargetCheck, default=()
        The release attacker's figures when not judged (:func:`reported_checks`).

    Returns
    -------
    list of (TargetCheck, TargetCheck or None, bool)
        ``(own, attacker, judged)`` in the verdict's order: ``attacker`` None where none was
        scored; ``judged`` whether the attacker's check is part of the verdict.
    """
    def key(c):
        return c.measure, c.attack, c.criterion

    judged = {key(c): c for c in checks if c.attacker == "release_attacker"}
    aside = {key(c): c for c in reported}
    out = []
    for c in checks:
        if c.attacker == "release_attacker":
            continue
        other = judged.get(key(c))
        out.append((c, other if other is not None else aside.get(key(c)), other is not None))
    return out


def decided_by(own: TargetCheck, other: TargetCheck | None, judged: bool) -> str:
    """Say which attacker decided a criterion's status.

    A FAIL is decided by whichever fails (both, when both do); a PASS needs both, and the
    one nearer its limit (the larger upper bound) is the one that decided it. A release
    attacker reported, not judged, decides nothing.

    Examples
    --------
    >>> own = TargetCheck(measure="rel:0.1", attack="share", criterion="max_attributable_record",
    ...                   limit=0.1, record_threshold=None, value=0.01, upper=0.04,
    ...                   n_above=None, status="PASS")
    >>> import dataclasses
    >>> ra = dataclasses.replace(own, attacker="release_attacker", value=0.3, upper=0.3,
    ...                          status="FAIL")
    >>> decided_by(own, ra, True), decided_by(own, ra, False)
    ('the release attacker', 'own values (the release attacker is reported, not judged)')
    """
    if other is None:
        return "own values (no release attacker scored)"
    if not judged:
        return "own values (the release attacker is reported, not judged)"
    if own.limit is None:
        return "neither (reported, not judged)"
    fails = [n for n, c in (("own values", own), ("the release attacker", other))
             if c.status == "FAIL"]
    if len(fails) == 2:
        return "both"
    if fails:
        return fails[0]
    if math.isclose(own.upper, other.upper, rel_tol=1e-9, abs_tol=1e-12):
        return "both (equal upper bounds)"
    return "own values" if own.upper > other.upper else "the release attacker"


def _figure(c: TargetCheck) -> str:
    """One attacker's figure on a criterion: point, bounds (own values) or exact, counts."""
    if c.attacker == "release_attacker":
        text = f"{c.value:.3g} (no Monte Carlo error)"  # under noise: its mean over the noise
        return text + ("" if c.n_above is None else f" ({c.n_above} above)")
    return (f"{c.value:.3g} [{c.lower:.3g}, {c.upper:.3g}]"
            + ("" if c.n_possible is None
               else f" ({c.n_above} above, {c.n_certain} certainly, {c.n_possible} possibly)"))


def pair_text(own: TargetCheck, other: TargetCheck | None, judged: bool) -> str:
    """One criterion's verdict with both attackers' figures and which one decided.

    Parameters
    ----------
    own : TargetCheck
        The own-value check (Monte Carlo bounds).
    other : TargetCheck or None
        The release attacker's on the same criterion (exact given the release), or None.
    judged : bool
        Whether ``other`` is part of the verdict.

    Returns
    -------
    str
        E.g. ``"rel:0.1 share max_attributable_record (limit 0.1 on the upper bound): own
        values 0.0122 [-0.0001, 0.0378] PASS; release attacker 0.301 (no Monte Carlo error)
        FAIL → FAIL, decided by the release attacker"``. Aggregates only.
    """
    head = (f"{own.measure} {own.attack} {own.criterion}"
            + ("" if own.limit is None else f" (limit {own.limit:.3g} on the upper bound)"))
    text = f"{head}: own values {_figure(own)} {own.status}"
    if other is not None:
        text += (f"; release attacker {_figure(other)} "
                 + (other.status if judged else "reported, not judged"))
    status = (own.status if other is None or not judged
              else combine_statuses([own.status, other.status]))
    return text + f" → {status}, decided by {decided_by(own, other, judged)}"


def apply_risk_gate(verdict: RiskVerdict, on_risk_failure: str = "stop") -> None:
    """Stop (raise) or warn on a FAIL, as ``[risk] on_risk_failure`` says.

    Parameters
    ----------
    verdict : RiskVerdict
    on_risk_failure : {"stop", "warn"}, default="stop"

    Raises
    ------
    synthgeo._errors.RiskError
        On FAIL with "stop" (nothing should then be written to release/).
    ValueError
        For an unknown policy.

    Warns
    -----
    UserWarning
        On FAIL with "warn".

    Examples
    --------
    >>> apply_risk_gate(RiskVerdict(status="NOT ASSESSED", model="restricted", checks=()))
    """
    if on_risk_failure not in ("stop", "warn"):
        raise ValueError(f'`on_risk_failure` must be "stop" or "warn", got {on_risk_failure!r}.')
    if verdict.status != "FAIL":
        return
    failed = "; ".join(f"{c.measure} {c.attack} {ATTACKERS[c.attacker]} "
                       f"{c.criterion}: upper bound {c.upper:.3g} (at "
                       f"{c.confidence:g}; point {c.value:.3g}) > {c.limit:.3g}"
                       for c in verdict.checks if c.status == "FAIL")
    model = "released" if verdict.model == "restricted" else verdict.model  # may be cross-fitted
    msg = f"disclosure-risk targets failed for the {model} model ({failed})"
    if on_risk_failure == "stop":
        raise RiskError(f"{msg}; nothing was written to release/. Let the run seek the "
                        'targets (`[risk] protect = "targets"`), or set `[risk] on_risk_failure '
                        '= "warn"` for a preview')
    warn(msg)
