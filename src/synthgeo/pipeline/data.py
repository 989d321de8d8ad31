"""Preparing the data: load or take the points, check them, build y, X and the sites.

One route for both front doors: a spec's ``[data]`` file is read with
:func:`synthgeo.read_points`, a GeoDataFrame handed over in memory is checked by
:func:`synthgeo.io.read.check_points_frame` (the checks a file gets, by the same code), and both
then go through the same checks here (docs/release.md, "Inputs"), so the two routes give the
same model inputs for the same data.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

import geopandas
import numpy as np
import pandas as pd
import scipy.stats

from synthgeo._errors import InputError, SpecError
from synthgeo._repr import confidential_repr
from synthgeo.config import ReleaseSpec
from synthgeo.io.checks import check_repeated_records
from synthgeo.io.points import coordinates_m
from synthgeo.io.read import check_points_frame, read_points
from synthgeo.io.where import release_land_mask
from synthgeo.model.kernels import Sites, make_sites
from synthgeo.model.transform import ResponseScale
from synthgeo.utility.reiter import fit_ols

__all__ = ["PreparedData", "prepare_data", "response_scale", "check_formula_names", "formula_names",
           "formula_key",
           "DISCLOSURE_CORRELATION",
           "FORMULA_FUNCTIONS"]


@dataclass(frozen=True, kw_only=True)
class PreparedData:
    """Validated, projected records and the arrays the model needs.

    Attributes
    ----------
    gdf : geopandas.GeoDataFrame
        Records in a projected CRS (metres), all input columns kept.
    y : ndarray of shape (n_records,)
        Response on the model scale (log of the column under ``[data] transform = "log"``).
    X : ndarray of shape (n_records, n_coef)
        Intercept plus the spec's covariates.
    coef_names : list of str
    sites : Sites
    frame : pandas.DataFrame
        Covariates and the confidential response column as given (the released scale),
        n_records rows: the analyst's data.
    record_id : ndarray of shape (n_records,)
    id_column : str
    levels : dict
        Text covariates' levels and reference level (treatment coding; empty when none).
    missing : dict or None
        Records dropped for a missing value (``[data] missing = "drop"``): counts overall, by
        column and by ``[anonymity] unit``; None under "refuse".
    """

    def __repr__(self) -> str:
        """Show counts only: the records, the response and the ids are confidential."""
        return confidential_repr(self, n_records=self.n_records, n_sites=self.sites.n_sites,
                                 coef_names=list(self.coef_names))

    gdf: geopandas.GeoDataFrame
    y: np.ndarray
    X: np.ndarray
    coef_names: list[str]
    sites: Sites
    frame: pd.DataFrame
    record_id: np.ndarray
    id_column: str
    levels: dict = field(default_factory=dict)
    missing: dict | None = None

    @property
    def n_records(self) -> int:
        """N."""
        return len(self.y)


def prepare_data(spec: ReleaseSpec, points: geopandas.GeoDataFrame | None = None, *,
                 land_checked=None) -> PreparedData:
    """Load (or take), validate and project the points; build y, X and the sites.

    Parameters
    ----------
    spec : ReleaseSpec
        ``[data]`` names the columns; ``[anonymity]`` and ``[data] subject`` add required ones.
    points : geopandas.GeoDataFrame, optional
        Records already in memory (the front door, :func:`synthgeo.synthesize`); checked by
        :func:`synthgeo.io.read.check_points_frame` and never modified. Default: read
        ``[data] path`` with :func:`synthgeo.read_points`.
    land_checked : synthgeo.io.where.LandChecked, optional
        ``synthgeo draw``: the release's land/sea outcome for its input file, used when the
        file read has its SHA-256 (:func:`synthgeo.io.points.load_points`).

    Returns
    -------
    PreparedData

    Raises
    ------
    synthgeo.InputError
        For any problem with the points (see :func:`synthgeo.io.points.load_points`), more
        than one and more than 1 % of the records repeating another in every column but the
        id (unless ``[data] accept_repeated_records``;
        :func:`synthgeo.io.checks.check_repeated_records`), a constant or overflowing
        response, a constant covariate, or a released column that determines the response.
    synthgeo.SpecError
        For a formula that names other columns or cannot be fitted.
    """
    from synthgeo.pipeline.design import drop_missing, is_categorical

    d = spec.data
    required = _required_columns(spec)
    exposures = [r.exposure for r in d.response_configs if r.exposure]
    text_ok = {r.name for r in d.response_configs if r.family == "bernoulli"}
    # covariates are checked as numbers once text (categorical) ones are known; responses and
    # exposures here, unless records with missing values are dropped first
    numeric = [] if d.missing == "drop" else [
        c for c in (*d.response_names, *exposures) if c not in text_ok]
    required = list(dict.fromkeys([*required, *d.response_names, *exposures, *d.covariates]))
    from_memory = points is not None
    if points is None:
        points = read_points(spec.data_path(), x=d.x, y=d.y, crs=d.crs, id=d.id, query=d.query,
                             target_crs=d.target_crs, drop_duplicates=d.drop_duplicates,
                             coord_unit_m=d.coord_unit_m, sep=d.sep, decimal=d.decimal,
                             encoding=d.encoding, thousands=d.thousands,
                             accept_small_extent=d.accept_small_extent,
                             numeric_columns=numeric, required_columns=required,
                             study_area=spec.study_area(), accept_offshore=d.accept_offshore,
                             land_checked=land_checked)
    gdf = check_points_frame(points, numeric_columns=numeric, required_columns=required,
                             id_column=d.id, target_crs=d.target_crs, x=d.x, y=d.y,
                             accept_small_extent=d.accept_small_extent,
                             study_area=spec.study_area(), accept_offshore=d.accept_offshore)
    check_repeated_records(gdf, accept=d.accept_repeated_records, fix=(
        "drop them first, or set `[data] accept_repeated_records = true` if they are distinct "
        "records" if from_memory else "set `[data] drop_duplicates = true` to drop them, or "
        "`[data] accept_repeated_records = true` if they are distinct records"))
    release_land_mask()  # checked: ~0.4 GB need not stay resident through the fits
    missing = None
    if d.missing == "drop":
        gdf, missing = drop_missing(gdf, [*d.response_names, *exposures, *d.covariates],
                                    how="drop", unit=spec.anonymity.unit)
        _gate_dropped(spec, gdf, missing)
    text_cov = [c for c in d.covariates if is_categorical(gdf[c])]
    numeric_cov = [c for c in d.covariates if c not in text_cov]
    late = [c for c in (*d.response_names, *exposures) if c not in text_ok and c not in numeric]
    if numeric_cov or late:  # the numeric checks name the rows of a bad value
        from synthgeo.io.checks import check_records
        from synthgeo.io.origin import Origin

        check_records(gdf, Origin.memory(), columns=[], numeric_columns=[*late, *numeric_cov],
                      id_column=gdf.attrs.get("id_column"))
    if d.missing == "refuse":  # text covariates and yes/no responses
        drop_missing(gdf, [*text_cov, *[c for c in d.response_names if c in text_ok]],
                     how="refuse")
    return _model_data(spec, gdf, missing=missing)


def _refuse_rare_levels(gdf: geopandas.GeoDataFrame, levels: dict, k: int) -> None:
    """Refuse a text covariate level held by fewer than k records (``[anonymity] k``).

    The covariate is released unchanged, so such a level singles its records out, and their
    own design column lets the model (and the public GLM baseline, which is fitted with it)
    reproduce their values: a level held by one person beside a yes/no response released its
    true value in every implicate while the attributable risk read 0 (break-it trial). The
    message gives how many records hold each rare level, never the level itself (a level can
    be a confidential value: it listed them until a break-it trial, 2026-12-08).
    """
    for column in levels:
        counts = gdf[column].astype(str).value_counts()
        rare = counts[counts < k]
        if len(rare):
            held = ", ".join(str(int(n)) for n in sorted(rare.to_numpy())[:5])
            more = ", ..." if len(rare) > 5 else ""
            raise InputError(
                f"covariate `{column}` has {len(rare)} level(s) held by fewer than k = {k} "
                f"records (by {held}{more} record(s); the levels are not shown: they may be "
                "confidential): released unchanged, such a level singles its records out "
                "and the model reproduces their values; merge rare levels (e.g. into 'other') "
                "or drop the covariate (`[anonymity] k` sets the bound)")


def _gate_dropped(spec: ReleaseSpec, gdf, missing: dict) -> None:
    """Stop, or warn in release.json, when ``missing = "drop"`` removed too many records."""
    n_dropped = int(missing["n_dropped"])
    n_read = n_dropped + len(gdf)
    share = n_dropped / n_read if n_read else 0.0
    d = spec.data
    if share <= d.max_dropped_share:
        return
    msg = (f'`[data] missing = "drop"` dropped {n_dropped} of {n_read} records '
           f"({share:.1%}, above `max_dropped_share` = {d.max_dropped_share:g}): the released "
           "records may not represent the file")
    if d.on_drop_failure == "stop":
        raise InputError(f"{msg}; fill the missing values, raise `[data] max_dropped_share`, "
                         'or set `[data] on_drop_failure = "warn"`')
    from synthgeo.io.notices import note

    gdf.attrs["warnings"] = list(gdf.attrs.get("warnings") or [])
    note(gdf.attrs["warnings"], "many_records_dropped", msg)


def _model_data(spec: ReleaseSpec, gdf: geopandas.GeoDataFrame, *,
                missing: dict | None = None) -> PreparedData:
    """y, X, sites and the analyst's frame from checked points; refuse unusable inputs."""
    from synthgeo.pipeline.design import design_matrix, response_values

    d = spec.data
    id_col = gdf.attrs["id_column"]
    first = d.response_configs[0]
    if d.responses:  # [[data.responses]]: each response's own scale (pipeline.design)
        y = response_values(gdf, first)
        raw = (gdf[first.name].to_numpy(dtype=float) if first.transform == "log"
               else y)  # the analyst's column as given (dollars under "log")
        for later in d.response_configs[1:]:  # refused now, not after the earlier fits
            response_values(gdf, later)
        gaussian = first.family == "gaussian" and first.transform is None
    else:
        raw = gdf[d.response].to_numpy(dtype=float)  # the column as given (dollars: "log")
        try:
            y = response_scale(spec).to_model(raw, name=d.response)
        except ValueError as err:
            raise InputError(f"`[data] transform = \"log\"`: {err}") from None
        gaussian = True
    X, coef_names, levels = design_matrix(gdf, d.covariates)
    _refuse_rare_levels(gdf, levels, spec.anonymity.k)
    _check_model_inputs(spec, y, X, coef_names[1:], gaussian=gaussian)
    _check_released_columns(spec, gdf, y)
    sites = make_sites(coordinates_m(gdf))
    if sites.n_sites < 3:
        raise InputError(
            f"only {sites.n_sites} distinct location(s) among {len(y)} records: a spatial model "
            "needs at least 3; records at one location are real data, but there is no spatial "
            "variation to fit"
        )
    if sites.n_sites < FEW_SITES:
        from synthgeo.io.notices import note

        gdf.attrs["warnings"] = list(gdf.attrs.get("warnings") or [])
        note(gdf.attrs["warnings"], "few_sites",
             f"only {sites.n_sites} distinct locations among {len(y)} records: the spatial "
             "effect's range is barely informed by so few locations (its posterior is mostly "
             "its prior, and the at-risk rule's M with it); read the report's posterior "
             "checks before relying on the spatial fit")
    frame = pd.DataFrame(gdf.drop(columns="geometry"))[d.covariates].reset_index(drop=True)
    frame[d.response] = raw  # the analyst's column, on its released scale
    if d.sequential:  # each response's formula is checked by the sequential route
        return PreparedData(gdf=gdf, y=y, X=X, coef_names=coef_names, sites=sites, frame=frame,
                            record_id=gdf[id_col].to_numpy(), id_column=id_col, levels=levels,
                            missing=missing)
    key = formula_key(spec)
    check_formula_names(spec.formula, [d.response, *d.covariates], key=key)
    try:
        fit_ols(spec.formula, frame)
    except Exception as exc:  # patsy/statsmodels raise many types for a bad formula
        raise SpecError(
            f"{key} {spec.formula!r} cannot be fitted to the response and the "
            f"spec's covariates {d.covariates}: {type(exc).__name__}: "
            f"{str(exc).splitlines()[0]}"
        ) from exc
    return PreparedData(
        gdf=gdf, y=y, X=X, coef_names=coef_names,
        sites=sites, frame=frame, record_id=gdf[id_col].to_numpy(), id_column=id_col,
        levels=levels, missing=missing,
    )


def _required_columns(spec: ReleaseSpec) -> list[str]:
    """Columns the spec names besides response and covariates (subject, [anonymity] ones)."""
    a = spec.anonymity
    cols = [spec.data.subject, *a.group_by, a.unit, a.time]
    return list(dict.fromkeys(c for c in cols if c))


#: Fewer distinct locations than this leave the range to its prior: a coded warning in
#: release.json and the report (break-it trial 2026-12-07: 10,000 records at 3 sites were
#: accepted with an info line; the range's posterior was its uniform prior, M = 3,620 m).
FEW_SITES = 10

#: A released column whose |correlation| with the response, or with its back-transform,
#: exceeds this is taken to disclose it.
DISCLOSURE_CORRELATION = 0.9999
#: A response whose sd is at most this share of its mean absolute value (or of 1, if larger)
#: is refused as numerically constant. The fit does not centre the response, and precision is
#: lost well before the sd reaches round-off (break-it, issue 13, the bundled sales with their
#: spread scaled down around log $60,000 = 11): relative sd 1.5e-7 moved M by 4 % with every
#: check passed, 9e-8 left the σ² posterior's scale b + Q/2 at round-off; 4.5e-7 and above gave
#: the unscaled M. 1e-6 refuses all of those.
NEAR_CONSTANT_RELATIVE_SD = 1e-6


def response_scale(spec: ReleaseSpec) -> ResponseScale:
    """Return the response's scales (model, released, person's) of the spec.

    From the first response's ``transform`` (``[data] transform`` or its ``[[data.responses]]``
    entry) and ``[data] back_transform`` (:class:`synthgeo.model.transform.ResponseScale`).

    Examples
    --------
    >>> from synthgeo.config import bundled_spec_path, load_spec
    >>> response_scale(load_spec(bundled_spec_path())).g_name
    'exp'
    """
    return ResponseScale(transform=spec.data.response_transform,
                         back_transform=spec.data.back_transform)


def _back_transformed(spec: ReleaseSpec, y: np.ndarray) -> np.ndarray:
    """g(y), the response on the scale a person knows (dollars); may overflow to inf."""
    with np.errstate(over="ignore"):
        return np.exp(y) if response_scale(spec).g_name == "exp" else y


def _determines_response(values: np.ndarray, y: np.ndarray, g: np.ndarray, *,
                         rank: bool = False) -> tuple[float, str, str] | None:
    """(correlation, which, kind) when `values` determine y or g(y), else None.

    Linear (Pearson) correlation with y and with g(y); with `rank`, also rank (Spearman)
    correlation with y: a covariate in the same order as the response on every record is a
    monotone function of it (sqrt of the price has Pearson 0.987 with the price but Spearman
    1), which discloses every value to anyone who knows or guesses the function. Ids are not
    rank-checked: files sorted by the response before numbering (the bundled Sacramento
    sales, within each day) would be refused.
    """
    if np.ptp(values) == 0:
        return None
    for target, what in ((y, "the response"), (g, "the back-transformed response")):
        if np.ptp(target) > 0:
            r = float(np.corrcoef(values, target)[0, 1])
            if abs(r) > DISCLOSURE_CORRELATION:
                return r, what, "correlation"
    if rank and np.ptp(y) > 0:
        rho = float(scipy.stats.spearmanr(values, y).statistic)
        if abs(rho) > DISCLOSURE_CORRELATION:
            return rho, "the response", "rank correlation"
    return None


def _check_model_inputs(spec: ReleaseSpec, y: np.ndarray, X: np.ndarray,
                        names: list[str] | None = None, *, gaussian: bool = True) -> None:
    """Refuse inputs that would give a meaningless fit or leak the response.

    Raises
    ------
    InputError
        Back-transformed response not finite; constant response; a constant covariate (collinear
        with the intercept); a covariate that determines the response (released covariates
        would then disclose it).
    """
    d = spec.data
    g = _back_transformed(spec, y) if gaussian else y
    if not np.all(np.isfinite(g)):
        raise InputError(
            f"`back_transform = {d.back_transform!r}` of response `{d.response}` overflows "
            f"({int((~np.isfinite(g)).sum())} record(s); no value is shown: they are "
            "confidential); is the response already on the log scale? Use "
            "`back_transform = \"identity\"` for a response in dollars"
        )
    if np.ptp(y) == 0:
        raise InputError(f"response `{d.response}` is constant (all {len(y):,} records share "
                         "one value, not shown: it is confidential): nothing to model")
    spread, centre = float(np.std(y)), float(np.mean(np.abs(y)))
    if spread <= NEAR_CONSTANT_RELATIVE_SD * max(centre, 1.0):
        raise InputError(
            f"response `{d.response}` is numerically constant (its sd is below "
            f"{NEAR_CONSTANT_RELATIVE_SD:g} of its mean absolute value; no value is shown: "
            "they are confidential): nothing "
            "to model, and the fit loses precision there; subtract a constant from it first "
            "if its spread is real")
    for j, c in enumerate(d.covariates if names is None else names, start=1):
        x = X[:, j]
        if np.ptp(x) == 0:
            raise InputError(f"covariate `{c}` is constant (all {len(x):,} records share one "
                             "value, not shown: it may be confidential): it is collinear with "
                             "the intercept; remove it from `[data] covariates`")
        if hit := _determines_response(x, y, g, rank=True):
            r, what, kind = hit
            raise InputError(
                f"covariate `{c}` determines {what} `{d.response}` ({kind} {r:.6f}); "
                "covariates are released unchanged, so it would disclose the confidential "
                "value: remove it from `[data] covariates`"
            )
    labels = ["intercept", *(d.covariates if names is None else names)]
    rank = np.linalg.matrix_rank(X / np.linalg.norm(X, axis=0))  # scaled: units do not count
    if rank < X.shape[1]:  # the public baseline's regression and β are not identified
        _, _, vt = np.linalg.svd(X / np.linalg.norm(X, axis=0), full_matrices=False)
        involved = [labels[j] for j in np.flatnonzero(np.abs(vt[-1]) > 1e-6)
                    if j < len(labels)]
        raise InputError(f"covariates are collinear (design rank {rank} < {X.shape[1]} "
                         f"columns; involved: {involved}): β is not identified; remove one of "
                         "them from `[data] covariates`")


def formula_key(spec: ReleaseSpec) -> str:
    """How messages name the spec's formula: the key, or the default when none was written.

    A message about ``[utility] formula`` confused a user who had written none (break-it trial
    2026-12-07); the default is ``response ~ covariates`` (:attr:`ReleaseSpec.formula`).

    Examples
    --------
    >>> from synthgeo.config import bundled_spec_path, load_spec
    >>> spec = load_spec(bundled_spec_path())
    >>> formula_key(spec), formula_key(spec.replace("utility", formula=None))
    ('`[utility] formula`', 'the default formula (response ~ covariates)')
    """
    if spec.utility.formula:
        return "`[utility] formula`"
    return "the default formula (response ~ covariates)"


#: Names a `[utility] formula` may call besides the spec's columns (patsy evaluates the
#: formula as Python, so anything else is refused before it runs).
FORMULA_FUNCTIONS = frozenset({"I", "C", "log", "exp", "sqrt", "np", "np.log", "np.exp",
                               "np.sqrt", "np.log1p", "center", "standardize", "scale", "bs",
                               "cr", "Q"})


#: A name in a formula as Python reads it: a Unicode letter or `_`, then word characters or
#: dots (``np.log``); :func:`formula_names` finds them, :func:`check_formula_names` checks
#: that every column the formula names is one.
_FORMULA_NAME = re.compile(r"[^\W\d][\w.]*")


def check_formula_names(formula: str, columns: list[str], *,
                        key: str = "`[utility] formula`") -> None:
    """Refuse a formula naming anything but the given columns and a few transforms.

    Patsy evaluates formula terms as Python expressions, so a reviewed spec must not be able to
    run code through its formula (``__import__("os").system(...)``). The same allow-list
    guards an analyst's formula sent to ``synthgeo verify`` (:mod:`synthgeo.verification.analysis`).

    Parameters
    ----------
    formula : str
    columns : list of str
        The response first, then the covariates the formula may name.
    key : str, default="`[utility] formula`"
        How the error names the formula's source.

    Raises
    ------
    SpecError
        For a dunder, a string literal or an unknown name.

    Examples
    --------
    >>> check_formula_names("log(price) ~ sqft", ["price", "sqft"])
    >>> check_formula_names("price ~ age", ["price", "sqft"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    synthgeo._errors.SpecError: `[utility] formula` 'price ~ age' names `age`, ...
    """
    for col in columns:  # a column a formula cannot name as written (break-it 2026-12-07)
        if col in formula and not _FORMULA_NAME.fullmatch(col):
            plain = re.sub(r"^(?=\d)|\W", "_", col)
            raise SpecError(f"column `{col}` cannot be named in {key} (a formula name is "
                            "letters, digits, `_` and `.`, not starting with a digit); rename "
                            f"the column in the file, e.g. `{plain}`")
    for name in formula_names(formula, key=key):
        if name not in columns:
            raise SpecError(
                f"{key} {formula!r} names `{name}`, which is neither the response, "
                f"a covariate {columns[1:]} nor one of {sorted(FORMULA_FUNCTIONS)}"
            )


def formula_names(formula: str, *, key: str = "`[utility] formula`") -> list[str]:
    """Return the names a formula (or one side of it) uses, beyond the allowed transforms.

    Names are found as Python reads them: any Unicode letter starts one, so a column named in
    another script is a name like any other. A formula that Unicode's NFKC normalisation
    changes is refused: Python normalises identifiers so (PEP 3131), and full-width ``ｅｘｅｃ``
    would run as ``exec`` unseen by an ASCII-only check (break-it trial 2026-12-07: code ran
    through ``synthgeo verify`` and ``validate``).

    Parameters
    ----------
    formula : str
        A formula, or the text of one side of it.
    key : str, default="`[utility] formula`"
        How the error names the formula's source.

    Returns
    -------
    list of str
        Each name once, in the order written (neither :data:`FORMULA_FUNCTIONS` nor numbers).

    Raises
    ------
    SpecError
        For characters a formula does not need (quotes, brackets, ``__``): code, not columns;
        for compatibility characters (full-width letters, ligatures) that Python reads as other
        names.

    Examples
    --------
    >>> formula_names("log(price) ~ sqft + I(sqft ** 2) + sqft")
    ['price', 'sqft']
    >>> formula_names("y ~ surface_m² ")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    synthgeo._errors.SpecError: ...
    """
    if unicodedata.normalize("NFKC", formula) != formula:
        raise SpecError(f"{key} holds compatibility characters (full-width letters, "
                        "superscripts, ligatures) that Python reads as other names; write the "
                        "formula, and rename such columns, in plain characters")
    if "__" in formula or re.search(r"[\"'`;\[\]{}]", formula):
        raise SpecError(f"{key} {formula!r} holds characters a model formula "
                        "does not need (quotes, brackets, `__`); name columns and transforms only")
    names = _FORMULA_NAME.findall(formula)
    return list(dict.fromkeys(n for n in names if n not in FORMULA_FUNCTIONS))


def _check_released_columns(spec: ReleaseSpec, gdf, y: np.ndarray) -> None:
    """Refuse an id or coordinate column that is, or determines, the confidential response.

    The id and the coordinates are released unchanged, so they must not carry the response.

    Raises
    ------
    InputError
    """
    d = spec.data
    g = _back_transformed(spec, y)
    for key in ("id", "x", "y", "subject"):
        col = getattr(d, key)
        if col is None or col not in gdf.columns:
            continue
        if col == d.response:
            raise InputError(f"`[data] {key}` names the response column `{col}`: it is released "
                             "unchanged and would disclose the confidential value")
        vals = pd.to_numeric(gdf[col], errors="coerce").to_numpy(dtype=float)
        if np.isfinite(vals).all() and _determines_response(vals, y, g):
            raise InputError(
                f"`[data] {key}` column `{col}` determines the response `{d.response}`; it is "
                "released unchanged and would disclose the confidential value: use another column"
            )
