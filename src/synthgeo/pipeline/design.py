"""Design columns and response coding: text covariates, yes/no responses, missing values.

A covariate column of text becomes treatment-coded design columns (one 0/1 column per level but
the reference, the first level in sorted order; names as patsy writes them,
``race[T.White]``); the column itself is released unchanged. A bernoulli response of text is
coded 1 at its ``positive`` level. Under ``[data] missing = "drop"`` a record with a missing
response, covariate or exposure is removed before anything is fitted (it is not released) and
the counts are reported (docs/release.md, "Inputs").
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from synthgeo._errors import InputError, SpecError
from synthgeo.config import ResponseConfig

__all__ = ["is_categorical", "design_matrix", "response_values", "drop_missing"]


def is_categorical(series: pd.Series) -> bool:
    """Return whether a covariate column holds text categories (ignoring missing values).

    A column is categorical when none of its values reads as a number; a column of numbers
    with some text (``"12"``, ``"n/a"``) is taken for a numeric column with bad values, and the
    numeric checks refuse it naming the rows.

    Examples
    --------
    >>> is_categorical(pd.Series(["a", "b", None])), is_categorical(pd.Series(["1", "2.5"]))
    (True, False)
    >>> is_categorical(pd.Series(["1", "abc"]))
    False
    """
    if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        return False
    present = series.dropna()
    present = present[present.astype(str).str.strip() != ""]
    return bool(len(present)) and bool(pd.to_numeric(present, errors="coerce").isna().all())


def design_matrix(frame: pd.DataFrame, covariates: list[str]
                  ) -> tuple[np.ndarray, list[str], dict[str, dict]]:
    """Intercept, numeric covariates and treatment-coded text covariates.

    Parameters
    ----------
    frame : pandas.DataFrame
        Records (no missing value in ``covariates``).
    covariates : list of str

    Returns
    -------
    X : ndarray of shape (n_records, n_coef)
        ``[1, covariate columns...]``; a numeric covariate is one column (as before), a text
        one has one 0/1 column per non-reference level.
    coef_names : list of str
        ``"Intercept"``, numeric covariate names, ``"col[T.level]"`` for dummies.
    levels : dict
        Per text covariate: ``{"levels": [...], "reference": level}`` (sorted levels).

    Raises
    ------
    InputError
        If a text covariate has a single level (collinear with the intercept).

    Examples
    --------
    >>> X, names, lv = design_matrix(pd.DataFrame({"a": [1.0, 2.0, 3.0],
    ...                                            "g": ["x", "y", "x"]}), ["a", "g"])
    >>> names, X[:, 2].tolist(), lv["g"]["reference"]
    (['Intercept', 'a', 'g[T.y]'], [0.0, 1.0, 0.0], 'x')
    """
    cols, names, levels = [np.ones(len(frame))], ["Intercept"], {}
    for c in covariates:
        s = frame[c]
        if not is_categorical(s):
            cols.append(s.to_numpy(dtype=float))
            names.append(c)
            continue
        text = s.astype(str)
        lv = sorted(text.unique())
        if len(lv) < 2:
            raise InputError(f"covariate `{c}` has one level (all {len(text)} records share "
                             "it, not shown): it is collinear with the intercept; remove it "
                             "from `[data] covariates`")
        levels[c] = {"levels": lv, "reference": lv[0]}
        for level in lv[1:]:
            cols.append((text == level).to_numpy(dtype=float))
            names.append(f"{c}[T.{level}]")
    return np.column_stack(cols), names, levels


def response_values(frame: pd.DataFrame, rc: ResponseConfig) -> np.ndarray:
    """Return the response on the model scale: log y (``transform = "log"``), 0/1, or counts.

    Raises
    ------
    InputError
        A text bernoulli column without ``positive``, a ``positive`` level that never occurs, a
        yes/no column with more than two levels, a non-positive value under
        ``transform = "log"``, or a bad count (names the column).

    Examples
    --------
    >>> response_values(pd.DataFrame({"s": ["YES", "NO"]}),
    ...                 ResponseConfig(name="s", family="bernoulli", positive="YES")).tolist()
    [1.0, 0.0]
    """
    s = frame[rc.name]
    if rc.family == "bernoulli":
        if rc.positive is not None:
            text = s.astype(str)
            levels = sorted(text.unique())
            if not (text == rc.positive).any():
                raise InputError(f"`[[data.responses]] positive = {rc.positive!r}` never occurs "
                                 f"in column `{rc.name}` (levels {levels[:10]})")
            if len(levels) > 2:  # "MAYBE" would be folded into "no" without a word
                raise InputError(f"yes/no response `{rc.name}` has {len(levels)} levels "
                                 f"{levels[:10]}, not two: a third level would be coded as not "
                                 f"{rc.positive!r}; keep two levels with `[data] query` (e.g. "
                                 f"\"{rc.name} in ['{rc.positive}', '...']\") or recode the column")
            return (text == rc.positive).to_numpy(dtype=float)
        y = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float)
        if not np.all((y == 0) | (y == 1)):
            raise InputError(f"bernoulli response `{rc.name}` must hold 0/1; name the event "
                             "level of a yes/no column with `[[data.responses]] positive`")
        return y
    y = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float)
    if not np.all(np.isfinite(y)):
        raise InputError(f"response `{rc.name}` holds text or missing values; use "
                         '`[data] missing = "drop"` or fix the column')
    if rc.family == "poisson" and (np.any(y < 0) or np.any(y != np.round(y))):
        raise InputError(f"poisson response `{rc.name}` must hold non-negative whole numbers")
    if rc.transform == "log":
        if np.any(y <= 0):
            raise InputError(f'`transform = "log"` needs a positive response `{rc.name}`')
        return np.log(y)
    return y


def _missing(series: pd.Series) -> np.ndarray:
    """Missing values: NaN/None, and empty or blank text."""
    miss = series.isna().to_numpy().copy()
    if not pd.api.types.is_numeric_dtype(series):
        miss |= series.astype(str).str.strip().eq("").to_numpy(dtype=bool)
    return miss


def drop_missing(gdf, columns: list[str], *, how: str, unit: str | None = None):
    """Refuse or drop records with a missing value in ``columns``.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
    columns : list of str
        Responses, covariates and exposure columns.
    how : {"refuse", "drop"}
    unit : str, optional
        ``[anonymity] unit`` column: counts of dropped records by unit.

    Returns
    -------
    gdf : geopandas.GeoDataFrame
        The kept records (index reset, attrs kept).
    report : dict
        ``n_dropped``, ``n_kept``, ``by_column`` (missing per column), ``by_unit`` (when
        ``unit`` is given).

    Raises
    ------
    InputError
        Under ``how = "refuse"`` when a value is missing (names the column and the fix).

    Examples
    --------
    >>> import geopandas
    >>> g = geopandas.GeoDataFrame({"a": [1.0, None, 3.0]},
    ...                            geometry=geopandas.points_from_xy([0, 1, 2], [0, 0, 0]))
    >>> kept, rep = drop_missing(g, ["a"], how="drop")
    >>> len(kept), rep["n_dropped"], rep["by_column"]
    (2, 1, {'a': 1})
    """
    if how not in ("refuse", "drop"):
        raise SpecError(f'`[data] missing` must be "refuse" or "drop", got {how!r}')
    flags = {c: _missing(gdf[c]) for c in columns}
    any_missing = np.zeros(len(gdf), bool)
    for m in flags.values():
        any_missing |= m
    by_column = {c: int(m.sum()) for c, m in flags.items() if m.any()}
    if how == "refuse" and any_missing.any():
        c = next(iter(by_column))
        raise InputError(f"column `{c}` has {by_column[c]} missing value(s) (and "
                         f"{int(any_missing.sum())} record(s) with any missing value in "
                         f"{sorted(by_column)}); set `[data] missing = \"drop\"` to drop them")
    report = {"policy": how, "n_dropped": int(any_missing.sum()),
              "n_kept": int((~any_missing).sum()), "by_column": by_column}
    if unit is not None:
        counts = pd.Series(gdf[unit].astype(str).to_numpy()[any_missing]).value_counts()
        report["by_unit"] = {str(k): int(v) for k, v in sorted(counts.items())}
    if not any_missing.any():
        return gdf, report
    if any_missing.all():  # break-it: the error came later, about a response level
        worst = max(by_column, key=by_column.get)
        raise InputError(f"every one of the {len(gdf):,} records has a missing value (column "
                         f"`{worst}`: {by_column[worst]:,} missing; by column {by_column}); "
                         "`[data] missing = \"drop\"` would leave none: remove that column "
                         "from the spec or fill it")
    attrs = dict(gdf.attrs)
    kept = gdf.loc[~any_missing].reset_index(drop=True)
    kept.attrs = attrs
    return kept, report
