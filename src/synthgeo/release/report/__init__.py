"""The review board's report: one self-contained HTML page, figures embedded as PNG.

The report shows true values and figures computed from them, so it is written beside
``release/``, never inside it, and says so on its first line. Each section is a function that
returns ``None`` when its stage did not run; the page then lists it as skipped.
"""

from __future__ import annotations

from synthgeo.release.report._render import SECTIONS, render_report
from synthgeo.release.report._sections import (
    riskiest_records,
    section_at_risk_map,
    section_convergence,
    section_histograms,
    section_locations,
    section_overview,
    section_risk,
    section_surfaces,
    section_utility,
    summary_tables,
)
from synthgeo.release.report._surface import grid_over, posterior_mean_surface

__all__ = [
    "render_report", "summary_tables", "SECTIONS", "section_overview", "section_at_risk_map",
    "section_surfaces", "section_histograms", "section_risk", "section_utility",
    "section_convergence", "section_locations", "riskiest_records", "grid_over",
    "posterior_mean_surface",
]
