"""Atomic output folders: written in a temporary sibling, renamed into place on success."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["atomic_folder"]


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
