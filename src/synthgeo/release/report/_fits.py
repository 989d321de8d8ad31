"""The report's sections on the fits: utility (Reiter 2003) and convergence (ArviZ)."""

from __future__ import annotations

from synthgeo.release.report import _figures as F
from synthgeo.release.report._common import NOT_FITTED, fitted_models
from synthgeo.release.report._html import Section, render
from synthgeo.release.report._overview import summary_tables

__all__ = ["section_utility", "section_convergence", "SAMPLED_PARAMETERS"]

#: Parameters sampled by NUTS whose rank plots the report shows (when present).
SAMPLED_PARAMETERS = ("sigma2", "nugget", "range")


def section_utility(result) -> Section | None:
    """Reiter (2003) table and its intervals against the confidential OLS fit."""
    if result.utility is None or len(result.utility) == 0:
        return None
    fig = F.plot_reiter_intervals(result.utility)
    body = render("utility.html.j2", formula=result.spec.formula, utility=result.utility,
                  intervals_uri=F.to_data_uri(fig))
    return Section("utility", "Utility: Reiter (2003) combining rules vs the confidential fit",
                   body)


def section_grid_diagnostics(result) -> Section | None:
    """Return the grid's own checks per fit (grid fits only; None otherwise)."""
    from synthgeo.inference.result import grid_diagnostics_table

    fits = fitted_models(result)
    grid = grid_diagnostics_table(fits)
    if grid is None or len(grid) != len(fits):
        return None
    failures = [(name, fit.convergence.problems) for name, fit in fits.items()
                if not fit.convergence.passed]
    failures += [(name, [b["message"] for b in fit.engine["posterior_at_prior_bound"]])
                 for name, fit in fits.items() if fit.engine.get("posterior_at_prior_bound")]
    body = render("grid_checks.html.j2", grid=grid, failures=failures,
                  not_fitted=NOT_FITTED if len(fits) < len(result.fits) else None)
    return Section("convergence", "Posterior checks (grid quadrature)", body)


def section_convergence(result) -> Section | None:
    """R-hat, ESS and divergences per fit, with ArviZ rank plots of the sampled parameters."""
    if not result.fits:
        return None
    grid = section_grid_diagnostics(result)
    if grid is not None:
        return grid
    fits = fitted_models(result)
    idatas = {name: fit.idata for name, fit in fits.items()}
    var_names = [v for v in SAMPLED_PARAMETERS
                 if all(v in idata.posterior for idata in idatas.values())]
    failures = [(name, fit.convergence.problems) for name, fit in fits.items()
                if not fit.convergence.passed]
    rank_uri = F.to_data_uri(F.plot_rank(idatas, var_names)) if var_names else None
    body = render("convergence.html.j2", failures=failures, rank_uri=rank_uri,
                  convergence=summary_tables(result)["convergence"],
                  not_fitted=NOT_FITTED if len(fits) < len(result.fits) else None)
    return Section("convergence", "Convergence (ArviZ)", body)
