"""The report's overview: the key-figures box, the run's facts, and the CLI's summary tables."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from synthgeo._versions import package_versions
from synthgeo.pipeline.released import released_label_of
from synthgeo.release.report._common import (
    crs_name,
    first_measure,
    fitted_models,
    measure_label,
)
from synthgeo.release.report._html import Section, render
from synthgeo.risk.verdict import pair_text, paired_checks

__all__ = ["summary_tables", "key_figures", "sequential_key_figures", "section_overview",
           "input_rows", "IN_MEMORY"]

#: How the report names data handed over in memory (no file to name or hash).
IN_MEMORY = "GeoDataFrame in memory"


def input_rows(result) -> list[tuple[str, str]]:
    """Return the report's rows naming the input: the file and its hash, or the frame's hash.

    Data read from a file (and unchanged since) are named by the file and the SHA-256 of its
    bytes; data handed over in memory, or changed after reading, by :data:`IN_MEMORY` and
    ``frame_sha256``, the SHA-256 of the GeoDataFrame's canonical bytes
    (:func:`synthgeo.io.provenance.frame_sha256`).

    Parameters
    ----------
    result : ReleaseResult

    Returns
    -------
    list of (str, str)
        ``("data file", path), ("input sha256", hex)`` or
        ``("data", "GeoDataFrame in memory"), ("frame sha256", hex)``.
    """
    attrs = result.data.gdf.attrs
    if attrs.get("sha256"):
        return [("data file", str(result.spec.data_path())), ("input sha256", attrs["sha256"])]
    return [("data", IN_MEMORY), ("frame sha256", attrs.get("frame_sha256") or "—")]


def _seed_text(result) -> str:
    """Where the seed is (never the seed: it is a key) and the start of its SHA-256."""
    from synthgeo._seed import SEED_FILE, seed_sha256

    seed = getattr(result, "seed", None)
    if seed is None:
        seed = result.spec.sampling.seed
    if seed is None:
        return "—"
    origin = ("given (`[sampling] seed` or --seed)" if result.spec.sampling.seed is not None
              else "fresh random")
    return f"{origin}, in confidential/{SEED_FILE} (sha256 {seed_sha256(seed)[:16]}…)"


def summary_tables(result) -> dict[str, pd.DataFrame]:
    """Return the tables every review needs, as DataFrames (the CLI prints the same ones).

    Parameters
    ----------
    result : ReleaseResult

    Returns
    -------
    dict of str to pandas.DataFrame
        ``overview``, ``risk``, ``utility``, ``convergence``; ``attributable`` (release,
        both baselines, attributable by model, group, measure and attack) when the baselines
        were scored.
    """
    data, spec = result.data, result.spec
    sens = result.at_risk_sensitivity
    fits = fitted_models(result)
    hash_label, digest = input_rows(result)[1]
    overview = pd.DataFrame(
        [
            ("records (N)", f"{data.n_records}"),
            ("sites", f"{data.sites.n_sites}"),
            ("CRS (projected)", data.gdf.crs.name),
            ("implicates (L)", f"{spec.synthesis.n_implicates}"),
            ("released model", released_label_of(result)),
            ("M (metres)", f"{result.M_m:,.0f}"),
            ("at-risk records", f"{result.at_risk.n_at_risk}"),
            ("sensitivity: at-risk records with M from phi's 5% / 95% quantile",
             f"{sens['phi_q05']['n_at_risk']} (M = {sens['phi_q05']['M_m']:,.0f} m) / "
             f"{sens['phi_q95']['n_at_risk']} (M = {sens['phi_q95']['M_m']:,.0f} m)"),
            ("seed", _seed_text(result)),
            (hash_label, f"{digest[:16]}…"),
            *((f"engine, {name}", fit.describe()) for name, fit in fits.items()),
            *((("engine, cross_fitted", f"{fits['unrestricted'].describe()} (the unrestricted "
                "fit, reused: no restricted fit)"),) if len(fits) < len(result.fits) else ()),
        ],
        columns=["item", "value"],
    )
    conv = pd.concat(
        {name: fit.convergence.table for name, fit in fits.items()}, names=["model"]
    ).reset_index(names=["model", "parameter"])
    conv["divergences"] = conv["model"].map({k: f.convergence.n_divergent
                                             for k, f in fits.items()})
    out = {"overview": overview, "risk": result.risk_summary.copy(),
           "utility": result.utility.copy(), "convergence": conv}
    scores = getattr(result, "risk_scores", None)
    if scores is not None:
        t = scores.table
        out["attributable"] = t[t["group"].isin(["all", "at_risk"])][
            ["measure", "attack", "group", "model", "n_records", "release", "baseline_loo",
             "baseline_public", "attributable", "attributable_se", "largest_attributable"]
        ].reset_index(drop=True)
    return out


def _pct(x: float) -> str:
    return "—" if pd.isna(x) else f"{x:.1%}"


def _pp(x: float) -> str:
    return "—" if pd.isna(x) else f"{100 * x:+.1f} pp"


def _verdict_row(result) -> tuple[str, str, str]:
    """Return the risk verdict (first row of the box): status, and each target's figure."""
    scores = getattr(result, "risk_scores", None)
    if scores is None or not scores.verdict.checks:
        return ("risk verdict (released model)",
                "NOT ASSESSED: no [risk.targets] were set", "")
    v = scores.verdict
    conf = v.checks[0].confidence
    parts = [pair_text(*p) for p in paired_checks(
        v.checks, getattr(scores, "attacker_reported", ()))]
    return ("risk verdict (released model)",
            f"{v.status} (own values: Monte Carlo bounds at {conf:g}; release attacker: exact "
            "given the release): " + " | ".join(parts),
            "ok" if v.status == "PASS" else "warn" if v.status == "FAIL" else "")


def _joint_row(result) -> tuple[str, str, str] | None:
    scores = getattr(result, "risk_scores", None)
    if scores is None:
        return None
    if scores.joint is None:
        return ("records identifiable by location and above the attributable threshold",
                f"NOT ASSESSED (no record_threshold); {int(scores.identifiable.sum())} "
                "identifiable by location (below k, or unique on location + covariates)", "")
    j = scores.joint.to_dict()
    return ("records identifiable by location and possibly above the attributable threshold "
            f"({j['threshold']:g}; upper Monte Carlo bound)",
            f"{j['n_joint']} of {j['n_records']} ({j['n_identifiable']} identifiable: "
            f"{j['n_below_k']} below k, {j['n_unique']} unique on location + covariates; "
            f"{j['n_above']} possibly above)", "")  # a count, not a target: no colour


def _location_row(result) -> tuple[str, str, str]:
    from synthgeo.locations.treatment import location_verdict

    loc = getattr(result, "locations", None)
    v = getattr(loc, "verdict", None) or location_verdict(None, None)
    d = v.to_dict()
    reasons = "; ".join(d.get("reasons") or [])
    return ("location verdict", d["status"] + (f": {reasons}" if reasons else ""),
            "ok" if d["status"] == "PASS" else "warn" if d["status"] == "FAIL" else "")


def _risk_rows(result) -> list[tuple[str, str, str]]:
    """Return every measure × attack, all and at-risk records, both models.

    Release / baseline / attributable, the models' difference against its Monte Carlo noise,
    the largest per-record a_i with its bound, and the status against the board's targets.
    """
    scores = result.risk_scores
    return _attributable_rows(scores.table, scores.measures, summary=scores.summary,
                              verdict=scores.verdict)


#: The words beside each colour of the key figures: status against the board's targets.
TARGET_WORDS = {"ok": "PASS: meets the board's target", "warn": "FAIL: misses the board's target"}


def _target_status(verdict, key: str, attack: str) -> tuple[str, str]:
    """(status, words) of the targets on ``key`` × ``attack``: ok / warn / "" (no target)."""
    checks = [c for c in getattr(verdict, "checks", ()) if c.measure == key
              and c.attack == attack and c.limit is not None]
    if not checks:
        return "", "no target set"
    if any(c.status == "FAIL" for c in checks):
        return "warn", TARGET_WORDS["warn"] + " (" + ", ".join(
            c.criterion for c in checks if c.status == "FAIL") + ")"
    if all(c.status == "PASS" for c in checks):
        return "ok", TARGET_WORDS["ok"] + " (" + ", ".join(c.criterion for c in checks) + ")"
    return "", "target not assessed"


def _difference_text(diff: float, se: float, z: float) -> str:
    """Restricted − unrestricted attributable risk, read against its Monte Carlo noise."""
    if pd.isna(diff):
        return ""
    if pd.isna(se):
        return f"; restricted − unrestricted {_pp(diff)} (Monte Carlo se not kept)"
    if abs(diff) <= z * se:
        return (f"; restricted − unrestricted {_pp(diff)} ± {100 * z * se:.1f} pp: "
                "no difference beyond Monte Carlo noise")
    return (f"; restricted − unrestricted {_pp(diff)} ± {100 * z * se:.1f} pp: restricted "
            + ("lower" if diff < 0 else "higher"))


def _attributable_rows(t: pd.DataFrame, measures, prefix: str = "", summary=None,
                       verdict=None, confidence: float = 0.95) -> list[tuple[str, str, str]]:
    """Rows of :func:`_risk_rows` from an attributable-risk table (``risk.attributable``).

    One sign convention: every change is restricted − unrestricted (negative: the released
    model tells less). Colour and words are the status against the board's targets (never
    "restricted vs unrestricted"); the models' difference reads "no difference" within
    z_{1−α/2}·se (two-sided at ``confidence``; paired rows with ``summary``, else the two
    groups' se as if independent). The share attack's rows give the largest per-record a_i
    with its simultaneous upper bound (the verdict's rule); the average attack's give rates.
    """
    from synthgeo.risk.measure import Measure
    from synthgeo.risk.noise import max_bounds, z_value

    if verdict is not None and verdict.checks:
        confidence = verdict.checks[0].confidence
    z = z_value(0.5 + confidence / 2.0)
    rows = []
    for m in measures:
        for attack in ("share", "average"):
            for group, shown in (("all", "all"), ("at_risk", "at-risk")):
                sub = t[(t["measure"] == m.key) & (t["attack"] == attack)
                        & (t["group"] == group)].set_index("model")
                if not len(sub):
                    continue
                what = ("Rao-Blackwellised risk" if attack == "share" else
                        "implicate-average attack, rate of records hit (its stronger form: "
                        "geometric or arithmetic mean)")
                n = int(sub["n_records"].iloc[0])
                item = (f"{prefix}{Measure.parse(m.key).label}, {what}, {shown} records "
                        f"(n = {n:,})")
                if n == 0:
                    rows.append((item, "no records", ""))
                    continue
                u, r = sub.loc["unrestricted"], sub.loc["restricted"]
                source = str(r["baseline_source"]).replace("/", " ")
                form = ({k: f" ({v['release_form']})" for k, v in (("u", u), ("r", r))}
                        if attack == "average" else {"u": "", "r": ""})
                value = (f"release {_pct(u['release'])}{form['u']} → {_pct(r['release'])}"
                         f"{form['r']}; baseline "
                         f"({source}) {_pct(u['baseline'])} → {_pct(r['baseline'])}; "
                         f"attributable {_pp(u['attributable'])} → {_pp(r['attributable'])}")
                if summary is not None:
                    diff, se = summary.difference(group, m.key, attack)
                else:
                    diff = r["attributable"] - u["attributable"]
                    se = float(np.hypot(u.get("attributable_se", np.nan),
                                        r.get("attributable_se", np.nan)))
                value += _difference_text(diff, se, z)
                if attack == "share" and summary is not None:
                    mask = summary.groups[group]
                    big = {mod: max_bounds(
                        summary.record_attributable(mod, m.key)[mask],
                        summary.record_attributable_se(mod, m.key)[mask], confidence,
                        summary.records[mod].n_implicates) for mod in ("unrestricted",
                                                                       "restricted")}
                    value += (f"; largest per-record a_i {big['unrestricted']['point']:.3f} → "
                              f"{big['restricted']['point']:.3f} (upper bound "
                              f"{big['restricted']['upper']:.3f})")
                elif attack == "share":
                    value += (f"; largest per-record a_i {u['largest_attributable']:.3f} → "
                              f"{r['largest_attributable']:.3f}")
                status, words = (_target_status(verdict, m.key, attack) if group == "all"
                                 else ("", "no target of its own (targets are judged on all "
                                       "records)"))
                rows.append((item, f"{words}: {value}", status))
    return rows


def _relative_change(reduction: float) -> str:
    """Say a reduction 1 − r/u in words: "30 % lower" / "12 % higher" (one sign convention)."""
    if pd.isna(reduction):
        return "—"
    return f"{reduction:.0%} lower" if reduction >= 0 else f"{-reduction:.0%} higher"


def _share_rows(result) -> list[tuple[str, str, str]]:
    """Realised-share rows, for a result scored without baselines."""
    kind, _, tol = first_measure(result)
    label = measure_label(kind, tol)
    rs = result.risk_summary
    rows = []
    for group, shown in (("at_risk", "at-risk"), ("all", "all")):
        hit = rs[(rs["group"] == group) & (rs["measure"] == label)]
        if not len(hit):
            continue
        r = hit.iloc[0]
        if r["n_records"] == 0:
            rows.append((f"risk {label}, {shown} records", "no records", ""))
            continue
        red = r["reduction"]
        rows.append((f"risk {label}, {shown} records: unrestricted → restricted",
                     f"{r['mean_unrestricted']:.1%} → {r['mean_restricted']:.1%} "
                     f"({_relative_change(red)})", ""))
        rows.append((f"implicate-average attack {label}, {shown} records",
                     f"{r['attack_share_unrestricted']:.1%} → "
                     f"{r['attack_share_restricted']:.1%}", ""))
    return rows


def _release_attacker_row(result) -> tuple[str, str, str] | None:
    """Return the key-figure row of the release attacker's largest a_i, or None.

    New-user finding: it was in the risk section only, while the key figures showed the
    own-value attacker's.
    """
    attack = getattr(result.risk_scores, "release_attack", None)
    if attack is None:
        return None
    s = attack.summary()
    value = (f"largest attributable {s['largest_attributable']:.3f} at L = {s['n_implicates']}"
             + ("" if s.get("threshold") is None else
                f"; {s['n_records_above_threshold']} of {s['n_records']} records above "
                f"{s['threshold']:g}")
             + ("" if s.get("judged") else " (reported, not judged)"))
    return (f"release attacker (knows the method; {s['measure']}, {s['attack']} attack)",
            value, "")


def key_figures(result) -> pd.DataFrame:
    """Return the key-figures box of the report as one table.

    The box (template ``report/key_figures.html.j2``) shows this table row by row; to change
    the box, change this table. First the risk verdict, then N, the at-risk count, the
    location verdict, the joint count, and every risk measure × attack for all and the at-risk
    records, both models (unrestricted → restricted): release, the stronger baseline and
    attributable risk, favourable or not (status ``"warn"`` where the restricted model is
    worse); then utility and convergence.

    Parameters
    ----------
    result : ReleaseResult

    Returns
    -------
    pandas.DataFrame
        Columns ``item`` (label), ``value`` (text as shown) and ``status`` (``"ok"`` or
        ``"warn"`` to mark the value, ``""`` for none).
    """
    rows = [_with_label(_verdict_row(result), released_label_of(result)),
            ("records (N)", f"{result.data.n_records:,}", ""),
            (f"at-risk records (M = {result.M_m:,.0f} m)", f"{result.at_risk.n_at_risk}", ""),
            _location_row(result)]
    joint = _joint_row(result)
    if joint is not None:
        rows.append(joint)
    if getattr(result, "risk_scores", None) is not None:
        rows += _risk_rows(result)
        attack_row = _release_attacker_row(result)
        if attack_row is not None:
            rows.append(attack_row)
    else:
        rows += _share_rows(result)
    util = result.utility[result.utility["model"] == "restricted"]
    if len(util):
        rows.append(("released model: smallest CI overlap / largest |std. difference|",
                     f"{util['ci_overlap'].min():.2f} / {util['std_diff'].abs().max():.2f}", ""))
    fits = fitted_models(result)
    for name, fit in fits.items():
        c = fit.convergence
        rows.append((f"convergence, {name}",
                     "passed" if c.passed else f"FAILED: {'; '.join(c.problems)}",
                     "ok" if c.passed else "warn"))
    for name, fit in fits.items():  # only where the posterior piles against a prior bound
        at_bound = (getattr(fit, "engine", None) or {}).get("posterior_at_prior_bound")
        if at_bound:
            rows.append((f"posterior at a prior bound, {name}",
                         "; ".join(b["message"] for b in at_bound), "warn"))
    if "restricted" in result.fits and "restricted" not in fits:
        rows.append(("convergence, cross_fitted", "the unrestricted fit's (reused: no "
                     "restricted fit)", ""))
    return pd.DataFrame(rows, columns=["item", "value", "status"])


#: Discrete measures shown in a sequential release's key figures (all of them are in its
#: risk tables): the per-implicate match share and the majority attack, exact and within ±1.
_DISCRETE_KEY = ("share_equal", "majority", "share_within1", "majority_within1")


def _discrete_rows(name: str, summary: pd.DataFrame) -> list[tuple[str, str, str]]:
    """Release vs the public GLM baseline, both models, for a yes/no or count response.

    Every record and the at-risk ones for the class "all", then each true class over all
    records; "warn" where the restricted model is worse.
    """
    rows = []
    words = {"share_equal": "share of implicates equal to the truth",
             "majority": "majority attack hits", "share_within1": "share within ±1",
             "majority_within1": "majority attack within ±1"}
    for measure in _DISCRETE_KEY:
        t = summary[summary["measure"] == measure]
        if not len(t):
            continue
        picks = [("all", "all"), ("all", "at risk")] + [
            (c, "all") for c in sorted(set(t["class"]) - {"all"})]
        for cls, group in picks:
            hit = t[(t["class"] == cls) & (t["group"] == group)]
            if not len(hit):
                continue
            r = hit.iloc[0]
            who = "all records" if cls == "all" else f"true class {cls}"
            if group == "at risk":
                who = "at-risk records"
            value = (f"release {_pct(r['unrestricted'])} → {_pct(r['restricted'])}; baseline "
                     f"(public GLM) {_pct(r['baseline'])}; attributable "
                     f"{_pp(r['attributable_unrestricted'])} → "
                     f"{_pp(r['attributable_restricted'])}")
            worse = r["restricted"] > r["unrestricted"] + 1e-12
            rows.append((f"{name}: {words[measure]}, {who} (n = {int(r['n_records']):,})",
                         value + ("  (restricted model worse)" if worse else ""),
                         "warn" if worse else "ok"))
    return rows


def _with_label(row: tuple[str, str, str], label: str) -> tuple[str, str, str]:
    """Return the verdict row with the released model named after its figures (same colour)."""
    item, value, status = row
    return item, f"{value} — released model: {label}", status


def _several_verdict_row(result) -> tuple[str, str, str]:
    """Return the release's risk verdict over its responses (first row of the box), coloured.

    FAIL if any response FAILs, PASS only if every one PASSes, else NOT ASSESSED
    (:func:`synthgeo.pipeline.result.verdicts`); each response's status beside it.
    """
    from synthgeo.pipeline.result import verdicts

    item = "risk verdict (released model)"
    if not result.spec.risk.targets:
        return (item, "NOT ASSESSED: no [risk.targets] were set; every figure below is beside "
                "its baseline", "")
    status = verdicts(result)["risk"]
    per = ", ".join(f"{name} {v}" for name, v in result.risk_statuses.items())
    return (item, f"{status} (FAIL if any response fails, PASS only if every one passes): "
            f"{per}", "ok" if status == "PASS" else "warn" if status == "FAIL" else "")


def sequential_key_figures(result) -> pd.DataFrame:
    """Return the key-figures box of a sequential release (``[[data.responses]]``).

    As :func:`key_figures`, per response: the release's risk verdict (FAIL if any response
    fails, PASS only if every one passes; colour and the words PASS/FAIL), N and the records
    dropped for a missing value, the location verdict, the joint count over responses; for
    each response its at-risk count, then for a gaussian response its own verdict and every
    measure × attack for all and the at-risk records (release, the stronger baseline,
    attributable, the status against the targets; both models), for a yes/no or count
    response the match share and majority
    attack against the public GLM baseline (all, at-risk, each true class); the joint risk
    across responses; per response the Reiter check and convergence. Unfavourable figures are
    marked ``"warn"``, never left out.

    Parameters
    ----------
    result : SequentialResult

    Returns
    -------
    pandas.DataFrame
        Columns ``item``, ``value``, ``status`` (as :func:`key_figures`).
    """
    from synthgeo.pipeline.risk_stage import risk_measures

    rows = [_with_label(_several_verdict_row(result), released_label_of(result)),
            ("records (N)", f"{result.data.n_records:,}", "")]
    miss = result.data.missing
    if miss and miss.get("n_dropped"):
        rows.append(("records dropped for a missing value (not released)",
                     f"{miss['n_dropped']:,}", ""))
    rows.append(_location_row(result))
    joint_all = getattr(result, "risk_joint", None)
    if joint_all is not None:
        j = joint_all.to_dict()
        rows.append(("records identifiable by location and possibly above the attributable "
                     f"threshold ({j['threshold']:g}; upper Monte Carlo bound) in at least one "
                     "response", f"{j['n_joint']} of {j['n_records']} ({j['n_identifiable']} "
                     f"identifiable: {j['n_below_k']} below k, {j['n_unique']} unique on "
                     f"location + covariates; {j['n_above']} possibly above in a response)",
                     ""))  # a count, not a target: no colour
    measures = risk_measures(result.spec)
    judged = bool(result.spec.risk.targets)
    for r in result.responses:
        rows.append((f"{r.name} ({r.family}): at-risk records (M = {r.at_risk.radius_m:,.0f} m)",
                     f"{r.at_risk.n_at_risk}", ""))
        scores = getattr(r, "risk_scores", None)
        if scores is not None:
            if judged:  # the response's own verdict, as the single response's first row
                item, value, status = _verdict_row(r)
                rows.append((f"{r.name}: {item}", value, status))
            rows += _attributable_rows(scores.table, measures, prefix=f"{r.name}: ",
                                       summary=scores.summary, verdict=scores.verdict)
        elif r.attributable is not None:
            rows += _attributable_rows(r.attributable, measures, prefix=f"{r.name}: ")
        elif r.family != "gaussian":
            rows += _discrete_rows(r.name, r.risk_summary)
    joint = getattr(result, "joint_risk", None)
    if joint is not None and len(joint):
        j = joint[joint["group"] == "all"].set_index("model")
        u, r = j.loc["unrestricted"], j.loc["restricted"]
        worse = r["mean_joint_share"] > u["mean_joint_share"] + 1e-12
        rows.append(("joint risk: every response matched, all records",
                     f"share of implicates {_pct(u['mean_joint_share'])} → "
                     f"{_pct(r['mean_joint_share'])}; records matched in at least one "
                     f"implicate {_pct(u['share_records_any_match'])} → "
                     f"{_pct(r['share_records_any_match'])}"
                     + ("  (restricted model worse)" if worse else ""),
                     "warn" if worse else ""))
    for r in result.responses:
        util = r.utility[r.utility["model"] == "restricted"]
        if len(util):
            rows.append((f"{r.name}, released model: smallest CI overlap / largest "
                         "|std. difference|", f"{util['ci_overlap'].min():.2f} / "
                         f"{util['std_diff'].abs().max():.2f}", ""))
        for name, fit in r.fits.items():
            c = getattr(fit, "convergence", None)
            if c is not None:
                rows.append((f"{r.name}: convergence, {name}",
                             "passed" if c.passed else f"FAILED: {'; '.join(c.problems)}",
                             "ok" if c.passed else "warn"))
    return pd.DataFrame(rows, columns=["item", "value", "status"])


def _overview_table(result) -> pd.DataFrame:
    """Return the run's facts: data, N, M, sites, CRS, model, seed, sampling, spec file."""
    data, spec = result.data, result.spec
    attrs = data.gdf.attrs
    crs = data.gdf.crs
    epsg = crs.to_epsg()
    rows = [
        *input_rows(result),
        ("records read / duplicates", f"{attrs.get('n_read', '—')} / "
                                      f"{attrs.get('n_duplicates', '—')}"),
        ("records modelled (N)", f"{data.n_records}"),
        ("M (metres)", f"{result.M_m:,.0f}"),
        ("distinct sites", f"{data.sites.n_sites}"),
        ("CRS of the input", crs_name(attrs.get("source_crs"))),
        ("CRS of all distances", f"{crs.name}" + (f" (EPSG:{epsg}), metres" if epsg else "")),
        ("response / back-transform",
         f"{spec.data.response} / " + ("transform = log: modelled as log, released as is"
                                       if spec.data.response_transform == "log"
                                       else spec.data.back_transform)),
        ("released covariates", ", ".join(spec.data.covariates) or "none"),
        ("analyst's model", spec.formula),
        ("implicates (L)", f"{spec.synthesis.n_implicates}"),
        ("released model", released_label_of(result)),
        ("seed", _seed_text(result)),
        ("sampling", _sampling_row(result)),
        ("spec file", str(spec.source) if spec.source else "—"),
    ]
    drawn = _drawn_row(result)
    if drawn is not None:
        rows.append(drawn)
    engine = getattr(result, "engine", None)
    if engine is not None:
        rows.append(("engine", str(engine)))
    return pd.DataFrame(rows, columns=["item", "value"])


def _drawn_row(result) -> tuple[str, str] | None:
    """Say how a ``synthgeo draw`` release's implicates were made: drawn, or refit (else None).

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> state = NS(drawn_from={"release_uid": "ab12", "register_id": 1, "n_new_draws": 5,
    ...                        "refit": True})
    >>> _drawn_row(NS(synthesiser=state))[1][:28]
    'refit: both models fitted ag'
    """
    drawn = getattr(getattr(result, "synthesiser", None), "drawn_from", None)
    if not drawn:
        return None
    of = f"release {drawn.get('release_uid')} (register id {drawn.get('register_id')})"
    if drawn.get("refit"):
        return ("synthgeo draw", f"refit: both models fitted again from the stored state of {of}"
                                 " (its spec and records, checked by SHA-256; a new seed), its "
                                 "posterior draws being used up; a new posterior")
    return ("synthgeo draw", f"{drawn.get('n_new_draws')} posterior draws no implicate used "
                             f"before, from the stored posterior of {of}; no refit")


def _sampling_row(result) -> str:
    """Describe the engine used (grid fits are not MCMC: no chains, tune or rank plots)."""
    s = result.spec.sampling
    if result.fits and all(f.engine.get("sampler") == "grid" for f in result.fits.values()):
        return "; ".join(f"{name}: {fit.describe()}" for name, fit in result.fits.items())
    return f"{s.chains} chains × ({s.tune} tune + {s.draws} draws), {s.sampler}"


def _spec_without_seed(spec) -> dict:
    """Return the spec as run with ``[sampling] seed`` withheld (a key: confidential/seed.txt).

    Said in words, not ``null`` (the new-user trial read ``null`` as "no seed was set").
    """
    out = spec.to_dict()
    out["sampling"]["seed"] = ("withheld (a key: confidential/seed.txt)"
                               if out["sampling"].get("seed") is not None else
                               "not set: a fresh seed was drawn (confidential/seed.txt)")
    return out


def section_overview(result) -> Section:
    """Build the overview: key figures, data, N, CRS, spec, seed, versions, hash, timings."""
    body = render(
        "overview.html.j2",
        key_figures=key_figures(result).to_dict("records"),
        overview=_overview_table(result),
        spec_json=json.dumps(_spec_without_seed(result.spec), indent=2, default=str),
        versions=pd.DataFrame(list(package_versions().items()), columns=["package", "version"]),
        timings=pd.DataFrame(list(result.seconds.items()), columns=["stage", "seconds"]),
    )
    return Section("overview", "Overview", body)
