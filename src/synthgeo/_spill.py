"""Large arrays kept for a later stage in an unnamed temporary file, out of the resident set.

A fit's posterior draws of w for the implicates' draws are made once (the NNGP draws cost
minutes at 10⁶ records) and read again by the report's surface panel, long after the risk
stage has passed the run's memory peak. At 10⁶ records and L = 100 they are 800 MB per model.
:func:`spill` writes such an array to a :func:`tempfile.TemporaryFile` (no name on POSIX, mode
0600, gone when closed or collected) and :meth:`Spilled.load` reads a fresh copy back with
``read`` calls: the same bytes, and between reads nothing of it is resident in this process
(a memory map would keep the pages it has read counted in the resident set; the operating
system's page cache is not). docs/inference.md, "Memory".
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import weakref

import numpy as np

__all__ = ["spill", "unspill", "Spilled", "SPILL_BYTES", "tmpdir_not_used"]

#: Arrays of at least this many bytes are spilled (64 MiB: from about 10⁵ records at L = 100;
#: smaller runs keep their arrays in memory; the values are the same either way).
SPILL_BYTES = 64 * 2**20

log = logging.getLogger(__name__)
_WARNED = False  # the memory warning is given once per process
_TMPDIR_CHECKED = False


class Spilled:
    """An array written to an unnamed temporary file; :meth:`load` returns a fresh copy.

    Parameters
    ----------
    array : ndarray
        Any shape, a fixed-size dtype (no objects).
    """

    def __init__(self, array: np.ndarray) -> None:
        array = np.asarray(array)
        self.shape, self.dtype = array.shape, array.dtype
        self._file = tempfile.TemporaryFile(prefix="synthgeo-spill-")
        np.save(self._file, array, allow_pickle=False)
        self._file.flush()  # a full disk fails here (caught by spill), not at a later load
        self._lock = threading.Lock()
        weakref.finalize(self, self._file.close)  # also at exit: no unclosed-file warning

    def load(self) -> np.ndarray:
        """Return a new in-memory copy of the array (writeable; the same bytes)."""
        with self._lock:
            self._file.seek(0)
            return np.load(self._file, allow_pickle=False)

    def __repr__(self) -> str:
        """Show shape and dtype only (the values may be confidential)."""
        return f"Spilled(shape={self.shape}, dtype={self.dtype})"


def spill(array: np.ndarray, *, min_bytes: int | None = None) -> np.ndarray | Spilled:
    """Return ``array`` itself, or a :class:`Spilled` copy of it on disk when it is large.

    Parameters
    ----------
    array : ndarray
    min_bytes : int, optional
        Arrays smaller than this are returned unchanged; default :data:`SPILL_BYTES` (read
        at each call).

    Returns
    -------
    ndarray or Spilled

    Examples
    --------
    >>> a = np.arange(6.0).reshape(2, 3)
    >>> spill(a) is a
    True
    >>> b = spill(a, min_bytes=0)
    >>> b
    Spilled(shape=(2, 3), dtype=float64)
    >>> bool(np.array_equal(b.load(), a))
    True
    """
    array = np.asarray(array)
    if array.nbytes < (SPILL_BYTES if min_bytes is None else min_bytes) or array.size == 0:
        return array
    _check_tmpdir()
    try:
        return Spilled(array)
    except OSError as exc:  # a full or unwritable temporary folder: keep it in memory
        global _WARNED
        if not _WARNED:
            _WARNED = True
            log.warning("could not keep a %s-byte array in a temporary file (%s: %s); it "
                        "stays in memory (set TMPDIR to a folder with room to lower the peak)",
                        f"{array.nbytes:,}", type(exc).__name__, exc.strerror or "error")
        return array


def _fallback() -> str | None:
    """Return Python's temporary folder when ``TMPDIR`` is set to another one, else None."""
    wanted = os.environ.get("TMPDIR")
    used = tempfile.gettempdir()
    return used if wanted and os.path.realpath(wanted) != os.path.realpath(used) else None


def _check_tmpdir() -> None:
    """Log once if ``TMPDIR`` is set but Python's temporary folder is another one.

    :mod:`tempfile` skips a ``TMPDIR`` it cannot write to and falls back to /tmp (or the
    working folder) without a word; an operator who chose ``TMPDIR`` for confidential
    scratch data (an encrypted volume) must hear that it is not used. A release also says so
    in its coded warnings (:func:`tmpdir_not_used`).
    """
    global _TMPDIR_CHECKED
    if _TMPDIR_CHECKED:
        return
    _TMPDIR_CHECKED = True
    used = _fallback()
    if used is not None:
        log.warning("TMPDIR is set to a folder Python cannot use (missing or not writable); "
                    "temporary files of large arrays go to %s instead", used)


def tmpdir_not_used() -> str | None:
    """Return the coded warning's line when ``TMPDIR`` is set but not used, else None.

    A release run calls it before fitting (``tmpdir_not_used`` in release.json's
    ``warnings`` and the report: break-it trial 2026-12-08, only a log line said that the
    confidential arrays :func:`spill` writes went to the fallback folder). The line names
    that folder, never the data.

    Returns
    -------
    str or None
        One line naming the folder used instead and the fix, or None when ``TMPDIR`` is not
        set or is the folder used.

    Examples
    --------
    >>> line = tmpdir_not_used()  # None here unless TMPDIR names an unusable folder
    >>> line is None or line.startswith("TMPDIR is set to a folder Python cannot use")
    True
    """
    used = _fallback()
    if used is None:
        return None
    mib = SPILL_BYTES // 2**20
    return (f"TMPDIR is set to a folder Python cannot use (missing or not writable): the "
            f"temporary files of this run's large arrays (confidential draws and predictives "
            f"of {mib:,} MiB or more, from about 10^5 records) go to {used} instead; set TMPDIR "
            "to a writable folder (the one chosen for confidential scratch data) and run again")


def unspill(value: np.ndarray | Spilled) -> np.ndarray:
    """Return the array held by ``value`` (a fresh copy when spilled)."""
    return value.load() if isinstance(value, Spilled) else value
