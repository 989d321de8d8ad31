"""Atomic output folders: written in a temporary sibling, renamed into place on success.

The one output-folder writer of synthgeo: :func:`check_output_dir` refuses a bad ``--out``
before any work, :func:`atomic_folder` is the temporary-folder-then-rename primitive, and
:func:`write_folder` does both for every command (release, comparison, kanon, outliers, mask,
choose-k).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from synthgeo._errors import SpecError
from synthgeo._warn import warn

__all__ = ["atomic_folder", "check_output_dir", "write_folder"]


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
        A folder holding an input, a folder inside a synthgeo release folder, a file in the
        way, an existing folder without `overwrite`, a foreign folder, or a parent in which no
        folder can be created (tried: a temporary folder is made and removed); each names the
        fix.
    """
    out = Path(out).resolve()
    for p in inputs:
        p = Path(p).resolve()
        if p == out or out in p.parents:
            raise SpecError(f"output folder {str(out)!r} contains the input {str(p)!r}; "
                            "choose another `--out`")
    inside = next((p for p in out.parents if (p / "release.json").is_file()
                   and _is_record(p / "release.json", "release.json")), None)
    if inside is not None:  # its release/ is published, its register lists its files
        raise SpecError(f"`--out` {str(out)!r} lies inside the release folder {str(inside)!r}: "
                        "its release/ is what may be published (a confidential file written "
                        "there would be published with it) and the register lists its files; "
                        "choose an `--out` outside it")
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
    if out.is_dir() and (out / marker).is_file() and not _is_record(out / marker, marker):
        raise SpecError(f"output folder {str(out)!r} holds a {marker} that is not a synthgeo "
                        f"record, so it is not {what}; `--overwrite` only replaces those: "
                        "choose another `--out`")
    _check_writable(out)
    return out


def _check_writable(out: Path) -> None:
    """Create and remove a temporary folder where :func:`atomic_folder` will make its own.

    Beside `out` (in its nearest existing ancestor when its parent does not exist yet). Access
    bits alone do not tell: root passes ``os.access`` on ``/proc``, a read-only mount or a full
    disk refuse only the write (break-it trial 2026-12-07: ``--out /proc/x`` ran the whole
    pipeline, then failed with a raw ``[Errno 2]`` naming the temporary folder).
    """
    parent = next(p for p in out.parents if p.exists())  # the root exists
    if not parent.is_dir():
        raise SpecError(f"`--out` {str(out)!r}: {str(parent)!r} is not a folder; choose "
                        "another `--out`")
    try:
        probe = tempfile.mkdtemp(prefix=f".{out.name}.probe-", dir=parent)
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise SpecError(f"`--out` {str(out)!r}: a folder cannot be created in {str(parent)!r} "
                        f"({why}); choose another `--out`") from None
    os.rmdir(probe)


def _is_record(path: Path, marker: str) -> bool:
    """Tell whether ``path`` reads as a record synthgeo wrote: JSON.

    A release record must also name itself (``synthgeo_release_record``).
    """
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if marker != "release.json":  # another command's record: any JSON it wrote
        return True
    return isinstance(data, dict) and "synthgeo_release_record" in data


def _warn_stale(out: Path) -> None:
    """Warn of staging folders beside ``out`` left by a killed run (they may be confidential).

    A run stopped by an exception or Ctrl-C removes its own; one killed outright (SIGKILL, the
    out-of-memory killer) cannot. They are not removed here: another run may be writing to
    ``out`` at this moment.
    """
    stale = sorted(p.name for pattern in (f".{out.name}.tmp-*", f".{out.name}.old-*")
                   for p in out.parent.glob(pattern) if p.is_dir())
    if stale:
        warn(f"{len(stale)} folder(s) beside {out.name} were left by an interrupted run "
             f"({', '.join(stale[:3])}{', ...' if len(stale) > 3 else ''} in {out.parent}): "
             "they may hold confidential files; remove them once no other synthgeo run "
             "writes there")


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
    _warn_stale(out)
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


#: What :func:`write_folder` accepts for one file: a writer ``f(path)``, text, bytes, or a
#: dict/list written as indented JSON through :func:`synthgeo.io.jsonable.dumps`.
FileContent = Callable[[Path], Any] | str | bytes | dict | list


def write_folder(
    out: str | os.PathLike,
    files: Mapping[str, FileContent] | Callable[[Path], Any],
    *,
    marker: str,
    overwrite: bool = False,
    inputs: Iterable[str | os.PathLike] = (),
    what: str = "an earlier output of this command",
    empty_ok: bool = True,
) -> Path:
    """Write a new output folder all or nothing; return it (resolved).

    Parameters
    ----------
    out : path
        Output folder; checked first by :func:`check_output_dir` (with `marker`,
        `overwrite`, `inputs`, `what` and `empty_ok`).
    files : mapping or callable
        Relative file name (sub-folders are created) → content (see :data:`FileContent`),
        written in order; or one function ``write(tmp)`` that fills the temporary folder
        itself (when later files depend on earlier ones, e.g. a record of hashes).
    marker, overwrite, inputs, what, empty_ok
        See :func:`check_output_dir`.

    Returns
    -------
    Path

    Raises
    ------
    SpecError
        A refused output folder (see :func:`check_output_dir`); nothing is written.

    Examples
    --------
    >>> import json, tempfile
    >>> out = Path(tempfile.mkdtemp()) / "result"
    >>> done = write_folder(out, {"summary.json": {"share": float("nan")},
    ...                           "tables/n.csv": "n,3"}, marker="summary.json")
    >>> json.loads((done / "summary.json").read_text())
    {'share': None}
    >>> sorted(p.name for p in done.rglob("*"))
    ['n.csv', 'summary.json', 'tables']
    """
    out = check_output_dir(out, marker=marker, overwrite=overwrite, inputs=inputs, what=what,
                           empty_ok=empty_ok)
    with atomic_folder(out) as tmp:
        if callable(files):
            files(tmp)
        else:
            for name, content in files.items():
                _write_one(tmp / name, content)
    return out


def _write_one(path: Path, content: FileContent) -> None:
    from synthgeo.io.jsonable import dumps

    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, dict | list):
        path.write_text(dumps(content, indent=2), encoding="utf-8")
    elif isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        content(path)
