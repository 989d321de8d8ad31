"""The one JSON sanitiser of synthgeo's records (release.json, kanon.json, mask.json, ...).

JSON has no NaN and no infinities, and :mod:`json` does not know NumPy scalars, arrays or
paths. Every record synthgeo writes goes through :func:`jsonable` (or :func:`dumps`), so all of
them spell the same value the same way:

========================  =============================================================
Python / NumPy value      JSON
========================  =============================================================
NaN (float, NumPy)        ``null``: undefined (e.g. a share of zero records)
+inf / -inf               ``"inf"`` / ``"-inf"``: the sign is kept (γ = ∞ is the paper's
                          restricted model; −inf is a lower bound, not "missing")
NumPy scalar              the Python int, float, bool or str it holds
NumPy array, tuple        a list
mapping                   an object with the keys as text
path                      its text
========================  =============================================================

This is the convention of ``release.schema.json`` (``$defs/number``). Earlier copies disagreed:
one wrote −inf as ``"inf"``, another wrote both infinities as ``null``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["jsonable", "dumps"]


def jsonable(value: Any) -> Any:
    """Return `value` with every part JSON can hold, recursively (see the module table).

    Parameters
    ----------
    value : any
        Mappings, lists, tuples, NumPy arrays and scalars, floats, paths, and anything
        :func:`json.dumps` takes as it is.

    Returns
    -------
    any
        The same structure made of dicts, lists, str, int, float, bool and None; NaN as None,
        ±inf as ``"inf"``/``"-inf"``.

    Examples
    --------
    >>> import numpy as np
    >>> jsonable({"gamma": float("inf"), "low": -np.inf, "share": np.nan, 1: np.int64(3)})
    {'gamma': 'inf', 'low': '-inf', 'share': None, '1': 3}
    >>> jsonable((np.array([1.5, np.nan]), np.bool_(True)))
    [[1.5, None], True]
    """
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


def dumps(value: Any, *, indent: int | None = 2, **kwargs: Any) -> str:
    """Serialise `value` as JSON after :func:`jsonable` (NaN and inf can never slip through).

    Parameters
    ----------
    value : any
    indent : int or None, default=2
    **kwargs
        Passed to :func:`json.dumps` (e.g. ``sort_keys``, ``separators``).

    Returns
    -------
    str

    Examples
    --------
    >>> dumps({"M_m": 412.5, "rate": float("nan")}, indent=None)
    '{"M_m": 412.5, "rate": null}'
    """
    return json.dumps(jsonable(value), indent=indent, allow_nan=False, **kwargs)
