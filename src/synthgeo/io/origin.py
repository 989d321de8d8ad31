"""Where records come from, as messages name it: a file, or a GeoDataFrame handed over in memory.

Both go through the same checks (:func:`synthgeo.io.checks.check_points`); only the words
differ. A message about a file names the file and the spec/command-line option that fixes it
(``coord_unit_m``, ``query``, ``drop_duplicates``); a message about a frame in memory names
"the GeoDataFrame" and what to change in it (its CRS, its geometry, its rows), because the
file options do not apply to it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Origin", "MEMORY_NAME"]

#: How messages and records name data handed over in memory.
MEMORY_NAME = "the GeoDataFrame"

_FILE = {
    "rows": "data rows {rows} (0-based, header excluded)",
    "crs": "`crs` {crs}",
    "fix_crs": "check `crs` and `coord_unit_m` ([data] crs/coord_unit_m, or "
               "--crs/--coord-unit-m)",
    "fix_extent": "Is the unit right? Kilometres need `coord_unit_m = 1000`, lon/lat degrees a "
                  "geographic `crs`. If the extent is real, set `accept_small_extent = true` "
                  "(or --accept-small-extent)",
    "fix_spacing": "If they are scaled wrongly, set `coord_unit_m` ([data] coord_unit_m, or "
                   "--coord-unit-m); if so many close locations are real, set "
                   "`accept_small_extent = true` (or --accept-small-extent)",
    "fix_missing": "fix them, or drop via `query`",
    "fix_text": "clean these values in the input file",
    "fix_decimal": 'they look like decimal commas: set `decimal` ([data] decimal, or '
                   '--decimal) to ","',
    "fix_thousands": 'they look like thousands separators ("1,200" for 1200): remove the '
                     "separators from the file (setting `decimal` to \",\" would read 1,200 as "
                     "1.2: only right for decimal commas)",
    "fix_spaced": "they look like numbers with thousands grouped by {chars}: set `thousands` "
                  "([data] thousands, or --thousands): {fix}",
    "fix_dot_grouped": 'they look like numbers with thousands grouped by "." ("1.234.567", '
                       'German or Danish exports): set `thousands = "."` and `decimal = ","` '
                       "([data] thousands/decimal, or --thousands/--decimal)",
    "fix_apostrophe": "they look like numbers with thousands grouped by {chars} (\"59'222\", "
                      "Swiss exports): set `thousands = {literal}` ([data] thousands, or "
                      "--thousands)",
    "fix_geometry": "drop them or fix the file",
    "fix_record": 'set `id_column = "record"` if it is the record id, or rename it',
    "duplicates_kept": "kept; set `drop_duplicates = true` to drop them",
    "fix_degrees": 'give `crs = "EPSG:4326"` (or the geographic CRS of the file) for degrees',
    "fix_lengths": "give the projected CRS the coordinates are in",
    "fix_offshore": "set `accept_offshore = true` ([data] accept_offshore, or --accept-offshore)",
    "fix_utm": "if they are UTM, set `crs` ([data] crs, or --crs) to the zone's CRS (EPSG:326ZZ "
               "north, EPSG:327ZZ south of the equator, ZZ the zone); if the CRS is right, "
               "declare where they lie with `study_area` ([data] study_area, or --study-area "
               "W,S,E,N) and they are checked against it instead",
}
_MEMORY = {
    "rows": "rows {rows} (0-based positions)",
    "crs": "the GeoDataFrame's CRS {crs}",
    "fix_crs": "check the GeoDataFrame's CRS (`gdf.set_crs(..., allow_override=True)` if it is "
               "wrong) and that its geometry is in that CRS's unit",
    "fix_extent": "Is the unit right? Kilometres need the geometry built in metres (x 1000), "
                  "lon/lat degrees a geographic CRS (`gdf.set_crs`). If the extent is real, "
                  "pass `accept_small_extent=True` (or [data] accept_small_extent = true)",
    "fix_spacing": "If they are scaled wrongly, build the geometry in metres; if so many "
                   "close locations are real, pass `accept_small_extent=True` (or [data] "
                   "accept_small_extent = true)",
    "fix_missing": "fix them, or drop those records first",
    "fix_text": "convert the column to numbers first",
    "fix_decimal": "they look like decimal commas: convert the column to numbers first "
                   "(e.g. `s.str.replace(\",\", \".\").astype(float)`)",
    "fix_thousands": 'they look like thousands separators ("1,200" for 1200): remove them '
                     '(e.g. `s.str.replace(",", "").astype(float)`); decimal commas would '
                     "make it 1.2",
    "fix_spaced": "they look like numbers with thousands grouped by {chars}: remove it "
                  "(e.g. {fix}) and convert the column to numbers",
    "fix_dot_grouped": 'they look like numbers with thousands grouped by "." ("1.234.567"): '
                       'remove the points (and read a decimal comma as a point) and convert '
                       'the column, e.g. `s.str.replace(".", "").str.replace(",", ".")'
                       '.astype(float)`',
    "fix_apostrophe": "they look like numbers with thousands grouped by {chars} (\"59'222\"): "
                      "remove it and convert the column, e.g. `s.str.replace({literal}, "
                      '"").astype(float)`',
    "fix_geometry": "drop them first",
    "fix_record": 'pass `id="record"` if it is the record id, or rename it',
    "duplicates_kept": "kept; drop them first if they are not real records",
    "fix_degrees": 'set a geographic CRS for degrees (`gdf.set_crs("EPSG:4326", '
                   "allow_override=True)`)",
    "fix_lengths": "set the projected CRS the geometry is in "
                   "(`gdf.set_crs(..., allow_override=True)`)",
    "fix_offshore": "pass `accept_offshore=True` (or [data] accept_offshore = true)",
    "fix_utm": "if they are UTM, set the zone's CRS (`gdf.set_crs(\"EPSG:326ZZ\", "
               "allow_override=True)`, 327ZZ south of the equator, ZZ the zone); if the CRS is "
               "right, pass `study_area=[W, S, E, N]` (sg.synthesize, or "
               "synthgeo.io.read.check_points_frame before a diagnostic) and they are checked "
               "against it instead",
}


@dataclass(frozen=True, kw_only=True)
class Origin:
    """The source of some records, for messages.

    Attributes
    ----------
    name : str
        The file's name (``"sales.csv"``) or ``"the GeoDataFrame"``.
    in_memory : bool
        True for a GeoDataFrame handed over in memory.

    Examples
    --------
    >>> Origin.file("/data/sales.csv").name, Origin.memory().name
    ('sales.csv', 'the GeoDataFrame')
    >>> Origin.memory().rows("[3, 7]")
    'rows [3, 7] (0-based positions)'
    """

    name: str
    in_memory: bool = False

    @classmethod
    def file(cls, path: str | os.PathLike) -> Origin:
        """Return the origin of a file, named by its base name."""
        return cls(name=Path(path).name)

    @classmethod
    def memory(cls) -> Origin:
        """Return the origin of a GeoDataFrame handed over in memory."""
        return cls(name=MEMORY_NAME, in_memory=True)

    def text(self, key: str) -> str:
        """Return the wording `key` for this origin (e.g. ``"fix_crs"``)."""
        return (_MEMORY if self.in_memory else _FILE)[key]

    def rows(self, rows: str) -> str:
        """Name records by position (no id column): data rows of a file, rows of a frame."""
        return self.text("rows").format(rows=rows)

    def crs(self, described: str) -> str:
        """Name the CRS the coordinates were given in (`described` by :func:`crs.describe`)."""
        return self.text("crs").format(crs=described)
