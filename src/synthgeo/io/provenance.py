r"""Provenance: the one file hasher, the canonical hash of a GeoDataFrame, and the record builder.

Every command's record (``release.json``, ``comparison.json``, ``kanon.json``,
``outliers.json``, ``mask.json``, ``choose_k.json``) takes its ``command``, ``created_at``,
``versions``, ``input``/``inputs`` and ``crs`` blocks from :func:`provenance`, so they say the
same thing the same way (docs/release.md, "Provenance").

Canonical bytes of a GeoDataFrame
---------------------------------
Data handed over in memory (``synthgeo.synthesize``) has no file to hash, so the record holds
``frame_sha256``: the SHA-256 of the frame's *canonical bytes*, defined so that the same data
give the same digest whatever route built the frame, and different data (as far as any output
can tell) a different one. The bytes are a sequence of chunks, each an 8-byte little-endian
length followed by that many bytes:

1. the version tag ``synthgeo-frame/1``; the number of rows (8-byte little-endian integer);
2. the columns **sorted by name** (their order never changes an output; repeated names keep
   their order), each as its name (UTF-8), its kind, then its values in row order. The kind is
   the NumPy dtype name for NumPy columns (``int64``, ``float64``, ``bool``,
   ``datetime64[ns]``, ...: an integer column writes ``3`` where a float one writes ``3.0``, so
   it is part of the data), ``geometry``, and ``object`` for every other column (text,
   category, nullable and time-zone-aware types), whose values are tagged one by one; so
   pandas' choice between ``object`` and ``str`` for text does not change the digest:

   - NumPy bool, integer, float, complex, datetime64 and timedelta64 columns: the values as
     one little-endian array (every NaN as the same NaN, so its bit pattern does not matter);
   - geometry columns: the CRS as WKT2:2019 text (pyproj; empty when unset), then each
     row's ISO WKB (little-endian, with Z when present, no SRID) as a *list* (below);
   - ``object`` columns: each row's ``tag:str(value)`` in UTF-8 as a list, the tag ``bool``,
     ``int``, ``float``, ``str`` (NumPy and Python scalars alike) or the value's type name (so
     the number 1 and the text "1" differ).

   A list is two chunks: the byte length of every row's item as little-endian int64 (−1 for
   a missing value: None, NaN, NA, a missing geometry), then the items concatenated.

The index and ``attrs`` are not part of the data (synthgeo never reads them). The CRS text
comes from the installed PROJ database; compare digests made with the same ``versions``.
"""

from __future__ import annotations

import hashlib
import numbers
import os
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["file_sha256", "frame_sha256", "input_record", "crs_record", "provenance",
           "FRAME_HASH_VERSION", "INPUT_KEYS"]

#: First chunk of the canonical bytes; bumped if their definition ever changes.
FRAME_HASH_VERSION = "synthgeo-frame/1"

#: Keys of an input block, in order (``attrs`` of a frame from ``synthgeo.read_points``).
INPUT_KEYS = ("path", "sha256", "n_read", "n_duplicates", "query", "frame_sha256")


def file_sha256(path: str | os.PathLike) -> str:
    """Return the hex SHA-256 of a file's bytes, read in blocks (never whole into memory).

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    str
        64 hexadecimal digits.

    Raises
    ------
    OSError
        If the file cannot be read.

    Examples
    --------
    >>> from synthgeo.io.paths import resolve_input
    >>> len(file_sha256(resolve_input("synthgeo:paper_simulation.csv")))
    64
    """
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _chunks(frame: pd.DataFrame) -> Iterator[bytes]:
    import shapely

    yield FRAME_HASH_VERSION.encode()
    yield len(frame).to_bytes(8, "little")
    names = [str(c) for c in frame.columns]
    for j in sorted(range(len(names)), key=lambda i: names[i]):
        col = frame.iloc[:, j]
        yield names[j].encode()
        numeric = isinstance(col.dtype, np.dtype) and col.dtype.kind in "biufcmM"
        kind = str(col.dtype) if numeric or str(col.dtype) == "geometry" else "object"
        yield kind.encode()
        if kind == "geometry":
            yield col.crs.to_wkt().encode() if col.crs is not None else b""
            yield from _as_list(shapely.to_wkb(np.asarray(col.array, dtype=object), hex=False,
                                               output_dimension=3, byte_order=1,
                                               include_srid=False, flavor="iso"))
        elif numeric:
            values = col.to_numpy()
            if values.dtype.kind in "fc":
                values = np.where(np.isnan(values), np.nan, values)
            yield np.ascontiguousarray(values.astype(values.dtype.newbyteorder("<"))).tobytes()
        else:
            missing = pd.isna(col).to_numpy()
            tags: dict[type, str] = {}
            yield from _as_list([None if m else f"{tags.get(type(v)) or _tag(v, tags)}:{v}"
                                 .encode() for v, m in zip(col.to_numpy(dtype=object), missing)])


def _as_list(items) -> Iterator[bytes]:
    """Yield a list's two chunks: int64 lengths (−1 = missing), then the items joined."""
    present = [b for b in items if b is not None]
    lengths = np.fromiter((-1 if b is None else len(b) for b in items), dtype="<i8",
                          count=len(items))
    yield lengths.tobytes()
    yield b"".join(present)


def _tag(value: Any, cache: dict[type, str]) -> str:
    """Return the type tag of a value of an ``object`` column (NumPy, Python scalars alike)."""
    tag = type(value).__name__
    for name, kinds in (("bool", (bool, np.bool_)), ("int", numbers.Integral),
                        ("float", numbers.Real), ("str", str)):
        if isinstance(value, kinds):
            tag = name
            break
    cache[type(value)] = tag
    return tag


def frame_sha256(frame: pd.DataFrame) -> str:
    """Return the SHA-256 of a (Geo)DataFrame's canonical bytes (see the module docstring).

    Parameters
    ----------
    frame : pandas.DataFrame or geopandas.GeoDataFrame

    Returns
    -------
    str
        64 hexadecimal digits; equal for frames with equal data, whatever their column order,
        index or ``attrs``.

    Examples
    --------
    >>> import geopandas, pandas as pd
    >>> a = geopandas.GeoDataFrame({"price": [1.0, 2.0], "id": [1, 2]},
    ...                            geometry=geopandas.points_from_xy([0, 1], [0, 1]),
    ...                            crs="EPSG:32610")
    >>> b = a[["id", "geometry", "price"]].set_index(pd.Index([7, 8]))
    >>> frame_sha256(a) == frame_sha256(b)
    True
    >>> frame_sha256(a) == frame_sha256(a.astype({"id": "float64"}))
    False
    """
    digest = hashlib.sha256()
    for chunk in _chunks(frame):
        digest.update(len(chunk).to_bytes(8, "little"))
        digest.update(chunk)
    return digest.hexdigest()


def input_record(points: pd.DataFrame, *, path: str | os.PathLike | None = None,
                 query: str | None = None) -> dict[str, Any]:
    """Return where one input came from: file, its hash, rows read and the frame's hash.

    Parameters
    ----------
    points : pandas.DataFrame or geopandas.GeoDataFrame
        The input as loaded (``attrs`` from :func:`synthgeo.read_points` or
        :func:`synthgeo.io.points.load_points` supply the file's ``path``, ``sha256``,
        ``n_read``, ``n_duplicates``, ``query`` and ``frame_sha256``).
    path, query : optional
        Override the ``attrs`` (commands that read with :func:`~synthgeo.io.points.load_points`
        directly pass the file and query they read).

    Returns
    -------
    dict
        :data:`INPUT_KEYS`: ``path`` and ``sha256`` of the file (both None for data built in
        memory), ``n_read`` (rows before the query), ``n_duplicates`` (exact duplicate rows),
        ``query`` and ``frame_sha256`` (:func:`frame_sha256` of the frame that entered the
        command; computed here when ``attrs`` lack it).

    Examples
    --------
    >>> import geopandas
    >>> pts = geopandas.GeoDataFrame({"y": [1.0, 2.0]},
    ...                              geometry=geopandas.points_from_xy([0, 1], [0, 1]))
    >>> rec = input_record(pts)
    >>> rec["path"], rec["sha256"], len(rec["frame_sha256"])
    (None, None, 64)
    """
    a = points.attrs
    path = path if path is not None else a.get("path")
    return {
        "path": None if path is None else os.fspath(Path(path).absolute()),
        "sha256": a.get("sha256"),
        "n_read": a.get("n_read"),
        "n_duplicates": a.get("n_duplicates"),
        "query": query if query is not None else a.get("query"),
        "frame_sha256": a.get("frame_sha256") or frame_sha256(points),
    }


def crs_record(points: pd.DataFrame) -> dict[str, Any]:
    """Return the input's CRS and the projected CRS (metres) distances were measured in.

    Parameters
    ----------
    points : geopandas.GeoDataFrame
        Projected points; ``attrs["source_crs"]`` (WKT) is the CRS of the input coordinates.

    Returns
    -------
    dict
        ``source`` (WKT, or None), ``projected`` (name), ``projected_wkt`` and
        ``coordinate_unit`` (``attrs["coordinate_unit"]``: the unit of the input's x/y, or None).

    Examples
    --------
    >>> import geopandas
    >>> pts = geopandas.GeoDataFrame(geometry=geopandas.points_from_xy([0], [0]),
    ...                              crs="EPSG:32610")
    >>> crs_record(pts)["projected"]
    'WGS 84 / UTM zone 10N'
    """
    return {"source": points.attrs.get("source_crs"), "projected": points.crs.name,
            "projected_wkt": points.crs.to_wkt(),
            "coordinate_unit": points.attrs.get("coordinate_unit")}


def provenance(command: str | None, *, points: pd.DataFrame | None = None,
               inputs: Mapping[str, Any] | None = None, path: str | os.PathLike | None = None,
               query: str | None = None, timestamp: bool = True) -> dict[str, Any]:
    """Return the provenance blocks of a record; each command adds its own results.

    Parameters
    ----------
    command : str or None
        Subcommand name (``"kanon"`` gives ``"command": "synthgeo kanon"``); None leaves the
        ``command`` key out (``release.json``, whose format key names it).
    points : geopandas.GeoDataFrame, optional
        The one points input: adds ``input`` (:func:`input_record`), ``crs``
        (:func:`crs_record`) and ``warnings`` (the coded warnings of its loading,
        ``attrs["warnings"]``).
    inputs : mapping, optional
        Several inputs, each already described (e.g. cases, households, region): added as
        ``inputs``.
    path, query : optional
        Passed to :func:`input_record`.
    timestamp : bool, default=True
        Add ``created_at``; False for a record that must be byte-identical for the same inputs
        and seed (``mask.json``, whose rerun is compared with the earlier file).

    Returns
    -------
    dict
        ``command``, ``created_at`` (UTC, ISO 8601, seconds), ``input`` and ``crs`` or
        ``inputs``, and ``versions`` (:func:`synthgeo.show_versions`'s packages).

    Examples
    --------
    >>> rec = provenance("choose-k", inputs={"cases": {"sha256": None}})
    >>> list(rec)
    ['command', 'created_at', 'inputs', 'versions']
    >>> rec["command"]
    'synthgeo choose-k'
    """
    from synthgeo._versions import package_versions

    rec: dict[str, Any] = {} if command is None else {"command": f"synthgeo {command}"}
    if timestamp:
        rec["created_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    if points is not None:
        rec["input"] = input_record(points, path=path, query=query)
        rec["crs"] = crs_record(points)
        rec["warnings"] = list(points.attrs.get("warnings", []))
    if inputs is not None:
        rec["inputs"] = dict(inputs)
    rec["versions"] = package_versions()
    return rec
