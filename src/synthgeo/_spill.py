"""Large arrays kept for a later stage in an unnamed temporary file, out of the resident set.

A fit's posterior draws of w for the implicates' draws are made once (the NNGP draws cost
minutes at 10⁶ records) and read again by the report's surface panel, long after the risk
stage has passed the run's memory peak. At 10⁶ records and L = 100 they are 800 MB per model.
:func:`spill` writes such an array to a :func:`tempfile.TemporaryFile` (no name on POSIX, mode
0600, gone when closed or collected) and :meth:`Spilled.load` reads a fresh copy back with
``read`` calls: the same bytes, and between reads nothing of it is resident in this process
(a memory map would keep the pages it has read counted in the resident set; the operating
system's page cache is not). :func:`spill_variables` does the same for an xarray Dataset's
large variables (one response's implicates between stages), which then read from the file on
access, a selection only its own bytes (:meth:`Spilled.read`). docs/inference.md, "Memory".
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import weakref

import numpy as np
import xarray as xr
from xarray.backends import BackendArray
from xarray.core import indexing

__all__ = ["spill", "unspill", "Spilled", "SPILL_BYTES", "spill_variables",
           "tmpdir_not_used"]

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
        # where the values start (np.save writes C order unless the array is Fortran-ordered)
        self._offset = self._file.tell() - array.nbytes
        self._c_order = array.flags.c_contiguous or not array.flags.f_contiguous
        self._lock = threading.Lock()
        weakref.finalize(self, self._file.close)  # also at exit: no unclosed-file warning

    def load(self) -> np.ndarray:
        """Return a new in-memory copy of the array (writeable; the same bytes)."""
        with self._lock:
            self._file.seek(0)
            return np.load(self._file, allow_pickle=False)

    def read(self, key: tuple) -> np.ndarray:
        """Return ``array[key]`` for a tuple of ints and slices, one per axis.

        Only the selected rows of the leading axis are read, and of a 2-D array's rows only
        the columns from the first to the last selected: a block of records of an
        (implicate, record) array costs its own bytes, not the whole array's.
        """
        key = tuple(key) + (slice(None),) * (len(self.shape) - len(key))
        if not self._c_order or not self.shape:
            return self.load()[key]
        rows = range(self.shape[0])[key[0]]
        single = isinstance(rows, int)
        rows = [rows] if single else rows
        tail = self.shape[1:]
        row_items = int(np.prod(tail, dtype=np.int64))
        lo, hi, rest = 0, row_items, key[1:]
        if len(tail) == 1 and isinstance(key[1], (int, np.integer)):  # one column
            lo = range(tail[0])[int(key[1])]
            hi, rest = lo + 1, (0,)
        elif len(tail) == 1 and isinstance(key[1], slice):  # only the columns' span
            start, stop, step = key[1].indices(tail[0])
            cols = range(start, stop, step)
            if len(cols) == 0:
                return np.empty((len(rows), 0), self.dtype)[0 if single else slice(None)]
            lo, hi = min(cols[0], cols[-1]), max(cols[0], cols[-1]) + 1
            rest = (slice(None) if step == 1 else np.asarray(cols) - lo,)
        item, width = self.dtype.itemsize, hi - lo
        out = np.empty((len(rows), width), self.dtype)
        fd = self._file.fileno()
        if width == row_items and len(rows) > 1 and rows[-1] - rows[0] == len(rows) - 1:
            _pread_into(fd, out, self._offset + rows[0] * row_items * item)  # one read
        else:
            for k, i in enumerate(rows):
                _pread_into(fd, out[k], self._offset + (i * row_items + lo) * item)
        out = out.reshape((len(rows), width) if width != row_items else (len(rows), *tail))
        out = out[(slice(None), *rest)]
        return out[0] if single else out

    def __repr__(self) -> str:
        """Show shape and dtype only (the values may be confidential)."""
        return f"Spilled(shape={self.shape}, dtype={self.dtype})"


def _pread_into(fd: int, buffer: np.ndarray, offset: int) -> None:
    """Fill the contiguous ``buffer`` from the file ``fd`` at ``offset`` (no file position)."""
    view = memoryview(buffer).cast("B")
    done = 0
    while done < view.nbytes:  # a read returns at most about 2 GB
        got = os.preadv(fd, [view[done:]], offset + done)
        if got <= 0:
            raise OSError(f"the temporary file of a spilled array ended early ({done} bytes)")
        done += got


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


class _SpilledBackend(BackendArray):
    """An xarray lazily loaded array over a :class:`Spilled` file (read-only, no cache)."""

    def __init__(self, spilled: Spilled) -> None:
        self.spilled = spilled
        self.shape, self.dtype = spilled.shape, spilled.dtype

    def __getitem__(self, key):
        """Read the selection from the file (xarray's basic indexing)."""
        return indexing.explicit_indexing_adapter(key, self.shape, indexing.IndexingSupport.BASIC,
                                                  self.spilled.read)

    def __deepcopy__(self, memo) -> _SpilledBackend:
        """Share the file: the values never change (a deep copy of a Dataset stays lazy)."""
        return self

    def __reduce__(self):
        """Pickle the values themselves (a worker process cannot read this file)."""
        return (indexing.NumpyIndexingAdapter, (self.spilled.load(),))


def spill_variables(ds: xr.Dataset, *, min_bytes: int | None = None) -> xr.Dataset:
    """Return ``ds`` with its large data variables kept in temporary files, read on access.

    A variable of at least ``min_bytes`` (default :data:`SPILL_BYTES`) whose values are
    contiguous in memory (not a broadcast view) is written to a :class:`Spilled` file and
    replaced by a lazily loaded array (xarray's backend interface, as ``open_dataset`` with
    ``cache=False``): ``.values`` returns a fresh copy each time, and a selection
    (``ds["y_synthetic"][:, a:b]``, ``ds.isel(implicate=l)``) reads only its own bytes. The
    values are the same doubles. At 10⁶ records and L = 100 each (implicate, record) array is
    800 MB, held only while a stage uses it (docs/inference.md, "Memory").

    Parameters
    ----------
    ds : xarray.Dataset
    min_bytes : int, optional

    Returns
    -------
    xarray.Dataset
        A new Dataset (``ds`` itself when nothing is large enough); ``ds`` is not changed.

    Examples
    --------
    >>> ds = xr.Dataset({"y": (("implicate", "record"), np.arange(6.0).reshape(2, 3))})
    >>> lazy = spill_variables(ds, min_bytes=0)
    >>> lazy["y"][:, 1:].values.tolist(), ds.identical(lazy)
    ([[1.0, 2.0], [4.0, 5.0]], True)
    """
    threshold = SPILL_BYTES if min_bytes is None else min_bytes
    swap = {}
    for name, var in ds.data_vars.items():
        data = var.variable._data
        if (not isinstance(data, np.ndarray) or data.nbytes < threshold or data.size == 0
                or not data.flags.c_contiguous or data.dtype.hasobject):
            continue
        kept = spill(data, min_bytes=0)
        if not isinstance(kept, Spilled):  # the temporary folder is full: stays in memory
            continue
        lazy = indexing.CopyOnWriteArray(indexing.LazilyIndexedArray(_SpilledBackend(kept)))
        swap[name] = xr.Variable(var.dims, lazy, var.attrs, var.encoding)
    return ds.assign(swap) if swap else ds
