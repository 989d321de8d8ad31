"""Column checks of a table of records: presence, numbers, ids, coordinates and duplicate rows.

Every message names the column and the first offending records (by id, or by position: the
0-based data row of a file, the row of a GeoDataFrame) and says what fixes it, in the words of
the records' :class:`~synthgeo.io.origin.Origin` (a file, or a GeoDataFrame in memory).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

import geopandas
import numpy as np
import pandas as pd

from synthgeo._errors import InputError
from synthgeo.io.origin import Origin

__all__ = ["where", "check_columns", "near_names", "as_numbers", "check_ids", "check_records",
           "coordinates", "duplicate_rows", "N_SHOW"]

N_SHOW = 5  # how many offending ids an error message lists
_DECIMAL_COMMA = re.compile(r"^\s*[-+]?\d+,\d+\s*$")
_THOUSANDS = re.compile(r"^\s*[-+]?\d{1,3}(,\d{3})+\s*$")  # "1,200": or 1.2 with a decimal comma
#: Digits grouped by a space, a no-break space (U+00A0) or a narrow one (U+202F): "1 234,5".
#: Each one's name and how a TOML string or Python literal writes it.
_SPACES = {" ": ("a space", '" "'), "\u00a0": ("a no-break space (U+00A0)", '"\\u00a0"'),
           "\u202f": ("a narrow no-break space (U+202F)", '"\\u202f"')}
_SPACED = re.compile(r"^\s*[-+]?\d{1,3}([ \u00a0\u202f]\d{3})+([.,]\d+)?\s*$")
#: Digits grouped by "." (two groups or more, or with a decimal comma: "1.234.567", "1.234,5";
#: one group alone reads as a decimal, files.py's check): German or Danish exports.
_DOT_GROUPED = re.compile(r"^\s*[-+]?\d{1,3}(\.\d{3})+(,\d+)?\s*$")
#: Digits grouped by an apostrophe or a right single quotation mark (U+2019): Swiss exports.
_APOSTROPHES = {"'": ("an apostrophe", '"\'"'),
                "\u2019": ("a right single quotation mark (U+2019)", '"\\u2019"')}
_APOSTROPHE = re.compile(r"^\s*[-+]?\d{1,3}(['\u2019]\d{3})+([.,]\d+)?\s*$")


def where(frame: pd.DataFrame, mask: Any, id_column: str | None, origin: Origin) -> str:
    """Name the first offending records: by id, or by position (see :meth:`Origin.rows`)."""
    rows = frame.index[np.asarray(mask, dtype=bool)]
    more = ", ..." if len(rows) > N_SHOW else ""
    if id_column is not None:
        return f"`{id_column}` {frame.loc[rows[:N_SHOW], id_column].tolist()}{more}"
    return origin.rows(f"{rows[:N_SHOW].tolist()}{more}")


def check_columns(frame: pd.DataFrame, columns: list[str], origin: Origin) -> None:
    """Raise InputError naming repeated or missing columns (and the available ones)."""
    repeated = list(dict.fromkeys(str(c) for c in frame.columns[frame.columns.duplicated()]))
    if repeated:  # a file's header is refused earlier, when it is read (files.py)
        raise InputError(f"{origin.name} has repeated column name(s) {repeated}; rename them "
                         "so that each column has one name")
    missing = [c for c in dict.fromkeys(columns) if c not in frame.columns]
    if missing:
        raise InputError(f"column(s) {missing} not found in {origin.name}"
                         f"{near_names(missing, frame.columns)}; available columns: "
                         f"{[str(c) for c in frame.columns]} (names are case-sensitive)")


def _fold(name: str) -> str:
    """Compare names as a reader does: NFKC (ligatures, full-width), no end spaces, any case."""
    return unicodedata.normalize("NFKC", name).strip().casefold()


def _how_near(given: str, found: str) -> str:
    """How column name `found` differs from `given`: spaces, compatibility form, case, spelling.

    A ligature ("ﬁ") or full-width letter is a compatibility character: NFKC turns it into
    the plain letters, and case folding does too, so it was called "in other case" (break-it
    trial 2026-12-07); it is named as what it is.
    """
    spaces = " and with spaces" if found != found.strip() else ""
    if found.strip() == given.strip():
        ends = [side for side, a, b in (("leading", found, found.lstrip()),
                                        ("trailing", found, found.rstrip())) if a != b]
        return f"with {' and '.join(ends)} space(s)"
    plain_f, plain_g = (unicodedata.normalize("NFKC", n.strip()) for n in (found, given))
    compat = plain_f != found.strip() or plain_g != given.strip()
    if plain_f == plain_g or (compat and plain_f.casefold() == plain_g.casefold()):
        case = ", not by case" if plain_f == plain_g else " and by case"
        return ("differs by Unicode compatibility form (NFKC: a ligature such as 'ﬁ', or a "
                f"full-width or superscript character){case}{spaces}")
    if found.strip().casefold() == given.strip().casefold():
        return "in other case" + spaces
    return "spelled nearly so"


def near_names(missing: Sequence[str], available: Sequence[Any]) -> str:
    """Name the columns that nearly match the `missing` names, for a "not found" message.

    A name differing only in leading/trailing spaces or case (``"price "`` for ``price``, from
    a header written ``id, price``), else a close spelling (:func:`difflib.get_close_matches`).

    Parameters
    ----------
    missing : sequence of str
        Column names asked for and not found.
    available : sequence
        The table's column names.

    Returns
    -------
    str
        ``"; it has 'price ' (with trailing space(s)) for `price`: ..."``, or ``""``
        when nothing is near.

    Examples
    --------
    >>> near_names(["price"], ["id", "price "]).split(":")[0]
    "; it has 'price ' (with trailing space(s)) for `price`"
    >>> near_names(["beds"], ["id", "price"])
    ''
    """
    import difflib

    names = [str(c) for c in available]
    found = []
    for m in missing:
        key = _fold(str(m))
        near = [c for c in names if _fold(c) == key] or \
            difflib.get_close_matches(str(m), names, n=1, cutoff=0.8)
        found += [f"{c!r} ({_how_near(str(m), c)}) for `{m}`" for c in near[:1]]
    if not found:
        return ""
    return (f"; it has {', '.join(found)}: give the name exactly as written (quotes included "
            "in a spec), or rename the column")


def as_numbers(frame: pd.DataFrame, column: str, id_column: str | None, what: str,
               origin: Origin) -> np.ndarray:
    """Return `column` as finite float64, or raise naming the offending rows.

    Text that reads as a number with a decimal comma (``"354,5"``) names the fix (for a file,
    the `decimal` option); text in thousands groups (``"1,200"``) names both readings, since a
    decimal comma would make it 1.2; digits grouped by spaces, by "." (``"1.234.567"``) or by
    an apostrophe (``"59'222"``) name the `thousands` separator found. Decimal commas beside
    values written "."-grouped that read as decimals (``"852,5"`` beside ``"1.167"``) name the
    "." grouping, not the decimal comma alone.
    """
    series = frame[column]
    values = pd.to_numeric(series, errors="coerce")
    text = values.isna() & series.notna()
    if text.any():
        shown = series[text].head(N_SHOW).tolist()
        if all(_THOUSANDS.match(str(v)) for v in shown):
            hint = origin.text("fix_thousands")
        elif (all(_DOT_GROUPED.match(str(v)) or _DECIMAL_COMMA.match(str(v)) for v in shown)
              and (any(_DOT_GROUPED.match(str(v)) for v in shown)
                   or _grouped_read_as_decimals(series, text))):
            hint = origin.text("fix_dot_grouped") + _MIXED_MARKS * (
                not any(_DOT_GROUPED.match(str(v)) for v in shown))
        elif all(_DECIMAL_COMMA.match(str(v)) for v in shown):
            hint = origin.text("fix_decimal")
        elif all(_SPACED.match(str(v)) for v in shown):
            hint = _spaced_hint([str(v) for v in shown], origin)
        elif all(_APOSTROPHE.match(str(v)) for v in shown):
            used = [c for c in _APOSTROPHES if any(c in str(v) for v in shown)][0]
            chars, literal = _APOSTROPHES[used]
            hint = origin.text("fix_apostrophe").format(chars=chars, literal=literal)
        else:
            hint = origin.text("fix_text")
        raise InputError(f"{what} column `{column}` holds text that is not a number in "
                         f"{int(text.sum()):,} record(s), at "
                         f"{where(frame, text, id_column, origin)} (no value is shown: they may "
                         f"be confidential); {hint}")
    array = values.to_numpy(dtype="float64", na_value=np.nan)
    for bad, kind in ((np.isnan(array), "missing (NaN)"), (np.isinf(array), "infinite")):
        if bad.any():
            raise InputError(f"{what} column `{column}` has {int(bad.sum())} {kind} value(s) at "
                             f"{where(frame, bad, id_column, origin)}; "
                             f"{origin.text('fix_missing')}")
    return array


#: Said when decimal commas sit beside "."-grouped values that read as decimals: either
#: reading is possible, and a comma-to-point fix would read 1.167 (1,167) as 1.167.
_MIXED_MARKS = ('; if the "." of the values read as numbers (1.234) are decimal points '
                "instead, the column mixes two decimal marks: write every value with one")


def _grouped_read_as_decimals(series: pd.Series, text: pd.Series) -> bool:
    """Whether the values read as numbers include text written "."-grouped, and no other ".".

    ``"836"``, ``"1.167"`` beside ``"852,5"``: the reader takes 1.167 for a decimal and only
    852,5 is text, so the hint for decimal commas alone would have the user convert 852,5 and
    keep 1.167 a thousand times too small (break-it trial, 2026-12-08).

    Examples
    --------
    >>> s = pd.Series(["836", "1.167", "852,5"])
    >>> _grouped_read_as_decimals(s, pd.to_numeric(s, errors="coerce").isna())
    True
    >>> s = pd.Series(["8.5", "1.167", "852,5"])
    >>> _grouped_read_as_decimals(s, pd.to_numeric(s, errors="coerce").isna())
    False
    """
    written = [v for v in series[~text & series.notna()] if isinstance(v, str) and "." in v]
    return bool(written) and all(_DOT_GROUPED.match(v) for v in written)


def _spaced_hint(shown: list[str], origin: Origin) -> str:
    r"""Name the space(s) actually grouping the digits of `shown`, and the fix for each.

    The hint once named U+00A0 whatever the separator was (break-it trial 2026-12-07).

    Examples
    --------
    >>> _spaced_hint(["1\u202f234"], Origin.memory()).split(": ")[1]
    'remove it (e.g. `s.str.replace("\\u202f", "")`) and convert the column to numbers'
    """
    used = [c for c in _SPACES if any(c in v for v in shown)]
    chars = " and ".join(_SPACES[c][0] for c in used)
    if origin.in_memory:
        calls = "".join(f'.str.replace({_SPACES[c][1]}, "")' for c in used)
        return origin.text("fix_spaced").format(chars=chars, fix=f"`s{calls}`")
    options = " or ".join(f"`thousands = {_SPACES[c][1]}`" for c in used)
    mixed = " (one of them: the file mixes separators, make them one first)" if len(used) > 1 \
        else ""
    return origin.text("fix_spaced").format(chars=chars, fix=options + mixed)


def check_ids(frame: pd.DataFrame, id_column: str | None, origin: Origin) -> None:
    """Refuse missing or repeated ids, or an implicit ``record`` column that already exists."""
    if id_column is None:
        if "record" in frame.columns:
            raise InputError(f'{origin.name} already has a column "record": '
                             f'{origin.text("fix_record")}')
        return
    ids = frame[id_column]
    if ids.isna().any():
        raise InputError(f"id column `{id_column}` has {int(ids.isna().sum())} missing value(s) "
                         f"at {where(frame, ids.isna(), None, origin)}; "
                         f"{origin.text('fix_missing')}")
    if (repeated := ids.duplicated(keep=False)).any():
        shown = ids[repeated].unique()[:N_SHOW].tolist()
        same = _repeated_rows(frame)
        twice = (f"; {same} of them repeat an earlier row in every column, id included (the "
                 "same record read twice?): remove the repeated rows" if same else "")
        raise InputError(f"id column `{id_column}` is not unique: {shown} appear twice or "
                         f"more{twice}")


def _repeated_rows(frame: pd.DataFrame) -> int:
    """Count rows equal to an earlier one in every column (geometry included)."""
    try:
        return int(frame.duplicated(keep="first").sum())
    except TypeError:  # unhashable cells (lists, geometries): compare their text
        return int(frame.astype(str).duplicated(keep="first").sum())


def check_records(frame: pd.DataFrame, origin: Origin, *, columns: Sequence[str | None],
                  numeric_columns: Sequence[str], id_column: str | None) -> None:
    """Check the table's columns, ids and numbers; convert numeric text columns in place.

    Parameters
    ----------
    frame : pandas.DataFrame or geopandas.GeoDataFrame
        The records as read (a working copy: numeric columns held as text are converted).
    origin : Origin
        A file or a GeoDataFrame in memory (for the messages).
    columns : sequence of str or None
        Columns that must exist (None entries are skipped).
    numeric_columns : sequence of str
        Columns that must hold finite numbers; integer columns stay integer.
    id_column : str, optional
        Must hold unique, non-missing ids; when None, no column may be called ``record``.

    Raises
    ------
    InputError
        Repeated or missing columns; repeated or missing ids; text, NaN or inf in a numeric
        column.
    """
    check_columns(frame, [c for c in columns if c is not None], origin)
    check_ids(frame, id_column, origin)
    for column in numeric_columns:
        values = as_numbers(frame, column, id_column, "numeric", origin)
        if not pd.api.types.is_numeric_dtype(frame[column]):  # keep int columns int
            frame[column] = values


def coordinates(frame: pd.DataFrame, x: str | None, y: str | None, id_column: str | None,
                origin: Origin) -> np.ndarray:
    """Return x/y as read: a CSV's columns (file units), or a Point geometry (its CRS's units).

    The geometry is a layer's, or a GeoDataFrame's handed over in memory.

    Raises
    ------
    InputError
        Text, NaN or inf in a coordinate column; missing, empty or non-Point geometry.
    """
    if not isinstance(frame, geopandas.GeoDataFrame):
        return np.column_stack([as_numbers(frame, c, id_column, "coordinate", origin)
                                for c in (x, y)])
    geom = frame.geometry
    if (bad := geom.isna() | geom.is_empty).any():
        raise InputError(f"{int(bad.sum())} record(s) have a missing or empty geometry at "
                         f"{where(frame, bad, id_column, origin)}; "
                         f"{origin.text('fix_geometry')}")
    if (kinds := set(geom.geom_type)) != {"Point"}:
        raise InputError(f"{origin.name} holds {sorted(kinds)} geometries; only Point is "
                         "accepted (explode MultiPoints, or take centroids deliberately)")
    xy = np.column_stack([geom.x.to_numpy(float), geom.y.to_numpy(float)])
    if (inf := ~np.isfinite(xy).all(axis=1)).any():
        raise InputError(f"non-finite coordinates at {where(frame, inf, id_column, origin)}")
    return xy


def duplicate_rows(frame: pd.DataFrame, xy: np.ndarray, id_column: str | None) -> np.ndarray:
    """Flag rows equal to an earlier one in location and every column but the id (bool)."""
    geometry_name = frame.geometry.name if isinstance(frame, geopandas.GeoDataFrame) else None
    key = frame.drop(columns=[c for c in (id_column, geometry_name) if c is not None])
    key = key.assign(__x=xy[:, 0], __y=xy[:, 1])
    try:
        return key.duplicated(keep="first").to_numpy()
    except TypeError:  # unhashable cell values (lists): compare their text
        return key.astype(str).duplicated(keep="first").to_numpy()
