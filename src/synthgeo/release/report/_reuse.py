"""A drawn release's report reuses the figures of the records alone from the earlier report.

``synthgeo draw`` (no refit) writes a release of the same records, with the same spec and the
same stored posterior as the release it draws from: its at-risk map (records, at-risk set, M)
and its spatial-k histogram are the earlier report's, figure for figure. Drawing them again
cost ~0.3 s of the draw's CPU (issue 27's 5-second goal), so the new report takes the earlier
report's PNGs instead, when they are bound to be the same bytes:

- the earlier release.json's ``versions`` (synthgeo, matplotlib, ... : the code that drew
  them) are this process's own (:func:`synthgeo._versions.package_versions`);
- the at-risk map: its M (``at_risk.M_m``), count of at-risk records and projected CRS are
  the new release's (the draw checked the records against the earlier release's SHA-256);
- the spatial-k histogram: its ``locations.spatial_k`` block is the new release's.

Anything else (a refit, another version, a figure missing or altered, a file that cannot be
read) draws the figure as usual. The earlier report is confidential and stays where it is;
only its two images are copied into the new one (itself confidential).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from synthgeo._versions import package_versions
from synthgeo.io.jsonable import dumps

__all__ = ["AT_RISK_MAP", "SPATIAL_K", "earlier_figures"]

#: The report's figure ids (``<img id=...>``) a draw may reuse.
AT_RISK_MAP = "fig-at-risk-map"
SPATIAL_K = "fig-spatial-k"


def _img(html: str, fig_id: str) -> str | None:
    """Return the data URI of ``<img id='fig_id'>`` in ``html``, or None."""
    m = re.search(r"<img id='" + re.escape(fig_id) + r"' src='(data:image/png;base64,"
                  r"[A-Za-z0-9+/=]+)'", html)
    return m.group(1) if m else None


def _same(a, b) -> bool:
    """Whether two release.json values are equal as written (JSON round trip)."""
    return json.loads(dumps(a)) == json.loads(dumps(b))


def earlier_figures(result) -> dict[str, str]:
    """Return ``{figure id: data URI}`` of the earlier report's figures this report may reuse.

    Parameters
    ----------
    result : ReleaseResult
        A drawn release (``result.synthesiser.earlier_folder`` set); any other result gets
        an empty dict.

    Returns
    -------
    dict of str to str
        Possibly empty; ids :data:`AT_RISK_MAP` and :data:`SPATIAL_K`.

    Examples
    --------
    >>> earlier_figures(object())
    {}
    """
    folder = getattr(getattr(result, "synthesiser", None), "earlier_folder", None)
    if folder is None:
        return {}
    try:
        record = json.loads((Path(folder) / "release.json").read_text(encoding="utf-8"))
        html = (Path(folder) / "report.html").read_text(encoding="utf-8")
    except (OSError, ValueError):
        return {}
    if not isinstance(record, dict) or record.get("versions") != package_versions():
        return {}
    out = {}
    ar, new = record.get("at_risk") or {}, getattr(result, "at_risk", None)
    crs = getattr(getattr(getattr(result, "data", None), "gdf", None), "crs", None)
    if (new is not None and crs is not None and ar.get("M_m") == float(new.radius_m)
            and ar.get("n_at_risk") == int(new.n_at_risk)
            and (record.get("crs") or {}).get("projected") == crs.name):
        uri = _img(html, AT_RISK_MAP)
        if uri is not None:
            out[AT_RISK_MAP] = uri
    locations = getattr(result, "locations", None)
    earlier_k = (record.get("locations") or {}).get("spatial_k")
    if locations is not None and earlier_k is not None:
        try:
            same = _same(earlier_k, locations.summary().get("spatial_k"))
        except (TypeError, ValueError, AttributeError):
            same = False
        uri = _img(html, SPATIAL_K) if same else None
        if uri is not None:
            out[SPATIAL_K] = uri
    return out
