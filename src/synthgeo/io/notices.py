"""Warnings that reach the board: ``{"code": str, "message": str}`` (docs/release.md).

A warning that changes what a board should conclude goes into ``release.json`` (``warnings``)
and the report, not only onto the terminal. Code that finds one calls :func:`note`, which emits a
:class:`UserWarning` and appends the coded record to a list the caller keeps (for a loaded layer:
``gdf.attrs["warnings"]``). Codes are short snake_case, e.g. ``"degrees_as_metres"``.
"""

from __future__ import annotations

import re

from synthgeo._warn import warn

__all__ = ["note", "collect"]

_CODE = re.compile(r"^[a-z][a-z0-9_]*$")


def note(sink: list[dict[str, str]] | None, code: str, message: str) -> None:
    """Warn with `message` (at the user's line); append ``{"code", "message"}`` to `sink`.

    Parameters
    ----------
    sink : list of dict, optional
        Where the coded warning is kept (None: warn only).
    code : str
        Short snake_case code, e.g. ``"small_extent"``.
    message : str
        One line, naming what to check and the option that changes it.

    Raises
    ------
    ValueError
        If `code` is not snake_case.

    Examples
    --------
    >>> import warnings
    >>> kept = []
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     note(kept, "small_extent", "the points span 3 m")
    >>> kept
    [{'code': 'small_extent', 'message': 'the points span 3 m'}]
    """
    if not _CODE.match(code):
        raise ValueError(f"warning code must be snake_case, got {code!r}")
    warn(message)  # attributed to the user's call, whatever the depth (synthgeo._warn)
    if sink is not None:
        sink.append({"code": code, "message": message})


def collect(*sources: list[dict[str, str]] | None) -> list[dict[str, str]]:
    """Concatenate coded warnings, dropping exact repeats, in order.

    Examples
    --------
    >>> collect([{"code": "a", "message": "x"}], None, [{"code": "a", "message": "x"}])
    [{'code': 'a', 'message': 'x'}]
    """
    out: list[dict[str, str]] = []
    for src in sources:
        for item in src or ():
            rec = {"code": str(item["code"]), "message": str(item["message"])}
            if rec not in out:
                out.append(rec)
    return out
