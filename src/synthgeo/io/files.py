"""Read a points file as it is: CSV (separator, decimal mark, encoding) or a spatial layer.

Column integrity is checked here, at the door: a repeated header is refused by name (pandas would
silently rename the second ``beds`` to ``beds.1``); a header without the separator but with
another likely one names it; bytes that are not in the encoding name the `encoding` option.
"""

from __future__ import annotations

import codecs
import csv
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import geopandas
import pandas as pd
import pyproj

from synthgeo._errors import InputError
from synthgeo.io.crs import describe, parse_crs
from synthgeo.io.origin import Origin

__all__ = ["CsvOptions", "keep_id_text", "read_table", "SUFFIXES"]

_VECTOR_SUFFIXES = {".gpkg", ".shp", ".geojson"}
_PARQUET_SUFFIXES = {".parquet", ".geoparquet"}
SUFFIXES = sorted({".csv"} | _VECTOR_SUFFIXES | _PARQUET_SUFFIXES)
_SEPARATORS = (",", ";", "\t", "|")
_SEP_NAMES = {",": "','", ";": "';'", "\t": "'\\t' (tab)", "|": "'|'"}


@dataclass(frozen=True, kw_only=True)
class CsvOptions:
    """How a CSV is written: ``sep`` (one character), ``decimal`` mark, text ``encoding``.

    ``thousands``: the thousands separator of numbers (e.g. ``"."`` for ``1.234,5``), or None
    (numbers are not grouped).

    Raises
    ------
    InputError
        A separator, decimal mark or thousands separator that is not one character, two of them
        equal, or an encoding Python does not know.
    """

    sep: str = ","
    decimal: str = "."
    encoding: str = "utf-8"
    thousands: str | None = None

    def __post_init__(self) -> None:
        """Validate the three values (InputError names the option)."""
        import codecs

        for key in ("sep", "decimal"):
            v = getattr(self, key)
            if not (isinstance(v, str) and len(v) == 1):
                raise InputError(f"`{key}` must be one character (e.g. \";\" or \"\\t\"), got "
                                 f"{v!r}")
        if self.sep == self.decimal:
            raise InputError(f"`sep` and `decimal` are both {self.sep!r}; a semicolon-separated "
                             'file with decimal commas needs sep = ";" and decimal = ","')
        if self.thousands is not None:
            if not (isinstance(self.thousands, str) and len(self.thousands) == 1):
                raise InputError(f"`thousands` must be one character (e.g. \".\") or left out, "
                                 f"got {self.thousands!r}")
            if self.thousands in (self.sep, self.decimal):
                raise InputError(f"`thousands` = {self.thousands!r} is also `sep` or `decimal`; "
                                 'with decimal commas numbers are grouped with ".": '
                                 'thousands = "."')
        try:
            codecs.lookup(self.encoding)
        except (LookupError, TypeError) as exc:
            raise InputError(f"`encoding` = {self.encoding!r} is not a text encoding Python "
                             'knows; e.g. "utf-8", "latin-1", "cp1252"') from exc

    @property
    def is_default(self) -> bool:
        """Whether all three are the defaults (comma, point, UTF-8)."""
        return (self.sep, self.decimal, self.encoding, self.thousands) == (
            ",", ".", "utf-8", None)


#: Byte-order marks of the wide Unicode encodings, UTF-32 first (its LE mark starts as UTF-16's).
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def _wide_encoding(head: bytes) -> str | None:
    r"""Name the UTF-16/32 encoding the file's first bytes show, or None.

    A byte-order mark names "utf-16" or "utf-32"; without one, a NUL byte in the first line
    (ASCII written two bytes a character) names "utf-16-le" or "utf-16-be" by where it falls.

    Examples
    --------
    >>> _wide_encoding("x,y\n".encode("utf-16")), _wide_encoding("x,y\n".encode("utf-16-be"))
    ('utf-16', 'utf-16-be')
    >>> _wide_encoding(b"x,y\n") is None
    True
    """
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    if b"\x00" not in head.split(b"\n", 1)[0]:
        return None
    return "utf-16-be" if head[:1] == b"\x00" else "utf-16-le"


def _check_wide(path: Path, opts: CsvOptions) -> None:
    """Refuse a UTF-16/32 file read with another `encoding`, naming its encoding and the fix."""
    with open(path, "rb") as fh:
        head = fh.read(4096)
    wide = _wide_encoding(head)
    if wide is None or codecs.lookup(wide).name == codecs.lookup(opts.encoding).name:
        return
    how = ("starts with a UTF-16 byte-order mark" if wide == "utf-16" else
           "starts with a UTF-32 byte-order mark" if wide == "utf-32" else
           "has NUL bytes between its characters")
    raise InputError(f"the CSV {path.name} is {wide.upper()} text (it {how}), not "
                     f"{opts.encoding}: set `encoding` ([data] encoding, or --encoding) to "
                     f'"{wide}", or re-save the file as UTF-8')


def _encoding_error(path: Path, opts: CsvOptions, exc: UnicodeDecodeError) -> InputError:
    return InputError(
        f"the CSV {path.name} is not {opts.encoding} text (byte {exc.object[exc.start]:#04x} at "
        f"position {exc.start}): set `encoding` ([data] encoding, or --encoding) to the file's "
        'encoding, e.g. "latin-1" or "cp1252"')


def _header(path: Path, opts: CsvOptions) -> list[str]:
    """Column names as written in the first line (duplicates kept), or raise naming the fix."""
    _check_wide(path, opts)
    enc = "utf-8-sig" if opts.encoding.lower().replace("_", "-") in ("utf-8", "utf8") \
        else opts.encoding
    try:
        with open(path, encoding=enc, newline="") as fh:
            line = fh.readline()
    except UnicodeDecodeError as exc:
        raise _encoding_error(path, opts, exc) from exc
    names = next(csv.reader([line.rstrip("\r\n")], delimiter=opts.sep), [])
    if len(names) <= 1:
        others = [s for s in _SEPARATORS if s != opts.sep and s in line]
        if others:
            likely = max(others, key=line.count)
            raise InputError(
                f"the header of {path.name} has no {_SEP_NAMES.get(opts.sep, repr(opts.sep))} "
                f"but {line.count(likely)} {_SEP_NAMES[likely]}: the file reads as one column; "
                f"set `sep` ([data] sep, or --sep) to {likely!r}"
                + (' (with decimal commas also decimal = ",")' if likely == ";" else ""))
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InputError(f"{path.name} has repeated column name(s) {repeated} in its header; "
                         "give every column a distinct name (pandas would rename the second "
                         "silently)")
    return names


def keep_id_text(frame: pd.DataFrame, id_column: str | None) -> pd.DataFrame:
    """Keep an id column as text when reading it as numbers would change an id.

    Ids such as ``007`` or ``1e3`` are labels: as numbers they lose a leading zero or their
    spelling (``007`` and ``7`` even become one id), and the released id no longer matches the
    agency's. Ids that read back unchanged as numbers (``1``, ``42``) stay numbers.

    Parameters
    ----------
    frame : pandas.DataFrame
        Read with `id_column` as text (``dtype={id_column: str}``).
    id_column : str, optional

    Returns
    -------
    pandas.DataFrame
        `frame`, its id column numbers where that changes no id.

    Examples
    --------
    >>> keep_id_text(pd.DataFrame({"id": ["007", "8"]}), "id")["id"].tolist()
    ['007', '8']
    >>> keep_id_text(pd.DataFrame({"id": ["7", "8"]}), "id")["id"].tolist()
    [7, 8]
    """
    if id_column is None or id_column not in frame.columns:
        return frame
    text = frame[id_column]
    try:
        numbers = pd.to_numeric(text)
    except (ValueError, TypeError):
        return frame  # text ids stay text
    if numbers.isna().any() or not (numbers.astype(str) == text).all():
        return frame
    return frame.assign(**{id_column: numbers})


#: A number written with "." grouping thousands, with or without decimal-comma places:
#: 1.234, -12.345.678, 1.250,00.
_DOT_GROUPED = re.compile(r"^-?\d{1,3}(\.\d{3})+(,\d+)?$")
#: An ungrouped number, with or without decimal-comma places: 836, 750,00.
_PLAIN_INTEGER = re.compile(r"^-?\d+(,\d+)?$")


#: A "."-grouped number whose last group has 1 or 2 digits (59.2, 1.234.56): a typo in a
#: grouped column, or a decimal whose trailing zeros were dropped.
_SHORT_GROUP = re.compile(r"^[-+]?[1-9]\d{0,2}(\.\d{3})*\.\d{1,2}$")
#: A grouped value whose last group ends in 0 (68.880, 1.250,00): its writer keeps the
#: trailing zeros a decimal would lose, so a short value beside it is not a dropped zero.
_ZERO_KEPT = re.compile(r"\.\d\d0(?:,\d+)?$")


def _grouped_typos(values: pd.Series, grouped: re.Pattern, plain: re.Pattern
                   ) -> list[int] | None:
    """Tell whether a column's text is "."-grouped thousands: None if not, else typos' rows.

    A column counts when some value is `grouped`, every other one is `plain` (a whole number,
    or one with decimal-comma places), except at most ``max(1, n // 100)`` of its `n` values
    with a short last group (``59.2`` among ``59.222``, ``68.880``: break-it trial 2026-12-08,
    one typo cleared the rule and every price was read 1,000 times too small), and those only
    when some grouped value ends in 0 (``68.880``): a writer that keeps trailing zeros did not
    drop them from ``59.2``, whereas genuine decimals written without trailing zeros
    (``12.125``, ``3.25``, ``7.5``) never show a third decimal 0 and stay clear.
    docs/locations.md, "Column integrity".

    Parameters
    ----------
    values : pandas.Series of str
        The column as written, without missing values, indexed by 0-based data row.
    grouped, plain : re.Pattern
        A "."-grouped value, and a value consistent with grouping (not grouped itself).

    Returns
    -------
    list of int or None
        None: not a grouped column; else the data rows of its short values (often ``[]``).

    Examples
    --------
    >>> g, w = _POINT_GROUPED_ONLY, _WHOLE
    >>> _grouped_typos(pd.Series(["59.222", "68.880", "950"]), g, w)
    []
    >>> _grouped_typos(pd.Series(["59.222", "68.880", "59.2"]), g, w)
    [2]
    >>> _grouped_typos(pd.Series(["59.222", "68.885", "59.2"]), g, w) is None  # no 0 kept
    True
    """
    is_grouped = values.str.fullmatch(grouped)
    if not bool(is_grouped.any()):
        return None
    short = values.str.fullmatch(_SHORT_GROUP) & ~is_grouped
    if not bool((is_grouped | short | values.str.fullmatch(plain)).all()):
        return None
    rows = [int(i) for i in values.index[short.to_numpy()]]
    if rows and (len(rows) > max(1, len(values) // 100)
                 or not bool(values[is_grouped].str.contains(_ZERO_KEPT).any())):
        return None
    return rows


def _typos_said(path: Path, rows: list[int]) -> str:
    """Return the refusal's clause naming the short values by data row (never by value)."""
    if not rows:
        return ""
    return (f"; {len(rows)} value(s), at {Origin.file(path).rows(str(rows[:5]))}, have fewer "
            'than three digits after their last "." where others keep trailing zeros '
            "(1.230): correct them too (a typo?)")


def _refuse_dot_grouped(path: Path, opts: CsvOptions, id_column: str | None) -> None:
    """Under ``decimal = ","`` without ``thousands``: refuse a column of dot-grouped numbers.

    Such a column ("1.234" for one thousand two hundred and thirty-four) would otherwise be read
    as 1.234 without a word. Exports group only numbers of 1,000 or more, so a column counts when
    some value is dot-grouped and every value is a number, grouped or not, with or without
    decimal-comma places ("836" beside "1.167": break-it trial 2026-12-07 released half the
    sizes 1,000 times too small; "1.250,00" beside "750,00": the final trial's column was read
    as text and released as categories), with the few typos :func:`_grouped_typos` allows.
    Raises InputError naming the column and ``thousands = "."``.
    """
    raw = pd.read_csv(path, sep=opts.sep, encoding=opts.encoding, dtype=str)
    for column in raw.columns:
        if column == id_column:
            continue  # ids are labels, not numbers
        values = raw[column].dropna().str.strip()
        typos = _grouped_typos(values, _DOT_GROUPED, _PLAIN_INTEGER)
        if typos is not None:
            raise InputError(
                f"column `{column}` of {path.name} holds numbers written like 1.234 (thousands "
                'grouped with ".") while `decimal` is ",": they would be read as 1.234; set '
                '`thousands = "."` ([data] thousands, or --thousands)'
                + _typos_said(path, typos))


#: A "."-grouped number: 59.222, 1.234.567 (never 0.250); and a whole number: 836, 59222.
_POINT_GROUPED_ONLY = re.compile(r"^[-+]?[1-9]\d{0,2}(\.\d{3})+$")
_WHOLE = re.compile(r"^[-+]?\d+$")


def _refuse_point_grouped(path: Path, id_column: str | None, columns: list[str],
                          read: dict) -> None:
    """Under the default ``decimal = "."`` without ``thousands``: refuse "."-grouped thousands.

    German or Danish exports write 59,222 as "59.222": read with a decimal point, a price column
    is 1,000 times too small without a word (break-it trial 2026-12-07). A response or
    covariate column read as decimals counts when every value, as written, is "."-grouped (a
    leading group of 1–3 digits, not 0, then groups of exactly three) or a whole number
    (exports group only from 1,000; one left ungrouped, "59222" among "68.880", defeated the
    first rule, which took only whole numbers under 1,000), and some value is grouped, with the
    few typos :func:`_grouped_typos` allows (``59.2``). The rule and its false positives
    (three-decimal measurements from 1 to 999.999 written with every trailing zero):
    docs/locations.md, "Column integrity". Raises InputError naming the column,
    ``thousands = "."`` with ``decimal = ","``, and how to go on if they are decimals.
    """
    raw = pd.read_csv(path, usecols=lambda c: c in columns, dtype=str, **read)
    for column in [c for c in columns if c in raw.columns and c != id_column]:
        values = raw[column].dropna().str.strip()
        typos = _grouped_typos(values, _POINT_GROUPED_ONLY, _WHOLE)
        if typos is None:
            continue
        raise InputError(
            f"column `{column}` of {path.name} holds numbers written like 1.234 (every value "
            'with exactly three digits after its ".", or a whole number): '
            'thousands grouped with "." (German or Danish exports)? They would be read as '
            '1.234; set `thousands = "."` and `decimal = ","` ([data] thousands/decimal, or '
            '--thousands/--decimal; where other columns use a decimal point, remove the "." '
            "from this column instead); if they are decimals with three places, name the file's "
            'real thousands separator instead (`thousands = " "` if it has none), which turns '
            "this check off" + _typos_said(path, typos))


def _read_csv(path: Path, opts: CsvOptions, id_column: str | None = None,
              number_columns: list[str] | None = None) -> pd.DataFrame:
    _header(path, opts)
    dtype = None if id_column is None else {id_column: str}
    # pandas' C parser ignores a non-ASCII decimal mark or thousands separator without a word
    # (the no-break spaces U+00A0 and U+202F of French exports): its Python parser honours them
    wide = any(c is not None and not c.isascii() for c in (opts.decimal, opts.thousands))
    try:
        frame = pd.read_csv(path, sep=opts.sep, decimal=opts.decimal, encoding=opts.encoding,
                            thousands=opts.thousands, dtype=dtype,
                            engine="python" if wide else "c")
        if not isinstance(frame.index, pd.RangeIndex):  # pandas made the surplus an index
            raise InputError(
                f"rows of {path.name} have more fields than its header ({frame.shape[1]} "
                f"columns): a separator {opts.sep!r} inside unquoted values, such as decimal "
                f"commas in a comma-separated file (\"38,5\"); quote those values, or write "
                'the file with sep = ";" and decimal = ","')
    except UnicodeDecodeError as exc:
        raise _encoding_error(path, opts, exc) from exc
    except ValueError as exc:  # pandas.errors.ParserError and friends
        raise InputError(f"could not read the CSV {path.name}: {exc}; check `sep` "
                         f"({opts.sep!r}) and quoting") from exc
    if opts.decimal == "," and opts.thousands is None:  # the file read: its text is good
        _refuse_dot_grouped(path, opts, id_column)
    columns = [c for c in number_columns or () if c != id_column and c in frame.columns
               and pd.api.types.is_float_dtype(frame[c])]  # "59.222" reads as a float
    if opts.decimal == "." and opts.thousands is None and columns:
        _refuse_point_grouped(path, id_column, columns,
                              dict(sep=opts.sep, encoding=opts.encoding,
                                   engine="python" if wide else "c"))
    return keep_id_text(frame, id_column)


def _read_layer(path: Path, given: pyproj.CRS | None, crs: Any
                ) -> tuple[geopandas.GeoDataFrame, pyproj.CRS]:
    try:
        parquet = path.suffix.lower() in _PARQUET_SUFFIXES
        gdf = geopandas.read_parquet(path) if parquet else geopandas.read_file(path)
    except Exception as exc:  # the readers raise many types (pyogrio, pyarrow, ValueError)
        raise InputError(f"could not read {path.name} as a spatial layer: {exc}") from exc
    if gdf.crs is None:
        if given is None:
            raise InputError(f"{path.name} has no CRS and `crs` is not set: set `crs` in the "
                             "spec (or `--crs`) to the CRS the coordinates are in (EPSG:4326 "
                             "is never assumed)")
        return gdf.set_crs(given), given
    file_crs = pyproj.CRS.from_user_input(gdf.crs)
    if given is not None and not file_crs.equals(given, ignore_axis_order=True):
        raise InputError(f"`crs` = {crs!r} ({describe(given)}) conflicts with the CRS stored in "
                         f"{path.name}: {describe(file_crs)}; remove `crs` from the spec")
    return gdf, file_crs


def read_table(path: Path, *, x: str | None, y: str | None, crs: Any,
               csv_options: CsvOptions, id_column: str | None = None,
               number_columns: list[str] | None = None
               ) -> tuple[pd.DataFrame, pyproj.CRS]:
    """Read `path`: a DataFrame for a CSV (with x/y columns), a GeoDataFrame for a layer.

    Parameters
    ----------
    path : Path
        Existing file with a supported suffix (see :data:`SUFFIXES`).
    x, y : str, optional
        CSV coordinate columns (required for CSV, refused for a layer).
    crs : str or int, optional
        CRS of the coordinates (required for CSV; must agree with a layer's own).
    csv_options : CsvOptions
        Separator, decimal mark, thousands separator and encoding (CSV only; defaults
        required for a layer). Under ``decimal = ","`` without ``thousands``, a column of
        dot-grouped numbers (``1.234``) beside whole ones or ones with decimal-comma places is
        refused, a few typos (``1.23``) aside (:func:`_grouped_typos`).
    id_column : str, optional
        A CSV's record id column: read as text, and kept as text when reading it as numbers
        would change an id (``007`` → 7); ids that read back unchanged become numbers.
    number_columns : list of str, optional
        A CSV's response and covariate columns. Under ``decimal = "."`` without
        ``thousands``, one read as decimals whose every value is a "."-grouped number
        (``59.222``) or a whole number is refused, a few typos (``59.2``) aside (thousands
        grouped with "." by German or Danish exports; :func:`_grouped_typos`).

    Returns
    -------
    frame : pandas.DataFrame or geopandas.GeoDataFrame
    source_crs : pyproj.CRS

    Raises
    ------
    InputError
        Unsupported suffix; x/y or CSV options on a layer; missing or conflicting CRS; a
        repeated header; a likely other separator; bytes outside the encoding; unreadable file.
    """
    suffix = path.suffix.lower()
    given = None if crs is None else parse_crs(crs, "crs")
    if suffix == ".csv":
        if x is None or y is None:
            raise InputError(f"a CSV input needs `x` and `y` column names, got x={x!r}, y={y!r}")
        if given is None:
            raise InputError(f"the CSV {path.name} has no CRS: set `crs` in the spec (or "
                             "`--crs` on the command line) to the CRS of its `x`/`y` columns, "
                             'e.g. "EPSG:4326" for longitude/latitude')
        return _read_csv(path, csv_options, id_column, number_columns), given
    if suffix not in _VECTOR_SUFFIXES | _PARQUET_SUFFIXES:
        raise InputError(f"input file {path.name} has suffix {suffix!r}; supported: {SUFFIXES}")
    if x is not None or y is not None:
        raise InputError(f"`x`/`y` ({x!r}, {y!r}) apply to CSV only; {path.name} has a geometry")
    if not csv_options.is_default:
        raise InputError(f"`sep`/`decimal`/`thousands`/`encoding` apply to CSV only; "
                         f"{path.name} is a "
                         "spatial layer whose format defines them")
    return _read_layer(path, given, crs)
