"""The report's spatial sections: the at-risk map and the posterior mean surfaces of w.

Sections read only what :class:`synthgeo.pipeline.ReleaseResult` exposes (posterior ``w`` and
``phi`` for the surfaces), not the model's internals.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from synthgeo.release.report import _figures as F
from synthgeo.release.report._common import NOT_FITTED, coords_m, fitted_models
from synthgeo.release.report._html import Section, render
from synthgeo.release.report._reuse import AT_RISK_MAP
from synthgeo.release.report._surface import grid_over, posterior_mean_surface

__all__ = ["section_at_risk_map", "section_surfaces"]


def section_at_risk_map(result) -> Section:
    """Map of the records with at-risk records marked and M drawn around them."""
    spec, ar = result.spec, result.at_risk
    rule = ("no other record within M" if spec.model.k == 2
            else f"fewer than {spec.model.k - 1} other records within M")
    source = ("the spec's fixed M_m" if spec.model.M_m is not None else
              f"M = −log(ρ₀)/φ̂ with ρ₀ = {spec.model.rho0} and φ̂ the posterior median of φ "
              "in the unrestricted fit")
    sensitivity = pd.DataFrame([
        (k.replace("phi_q", "φ ") + "%", f"{v['phi_per_m']:.3g}", f"{v['M_m']:,.0f}",
         v["n_at_risk"]) for k, v in result.at_risk_sensitivity.items()
    ], columns=["quantile of φ", "φ (1/m)", "M (m)", "at-risk records"])
    map_uri = F.reused(AT_RISK_MAP)  # a draw: the earlier report's, the same bytes (_reuse)
    if map_uri is None:
        map_uri = F.to_data_uri(F.plot_record_map(coords_m(result), ar.at_risk, ar.radius_m,
                                                  crs_name=result.data.gdf.crs.name))
    body = render("at_risk.html.j2", rule=rule, source=source, M_m=f"{ar.radius_m:,.0f}",
                  n_at_risk=ar.n_at_risk, ids=[str(i) for i in result.data.record_id[ar.at_risk]],
                  map_uri=map_uri, sensitivity=sensitivity)
    return Section("at-risk", "At-risk records", body)


def _has_w_draws(fit) -> bool:
    """Whether the fit's posterior has φ and w, or w can be drawn (:func:`_w_draws`)."""
    post = getattr(fit, "posterior", None)
    return (post is not None and "phi" in post
            and ("w" in post or getattr(fit, "effect_sampler", None) is not None))


def _w_draws(fit, n_implicates: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Posterior draws of the site effects w, shape (n_draws, n_sites), and of φ; None if absent."""
    if not _has_w_draws(fit):
        return None
    post = fit.posterior
    phi = post["phi"].transpose("chain", "draw").values.ravel()
    if "w" in post:
        w = post["w"].transpose("chain", "draw", ...).values
        return w.reshape(-1, w.shape[-1]), phi
    # grid route: w exists for the implicates' draws (cached; no new draws are made)
    from synthgeo.synthesis.implicates import implicate_draw_index

    flat = implicate_draw_index(post.sizes["chain"], post.sizes["draw"], n_implicates)
    return fit.effects(flat), phi[flat]


def _at_risk_sites(result) -> np.ndarray:
    """Return the sites of the at-risk records (sorted, each once)."""
    return np.unique(result.data.sites.site_index[result.at_risk.at_risk])


def _at_risk_effects(result, means: dict[str, np.ndarray]) -> pd.DataFrame | None:
    """Posterior mean of D·w at each at-risk site, per model (D = 0 at γ = ∞); None if none.

    ``means``: per fit shown (section_surfaces), the posterior mean of w at each site of
    :func:`_at_risk_sites`.
    """
    sites = result.data.sites
    rows = []
    for i, s in enumerate(_at_risk_sites(result)):
        recs = result.data.record_id[sites.site_index == s]
        row = {"record id(s)": ", ".join(map(str, recs))}
        for name, mean_w in means.items():
            fit = result.fits[name]
            d = float(np.asarray(fit.scale)[s]) if getattr(fit, "scale", None) is not None else 1.0
            row[f"{name}: E[D·w] at site"] = float(mean_w[i] * d) + 0.0  # no "-0"
        rows.append(row)
    return pd.DataFrame(rows) if rows else None


def section_surfaces(result, *, n_cells: int = 80, max_draws: int = 200) -> Section | None:
    """Posterior mean surface of w, unrestricted vs restricted, on a grid over the data.

    Returns None when a fit has no posterior ``w``/``phi`` (an engine that does not recover
    the effects). A ``synthgeo draw`` release that refitted nothing shows a note instead: its
    fits are the stored ones of the release it was drawn from, whose report holds the
    surfaces (kriging them again took most of a draw's report time).
    """
    drawn = getattr(getattr(result, "synthesiser", None), "drawn_from", None)
    if drawn and not drawn.get("refit"):
        body = render("surfaces_drawn.html.j2", release_uid=drawn.get("release_uid"),
                      register_id=drawn.get("register_id"))
        return Section("surfaces", "Posterior mean surface of w: as in the release drawn from",
                       body)
    fits = fitted_models(result)
    if not fits or not all(_has_w_draws(fit) for fit in fits.values()):
        return None
    coords = coords_m(result)
    xs, ys, grid = grid_over(coords, n_cells=n_cells)
    at_risk = _at_risk_sites(result)
    surfaces, means = {}, {}
    for name, fit in fits.items():  # one fit's draws of w (L, n_sites) in memory at a time
        w, phi = _w_draws(fit, result.spec.synthesis.n_implicates)
        surfaces[name] = posterior_mean_surface(result.data.sites.coords_m, w, phi, grid,
                                                max_draws=max_draws).reshape(len(ys), len(xs))
        means[name] = np.array([np.mean(w[:, s]) for s in at_risk])
        del w
    fig = F.plot_surfaces(xs, ys, surfaces, coords, result.at_risk.at_risk)
    if len(fits) < len(result.fits):  # cross-fitted: the unrestricted surface only, no D
        body = render("surfaces.html.j2", max_draws=max_draws, surfaces_uri=F.to_data_uri(fig),
                      effects=None, not_fitted=NOT_FITTED)
        return Section("surfaces", "Posterior mean surface of w: unrestricted (no restricted "
                       "fit)", body)
    body = render("surfaces.html.j2", max_draws=max_draws, surfaces_uri=F.to_data_uri(fig),
                  effects=_at_risk_effects(result, means), not_fitted=None)
    return Section("surfaces", "Posterior mean surface of w: unrestricted vs restricted", body)
