"""Small helpers shared by the report's sections (no HTML here)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["coords_m", "first_measure", "measure_label", "crs_name"]


def coords_m(result) -> np.ndarray:
    """Return the records' projected coordinates, metres, shape (n_records, 2)."""
    return result.data.sites.coords_m[result.data.sites.site_index]


def first_measure(result) -> tuple[str, str, float]:
    """(kind, dim, tolerance) of the headline risk measure: first relative, else absolute."""
    spec = result.spec
    if spec.risk.p:
        return "rel", "p", float(spec.risk.p[0])
    return "abs", "eps", float(spec.risk.eps[0])


def measure_label(kind: str, tol: float) -> str:
    """Return the risk table's label of a measure, e.g. ``"within 10%"``."""
    from synthgeo.risk.within_eps import _label

    return _label(kind, tol)


def crs_name(crs: Any) -> str:
    """Return a CRS's name with its EPSG code, e.g. ``"WGS 84 (EPSG:4326)"``; "—" for None."""
    if crs is None:
        return "—"
    try:
        from pyproj import CRS

        c = CRS.from_user_input(crs)
        epsg = c.to_epsg()
        return c.name + (f" (EPSG:{epsg})" if epsg else "")
    except Exception:  # noqa: BLE001 - a label only; show what we have
        return str(crs)[:80]


#: What a cross-fitted release's report says in place of a restricted fit.
NOT_FITTED = ("not fitted: the released implicates are cross-fitted, every record drawn from "
              "the unrestricted fit's leave-out predictive")


def fitted_models(result) -> dict:
    """Return the fits a report shows, by model name.

    A cross-fitted release (``[synthesis] predictive = "cross_fit"``) fits no restricted
    model: its ``fits["restricted"]`` is the unrestricted fit, reused, and is left out here, so
    that no table or figure shows the unrestricted posterior under the restricted's name
    (new-user trial 2026-12-07).
    """
    fits = dict(result.fits)
    if (result.spec.synthesis.predictive == "cross_fit"
            and fits.get("restricted") is fits.get("unrestricted")):
        fits.pop("restricted", None)
    return fits
