"""Report of a sequential release (``[[data.responses]]``): rates by area, discrete risk.

First the key figures (:func:`synthgeo.release.report._overview.sequential_key_figures`: every
risk figure beside its baseline, both models, unfavourable ones marked); then one section with,
for each response, observed vs synthetic rates (yes/no) or means
(counts, continuous) by area (``[anonymity] unit``, else the first text covariate), the risk
table (by true class, baseline and attributable for yes/no and counts) and the Reiter table;
then the joint risk and the correlations. The page shell and the location section are the
single-response report's (:func:`synthgeo.release.report.render_report`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from synthgeo.release.report._html import Section, render

__all__ = ["rates_by_area", "section_responses", "section_key_figures"]

#: Areas shown in the rates table (largest first).
MAX_AREAS = 30


def rates_by_area(area: np.ndarray, truth: np.ndarray, synthetic: dict) -> pd.DataFrame:
    """Observed vs synthetic mean per area (largest areas first).

    Parameters
    ----------
    area : ndarray of shape (n_records,)
    truth : ndarray of shape (n_records,)
    synthetic : dict of str to ndarray of shape (L, n_records)

    Returns
    -------
    pandas.DataFrame
        ``area, n_records, observed, restricted, unrestricted`` (means over records, and over
        implicates for the synthetic columns), at most :data:`MAX_AREAS` rows.

    Examples
    --------
    >>> t = rates_by_area(np.array(["a", "a", "b"]), np.array([1.0, 0.0, 1.0]),
    ...                   {"restricted": np.ones((2, 3)), "unrestricted": np.zeros((2, 3))})
    >>> t["observed"].tolist()
    [0.5, 1.0]
    """
    df = pd.DataFrame({"area": np.asarray(area).astype(str), "observed": truth})
    for m in ("restricted", "unrestricted"):
        df[m] = np.asarray(synthetic[m], float).mean(axis=0)
    g = df.groupby("area")
    out = g.mean().assign(n_records=g.size()).reset_index()
    out = out.sort_values(["n_records", "area"], ascending=[False, True]).head(MAX_AREAS)
    return out[["area", "n_records", "observed", "restricted", "unrestricted"]]


def _area(result):
    spec = result.spec
    if spec.anonymity.unit:
        return spec.anonymity.unit
    return next(iter(result.data.levels), None)


def section_responses(result) -> Section:
    """Return the responses section (see the module docstring)."""
    by = _area(result)
    blocks = []
    for r in result.responses:
        rates = (rates_by_area(result.data.gdf[by].to_numpy(), r.y, r.synthetic)
                 if by else None)
        risk = r.risk_summary.drop(columns="response", errors="ignore")
        attack = None if r.risk_scores is None else r.risk_scores.release_attack
        blocks.append({
            "attacker": None if attack is None else {
                **attack.summary(), "log_scale": r.risk_scores.g == "exp",
                "noise_factor": float(np.exp(attack.kappa)),
                "n_records_sharing_a_draw": (getattr(r, "input_noise", None) or {}).get(
                    "n_records_sharing_a_draw")},
            "name": r.name, "family": r.family, "coef_names": r.coef_names,
            "n_at_risk": r.at_risk.n_at_risk, "M_m": r.at_risk.radius_m, "rates": rates,
            "by": by, "risk": risk, "formula": r.formula,
            "method": "OLS" if r.family == "gaussian" else "GLM",
            "utility": r.utility[["model", "term", "estimate", "lower", "upper",
                                  "ci_overlap", "std_diff"]]})
    miss = result.data.missing
    mt = None
    if miss and miss.get("n_dropped"):
        rows = [{"where": f"column {k}", "n_records": v} for k, v in miss["by_column"].items()]
        rows += [{"where": f"unit {k}", "n_records": v}
                 for k, v in miss.get("by_unit", {}).items()]
        mt = pd.DataFrame(rows)
    body = render("responses.html.j2", responses=blocks, n_records=result.data.n_records,
                  missing=miss, missing_table=mt, joint=result.joint_risk,
                  attacker_joint=result.release_attacker_joint,
                  correlations=(result.correlations if len(result.correlations) else None))
    return Section(id="responses", title="Responses: rates by area, risk, utility", body=body)


def section_key_figures(result) -> Section:
    """Return the key-figures box of several responses (every risk figure beside its baseline)."""
    from synthgeo.release.report._overview import sequential_key_figures

    return Section(id="overview", title="Key figures", body=render(
        "key_figures.html.j2", key_figures=sequential_key_figures(result).to_dict("records")))
