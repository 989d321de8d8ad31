"""The report's sections, one function each: ``section_*(result) -> Section | None``.

A section returns ``None`` when its stage did not run (or its inputs are missing), and the
page lists it as skipped. Sections read only what :class:`synthgeo.pipeline.ReleaseResult`
exposes (posterior ``w`` and ``phi`` for the surfaces), not the model's internals.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from synthgeo._versions import package_versions
from synthgeo.release.report import _figures as F
from synthgeo.release.report._html import Section, esc, img, table
from synthgeo.release.report._surface import grid_over, posterior_mean_surface

__all__ = [
    "section_overview", "section_at_risk_map", "section_surfaces", "section_histograms",
    "section_risk", "section_utility", "section_convergence", "section_locations",
    "riskiest_records", "summary_tables", "SAMPLED_PARAMETERS",
]

#: Parameters sampled by NUTS whose rank plots the report shows (when present).
SAMPLED_PARAMETERS = ("sigma2", "nugget", "range")


def _coords_m(result) -> np.ndarray:
    return result.data.sites.coords_m[result.data.sites.site_index]


def _first_measure(result) -> tuple[str, str, float]:
    """(kind, dim, tolerance) of the headline risk measure: first relative, else absolute."""
    spec = result.spec
    if spec.risk.p:
        return "rel", "p", float(spec.risk.p[0])
    return "abs", "eps", float(spec.risk.eps[0])


def _measure_label(kind: str, tol: float) -> str:
    from synthgeo.risk.within_eps import _label

    return _label(kind, tol)


def summary_tables(result) -> dict[str, pd.DataFrame]:
    """Return the tables every review needs, as DataFrames (the CLI prints the same ones).

    Parameters
    ----------
    result : ReleaseResult

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
            ("input sha256", f"{(data.gdf.attrs.get('sha256') or '')[:16]}…"),
            *((f"engine, {name}", fit.describe()) for name, fit in result.fits.items()),
        ],
        columns=["item", "value"],
    )
    conv = pd.concat(
        {name: fit.convergence.table for name, fit in result.fits.items()}, names=["model"]
    ).reset_index(names=["model", "parameter"])
    conv["divergences"] = conv["model"].map({k: f.convergence.n_divergent
                                             for k, f in result.fits.items()})
    return {"overview": overview, "risk": result.risk_summary.copy(),
            "utility": result.utility.copy(), "convergence": conv}


# --- overview ---------------------------------------------------------------------------------


def _key_figures(result) -> str:
    kind, dim, tol = _first_measure(result)
    label = _measure_label(kind, tol)
    rs = result.risk_summary
    rows = [("records (N)", f"{result.data.n_records:,}"),
            ("at-risk records (M = " f"{result.M_m:,.0f} m)", f"{result.at_risk.n_at_risk}")]
    for group, shown in (("at_risk", "at-risk"), ("all", "all")):
        hit = rs[(rs["group"] == group) & (rs["measure"] == label)]
        if len(hit):
            r = hit.iloc[0]
            if r["n_records"] == 0:
                rows.append((f"risk {label}, {shown} records", "no records"))
                continue
            red = r["reduction"]
            rows.append((f"risk {label}, {shown} records: unrestricted → restricted",
                         f"{r['mean_unrestricted']:.1%} → {r['mean_restricted']:.1%} "
                         f"({'—' if pd.isna(red) else f'{red:.0%} reduction'})"))
            rows.append((f"implicate-average attack {label}, {shown} records",
                         f"{r['attack_share_unrestricted']:.1%} → "
                         f"{r['attack_share_restricted']:.1%}"))
    util = result.utility[result.utility["model"] == "restricted"]
    if len(util):
        rows.append(("restricted model: smallest CI overlap / largest |std. difference|",
                     f"{util['ci_overlap'].min():.2f} / {util['std_diff'].abs().max():.2f}"))
    for name, fit in result.fits.items():
        c = fit.convergence
        verdict = ("<span class='ok'>passed</span>" if c.passed else
                   f"<span class='warn'>FAILED: {esc('; '.join(c.problems))}</span>")
        rows.append((f"convergence, {name}", verdict))
    body = "".join(f"<tr><td>{esc(k)}</td><td>{v if k.startswith('convergence') else esc(v)}"
                   "</td></tr>" for k, v in rows)
    return f"<div class='keyfig'><strong>Key figures</strong><table id='table-key-figures'>" \
           f"{body}</table></div>"


def _crs_name(crs: Any) -> str:
    if crs is None:
        return "—"
    try:
        from pyproj import CRS

        c = CRS.from_user_input(crs)
        epsg = c.to_epsg()
        return c.name + (f" (EPSG:{epsg})" if epsg else "")
    except Exception:  # noqa: BLE001 - a label only; show what we have
        return str(crs)[:80]


def section_overview(result) -> Section:
    """Build the overview: key figures, data, N, CRS, spec, seed, versions, hash, timings."""
    data, spec = result.data, result.spec
    attrs = data.gdf.attrs
    crs = data.gdf.crs
    epsg = crs.to_epsg()
    rows = [
        ("data file", str(spec.data_path())),
        ("input sha256", attrs.get("sha256") or "—"),
        ("records read / duplicates", f"{attrs.get('n_read', '—')} / "
                                      f"{attrs.get('n_duplicates', '—')}"),
        ("records modelled (N)", f"{data.n_records}"),
        ("M (metres)", f"{result.M_m:,.0f}"),
        ("distinct sites", f"{data.sites.n_sites}"),
        ("CRS of the input", _crs_name(attrs.get("source_crs"))),
        ("CRS of all distances", f"{crs.name}" + (f" (EPSG:{epsg}), metres" if epsg else "")),
        ("response / back-transform", f"{spec.data.response} / {spec.data.back_transform}"),
        ("released covariates", ", ".join(spec.data.covariates) or "none"),
        ("analyst's model", spec.formula),
        ("implicates (L)", f"{spec.synthesis.n_implicates}"),
        ("released model", f"restricted (differential smoothing, γ = {spec.model.gamma})"),
        ("seed", f"{spec.sampling.seed}"),
        ("sampling", _sampling_row(result)),
        ("spec file", str(spec.source) if spec.source else "—"),
    ]
    engine = getattr(result, "engine", None)
    if engine is not None:
        rows.append(("engine", str(engine)))
    overview = pd.DataFrame(rows, columns=["item", "value"])
    versions = pd.DataFrame(list(package_versions().items()), columns=["package", "version"])
    seconds = pd.DataFrame([(k, v) for k, v in result.seconds.items()],
                           columns=["stage", "seconds"])
    spec_json = json.dumps(spec.to_dict(), indent=2, default=str)
    body = (
        _key_figures(result)
        + table(overview, id="table-overview")
        + "<details><summary>Spec as run (every default filled in)</summary>"
        + f"<pre id='spec-as-run'>{esc(spec_json)}</pre></details>"
        + "<details><summary>Package versions</summary>"
        + table(versions, id="table-versions") + "</details>"
        + "<details><summary>Stage timings</summary>"
        + table(seconds, id="table-timings", floatfmt="{:.1f}") + "</details>"
    )
    return Section("overview", "Overview", body)


# --- at-risk records --------------------------------------------------------------------------


def section_at_risk_map(result) -> Section:
    """Map of the records with at-risk records marked and M drawn around them."""
    spec, ar = result.spec, result.at_risk
    sens = result.at_risk_sensitivity
    ids = result.data.record_id[ar.at_risk]
    rule = ("no other record within M" if spec.model.k == 2
            else f"fewer than {spec.model.k - 1} other records within M")
    source = ("the spec's fixed M_m" if spec.model.M_m is not None else
              f"M = −log(ρ₀)/φ̂ with ρ₀ = {spec.model.rho0} and φ̂ the posterior median of φ "
              "in the unrestricted fit")
    sens_rows = pd.DataFrame([
        (k.replace("phi_q", "φ ") + "%", f"{v['phi_per_m']:.3g}", f"{v['M_m']:,.0f}",
         v["n_at_risk"]) for k, v in sens.items()
    ], columns=["quantile of φ", "φ (1/m)", "M (m)", "at-risk records"])
    fig = F.plot_record_map(_coords_m(result), ar.at_risk, ar.radius_m,
                            crs_name=result.data.gdf.crs.name)
    body = (
        f"<p>Rule: a record is at risk when it has {esc(rule)}; {esc(source)}: "
        f"M = {ar.radius_m:,.0f} m. {ar.n_at_risk} at-risk record(s), ids "
        f"<span id='at-risk-ids'>{esc(', '.join(map(str, ids))) or 'none'}</span>.</p>"
        + img(F.to_data_uri(fig), alt="map of records with at-risk records and M",
              id="fig-at-risk-map",
              caption="Projected coordinates (km). Red triangles: at-risk records; dashed "
                      "circles: radius M around each. No basemap (the page needs no network).")
        + "<p>Sensitivity of the at-risk set to φ (φ is weakly identified):</p>"
        + table(sens_rows, id="table-at-risk-sensitivity")
    )
    return Section("at-risk", "At-risk records", body)


# --- surfaces ---------------------------------------------------------------------------------


def _w_draws(fit, n_implicates: int) -> tuple[np.ndarray, np.ndarray] | None:
    post = getattr(getattr(fit, "idata", None), "posterior", None)
    if post is None or "phi" not in post:
        return None
    phi = post["phi"].transpose("chain", "draw").values.ravel()
    if "w" in post:
        w = post["w"].transpose("chain", "draw", ...).values
        return w.reshape(-1, w.shape[-1]), phi
    if getattr(fit, "effect_sampler", None) is None:
        return None
    # grid route: w exists for the implicates' draws (cached; no new draws are made)
    from synthgeo.synthesis.implicates import implicate_draw_index

    flat = implicate_draw_index(post.sizes["chain"], post.sizes["draw"], n_implicates)
    return fit.effects(flat), phi[flat]


def section_surfaces(result, *, n_cells: int = 80, max_draws: int = 200) -> Section | None:
    """Posterior mean surface of w, unrestricted vs restricted, on a grid over the data.

    Returns None when a fit has no posterior ``w``/``phi`` (an engine that does not recover
    the effects).
    """
    draws = {name: _w_draws(fit, result.spec.synthesis.n_implicates)
             for name, fit in result.fits.items()}
    if not draws or any(v is None for v in draws.values()):
        return None
    sites = result.data.sites
    coords = _coords_m(result)
    xs, ys, grid = grid_over(coords, n_cells=n_cells)
    surfaces = {
        name: posterior_mean_surface(sites.coords_m, w, phi, grid,
                                     max_draws=max_draws).reshape(len(ys), len(xs))
        for name, (w, phi) in draws.items()
    }
    fig = F.plot_surfaces(xs, ys, surfaces, coords, result.at_risk.at_risk)
    # the effect entering the data at the at-risk records' sites: D_ss w_s
    ar_sites = np.unique(sites.site_index[result.at_risk.at_risk])
    rows = []
    for s in ar_sites:
        recs = result.data.record_id[sites.site_index == s]
        row = {"record id(s)": ", ".join(map(str, recs))}
        for name, fit in result.fits.items():
            w, _ = draws[name]
            d = float(np.asarray(fit.scale)[s]) if getattr(fit, "scale", None) is not None else 1.0
            row[f"{name}: E[D·w] at site"] = float(np.mean(w[:, s]) * d) + 0.0  # no "-0"
        rows.append(row)
    effects = (table(pd.DataFrame(rows), id="table-at-risk-effects", floatfmt="{:.3f}")
               if rows else "<p>No at-risk records.</p>")
    body = (
        "<p>E[w(s) | y] on a grid over the records' extent, kriged from the posterior draws of "
        f"the site effects (each of up to {max_draws} evenly spaced draws: "
        "r₀(φ)ᵀR(φ)⁻¹w, then averaged; the exact posterior mean up to Monte Carlo error). "
        "One colour scale for both panels; circles mark the at-risk records. Unrestricted: "
        "an isolated record's effect follows its own residual (a spot or ring of colour "
        "around it). Restricted (differential smoothing): at γ = ∞ the at-risk site's effect "
        "is not informed by its record, so the surface there is its neighbourhood's level.</p>"
        + img(F.to_data_uri(fig), alt="posterior mean surfaces of w", id="fig-surfaces")
        + "<p>Spatial effect that enters the synthetic values at the at-risk sites "
          "(posterior mean of D·w; D = 0 at γ = ∞):</p>" + effects
    )
    return Section("surfaces", "Posterior mean surface of w: unrestricted vs restricted", body)


# --- histograms of the riskiest records ------------------------------------------------------


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
    kind, dim, tol = _first_measure(result)
    label = _measure_label(kind, tol)
    var = f"risk_{kind}"
    r = {m: res.per_record[var].sel({dim: tol}).values for m, res in result.risk.items()}
    pick = riskiest_records(r["unrestricted"], result.at_risk.at_risk)
    transform = spec.data.back_transform
    truth = _g(result.data.y, transform)
    panels = []
    for i in pick:
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
    body = (
        f"<p>The L = {spec.synthesis.n_implicates} synthetic values of the at-risk records "
        f"(up to 4) and of the other records with the highest unrestricted risk ({esc(label)}), "
        "on the scale a person knows. Red line: the true value; shaded: truth ± ε; dotted: "
        "truth·(1 ± p). Titles give the record's risk, unrestricted → restricted. The paper's "
        "Figures 3 and 5: unrestricted values pile up on the truth where the model leaks.</p>"
        + img(F.to_data_uri(fig), alt="histograms of synthetic values with the true value",
              id="fig-histograms")
    )
    return Section("histograms", "Synthetic values of the riskiest records", body)


# --- risk -------------------------------------------------------------------------------------


def section_risk(result) -> Section | None:
    """Risk by group (table and bars) and the distribution of per-record risk, both models."""
    if result.risk_summary is None or not result.risk:
        return None
    by_measure: dict[str, dict[str, np.ndarray]] = {}
    for kind, dim, tols in (("abs", "eps", result.spec.risk.eps), ("rel", "p", result.spec.risk.p)):
        for tol in tols:
            by_measure[_measure_label(kind, float(tol))] = {
                m: res.per_record[f"risk_{kind}"].sel({dim: float(tol)}).values
                for m, res in result.risk.items()
            }
    fig1 = F.plot_risk_by_group(result.risk_summary)
    fig2 = F.plot_risk_distribution(by_measure, result.at_risk.at_risk)
    body = (
        "<p>Per record, the share of implicates within the tolerance of the true value "
        "(back-transformed scale). Reduction = 1 − mean(restricted)/mean(unrestricted) within "
        "each group (negative: the restricted model is riskier); attack share = share of "
        "records whose implicate average lies within the tolerance.</p>"
        + table(result.risk_summary, id="table-risk")
        + img(F.to_data_uri(fig1), alt="risk by group", id="fig-risk-groups")
        + img(F.to_data_uri(fig2), alt="distribution of per-record risk", id="fig-risk-records")
    )
    return Section("risk", "Disclosure risk", body)


# --- utility ----------------------------------------------------------------------------------


def section_utility(result) -> Section | None:
    """Reiter (2003) table and its intervals against the confidential OLS fit."""
    if result.utility is None or len(result.utility) == 0:
        return None
    fig = F.plot_reiter_intervals(result.utility)
    body = (
        f"<p>Analyst's model <code>{esc(result.spec.formula)}</code> fitted by OLS to each "
        "implicate and combined with Reiter's (2003) rules for partially synthetic data "
        "(T_p = ū + b_m/m, ν_p = (m − 1)(1 + ū/(b_m/m))²), against the same model on the "
        "confidential data. CI overlap after Karr et al. (2006), unclamped (negative: the "
        "intervals do not meet); std_diff = (q̄ − q_orig)/se_orig.</p>"
        + table(result.utility, id="table-utility")
        + img(F.to_data_uri(fig), alt="Reiter intervals against the confidential fit",
              id="fig-utility",
              caption="Grey band: the confidential interval; bars: (1 − α) intervals; "
                      "circles: point estimates.")
    )
    return Section("utility", "Utility: Reiter (2003) combining rules vs the confidential fit",
                   body)


# --- convergence ------------------------------------------------------------------------------


def _sampling_row(result) -> str:
    """Describe the engine used (grid fits are not MCMC: no chains, tune or rank plots)."""
    s = result.spec.sampling
    if result.fits and all(f.engine.get("sampler") == "grid" for f in result.fits.values()):
        return "; ".join(f"{name}: {fit.describe()}" for name, fit in result.fits.items())
    return f"{s.chains} chains × ({s.tune} tune + {s.draws} draws), {s.sampler}"


def section_grid_diagnostics(result) -> Section | None:
    """Return the grid's own checks per fit (grid fits only; None otherwise)."""
    from synthgeo.inference.result import grid_diagnostics_table

    grid = grid_diagnostics_table(result.fits)
    if grid is None or len(grid) != len(result.fits):
        return None
    body = (
        "<p>Grid quadrature, not MCMC: the posterior of (range, nugget share) is integrated on "
        "a grid refined around its mass (midpoint rule), and the draws are independent. Checks: "
        "largest cell ≤ 0.2 of the mass, ≤ 1% of the mass on the refined box's edges, an "
        "importance ESS (Kish) ≥ half the exactly evaluated (range, nugget) points, and ESS of "
        "the draws ≥ 100 per chain; the draws are not chains, so no R-hat or rank plots.</p>"
        + table(grid, id="table-grid-diagnostics")
    )
    return Section("convergence", "Posterior checks (grid quadrature)", body)


def section_convergence(result) -> Section | None:
    """R-hat, ESS and divergences per fit, with ArviZ rank plots of the sampled parameters."""
    if not result.fits:
        return None
    grid = section_grid_diagnostics(result)
    if grid is not None:
        return grid
    conv = summary_tables(result)["convergence"]
    idatas = {name: fit.idata for name, fit in result.fits.items()}
    var_names = [v for v in SAMPLED_PARAMETERS
                 if all(v in idata.posterior for idata in idatas.values())]
    problems = "".join(
        f"<p class='warn'>{esc(name)}: {esc('; '.join(fit.convergence.problems))}</p>"
        for name, fit in result.fits.items() if not fit.convergence.passed
    )
    body = (
        "<p>Thresholds: R-hat ≤ 1.01 (rank-normalised, Vehtari et al. 2021), bulk and tail "
        "ESS ≥ 100 per chain, no divergent transitions.</p>" + problems
        + table(conv, id="table-convergence")
    )
    if var_names:
        fig = F.plot_rank(idatas, var_names)
        body += img(F.to_data_uri(fig), alt="ArviZ rank plots", id="fig-rank",
                    caption="Rank plots: each chain's ranks should be uniform (bars near the "
                            "dashed line); a chain stuck high or low shows as a slope.")
    return Section("convergence", "Convergence (ArviZ)", body)


# --- location diagnostics (issue 5 wires ReleaseResult.locations) ----------------------------


def _get(obj: Any, key: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _as_frame(obj: Any, value_name: str) -> pd.DataFrame | None:
    if obj is None:
        return None
    if isinstance(obj, pd.DataFrame):
        return obj.reset_index(drop=isinstance(obj.index, pd.RangeIndex))
    if isinstance(obj, pd.Series):
        return obj.rename_axis("item").reset_index(name=value_name)
    if isinstance(obj, Mapping):
        return pd.DataFrame(list(obj.items()), columns=["item", value_name])
    return pd.DataFrame(obj)


def locations_for_report(locations: Any) -> Any:
    """Turn :class:`synthgeo.locations.LocationDiagnostics` into :func:`section_locations`' keys.

    Anything else (a mapping, None) is returned unchanged.
    """
    if locations is None or not hasattr(locations, "spatial_k") or not hasattr(
            locations, "outliers"):
        return locations
    from synthgeo.locations.diagnostics import report_tables

    sk, ol = locations.spatial_k, locations.outliers
    tables = report_tables(locations)
    pol = ol.policy
    policy = {"k": pol.k, "r_max_m": pol.r_max_m,
              "max_suppressed_share": pol.max_suppressed_share,
              "max_unit_suppressed_share": pol.max_unit_suppressed_share,
              "outcome": "passes" if not ol.refused else "would refuse"}
    return {
        "spatial_k": sk.spatial_k, "radius_m": sk.radius_m, "k": sk.k,
        "k_max": getattr(sk, "k_max", None),
        "summary": dict(zip(tables["overview"]["item"], tables["overview"]["value"])),
        "worst_offenders": tables["worst_offenders"],
        "outlier_policy": tables["labels"],
        "policy": policy,
    }


def section_locations(locations: Any) -> Section | None:
    """Spatial-k histogram and summary, worst offenders, and the outlier-policy table.

    Parameters
    ----------
    locations : mapping or object, optional
        ``ReleaseResult.locations`` (issue 5); ``None`` skips the section. Keys (or
        attributes), each optional:

        - ``spatial_k`` : array-like of int, shape (n_records,), or a DataFrame with a
          ``spatial_k`` column — records within ``radius_m``, itself included;
        - ``radius_m`` : float, metres; ``k`` : int threshold; ``k_max`` : int count cap;
        - ``summary`` : mapping of statistic to value (computed from ``spatial_k`` if absent:
          count, min, median, 5th percentile, number and share below k);
        - ``worst_offenders`` : DataFrame (the first 20 rows are shown);
        - ``outlier_policy`` : DataFrame or mapping of label to count (ok / merge / generalise
          / suppress), or ``outlier_labels`` : array-like of labels per record (counted);
        - ``policy`` : mapping of policy parameters (k, r_max_m, caps) and their outcome.

    Returns
    -------
    Section or None
    """
    locations = locations_for_report(locations)
    if locations is None:
        return None
    parts = []
    sk = _get(locations, "spatial_k")
    if isinstance(sk, pd.DataFrame):
        sk = sk["spatial_k"]
    k, radius_m, k_max = (_get(locations, n) for n in ("k", "radius_m", "k_max"))
    summary = _get(locations, "summary")
    if sk is not None:
        sk = np.asarray(sk, dtype=int)
        if summary is None and sk.size:
            summary = {"records": int(sk.size), "min": int(sk.min()),
                       "median": float(np.median(sk)), "5th percentile": float(
                           np.percentile(sk, 5))}
            if k is not None:
                below = int(np.sum(sk < k))
                summary |= {f"records below k = {k}": below, "share below k": below / sk.size}
        fig = F.plot_spatial_k_histogram(sk, k=k, radius_m=radius_m, k_max=k_max)
        parts.append(img(F.to_data_uri(fig), alt="spatial k histogram", id="fig-spatial-k",
                         caption="Records at each spatial k. Red: below the threshold k; for "
                                 "exact locations most records are often alone, and their "
                                 "protection then rests on the synthesis."))
    if summary is not None:
        parts.append(table(_as_frame(summary, "value"), id="table-spatial-k"))
    worst = _get(locations, "worst_offenders")
    if worst is not None:
        parts.append("<p>Worst offenders (lowest spatial k first):</p>"
                     + table(_as_frame(worst, "value").head(20), id="table-worst-offenders"))
    policy_table = _get(locations, "outlier_policy")
    labels = _get(locations, "outlier_labels")
    if policy_table is None and labels is not None:
        policy_table = pd.Series(np.asarray(labels)).value_counts().rename_axis("label")
        policy_table = policy_table.reset_index(name="records")
    if policy_table is not None:
        parts.append("<p>Outlier policy (labels for the released locations; `run` moves or "
                     "drops no location):</p>"
                     + table(_as_frame(policy_table, "records"), id="table-outlier-policy"))
    params = _get(locations, "policy")
    if params is not None:
        parts.append(table(_as_frame(params, "value"), id="table-outlier-parameters"))
    if not parts:
        return None
    head = (f"<p>Spatial k within {radius_m:,.0f} m" if radius_m else "<p>Spatial k") + (
        f", threshold k = {k}" if k is not None else "") + ".</p>"
    return Section("locations", "Location diagnostics: spatial k and outlier policy",
                   head + "".join(parts))
