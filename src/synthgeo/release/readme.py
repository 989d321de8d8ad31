"""The data users' README written into ``release/`` (publishable: no confidential value).

It says what is synthetic and what is not, names the released files, and shows how to analyse
multiply-imputed partially synthetic data with Reiter's (2003) rules, in Python and in R. It
states neither M nor the number of at-risk records (they would tell an attacker which records
were smoothed), nor anything computed from the true values; the combined estimates it quotes
come from the synthetic implicates alone. No timestamp: same spec and seed, same bytes.

The text is the template ``synthgeo/release/templates/readme.md.j2`` (see docs/release.md);
this module only gathers the values it shows.
"""

from __future__ import annotations

from typing import Any

__all__ = ["data_user_readme", "csv_name"]

#: The README's template, in ``synthgeo/release/templates/``.
README_TEMPLATE = "readme.md.j2"


def _smoothing_words(spec) -> str:
    """Say in words what the released model did to the spatial effect at isolated records."""
    m = spec.model
    if m.gamma == "inf":
        if getattr(m, "at_risk_effect", "zero") == "kriged":
            return "replaced by the level predicted from the surrounding records"
        return "removed"
    if m.gamma == "auto":
        return "shrunk until it is no larger than the noise"
    return f"shrunk towards zero (gamma = {m.gamma})"


def _smoothing_ran(result) -> bool:
    """Whether the released model smoothed any site (D < 1 somewhere), from the fit itself."""
    import numpy as np

    fit = result.fits.get("restricted")
    return fit is not None and bool(np.any(np.asarray(fit.scale) < 1))


def csv_name(implicate: int, n_implicates: int) -> str:
    """File name of one implicate's CSV, e.g. ``implicate_007.csv`` (zero-padded, >= 3 digits).

    Examples
    --------
    >>> csv_name(7, 100), csv_name(7, 1000)
    ('implicate_007.csv', 'implicate_0007.csv')
    """
    width = max(len(str(n_implicates)), 3)
    return f"implicate_{int(implicate):0{width}d}.csv"


def _check_rows(result) -> list[dict[str, str]]:
    """Return the released model's combined estimates (synthetic data only) as table rows."""
    util = result.utility
    rows = util[util["model"] == "restricted"]
    return [{"term": str(r.term), "estimate": f"{r.estimate:.6g}", "lower": f"{r.lower:.6g}",
             "upper": f"{r.upper:.6g}"} for r in rows.itertuples(index=False)]


def _crs_label(data) -> str:
    """Name (and EPSG code) of the CRS the released coordinates are in."""
    src_crs = data.gdf.attrs.get("source_crs") or data.gdf.crs
    try:
        from pyproj import CRS

        crs = CRS.from_user_input(src_crs)
        return crs.name + (f" (EPSG:{crs.to_epsg()})" if crs.to_epsg() else "")
    except Exception:  # noqa: BLE001 - a label only
        return str(src_crs)[:60]


def disposal_counts(result) -> dict[str, int] | None:
    """Return the records released, withheld and moved under ``[anonymity] treatment = "apply"``.

    The location verdict's own counts (:func:`synthgeo.locations.treatment.location_verdict`),
    for the data users' READMEs; None when the treatment did not run or was "none".
    """
    loc = getattr(result, "locations", None)
    treated = getattr(loc, "treatment", None)
    if treated is None or treated.treatment != "apply":
        return None
    d = loc.verdict.details
    return {key: int(d[key]) for key in ("n_released", "n_withheld", "n_moved")}


def readme_context(result) -> dict[str, Any]:
    """Return the values the README template shows (none computed from a true value).

    Parameters
    ----------
    result : ReleaseResult

    Returns
    -------
    dict
        Keys used by ``readme.md.j2``: plain strings, numbers and lists of column names;
        ``from_file`` is False for data handed over in memory (the README then names no file);
        ``smoothed`` is False when the released model smoothed no site (no record met the
        at-risk rule): the README then says so and claims no smoothing. ``log_model``: the
        response was modelled on the log scale and released on its own (``transform =
        "log"``). ``pseudonymous_ids``: the id column holds release pseudonyms in a random row
        order (``[data] release_ids``). ``applied``: ``[anonymity] treatment = "apply"``
        (``n_released``, ``n_withheld``, ``n_moved`` count its disposals; counts only, no
        location). ``failed``: the verdicts ("location", "risk") that are FAIL — the release
        was written under ``on_location_failure`` / ``on_risk_failure = "warn"`` and the
        README says so first. ``cross_fit``: every record was drawn from its own leave-out
        predictive (``[synthesis] predictive = "cross_fit"``); ``calibrated``: with the
        covariate calibration. ``drawn_from_uid``: the register uid of the release whose
        model a ``synthgeo draw`` release drew from (None for a fitted release);
        ``drawn_refit``: that draw fitted the model again (``--refit``).
    """
    from synthgeo._versions import package_versions

    spec, data = result.spec, result.data
    d = spec.data
    L = spec.synthesis.n_implicates
    alpha = spec.utility.alpha
    counts = disposal_counts(result)
    from synthgeo.pipeline.result import verdicts

    drawn = getattr(getattr(result, "synthesiser", None), "drawn_from", None) or {}

    return {
        # a release written under on_*_failure = "warn" with a failed verdict says so
        "failed": [k for k, v in verdicts(result).items() if v == "FAIL"],
        "drawn_from_uid": drawn.get("release_uid"),  # synthgeo draw: the release drawn from
        "drawn_refit": bool(drawn.get("refit")),  # synthgeo draw --refit: a new posterior
        "n_dropped": int((data.missing or {}).get("n_dropped", 0)),  # [data] missing = "drop"
        "applied": counts is not None,  # [anonymity] treatment = "apply": counts of disposals
        **(counts or {"n_released": data.n_records, "n_withheld": 0, "n_moved": 0}),
        "version": package_versions()["synthgeo"], "n": data.n_records, "L": L,
        "from_file": bool(data.gdf.attrs.get("sha256")),  # else handed over in memory
        "response": d.response,
        "log_scale": d.response_transform is None and d.back_transform == "exp",
        "log_model": d.response_transform == "log",
        "id_column": data.id_column, "loc_cols": [c for c in (d.x, d.y) if c],
        "pseudonymous_ids": getattr(d, "release_ids", "original") == "pseudonymous",
        "covariates": list(d.covariates), "crs_label": _crs_label(data),
        "smoothing": _smoothing_words(spec), "smoothed": _smoothing_ran(result),
        "cross_fit": spec.synthesis.predictive == "cross_fit",  # every record: leave-out draw
        "calibrated": spec.synthesis.cross_fit_calibration != "none",
        **_noise_context(result),
        "first_csv": csv_name(1, L), "last_csv": csv_name(L, L),
        "formula": spec.formula,
        "level": f"{100 * (1 - alpha):g}%", "tq": f"{1 - alpha / 2:g}",  # t quantile
        "check_level": round(100 * (1 - alpha)), "check_rows": _check_rows(result),
    }


def _noise_context(result) -> dict:
    """``input_noise_sd`` (model scale) and ``noise_draws_y_star`` of the released implicates.

    None / False when the release carries no input noise (a noise of 0 adds nothing).
    """
    implicates = getattr(result, "implicates", None) or {}
    released = implicates.get("restricted")
    noise = None if released is None else released.attrs.get("input_noise")
    sd = None if not noise else float(noise.get("sd") or 0.0)
    return {"input_noise_sd": sd if sd else None,
            "noise_draws_y_star": bool(sd) and
            result.spec.synthesis.input_noise_draws == "y_star"}


def data_user_readme(result) -> str:
    """Return the README for ``release/`` as Markdown.

    Parameters
    ----------
    result : ReleaseResult

    Returns
    -------
    str
        Markdown; names the actual released files and columns. Column names, the CRS label
        and the formula are escaped for Markdown (they cannot add links, HTML or table cells).

    References
    ----------
    .. [1] Reiter, J. P. (2003). Inference for partially synthetic, public use microdata sets.
       Survey Methodology, 29(2), 181-188.
    .. [2] Quick, H., Holan, S. H., & Wikle, C. K. (2018). Generating partially synthetic
       geocoded public use data with decreased disclosure risk by using differential
       smoothing. JRSS A, 181(3), 649-661. doi:10.1111/rssa.12360
    """
    from synthgeo.release._templates import markdown_env

    return markdown_env().get_template(README_TEMPLATE).render(readme_context(result))
