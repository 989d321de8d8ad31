"""Seek the board's targets: ``[risk] protect = "targets"`` (issue 25, item 3).

The run releases the spec's mechanism if it meets every ``[risk.targets]``; otherwise it tries
the next stronger mechanism, round by round, at most ``[risk] max_rounds``:

1. the spec as written (its own mechanism, e.g. the paper's γ-smoothing of at-risk sites);
2. the **calibrated cross-fit** (``[synthesis] predictive = "cross_fit"``,
   ``cross_fit_calibration = "covariates_loo"``): every record drawn from its own leave-out
   predictive, the analyst's regression kept by a calibration that leaves the record's own
   error out — the frontier's recommendation (docs/risk-and-utility.md, "Comparing the
   mechanisms");
3. the calibrated cross-fit **with input noise** (``[synthesis] input_noise = "auto"``): the
   synthesis reads y* = y + e with the smallest noise sd at which the release attacker — who
   combines every record's implicate means — stays within the first per-record target for any
   number of pooled implicates (:mod:`synthgeo.synthesis.input_noise`); the covariate
   calibration is made to the OLS of y plus a separate, leverage-scaled noise where no record
   has a large leverage, else to y*'s (``input_noise_ols = "auto"``, with the plain
   "covariates" calibration: the leave-own-out shift would publish a separate target in
   full). Until 2026-12-03 the third round was the raw cross-fit; it carries the same
   neighbour signal as the calibrated one, so it cannot pass where round 2 fails on the
   release attacker;
4. the same with **implicates of** ``y*`` (``input_noise_draws = "y_star"``): over the noise each
   implicate is y*'s predictive, y's plus κ², not y's. Where κ must be as large as the
   response's spread (a small file) the fit of y* tells little about y's nugget, and y's
   predictive at its draws is narrower than the baseline's: the own values fail in round 3
   (the bundled 140 sales). It shares round 3's noise and fit of y*, so it is tried after a
   PASS of round 3 as well, unless round 3's smallest Reiter CI overlap already reaches
   :data:`ENOUGH_OVERLAP` (0.90), and of the two that PASS the one with the larger smallest
   overlap is released (:func:`same_noise_next`).

**Several responses** (``[[data.responses]]``, every one gaussian): a round applies its
mechanism to every response (each later response cross-fitted given the earlier confidential
responses, then moved to the earlier *synthetic* values, :mod:`synthgeo.pipeline.responses`),
and the round's verdict is the combined one: FAIL if any response fails, PASS only if every
response passes. The released round releases every response from that round. Yes/no and count
responses are refused by the spec (the targets do not apply to them).

A round equal to an earlier one (a spec that already cross-fits) is skipped. The cross-fitted
rounds select nobody (nothing for a detector to find) and refit nothing: they reuse the
unrestricted fit of the first round (same seed, same posterior draws; ``reuse_fits``), so a
round costs a synthesis and a scoring, not a fit. Their baseline integrates over the
leave-out posterior (``[risk] loo_posterior = "reweighted"``), so their risk is not 0 by
construction: what remains is the leak through the posterior draws θ, fitted with every
record, and the calibration's own-value term.

**Judgement.** Each round is judged by the targets' usual rule (every record, upper Monte Carlo
bounds, :mod:`synthgeo.risk.verdict`) at the Bonferroni level 1 − (1 − c)/K for K =
``max_rounds`` and c = ``[risk] confidence``: the run stops at the first PASS (or the pair of
rounds sharing one noise, above), so a false PASS of the released round is a false PASS of
some round, whose probability is at most K times one
round's — at most 1 − c over all (``tests/test_protect.py`` simulates it). When the last round
fails, the run says which target failed and why, and ``on_risk_failure`` applies
(stop: nothing is written).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable

import numpy as np

from synthgeo._errors import RiskError
from synthgeo.config import ReleaseSpec
from synthgeo.config.model import ModelConfig
from synthgeo.pipeline.responses import SequentialResult
from synthgeo.pipeline.result import verdicts
from synthgeo.risk.verdict import ATTACKERS
from synthgeo.synthesis.cross_fit import LOO_MAX_LEVERAGE

__all__ = ["LADDER", "ENOUGH_OVERLAP", "SHARED_STAGES", "round_specs", "seek_targets",
           "round_record", "round_stage_seconds", "round_line"]

#: The rounds after the spec's own: (name, [synthesis] changes).
LADDER: tuple[tuple[str, dict], ...] = (
    ("cross_fit calibrated (covariates_loo)",
     {"predictive": "cross_fit", "cross_fit_calibration": "covariates_loo",
      "input_noise": 0.0, "mean_noise": 0.0, "input_noise_draws": "y"}),
    ("cross_fit calibrated (covariates) + input noise (auto)",
     {"predictive": "cross_fit", "cross_fit_calibration": "covariates",
      "input_noise": "auto", "input_noise_ols": "auto", "mean_noise": 0.0,
      "input_noise_draws": "y"}),
    ("cross_fit calibrated (covariates) + input noise (auto), implicates of y*",
     {"predictive": "cross_fit", "cross_fit_calibration": "covariates",
      "input_noise": "auto", "input_noise_ols": "auto", "mean_noise": 0.0,
      "input_noise_draws": "y_star"}),
)
#: Stages of the run's inputs (read, locations), checked once before the first round: in
#: release.json's ``seconds``, not in any round's ``stage_seconds``.
SHARED_STAGES = ("load", "locations")
#: ``[model]`` keys of the restricted fit, reset to their defaults in a cross-fitted round.
_RESTRICTED_DEFAULTS = {f.name: f.default for f in dataclasses.fields(ModelConfig)
                        if f.name in ("gamma", "at_risk", "at_risk_weight", "at_risk_effect",
                                      "at_risk_nugget")}


def _mechanism(spec: ReleaseSpec) -> str:
    s = spec.synthesis
    if s.predictive != "cross_fit":
        return (f"posterior predictive, restricted fit (gamma = {spec.model.gamma!s}, "
                f"at_risk = {spec.model.at_risk})")
    name = {"covariates_loo": LADDER[0][0], "none": "cross_fit raw"}.get(
        s.cross_fit_calibration, f"cross_fit calibrated ({s.cross_fit_calibration})")
    if s.mean_noise != 0:
        return name + (" + mean noise (auto)" if s.mean_noise == "auto"
                       else f" + mean noise (sd {s.mean_noise:g})")
    if s.input_noise == 0:
        return name
    return name + (" + input noise (auto)" if s.input_noise == "auto"
                   else f" + input noise (sd {s.input_noise:g})") + (
        ", implicates of y*" if s.input_noise_draws == "y_star" else "")


def round_specs(spec: ReleaseSpec, *, high_leverage: int = 0) -> list[tuple[str, ReleaseSpec]]:
    """Return the rounds ``protect = "targets"`` tries, in order (module docstring).

    Parameters
    ----------
    spec : ReleaseSpec
        With ``[risk] protect = "targets"`` and targets.
    high_leverage : int, default=0
        Records whose leverage h_ii is above
        :data:`~synthgeo.synthesis.cross_fit.LOO_MAX_LEVERAGE`: where there are any, the
        round that would use ``cross_fit_calibration = "covariates_loo"`` (unstable there) uses
        "covariates", and its name says so.

    Returns
    -------
    list of (str, ReleaseSpec)
        Mechanism name and the spec of each round (at most ``[risk] max_rounds``): protect
        "none", ``on_risk_failure = "warn"`` (the gate applies once, to the released round),
        confidence at the Bonferroni level.

    Examples
    --------
    >>> from synthgeo.config import load_spec
    >>> from importlib.resources import files
    >>> spec = load_spec(files("synthgeo") / "data" / "sacramento_2bed.toml")
    >>> spec = spec.replace("risk", protect="targets", targets=[{"measure": "rel:0.1",
    ...                     "max_attributable_record": 0.1}])
    >>> [name for name, _ in round_specs(spec)]  # doctest: +NORMALIZE_WHITESPACE
    ['posterior predictive, restricted fit (gamma = inf, at_risk = spatial)',
     'cross_fit calibrated (covariates_loo)',
     'cross_fit calibrated (covariates) + input noise (auto)',
     'cross_fit calibrated (covariates) + input noise (auto), implicates of y*']
    """
    K = spec.risk.max_rounds
    level = 1.0 - (1.0 - spec.risk.confidence) / K
    first = spec.replace("risk", protect="none", on_risk_failure="warn", confidence=level,
                         max_rounds=4)  # a round seeks nothing: the cap is the caller's
    rounds = [(_mechanism(first), first)]
    for name, changes in LADDER:
        if len(rounds) >= K:
            break
        s = first
        if s.synthesis.predictive != "cross_fit":
            s = s.replace("model", **_RESTRICTED_DEFAULTS)
        if high_leverage and changes.get("cross_fit_calibration") == "covariates_loo":
            changes = {**changes, "cross_fit_calibration": "covariates"}
            name = (f"cross_fit calibrated (covariates; covariates_loo falls back: "
                    f"{high_leverage} record(s) with leverage above {LOO_MAX_LEVERAGE:g})")
        s = s.replace("synthesis", **changes)
        if any(_mechanism(r) == _mechanism(s) for _, r in rounds):
            continue
        if first.synthesis.input_noise != 0 and changes.get("input_noise", 0) == 0:
            continue  # weaker than the spec's own input noise: never a later round
        if (first.synthesis.input_noise != 0 and first.synthesis.input_noise_draws == "y_star"
                and changes.get("input_noise_draws") == "y"):
            continue  # narrower implicates than the spec's own: weaker
        rounds.append((name, s))
    return rounds


def _checks(result) -> list[tuple[str | None, object]]:
    """(response name or None, target check) of every target of the round, in order."""
    if isinstance(result, SequentialResult):
        return [(r.name, c) for r in result.responses if r.risk_scores is not None
                for c in r.risk_scores.verdict.checks]
    return [(None, c) for c in result.risk_scores.verdict.checks]


def _smallest_overlap(result) -> float | None:
    """Smallest Reiter CI overlap of the released model over the analyst's coefficients.

    Several responses: over every response's coefficients.
    """
    tables = ([r.utility for r in result.responses]
              if isinstance(result, SequentialResult) else [result.utility])
    overlap = [u.loc[u["model"] == "restricted", "ci_overlap"] for u in tables]
    values = [float(v) for o in overlap for v in o]
    return min(values) if values else None


def _protected(result) -> int:
    """Count the records a restricted fit smoothed (in any response), or all under a cross-fit."""
    if result.spec.synthesis.predictive == "cross_fit":
        return int(result.data.n_records)
    if isinstance(result, SequentialResult):
        return int(np.logical_or.reduce([r.at_risk.at_risk for r in result.responses]).sum())
    return int(result.at_risk.n_at_risk)


def round_stage_seconds(result) -> dict[str, float]:
    """Return the wall time of each stage of one round, seconds (0.001 s resolution).

    Parameters
    ----------
    result : ReleaseResult or SequentialResult
        The round's run; its ``seconds`` are the stages the pipeline times for a whole run
        (``fit_unrestricted``, ``at_risk``, ``fit_restricted``, ``synthesize``, ``risk``,
        ``risk_baselines``, ``release_attacker`` — part of ``risk_baselines`` —,
        ``neighbour_check``, ``detector``, ``utility``, ``general_utility``; several
        responses: summed over the responses).

    Returns
    -------
    dict of str to float
        Every stage but the inputs' (:data:`SHARED_STAGES`, checked once before the first
        round). A reused fit shows as the near-zero seconds of its look-up.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> round_stage_seconds(NS(seconds={"load": 1.0, "synthesize": 2.00042, "risk": 0.5}))
    {'synthesize': 2.0, 'risk': 0.5}
    """
    return {k: round(float(v), 3) for k, v in result.seconds.items() if k not in SHARED_STAGES}


def round_record(k: int, name: str, result, seconds: float) -> dict:
    """One round's figures for release.json and the report (aggregates only).

    Parameters
    ----------
    k : int
        The round, from 1.
    name : str
        Its mechanism.
    result : ReleaseResult or SequentialResult
        The round's run (one response, or several).
    seconds : float
        Its wall time.

    Returns
    -------
    dict
        ``round``, ``mechanism``, ``records_protected`` (the at-risk records a restricted fit
        smoothed — in any response of several — or every record for a cross-fit),
        ``verdict`` (several responses: the combined one, FAIL if any response fails),
        ``confidence``, ``targets`` (each criterion: limit, point value, upper bound, status;
        with several responses one entry per response and criterion, named by
        ``response``), ``smallest_ci_overlap`` (the analyst's coefficients, Reiter; over
        every response), ``seconds`` (the round's wall time), ``stage_seconds``
        (:func:`round_stage_seconds`).
    """
    several = isinstance(result, SequentialResult)
    return {
        "round": k, "mechanism": name,
        "records_protected": _protected(result),
        "selects_records": result.spec.synthesis.predictive != "cross_fit",
        "verdict": verdicts(result)["risk"], "confidence": result.spec.risk.confidence,
        "loo_posterior": result.spec.loo_posterior,
        "targets": [{**({"response": response} if several else {}),
                     "measure": c.measure, "attack": c.attack, "attacker": c.attacker,
                     "criterion": c.criterion, "limit": c.limit, "value": c.value, "upper": c.upper,
                     "n_above": c.n_above, "status": c.status}
                    for response, c in _checks(result)],
        "smallest_ci_overlap": _smallest_overlap(result),
        "seconds": round(float(seconds), 1),
        "stage_seconds": round_stage_seconds(result),
    }


def round_line(record: dict) -> str:
    """Return the console's line after a round: verdict, smallest Reiter CI overlap, seconds.

    Parameters
    ----------
    record : dict
        The round's :func:`round_record`.

    Returns
    -------
    str
        Aggregates only.

    Examples
    --------
    >>> print(round_line({"round": 2, "verdict": "FAIL", "smallest_ci_overlap": 0.8123,
    ...                   "seconds": 4.2}))
    round 2: risk FAIL; smallest Reiter CI overlap 0.81 (the analyst's coefficients); 4.2 s
    """
    overlap = record["smallest_ci_overlap"]
    return (f"round {record['round']}: risk {record['verdict']}; smallest Reiter CI overlap "
            + ("not computed" if overlap is None else f"{overlap:.2f}")
            + f" (the analyst's coefficients); {record['seconds']:.1f} s")


def same_noise_next(current: ReleaseSpec, following: ReleaseSpec) -> bool:
    """Whether ``following`` is ``current``'s noise with implicates of y* (the fourth round).

    Both rounds use one draw of e and one fit of y* (the fourth reuses the third's), so when
    the third PASSes the fourth costs a draw and a scoring, and the two differ in utility only
    by what an implicate is: the one released is the one of them that PASSes with the larger
    smallest Reiter CI overlap (a choice on utility among rounds each judged at the Bonferroni
    level, so P(false PASS) stays within 1 − confidence).

    Examples
    --------
    >>> from synthgeo.config import load_spec, bundled_spec_path
    >>> s = load_spec(bundled_spec_path()).replace(
    ...     "synthesis", predictive="cross_fit", input_noise=0.3)
    >>> same_noise_next(s, s.replace("synthesis", input_noise_draws="y_star"))
    True
    """
    a, b = current.synthesis, following.synthesis
    return (a.input_noise != 0 and a.input_noise_draws == "y" and b.input_noise_draws == "y_star"
            and following.replace("synthesis", input_noise_draws="y") == current)


#: A round 3 that PASSes with every coefficient's Reiter CI overlap at least this is released
#: without trying round 4 (whose implicates are wider by the noise): issue 25's utility bar.
ENOUGH_OVERLAP = 0.90


def _overlap_enough(record: dict) -> bool:
    """Whether a round's smallest CI overlap meets :data:`ENOUGH_OVERLAP` (None: not known)."""
    overlap = record["smallest_ci_overlap"]
    return overlap is not None and overlap >= ENOUGH_OVERLAP


def _more_utility(candidate: dict, released: dict) -> bool:
    """Whether ``candidate`` round has the larger smallest CI overlap (None: not larger)."""
    a, b = candidate["smallest_ci_overlap"], released["smallest_ci_overlap"]
    return a is not None and (b is None or a > b)


def _why(rounds: list[dict]) -> str:
    last = rounds[-1]
    failed = [t for t in last["targets"] if t["status"] == "FAIL"]
    said = "; ".join(
        ("" if t.get("response") is None else f"response `{t['response']}`: ")
        + f"{t['measure']} {t['attack']} "
        + f"{ATTACKERS[t.get('attacker', 'own_values')]} "
        + f"{t['criterion']}: upper bound {t['upper']:.3g} > "
        f"{t['limit']:.3g}" + ("" if t["n_above"] is None else f" ({t['n_above']} records)")
        for t in failed)
    cause = ("input noise was chosen for the first per-record target's release attacker"
             + (" (of each response)" if any(t.get("response") for t in last["targets"])
                else "")
             + "; what fails after it comes through the posterior draws (fitted with every "
             "record) or another target; synthgeo has no stronger mechanism"
             if last["mechanism"] == LADDER[-1][0] else
             f"the cap of {len(rounds)} round(s) ([risk] max_rounds) was reached")
    return f"after {len(rounds)} round(s) ({last['mechanism']} last): {said}; {cause}"


def seek_targets(spec: ReleaseSpec, run: Callable, *, finish: Callable | None = None,
                 high_leverage: int = 0, **kwargs):
    """Run the rounds of ``protect = "targets"`` until every target holds (module docstring).

    Parameters
    ----------
    spec : ReleaseSpec
        ``[risk] protect = "targets"``.
    run : callable
        One round on the run's inputs, checked once before the first round (data, earlier
        release, seed, locations: a refused input prints no round line), called as
        ``run(round_spec, reuse_fits=..., **kwargs)`` (:func:`synthgeo.pipeline.run.run_release`
        passes its own; this module sits beside it).
    high_leverage : int, default=0
        Records with leverage above one half (:func:`round_specs`: the covariates_loo round
        falls back to "covariates").
    **kwargs
        Passed to ``run`` (progress, progressbar, fitter).

    Returns
    -------
    ReleaseResult or SequentialResult
        The released round's result (several responses: every response from the same round),
        with ``protection`` (every round's
        :func:`round_record`, ``reached``) and its spec's ``[risk]`` restored to what was
        asked (protect, on_risk_failure, confidence).

    Raises
    ------
    synthgeo.RiskError
        When the last round still fails and ``[risk] on_risk_failure = "stop"`` (nothing is
        written): the message names the failed targets and why.
    """
    import time

    say = kwargs.get("progress") or (lambda _m: None)
    cache: dict = {}
    rounds: list[dict] = []
    result = None
    specs = round_specs(spec, high_leverage=high_leverage)

    def one_round(k):
        name, s = specs[k - 1]
        say(f"protect = \"targets\": round {k}/{len(specs)}: {name} (judged at the level "
            f"{s.risk.confidence:.4f}: Bonferroni over {spec.risk.max_rounds} rounds, so a "
            "false PASS of the released round stays within 1 - [risk] confidence)")
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:  # re-issued for the released round
            warnings.simplefilter("always")
            out = run(s, reuse_fits=cache, **kwargs)
        rounds.append(round_record(k, name, out, time.perf_counter() - t0))
        say(round_line(rounds[-1]))
        return out, caught

    released = 0
    for k in range(1, len(specs) + 1):
        result, caught = one_round(k)
        released = k
        if verdicts(result)["risk"] == "PASS":
            if (k < len(specs) and same_noise_next(specs[k - 1][1], specs[k][1])
                    and not _overlap_enough(rounds[-1])):
                other, other_caught = one_round(k + 1)
                if _more_utility(rounds[-1], rounds[-2]) and verdicts(other)["risk"] == "PASS":
                    result, caught, released = other, other_caught, k + 1
                say(f"round {k} and round {k + 1} (the same noise) both judged: released round "
                    f"{released}, the larger smallest Reiter CI overlap of those that PASS")
            break
    for w in caught:  # an earlier round's FAIL is in `rounds`, not a warning of this release
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    reached = rounds[released - 1]["verdict"] == "PASS"
    protection = {"protect": "targets", "max_rounds": spec.risk.max_rounds,
                  "reached": reached, "rounds": rounds,
                  "released_round": released,
                  "why_not": None if reached else _why(rounds)}
    if finish is not None:  # the released round only (its pMSE): counted in its seconds
        t0 = time.perf_counter()
        result = finish(result)
        last = rounds[released - 1]
        last["seconds"] = round(last["seconds"] + time.perf_counter() - t0, 1)
        last["stage_seconds"] = round_stage_seconds(result)
    asked = result.spec.replace("risk", protect="targets",
                                on_risk_failure=spec.risk.on_risk_failure,
                                confidence=spec.risk.confidence,
                                max_rounds=spec.risk.max_rounds)
    result = dataclasses.replace(result, spec=asked, protection=protection)
    if not reached and spec.risk.on_risk_failure == "stop":
        raise RiskError(f"risk FAIL: the targets were not reached {protection['why_not']}; "
                        "nothing was written to release/ (on_risk_failure = \"warn\" writes the "
                        "release with its FAIL)")
    return result
