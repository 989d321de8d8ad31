"""Assemble the report page from its sections."""

from __future__ import annotations

from collections.abc import Callable

from synthgeo._progress import progress_iter
from synthgeo.pipeline import MODELS
from synthgeo.pipeline.released import released_label_of
from synthgeo.pipeline.responses import SequentialResult
from synthgeo.pipeline.result import verdicts
from synthgeo.release.report._figures import reusing
from synthgeo.release.report._fits import section_convergence, section_utility
from synthgeo.release.report._general_utility import section_general_utility
from synthgeo.release.report._html import page
from synthgeo.release.report._locations import section_locations
from synthgeo.release.report._overview import section_overview
from synthgeo.release.report._reuse import earlier_figures
from synthgeo.release.report._risk_sections import (
    section_detector,
    section_detector_several,
    section_histograms,
    section_neighbours,
    section_neighbours_several,
    section_protection,
    section_risk,
)
from synthgeo.release.report._sequential import section_key_figures, section_responses
from synthgeo.release.report._spatial import section_at_risk_map, section_surfaces

__all__ = ["render_report", "SECTIONS", "SEQUENTIAL_SECTIONS"]

_LOCATIONS = ("Location diagnostics (spatial k, outlier policy)",
              lambda result: section_locations(getattr(result, "locations", None)))

#: (title shown when skipped, or None: not listed; section function of the result), in page
#: order.
SECTIONS: tuple[tuple[str, Callable], ...] = (
    ("Overview", section_overview),
    ("At-risk records", section_at_risk_map),
    ("Posterior mean surface of w", section_surfaces),
    ("Synthetic values of selected records", section_histograms),
    ("Disclosure risk", section_risk),
    (None, section_protection),  # only under protect = "targets": not listed as skipped
    ("Neighbour check and repeated releases", section_neighbours),
    ("Can a protected record be told apart?", section_detector),
    ("Utility", section_utility),
    ("General utility (pMSE)", section_general_utility),
    ("Convergence", section_convergence),
    _LOCATIONS,
)

#: The sections of a release of several responses (``[[data.responses]]``).
SEQUENTIAL_SECTIONS: tuple[tuple[str, Callable], ...] = (
    ("Key figures", section_key_figures),
    ("Responses: rates by area, risk, utility", section_responses),
    (None, section_protection),  # only under protect = "targets": not listed as skipped
    ("Neighbour check, per response", section_neighbours_several),
    ("Can a protected record be told apart? Per response", section_detector_several),
    ("General utility (pMSE)", section_general_utility),
    _LOCATIONS,
)


def render_report(result, *, progressbar: bool = False, signing: str | None = None) -> str:
    """Render the report page.

    Parameters
    ----------
    result : ReleaseResult or SequentialResult
        From :func:`synthgeo.pipeline.run_release` (:data:`SECTIONS`, or
        :data:`SEQUENTIAL_SECTIONS` for several responses).
    progressbar : bool, default=False
        Show a progress bar over the sections on stderr.
    signing : str, optional
        Whether release.json is signed and registered, in words (the writer's
        :func:`synthgeo.release.writer.signing_text`), shown under the heading.

    Returns
    -------
    str
        A complete HTML document with every figure embedded (no external resources). Its
        first line is the confidential marker. Every value shown (ids, column names, captions,
        the spec's path) is HTML-escaped by the templates (docs/release.md).
    """
    several = isinstance(result, SequentialResult)
    sections, skipped = [], []
    # a draw reuses the earlier report's figures of the records alone (report/_reuse.py)
    with reusing(earlier_figures(result)):
        for title, fn in progress_iter(SEQUENTIAL_SECTIONS if several else SECTIONS,
                                       enabled=progressbar, desc="report",
                                       unit="section"):
            sec = fn(result)
            if sec is None:
                if title is not None:
                    skipped.append(title)
            else:
                sections.append(sec)
    spec = result.spec
    name = spec.source.name if spec.source else "spec"
    failed = ([f"{r.name} {m}" for r in result.responses if r.family == "gaussian"
               for m in MODELS if not r.fits[m].convergence.passed] if several else
              [name for name, fit in result.fits.items() if not fit.convergence.passed])
    verdict_failed = [k for k, v in verdicts(result).items() if v == "FAIL"]
    title = f"synthgeo report: {name}" + (
        f" — FAIL ({', '.join(verdict_failed)})" if verdict_failed else "")
    return page(title=title, sections=sections, skipped=skipped,
                source=spec.source, n_records=result.data.n_records,
                n_implicates=spec.synthesis.n_implicates, failed=failed,
                verdict_failed=verdict_failed,
                cross_fit=spec.synthesis.predictive == "cross_fit", signing=signing,
                released_label=released_label_of(result))
