"""The review board's report: one self-contained HTML page of tables (plots: a later issue).

The report shows confidential figures (true-value based risk), so it is written beside
``release/``, never inside it, and says so on its first line.
"""

from __future__ import annotations

import html

import pandas as pd

from synthgeo.pipeline import ReleaseResult

__all__ = ["render_report", "summary_tables"]

_CSS = """body{font-family:sans-serif;max-width:70em;margin:2em auto;line-height:1.4}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.25em .6em;
text-align:right}th{background:#f3f3f3}.conf{background:#fee;border:2px solid #c00;
padding:.5em;font-weight:bold}"""


def summary_tables(result: ReleaseResult) -> dict[str, pd.DataFrame]:
    """The tables every review needs, as DataFrames (the CLI prints the same ones).

    Returns
    -------
    dict of str to pandas.DataFrame
        ``overview``, ``risk``, ``utility``, ``convergence``.
    """
    data, spec = result.data, result.spec
    sens = result.at_risk_sensitivity
    overview = pd.DataFrame(
        [
            ("records (N)", f"{data.n_records}"),
            ("sites", f"{data.sites.n_sites}"),
            ("CRS (projected)", data.gdf.crs.name),
            ("implicates (L)", f"{spec.synthesis.n_implicates}"),
            ("released model", "restricted (differential smoothing, gamma = "
                               f"{spec.model.gamma})"),
            ("M (metres)", f"{result.M_m:,.0f}"),
            ("at-risk records", f"{result.at_risk.n_at_risk}"),
            ("sensitivity: at-risk records with M from phi's 5% / 95% quantile",
             f"{sens['phi_q05']['n_at_risk']} (M = {sens['phi_q05']['M_m']:,.0f} m) / "
             f"{sens['phi_q95']['n_at_risk']} (M = {sens['phi_q95']['M_m']:,.0f} m)"),
            ("seed", f"{spec.sampling.seed}"),
            ("input sha256", f"{data.gdf.attrs.get('sha256', '')[:16]}…"),
        ],
        columns=["item", "value"],
    )
    risk = result.risk_summary.copy()
    util = result.utility.copy()
    conv = pd.concat(
        {name: fit.convergence.table for name, fit in result.fits.items()}, names=["model"]
    ).reset_index(names=["model", "parameter"])
    conv["divergences"] = conv["model"].map({k: f.convergence.n_divergent
                                             for k, f in result.fits.items()})
    return {"overview": overview, "risk": risk, "utility": util, "convergence": conv}


def _table(df: pd.DataFrame, floatfmt: str = "{:.4g}") -> str:
    return df.to_html(index=False, float_format=lambda v: floatfmt.format(v), na_rep="—",
                      border=0)


def _locations_section(result: ReleaseResult) -> list[str]:
    """Minimal location-diagnostics table (the full layout comes with the report rewrite)."""
    if result.locations is None:
        return []
    from synthgeo.anonymity.diagnostics import report_tables

    t = report_tables(result.locations)
    return ["<h2>Locations (diagnostics only; no location moved)</h2>", _table(t["overview"]),
            _table(t["k_histogram"])]


def render_report(result: ReleaseResult) -> str:
    """Render the report page.

    Parameters
    ----------
    result : ReleaseResult

    Returns
    -------
    str
        A complete HTML document (no external resources).
    """
    t = summary_tables(result)
    spec = result.spec
    at = result.data.record_id[result.at_risk.at_risk]
    parts = [
        "<!-- CONFIDENTIAL: for the disclosure review board only; do not publish -->",
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>synthgeo report: {html.escape(str(spec.source.name if spec.source else ''))}"
        f"</title><style>{_CSS}</style></head><body>",
        "<p class='conf'>CONFIDENTIAL — contains figures computed from the true values. "
        "For the review board; not part of the release.</p>",
        f"<h1>synthgeo release report</h1><p>Spec: <code>{html.escape(str(spec.source))}</code>"
        f"</p>",
        "<h2>Overview</h2>", _table(t["overview"]),
        "<h2>At-risk records</h2>",
        f"<p>Rule: no neighbouring record within M = −log({spec.model.rho0})/φ̂ = "
        f"{result.M_m:,.0f} m (φ̂ the posterior median of the unrestricted fit). "
        f"{len(at)} at-risk record(s): ids {html.escape(', '.join(map(str, at)))}.</p>",
        *_locations_section(result),
        "<h2>Disclosure risk (share of synthetic values within tolerance of the truth)</h2>",
        "<p>Reduction = 1 − mean(restricted)/mean(unrestricted) within each group; "
        "attack share = share of records whose implicate-average lies within tolerance.</p>",
        _table(t["risk"]),
        "<h2>Utility: Reiter (2003) combining rules vs the confidential OLS fit</h2>",
        f"<p>Analyst's model: <code>{html.escape(spec.formula)}</code>. CI overlap after Karr "
        "et al. (2006), unclamped (negative = intervals do not meet).</p>",
        _table(t["utility"]),
        "<h2>Convergence (ArviZ)</h2>",
        "<p>Thresholds: R-hat ≤ 1.01, bulk and tail ESS ≥ 100 per chain, no divergences.</p>",
        _table(t["convergence"]),
        "</body></html>",
    ]
    return "\n".join(parts)
