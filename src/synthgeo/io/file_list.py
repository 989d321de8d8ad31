"""Check a folder's files against a list of their sizes and SHA-256 digests: one home.

A release's files are checked against the register's list (``--previous``,
:meth:`synthgeo.register.Register.verify_folder`) and against its release.json's own list
(``synthgeo verify``, :func:`synthgeo.pipeline.previous.check_release_files`): the same rule
both times (every listed file present, of its size and digest; nothing unlisted under
``release/``), only the list's source differs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from synthgeo.io.provenance import file_sha256

__all__ = ["check_file_list"]


def check_file_list(folder: str | os.PathLike, files: Iterable[Mapping[str, Any]], *,
                    listed_in: str, refuse: Callable[[str], Exception],
                    under: str = "release") -> None:
    r"""Refuse a folder whose files differ from a list (bytes and SHA-256), or hold extra ones.

    Parameters
    ----------
    folder : str or os.PathLike
        The folder the list's paths are relative to (an output folder).
    files : iterable of mapping
        ``{"path", "bytes", "sha256"}`` per file (a release.json's ``release_files`` or the
        register's rows); paths in POSIX form, relative to `folder`.
    listed_in : str
        Where the list comes from, for the messages ("the register", "its release.json").
    refuse : callable
        Makes the exception to raise from one phrase (the caller's prefix and fix).
    under : str, default="release"
        The subfolder in which a file the list does not name is refused.

    Raises
    ------
    Exception
        What `refuse` returns: a listed file missing, or of another size or SHA-256 (changed
        after release); a file under `under` that the list does not name. Sizes are compared
        first, so a changed file of another size is refused without hashing it.

    Examples
    --------
    >>> import tempfile
    >>> from synthgeo.io.provenance import file_sha256
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "release" / "a.csv"
    ...     p.parent.mkdir()
    ...     _ = p.write_text("x\n")
    ...     files = [{"path": "release/a.csv", "bytes": 2, "sha256": file_sha256(p)}]
    ...     check_file_list(d, files, listed_in="the list", refuse=ValueError)
    ...     _ = (Path(d) / "release" / "b.csv").write_text("y\n")
    ...     check_file_list(d, files, listed_in="the list", refuse=ValueError)
    Traceback (most recent call last):
    ...
    ValueError: release/ holds files the list does not list: ['release/b.csv']
    """
    folder = Path(folder)
    listed = set()
    for f in files:
        path = f["path"]
        listed.add(path)
        p = folder / path
        if not p.is_file():
            raise refuse(f"{path} is in {listed_in} but missing")
        if p.stat().st_size != f["bytes"] or file_sha256(p) != f["sha256"]:
            raise refuse(f"{path} does not match the SHA-256 in {listed_in} (changed after "
                         "release)")
    extra = sorted(p.relative_to(folder).as_posix() for p in (folder / under).rglob("*")
                   if p.is_file() and p.relative_to(folder).as_posix() not in listed)
    if extra:
        raise refuse(f"{under}/ holds files {listed_in} does not list: {extra}")
