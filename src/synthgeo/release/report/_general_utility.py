"""The report's general-utility section: pMSE against the paired null, with the region map."""

from __future__ import annotations

import pandas as pd

from synthgeo.release.report import _figures as F
from synthgeo.release.report._common import coords_m
from synthgeo.release.report._html import Section, render

__all__ = ["section_general_utility"]


def section_general_utility(result) -> Section | None:
    """Return the section: pMSE ratio, S_pMSE, SPECKS, per variable, the per-region map.

    Returns None when the stage did not run (``result.general_utility`` absent).
    """
    g = getattr(result, "general_utility", None)
    if g is None:
        return None
    regions = g.by_region()
    map_uri = (F.to_data_uri(F.plot_pmse_regions(regions, coords_m(result)))
               if len(regions) else None)
    pooled = g.pooled()
    by_variable = pd.concat([t.assign(model=m) for m, t in g.by_variable.items()],
                            ignore_index=True)[["model", "variable", "synthesized", "pmse",
                                                "null_mean", "ratio", "s_pmse", "specks"]]
    spread = (g.by_implicate().groupby("model", sort=False)["ratio"]
              .agg(["min", "median", "max"]).reset_index()
              .rename(columns={"min": "ratio min", "median": "ratio median", "max": "ratio max"}))
    body = render("general_utility.html.j2", settings=g.settings, pooled=pooled,
                  spread=spread, by_variable=by_variable, map_uri=map_uri,
                  regions=regions)
    return Section("general-utility", "General utility: pMSE against the paired null", body)
