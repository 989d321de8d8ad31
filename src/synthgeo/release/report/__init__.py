"""The review board's report: one self-contained HTML page, figures embedded as PNG.

The report shows true values and figures computed from them, so it is written beside
``release/``, never inside it, and says so on its first line. Each section is a function that
returns ``None`` when its stage did not run; the page then lists it as skipped. The HTML is
jinja2 templates (``synthgeo/release/templates/report/``, autoescaped); the section functions
only gather tables and figures. See docs/release.md.
"""

from __future__ import annotations

from synthgeo.release.report._fits import section_convergence, section_utility
from synthgeo.release.report._locations import section_locations
from synthgeo.release.report._overview import key_figures, section_overview, summary_tables
from synthgeo.release.report._render import SECTIONS, render_report
from synthgeo.release.report._risk_sections import (
    riskiest_records,
    section_histograms,
    section_neighbours,
    section_risk,
)
from synthgeo.release.report._spatial import section_at_risk_map, section_surfaces
from synthgeo.release.report._surface import grid_over, posterior_mean_surface

__all__ = [
    "render_report", "summary_tables", "key_figures", "SECTIONS", "section_overview",
    "section_at_risk_map", "section_surfaces", "section_histograms", "section_risk",
    "section_neighbours",
    "section_utility", "section_convergence", "section_locations", "riskiest_records",
    "grid_over", "posterior_mean_surface",
]
