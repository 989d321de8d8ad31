"""Atomic output folders: written in a temporary sibling, renamed into place on success."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from synthgeo._errors import SpecError

__all__ = ["atomic_folder", "check_output_dir"]


def check_output_dir(
    out: str | os.PathLike,
    *,
    marker: str,
    overwrite: bool,
    inputs: Iterable[str | os.PathLike] = (),
    what: str = "an earlier output of this command",
    empty_ok: bool = True,
) -> Path:
    """Refuse an output folder before any work is done; return it resolved.

    Parameters
    ----------
    out : path
        The ``--out`` folder.
    marker : str
        File that marks a folder as an earlier output of the same command (e.g.
        ``release.json``); only such folders (or empty ones, when `empty_ok`) may be replaced.
    overwrite : bool
        ``--overwrite`` was given.
    inputs : iterable of path
        Files the folder must not contain (the data, the spec).
    what : str
        How the refusal names an earlier output (e.g. "an earlier synthgeo output").
    empty_ok : bool, default=True
        Whether an empty existing folder without the marker may be replaced.

    Returns
    -------
    Path

    Raises
    ------
    SpecError
        A folder holding an input, a file in the way, an existing folder without
        `overwrite`, a foreign folder, or an unwritable parent; each names the fix.
    """
    out = Path(out).resolve()
    for p in inputs:
        p = Path(p).resolve()
        if p == out or out in p.parents:
            raise SpecError(f"output folder {str(out)!r} contains the input {str(p)!r}; "
                            "choose another `--out`")
    if out.exists() and not out.is_dir():
        raise SpecError(f"`--out` {str(out)!r} exists and is not a folder")
    if out.exists() and not overwrite:
        raise SpecError(f"output folder {str(out)!r} exists; pass `--overwrite` to replace it "
                        "or choose another `--out`")
    if out.is_dir() and not (out / marker).is_file():
        if any(out.iterdir()):
            raise SpecError(f"output folder {str(out)!r} is not empty and holds no {marker}, so "
                            f"it is not {what}; `--overwrite` only replaces those: choose "
                            "another `--out`")
        if not empty_ok:
            raise SpecError(f"output folder {str(out)!r} holds no {marker}, so it is not {what}; "
                            "choose another `--out`")
    parent = next((p for p in [out, *out.parents] if p.exists()), out.parent)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise SpecError(f"`--out` {str(out)!r}: folder {str(parent)!r} is not writable; "
                        "choose another `--out`")
    return out


@contextmanager
def atomic_folder(out: Path) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``out``; on success it becomes ``out``.

    The folder replaces an existing ``out`` by renames on the same file system (the old one is
    moved aside, then removed), so readers never see a half-written folder. On any exception,
    Ctrl-C included, the temporary folder is removed and ``out`` is left as it was. Callers
    check beforehand whether ``out`` may be replaced.

    Parameters
    ----------
    out : Path
        Final folder; its parent is created if needed.

    Yields
    ------
    Path
        The temporary folder to write into.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o755)  # mkdtemp makes 0700; output folders are meant to be shared
        if out.exists():
            trash = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            out.rename(trash / "old")
            tmp.rename(out)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
