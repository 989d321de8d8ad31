"""Input paths: ``synthgeo:NAME`` for data shipped in the package, others relative to a folder."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

__all__ = ["PACKAGE_PREFIX", "resolve_input", "not_a_file"]

#: Prefix naming a data file shipped in ``synthgeo/data``, e.g.
#: ``synthgeo:sacramento_home_sales.csv``.
PACKAGE_PREFIX = "synthgeo:"


def resolve_input(path: str | os.PathLike, *, relative_to: Path | None = None) -> Path:
    """Return the file a spec, an option or a Python caller names.

    Parameters
    ----------
    path : str or os.PathLike
        ``synthgeo:NAME`` (a data file shipped in the package), an absolute path, or a path
        relative to `relative_to` (or to the working folder).
    relative_to : Path, optional
        Folder a relative path is read against (a spec's folder); resolved then, so messages
        show no ``models/../data``.

    Returns
    -------
    Path

    Examples
    --------
    >>> resolve_input("synthgeo:sacramento_home_sales.csv").name
    'sacramento_home_sales.csv'
    >>> resolve_input("data/x.csv", relative_to=Path("/srv/models")).as_posix()
    '/srv/models/data/x.csv'
    """
    text = os.fspath(path)
    if isinstance(text, str) and text.startswith(PACKAGE_PREFIX):
        return Path(str(resources.files("synthgeo") / "data" / text[len(PACKAGE_PREFIX):]))
    out = Path(text)
    if not out.is_absolute() and relative_to is not None:
        out = (relative_to / out).resolve()
    return out


def not_a_file(path: str | os.PathLike) -> str | None:
    """Say why `path` cannot be read as an input file; None when it is a regular file.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    str or None
        ``"does not exist"``, ``"is a folder"`` or ``"is not a regular file (a device, pipe
        or socket)"``, to follow the path in a message (break-it trial 2026-12-07: a folder
        and ``/dev/zero`` were both said not to exist).

    Examples
    --------
    >>> not_a_file("/") , not_a_file("/nowhere/x.csv")
    ('is a folder', 'does not exist')
    >>> not_a_file(resolve_input("synthgeo:sacramento_home_sales.csv")) is None
    True
    """
    p = Path(path)
    if p.is_file():
        return None
    if p.is_dir():
        return "is a folder"
    if p.exists():
        return "is not a regular file (a device, pipe or socket)"
    return "does not exist"
