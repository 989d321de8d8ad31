"""The report's risk sections: histograms of the riskiest records, risk by group and record."""

from __future__ import annotations

import numpy as np
import pandas as pd
from markupsafe import Markup

from synthgeo.pipeline.released import released_label_of
from synthgeo.release.report import _figures as F
from synthgeo.release.report._common import first_measure, measure_label
from synthgeo.release.report._html import Section, render, table
from synthgeo.risk.verdict import ATTACKERS

__all__ = ["riskiest_records", "section_histograms", "section_risk", "attributable_table",
           "round_stage_table"]


def riskiest_records(risk_unrestricted: np.ndarray, at_risk: np.ndarray, *,
                     n_at_risk: int = 4, n_total: int = 8) -> np.ndarray:
    """Choose the records whose synthetic values are plotted: at-risk first, then riskiest.

    Parameters
    ----------
    risk_unrestricted : ndarray of shape (n_records,)
        Per-record risk under the unrestricted model (the model the paper warns about).
    at_risk : ndarray of bool, shape (n_records,)
    n_at_risk : int, default=4
        At most this many at-risk records, highest risk first.
    n_total : int, default=8
        Filled up with the highest-risk other records (ties: record order).

    Returns
    -------
    ndarray of int
        Record positions, at-risk ones first, each group in decreasing risk.

    Examples
    --------
    >>> riskiest_records([0.9, 0.1, 0.5, 0.8], [False, True, False, False], n_total=3)
    array([1, 0, 3])
    """
    r = np.asarray(risk_unrestricted, float)
    risk = np.asarray(at_risk, bool)
    order = np.argsort(-r, kind="stable")
    first = [i for i in order if risk[i]][:n_at_risk]
    rest = [i for i in order if not risk[i]][: max(0, n_total - len(first))]
    return np.asarray(first + rest, dtype=int)


def _g(x: np.ndarray, transform: str) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.exp(x) if transform == "exp" else np.asarray(x)


def _g_name(spec) -> str:
    return "exp" if spec.data.response_transform == "log" else spec.data.back_transform


def _chosen(result, kind: str, tol: float, r: dict) -> tuple[np.ndarray, dict, str]:
    """Return the records to show, their risk per model for the titles, and the caption's rule."""
    scores = getattr(result, "risk_scores", None)
    at_risk = np.asarray(result.at_risk.at_risk, bool)
    if scores is None:  # no Rao-Blackwellised risk: the old rule, said as it is
        return (riskiest_records(r["unrestricted"], at_risk), r,
                "records shown: at-risk records (up to 4) first, then the others with the "
                "highest unrestricted realised share")
    from synthgeo.risk.measure import Measure

    key = Measure(kind=kind, tol=tol).key
    sel = scores.histogram_selection(at_risk, n=8, key=key)
    rb = {m: scores.rb(m, key) for m in ("unrestricted", "restricted")}
    return sel.records, rb, sel.rule


def section_histograms(result) -> Section | None:
    """Synthetic values of showcase records on the person's scale, truth marked.

    Records are chosen without selection bias between the models
    (:func:`synthgeo.risk.selection.histogram_records`: at-risk first, then by the larger of
    the two models' Rao-Blackwellised risk); the caption states the rule.
    """
    if not result.implicates or "unrestricted" not in result.risk:
        return None
    spec = result.spec
    kind, dim, tol = first_measure(result)
    label = measure_label(kind, tol)
    shares = {m: res.per_record[f"risk_{kind}"].sel({dim: tol}).values
              for m, res in result.risk.items()}
    records, shown, rule = _chosen(result, kind, tol, shares)
    transform = _g_name(spec)
    truth = _g(result.data.y, transform)
    panels = []
    for i in records:
        flag = " (at risk)" if result.at_risk.at_risk[i] else ""
        change = " → ".join(f"{shown[m][i]:.0%}" for m in ("unrestricted", "restricted"))
        panels.append({
            "title": f"id {result.data.record_id[i]}{flag}\n{label}: {change}",
            "truth": truth[i],
            "synthetic": {m: _g(ds["y_synthetic"][:, i].values, transform)  # one column
                          for m, ds in result.implicates.items()},
        })
    if spec.data.response_transform == "log":
        value_label = spec.data.response
    else:
        value_label = (f"exp({spec.data.response})" if transform == "exp"
                       else spec.data.response)
    fig = F.plot_synthetic_histograms(
        panels, eps=float(spec.risk.eps[0]) if spec.risk.eps else None,
        p=float(spec.risk.p[0]) if spec.risk.p else None, dollars=transform == "exp",
        value_label=value_label,
    )
    rb = getattr(result, "risk_scores", None) is not None
    body = render("histograms.html.j2", n_implicates=spec.synthesis.n_implicates, label=label,
                  rule=rule, risk_kind=("Rao-Blackwellised risk" if rb else "realised share"),
                  histograms_uri=F.to_data_uri(fig))
    return Section("histograms", "Synthetic values of selected records", body)


def attributable_table(result):
    """Return the risk section's table: all and at-risk records, both models.

    Every measure and attack: release, both baselines, the stronger one, attributable with its
    Monte Carlo se and (share attack) its largest record; the average attack's figures are
    rates (its largest is left empty: the largest of 0/1 hits is 1).
    """
    t = result.risk_scores.table
    t = t[t["group"].isin(["all", "at_risk"])]
    cols = ["measure", "attack", "group", "model", "n_records", "release",
            "release_realised", "baseline_loo", "baseline_public", "baseline_source",
            "attributable", "attributable_se", "largest_attributable", "loo_stronger_share"]
    return t[cols].reset_index(drop=True)


def _release_attacker(result, scores) -> dict | None:
    """Return the release attacker's aggregates for the template (None: not scored)."""
    attack = None if scores is None else getattr(scores, "release_attack", None)
    if attack is None:
        return None
    spec = result.spec
    released = (getattr(result, "implicates", None) or {}).get("restricted")
    noise = (released.attrs.get("input_noise") if released is not None else None) or {}
    return {**attack.summary(), "has_targets": bool(spec.risk.targets),
            "log_scale": getattr(scores, "g", "identity") == "exp",
            "noise_factor": float(np.exp(attack.kappa)),
            "ols_sd": noise.get("ols_sd"),
            "n_records_sharing_a_draw": noise.get("n_records_sharing_a_draw"),
            "largest_attributable_this_noise": noise.get("largest_attributable_this_noise"),
            "n_records_above_this_noise": noise.get("n_records_above_this_noise"),
            "own_values_reading": noise.get("own_values_reading"),
            "own_values_largest_expected": noise.get("own_values_largest_expected"),
            "own_values_largest_this_noise": noise.get("own_values_largest_this_noise")}


def section_risk(result) -> Section | None:
    """Risk by group (table and bars) and the distribution of per-record risk, both models."""
    if result.risk_summary is None or not result.risk:
        return None
    by_measure: dict[str, dict[str, np.ndarray]] = {}
    for kind, dim, tols in (("abs", "eps", result.spec.risk.eps), ("rel", "p", result.spec.risk.p)):
        for tol in tols:
            by_measure[measure_label(kind, float(tol))] = {
                m: res.per_record[f"risk_{kind}"].sel({dim: float(tol)}).values
                for m, res in result.risk.items()
            }
    fig1 = F.plot_risk_by_group(result.risk_summary)
    fig2 = F.plot_risk_distribution(by_measure, result.at_risk.at_risk)
    scores = getattr(result, "risk_scores", None)
    units = None if scores is None else scores.loo_units
    body = render("risk.html.j2", risk_summary=result.risk_summary,
                  attributable=None if scores is None else attributable_table(result),
                  loo_unit=None if units is None else units.to_record(),
                  loo_units=None if units is None else units.table(),
                  loo_posterior=None if scores is None else scores.loo_posterior,
                  loo_posterior_full=scores is not None and scores.loo_posterior is None,
                  release_attacker=_release_attacker(result, scores),
                  released_label=released_label_of(result),
                  groups_uri=F.to_data_uri(fig1), records_uri=F.to_data_uri(fig2))
    return Section("risk", "Disclosure risk", body)


def protection_tables(block: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return the rounds of ``protect = "targets"``: one row per round, one per round and target.

    Several responses: a target row per response (its ``response`` column).

    Examples
    --------
    >>> block = {"rounds": [{"round": 1, "mechanism": "m", "records_protected": 3,
    ...          "selects_records": True, "verdict": "FAIL", "loo_posterior": "reweighted",
    ...          "smallest_ci_overlap": 0.9, "seconds": 1.0, "targets": [{"measure": "rel:0.1",
    ...          "attack": "share", "criterion": "max_attributable_record", "limit": 0.1,
    ...          "value": 0.2, "upper": 0.3, "n_above": None, "status": "FAIL"}]}]}
    >>> rounds, targets = protection_tables(block)
    >>> rounds.shape, targets.shape
    ((1, 8), (1, 9))
    """
    rounds = pd.DataFrame([{
        "round": r["round"], "mechanism": r["mechanism"],
        "records protected": r["records_protected"],
        "selects records": "yes" if r["selects_records"] else "no (every record)",
        "baseline's posterior": r["loo_posterior"], "verdict": r["verdict"],
        "smallest CI overlap": r["smallest_ci_overlap"], "seconds (round total)": r["seconds"]}
        for r in block["rounds"]])
    targets = pd.DataFrame([{
        "round": r["round"],
        **({"response": t["response"]} if t.get("response") is not None else {}),
        "measure": t["measure"],
        "attacker": ATTACKERS[t.get("attacker", "own_values")],
        "criterion": t["criterion"], "limit": t["limit"], "point": t["value"],
        "upper bound": t["upper"],
        "records above": "" if t["n_above"] is None else f"{int(t['n_above']):,}",
        "status": t["status"]}
        for r in block["rounds"] for t in r["targets"]])
    return rounds, targets


def round_stage_table(block: dict) -> pd.DataFrame | None:
    """Return each round's wall time per stage, seconds (None: no round records its stages).

    One row per round: ``round``, ``total`` (the round's seconds), then every stage any round
    timed, in the order first timed (empty where a round did not run it). Records written
    before the stages were kept per round have none: None.

    Examples
    --------
    >>> block = {"rounds": [
    ...     {"round": 1, "seconds": 3.0, "stage_seconds": {"fit_unrestricted": 2.0, "risk": 0.5}},
    ...     {"round": 2, "seconds": 1.0, "stage_seconds": {"fit_unrestricted": 0.0,
    ...                                                     "synthesize": 0.4}}]}
    >>> round_stage_table(block).columns.tolist()
    ['round', 'total', 'fit_unrestricted', 'risk', 'synthesize']
    """
    rounds = block.get("rounds") or []
    if not any("stage_seconds" in r for r in rounds):
        return None
    stages = list(dict.fromkeys(k for r in rounds for k in r.get("stage_seconds", {})))
    return pd.DataFrame([{"round": r["round"], "total": r["seconds"],
                          **{k: r.get("stage_seconds", {}).get(k) for k in stages}}
                         for r in rounds], columns=["round", "total", *stages])


def section_protection(result) -> Section | None:
    """Return the rounds of ``[risk] protect = "targets"`` (None when not sought)."""
    block = getattr(result, "protection", None)
    if block is None:
        return None
    rounds, targets = protection_tables(block)
    stages = round_stage_table(block)
    body = render("protection.html.j2", block=block, released_label=released_label_of(result),
                  rounds_table=table(rounds, id="protection-rounds", floatfmt="{:.3f}"),
                  targets_table=table(targets, id="protection-targets", floatfmt="{:.3f}"),
                  stages_table=(None if stages is None else
                                table(stages, id="protection-stage-seconds", floatfmt="{:.1f}")))
    return Section("protection", "Seeking the targets: the rounds", body)


def section_detector(result) -> Section | None:
    """Return the detector of protected records: its AUC, or why it did not run."""
    block = getattr(result, "detector", None)
    if block is None:
        return None
    body = render("detector.html.j2", block=block)
    return Section("detector", "Can a protected record be told apart?", body)


def section_detector_several(result) -> Section | None:
    """Return the detector of every gaussian response of ``[[data.responses]]``."""
    parts = [render("neighbours_response.html.j2", name=r.name,
                    body=render("detector.html.j2", block=r.detector))
             for r in getattr(result, "responses", []) if getattr(r, "detector", None)]
    if not parts:
        return None
    return Section("detector", "Can a protected record be told apart? Per response",
                   Markup("\n").join(parts))


#: Rows of the fresh-draw table: (figure key, label).
_FRESH_ROWS = (("n_records", "records selected by risk"), ("mean", "mean a_i"),
               ("largest", "largest a_i"),
               ("largest_upper", "largest a_i, simultaneous upper bound"),
               ("n_above", "above the threshold (point)"),
               ("n_certain", "certainly above (lower bound)"),
               ("n_possible", "possibly above (upper bound)"))


def fresh_draw_table(selection) -> pd.DataFrame:
    """Return the selected records' figures, selection draws beside fresh draws, per target.

    One row per figure and target; columns: the selection draws (unrestricted model, what
    selected them), the fresh draws under the unrestricted and the released model
    (:mod:`synthgeo.risk.fresh_draws`).
    """
    rows = []
    for t in selection.summary()["targets"]:
        for key, label in _FRESH_ROWS:
            rows.append({"measure": t["measure"], "threshold": t["threshold"], "figure": label,
                         "selection draws, unrestricted": t["selection_unrestricted"][key],
                         "fresh draws, unrestricted": t["fresh_unrestricted"][key],
                         "fresh draws, released": t["fresh_restricted"][key]})
    return pd.DataFrame(rows)


def _neighbour_context(nc) -> dict:
    """Return the neighbours template's figures of one neighbour check (aggregates only)."""
    summ = nc.summary()
    return {"rule": summ["rule"], "n_at_risk": summ["n_at_risk"],
            "n_spatial": summ["n_spatial"], "n_by_risk": summ["n_by_risk"],
            "min_rise": summ["min_rise_reported"],
            "neighbours": pd.DataFrame([{"measure": key, **m}
                                        for key, m in summ["by_measure"].items()])}


def section_neighbours(result) -> Section | None:
    """Return the neighbour check's aggregates and, for a repeated release, the pooled risk."""
    nc = getattr(result, "neighbour_check", None)
    if nc is None:
        return None
    cum = getattr(result, "cumulative", None)
    selection = getattr(result, "at_risk_selection", None)
    body = render(
        "neighbours.html.j2", **_neighbour_context(nc),
        selection=None if selection is None else selection.summary(),
        selection_table=None if selection is None else fresh_draw_table(selection),
        cumulative=None if cum is None else cum.summary,
        n_linked=getattr(cum, "n_linked", 0), n_new=getattr(cum, "n_new", 0),
        n_pooled=getattr(cum, "n_implicates_pooled", 0),
        n_previous=len(getattr(cum, "chain", []) or []),
        cumulative_status=("NOT ASSESSED (no [risk.targets])"
                           if getattr(cum, "verdict", None) is None else cum.verdict.status))
    return Section("neighbours", "Neighbour check and repeated releases", body)


def section_neighbours_several(result) -> Section | None:
    """Return the neighbour check of every gaussian response of ``[[data.responses]]``.

    Each response's check is run on its own y and scale (:class:`~synthgeo.pipeline.responses.
    ResponseResult`'s ``neighbour_check``); yes/no and count responses have none (no
    Rao-Blackwellised risk) and are named as such. Aggregates only.
    """
    parts = []
    for r in getattr(result, "responses", []):
        nc = getattr(r, "neighbour_check", None)
        if nc is None:
            parts.append(render("neighbours_none.html.j2", name=r.name, family=r.family))
            continue
        parts.append(render(
            "neighbours_response.html.j2", name=r.name,
            body=render("neighbours.html.j2", **_neighbour_context(nc), selection=None,
                        selection_table=None, cumulative=None,
                        csv_name=f"neighbour_check_{r.name}.csv",
                        table_id=f"table-neighbour-check-{r.name}")))
    if not parts:
        return None
    return Section("neighbours", "Neighbour check, per response", Markup("\n").join(parts))
