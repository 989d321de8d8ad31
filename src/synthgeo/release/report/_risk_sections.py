"""The report's risk sections: histograms of the riskiest records, risk by group and record."""

from __future__ import annotations

import numpy as np

from synthgeo.release.report import _figures as F
from synthgeo.release.report._common import first_measure, measure_label
from synthgeo.release.report._html import Section, render

__all__ = ["riskiest_records", "section_histograms", "section_risk"]


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


def section_histograms(result) -> Section | None:
    """Synthetic values of the riskiest records on the back-transformed scale, truth marked."""
    if not result.implicates or "unrestricted" not in result.risk:
        return None
    spec = result.spec
    kind, dim, tol = first_measure(result)
    label = measure_label(kind, tol)
    r = {m: res.per_record[f"risk_{kind}"].sel({dim: tol}).values
         for m, res in result.risk.items()}
    transform = spec.data.back_transform
    truth = _g(result.data.y, transform)
    panels = []
    for i in riskiest_records(r["unrestricted"], result.at_risk.at_risk):
        flag = " (at risk)" if result.at_risk.at_risk[i] else ""
        change = " → ".join(f"{r[m][i]:.0%}" for m in r)
        panels.append({
            "title": f"id {result.data.record_id[i]}{flag}\n{label}: {change}",
            "truth": truth[i],
            "synthetic": {m: _g(ds["y_synthetic"].values[:, i], transform)
                          for m, ds in result.implicates.items()},
        })
    fig = F.plot_synthetic_histograms(
        panels, eps=float(spec.risk.eps[0]) if spec.risk.eps else None,
        p=float(spec.risk.p[0]) if spec.risk.p else None, dollars=transform == "exp",
        value_label=(f"exp({spec.data.response})" if transform == "exp"
                     else spec.data.response),
    )
    body = render("histograms.html.j2", n_implicates=spec.synthesis.n_implicates, label=label,
                  histograms_uri=F.to_data_uri(fig))
    return Section("histograms", "Synthetic values of the riskiest records", body)


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
    body = render("risk.html.j2", risk_summary=result.risk_summary,
                  groups_uri=F.to_data_uri(fig1), records_uri=F.to_data_uri(fig2))
    return Section("risk", "Disclosure risk", body)
