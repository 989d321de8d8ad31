"""Assemble the report page from its sections."""

from __future__ import annotations

from collections.abc import Callable

from synthgeo._progress import progress_iter
from synthgeo.release.report import _sections as S
from synthgeo.release.report._html import esc, page

__all__ = ["render_report", "SECTIONS"]

#: (title shown when skipped, section function of the result), in page order.
SECTIONS: tuple[tuple[str, Callable], ...] = (
    ("Overview", S.section_overview),
    ("At-risk records", S.section_at_risk_map),
    ("Posterior mean surface of w", S.section_surfaces),
    ("Synthetic values of the riskiest records", S.section_histograms),
    ("Disclosure risk", S.section_risk),
    ("Utility", S.section_utility),
    ("Convergence", S.section_convergence),
    ("Location diagnostics (spatial k, outlier policy)",
     lambda result: S.section_locations(getattr(result, "locations", None))),
)


def render_report(result, *, progressbar: bool = False) -> str:
    """Render the report page.

    Parameters
    ----------
    result : ReleaseResult
        From :func:`synthgeo.pipeline.run_release`.
    progressbar : bool, default=False
        Show a progress bar over the sections on stderr.

    Returns
    -------
    str
        A complete HTML document with every figure embedded (no external resources). Its
        first line is the confidential marker.
    """
    sections, skipped = [], []
    for title, fn in progress_iter(SECTIONS, enabled=progressbar, desc="report",
                                   unit="section"):
        sec = fn(result)
        if sec is None:
            skipped.append(title)
        else:
            sections.append(sec)
    spec = result.spec
    name = spec.source.name if spec.source else "spec"
    subtitle = (f"Spec <code>{esc(spec.source)}</code>; {result.data.n_records} records; "
                f"L = {spec.synthesis.n_implicates} implicates of the restricted model.")
    failed = [name for name, fit in result.fits.items() if not fit.convergence.passed]
    if failed:
        subtitle += (f"</p><p class='conf' id='preview-warning'>PREVIEW ONLY — MCMC did not "
                     f"converge ({esc(', '.join(failed))}; see Convergence). This run went on "
                     "because <code>on_convergence_failure = \"warn\"</code>; its files must not "
                     "be released.")
    return page(title=f"synthgeo report: {name}", subtitle=subtitle, sections=sections,
                skipped=skipped)
