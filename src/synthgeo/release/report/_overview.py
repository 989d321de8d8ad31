"""The report's overview: the key-figures box, the run's facts, and the CLI's summary tables."""

from __future__ import annotations

import json

import pandas as pd

from synthgeo._versions import package_versions
from synthgeo.release.report._common import crs_name, first_measure, measure_label
from synthgeo.release.report._html import Section, render

__all__ = ["summary_tables", "key_figures", "section_overview", "input_rows", "IN_MEMORY"]

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
    hash_label, digest = input_rows(result)[1]
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
            (hash_label, f"{digest[:16]}…"),
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


def key_figures(result) -> pd.DataFrame:
    """Return the key-figures box of the report as one table.

    The box (template ``report/key_figures.html.j2``) shows this table row by row; to change
    the box, change this table.

    Parameters
    ----------
    result : ReleaseResult

    Returns
    -------
    pandas.DataFrame
        Columns ``item`` (label), ``value`` (text as shown) and ``status`` (``"ok"`` or
        ``"warn"`` to mark the value, ``""`` for none).
    """
    kind, _, tol = first_measure(result)
    label = measure_label(kind, tol)
    rs = result.risk_summary
    rows = [("records (N)", f"{result.data.n_records:,}", ""),
            (f"at-risk records (M = {result.M_m:,.0f} m)", f"{result.at_risk.n_at_risk}", "")]
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
                     f"({'—' if pd.isna(red) else f'{red:.0%} reduction'})", ""))
        rows.append((f"implicate-average attack {label}, {shown} records",
                     f"{r['attack_share_unrestricted']:.1%} → "
                     f"{r['attack_share_restricted']:.1%}", ""))
    util = result.utility[result.utility["model"] == "restricted"]
    if len(util):
        rows.append(("restricted model: smallest CI overlap / largest |std. difference|",
                     f"{util['ci_overlap'].min():.2f} / {util['std_diff'].abs().max():.2f}", ""))
    for name, fit in result.fits.items():
        c = fit.convergence
        rows.append((f"convergence, {name}",
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
    return pd.DataFrame(rows, columns=["item", "value"])


def _sampling_row(result) -> str:
    """Describe the engine used (grid fits are not MCMC: no chains, tune or rank plots)."""
    s = result.spec.sampling
    if result.fits and all(f.engine.get("sampler") == "grid" for f in result.fits.values()):
        return "; ".join(f"{name}: {fit.describe()}" for name, fit in result.fits.items())
    return f"{s.chains} chains × ({s.tune} tune + {s.draws} draws), {s.sampler}"


def section_overview(result) -> Section:
    """Build the overview: key figures, data, N, CRS, spec, seed, versions, hash, timings."""
    body = render(
        "overview.html.j2",
        key_figures=key_figures(result).to_dict("records"),
        overview=_overview_table(result),
        spec_json=json.dumps(result.spec.to_dict(), indent=2, default=str),
        versions=pd.DataFrame(list(package_versions().items()), columns=["package", "version"]),
        timings=pd.DataFrame(list(result.seconds.items()), columns=["stage", "seconds"]),
    )
    return Section("overview", "Overview", body)
