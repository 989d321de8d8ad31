"""Spec sections ``[risk]`` (with ``[risk.targets]``) and ``[utility]``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from synthgeo._errors import SpecError
from synthgeo.config._common import (
    PMSE_COORDINATES,
    PMSE_TERMS,
    _err,
    _is_int,
    _is_number,
    _sub_table,
)


@dataclass(frozen=True, kw_only=True)
class RiskTarget:
    """One target of the review board on attributable risk (a ``[risk.targets]`` table).

    ``measure``: ``"rel:<p>"`` or ``"abs:<eps>"`` (one of ``[risk] p`` / ``eps``); ``attack``
    {"share", "average"}: the Rao-Blackwellised per-implicate risk or the implicate-average
    attack's hit; ``max_attributable_record``: the largest per-record attributable risk allowed
    (FAIL above it); ``record_threshold``: a record is "above" when its attributable risk
    exceeds it (it also drives ``[model] at_risk = "risk"``); ``max_share_above``: the largest
    share of records above ``record_threshold`` allowed. Attributable = release − the stronger
    baseline (docs/risk-and-utility.md).
    """

    measure: str
    attack: Literal["share", "average"] = "share"
    max_attributable_record: float | None = None
    record_threshold: float | None = None
    max_share_above: float | None = None

    def __post_init__(self) -> None:
        """Refuse impossible values with a :class:`SpecError` naming the key."""
        from synthgeo.config.measure import Measure

        try:
            Measure.parse(self.measure)
        except ValueError as exc:
            raise _err("risk.targets", "measure", self.measure,
                       '"rel:<fraction>" or "abs:<amount>", e.g. "rel:0.1"') from exc
        if self.attack not in ("share", "average"):
            raise _err("risk.targets", "attack", self.attack, '"share" or "average"')
        for key, lo, hi in (("max_attributable_record", 0.0, 1.0),
                            ("record_threshold", 0.0, 1.0), ("max_share_above", 0.0, 1.0)):
            v = getattr(self, key)
            if v is not None and not (_is_number(v) and lo <= v <= hi):
                raise _err("risk.targets", key, v, f"a number in [{lo:g}, {hi:g}] (or left out)")
        if self.max_share_above is not None and self.record_threshold is None:
            raise _err("risk.targets", "record_threshold", None,
                       "given with `max_share_above` (the share of records above what)")
        if self.max_attributable_record is None and self.record_threshold is None:
            raise SpecError(
                f"spec `[risk.targets]` for {self.measure!r} sets no target: give "
                "`max_attributable_record`, or `record_threshold` (with `max_share_above`)"
            )


#: ``[risk] loo_unit``: what the leave-one-out baseline leaves out with record i
#: (:func:`synthgeo.risk.loo.leave_out_blocks`).
LOO_UNITS = ("site", "subject", "record")
#: ``[risk] loo_posterior``: the parameter draws the leave-one-out baseline integrates over
#: (:mod:`synthgeo.risk.loo_posterior`).
LOO_POSTERIORS = ("full", "reweighted")
#: ``[risk] protect``: judge only, or seek the targets (:mod:`synthgeo.pipeline.protect`).
PROTECT = ("none", "targets")
#: ``[risk] release_attacker``: judge the targets against the release attacker too, or only
#: report it (:mod:`synthgeo.risk.release_attacker`).
RELEASE_ATTACKER = ("judge", "report")


@dataclass(frozen=True, kw_only=True)
class RiskConfig:
    """Risk measures, the board's targets and the gate on them.

    ``eps``: absolute tolerances on the back-transformed scale (dollars); ``p``: relative;
    ``targets``: :class:`RiskTarget` tables (``[risk.targets]`` for one, ``[[risk.targets]]``
    for several; none: the verdict is "NOT ASSESSED", never PASS); ``on_risk_failure``
    {"stop", "warn"}: what a FAIL does (stop: nothing is written to release/);
    ``loo_unit`` {"site", "subject", "record"}: what the leave-one-out baseline leaves out
    with each record: its geocode's records (and its subject's, when ``[data] subject`` is
    given), its subject's records (needs ``[data] subject``), or the record alone; default
    (None): "subject" when ``[data] subject`` is given, else "site"
    (:attr:`synthgeo.config.ReleaseSpec.loo_unit`; docs/risk-and-utility.md).
    ``loo_posterior`` {"full", "reweighted"}: the parameters the baseline attacker integrates
    over: the full posterior's draws (fitted with the record; against a cross-fit the
    attributable risk is then 0 by construction), or the leave-out posterior reached from them
    by Pareto-smoothed importance sampling (fitted without it); default (None): "reweighted"
    (:attr:`synthgeo.config.ReleaseSpec.loo_posterior`).
    ``protect`` {"none", "targets"}: "targets" runs the spec's mechanism and, while a target
    fails, the next stronger one (:mod:`synthgeo.pipeline.protect`), at most ``max_rounds``
    rounds (1–4, default 4), each judged at the Bonferroni level
    1 − (1 − confidence)/max_rounds; needs ``targets``.
    ``release_attacker`` {"judge", "report"}, default "judge": every per-record target is judged
    both on the record's own released values and against the release attacker, who reads the
    record's value off every record's implicate means (:mod:`synthgeo.risk.release_attacker`;
    docs/risk-and-utility.md, "The release attacker"); "report" scores it without judging.
    ``input_noise_reading`` {"expected", "realised"}, default "expected": under ``[synthesis]
    input_noise``, each record's own-value risk is the probability under the mechanism, i.e.
    over its input noise too (the noise is drawn once for all implicates, so L implicates are
    not L draws of it: a record whose neighbours' noise happens to move its mean toward its
    value is luck, not a leak of its value); "realised" scores the one draw of the noise as
    it fell (docs/risk-and-utility.md, "Input noise: luck or leak"). Both figures are in
    release.json.
    ``confidence``: the level 1 − α of the Monte Carlo bounds every per-record decision uses
    (risk-rule flags, the verdict's counts and largest, neighbour-check rises;
    :mod:`synthgeo.risk.noise`, docs/risk-and-utility.md), in [0.5, 1).
    """

    eps: list[float] = field(default_factory=lambda: [10_000.0])
    p: list[float] = field(default_factory=lambda: [0.1])
    targets: list[RiskTarget] = field(default_factory=list)
    on_risk_failure: Literal["stop", "warn"] = "stop"
    loo_unit: Literal["site", "subject", "record"] | None = None
    loo_posterior: Literal["full", "reweighted"] | None = None
    confidence: float = 0.95
    protect: Literal["none", "targets"] = "none"
    max_rounds: int = 4
    release_attacker: Literal["judge", "report"] = "judge"
    input_noise_reading: Literal["expected", "realised"] = "expected"

    def __post_init__(self) -> None:
        """Refuse impossible values with a :class:`SpecError` naming the key."""
        for key in ("eps", "p"):
            v = getattr(self, key)
            if not (isinstance(v, list) and v and all(_is_number(e) and e > 0 for e in v)):
                raise _err("risk", key, v, "a non-empty list of positive, finite numbers")
        if any(e >= 1 for e in self.p):  # "within 100 % of the truth" includes 0: no measure
            raise _err("risk", "p", self.p, "relative tolerances below 1 (0.1 = within 10 %)")
        if self.on_risk_failure not in ("stop", "warn"):
            raise _err("risk", "on_risk_failure", self.on_risk_failure, '"stop" or "warn"')
        if self.loo_unit is not None and self.loo_unit not in LOO_UNITS:
            raise _err("risk", "loo_unit", self.loo_unit,
                       '"site", "subject" or "record" (or left out: "subject" with a '
                       '`[data] subject` column, else "site")')
        if self.loo_posterior is not None and self.loo_posterior not in LOO_POSTERIORS:
            raise _err("risk", "loo_posterior", self.loo_posterior,
                       '"reweighted" (the default) or "full"')
        if not (_is_number(self.confidence) and 0.5 <= self.confidence < 1):
            raise _err("risk", "confidence", self.confidence,
                       "a number in [0.5, 1), e.g. 0.95 (the level of the Monte Carlo bounds)")
        if self.protect not in PROTECT:
            raise _err("risk", "protect", self.protect,
                       '"none" (judge the spec\'s mechanism) or "targets" (apply stronger '
                       "mechanisms, round by round, until every `[risk.targets]` holds)")
        if not (_is_int(self.max_rounds) and 1 <= self.max_rounds <= 4):
            raise _err("risk", "max_rounds", self.max_rounds,
                       "an integer from 1 to 4 (the rounds of `protect = \"targets\"`)")
        if self.release_attacker not in RELEASE_ATTACKER:
            raise _err("risk", "release_attacker", self.release_attacker,
                       '"judge" (the default: the targets hold against it too) or "report"')
        if self.input_noise_reading not in ("expected", "realised"):
            raise _err("risk", "input_noise_reading", self.input_noise_reading,
                       '"expected" (the default: over the mechanism\'s noise) or "realised"')
        raw = [self.targets] if isinstance(self.targets, dict) else self.targets
        if not isinstance(raw, list):
            raise _err("risk", "targets", self.targets,
                       "a `[risk.targets]` table or `[[risk.targets]]` tables")
        tables = [_sub_table(t, RiskTarget, "risk", "targets", "tables of target keys")
                  for t in raw]
        object.__setattr__(self, "targets", tables)
        from synthgeo.config.measure import Measure, measures_from

        scored = {m.key for m in measures_from(eps=self.eps, p=self.p)}
        for t in self.targets:
            if Measure.parse(t.measure).key not in scored:
                raise _err("risk.targets", "measure", t.measure,
                           f"one of the scored measures {sorted(scored)}; add its tolerance "
                           "to `[risk] eps` or `p`")




@dataclass(frozen=True, kw_only=True)
class UtilityConfig:
    """The analyst's model and the general utility's propensity model.

    ``formula`` (patsy, OLS) and ``alpha`` for (1 − α) intervals; the pMSE's propensity model
    (docs/risk-and-utility.md, "General utility: pMSE"): ``pmse_terms`` ("main" or
    "interactions"), ``pmse_coordinates`` ("none", "linear", "spline"), ``pmse_spline_df``
    (B-spline degrees of freedom per axis, ≥ 3), ``pmse_permutations`` (label permutations
    within pairs per implicate for the paired null, ≥ 2) and ``pmse_null_max_pairs`` (the null
    is computed on at most this many pairs, a random subset, ≥ 10).
    """

    formula: str | None = None
    alpha: float = 0.05
    pmse_terms: str = "main"
    pmse_coordinates: str = "spline"
    pmse_spline_df: int = 4
    pmse_permutations: int = 20
    pmse_null_max_pairs: int = 5000

    def __post_init__(self) -> None:
        """Refuse impossible values with a :class:`SpecError` naming the key."""
        if self.formula is not None and not (isinstance(self.formula, str) and "~" in self.formula):
            raise _err("utility", "formula", self.formula,
                       'a patsy formula such as "log_price ~ sqft_living" (or left out)')
        if not (_is_number(self.alpha) and 0 < self.alpha < 1):
            raise _err("utility", "alpha", self.alpha, "a number in (0, 1)")
        if self.pmse_terms not in PMSE_TERMS:
            raise _err("utility", "pmse_terms", self.pmse_terms,
                       " or ".join(f'"{t}"' for t in PMSE_TERMS))
        if self.pmse_coordinates not in PMSE_COORDINATES:
            raise _err("utility", "pmse_coordinates", self.pmse_coordinates,
                       ", ".join(f'"{t}"' for t in PMSE_COORDINATES))
        for key, lo in (("pmse_spline_df", 3), ("pmse_permutations", 2),
                        ("pmse_null_max_pairs", 10)):
            v = getattr(self, key)
            if not (_is_int(v) and v >= lo):
                raise _err("utility", key, v, f"an integer >= {lo}")


