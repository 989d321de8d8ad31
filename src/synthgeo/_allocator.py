"""Keep freed N × N work arrays in the heap for reuse: glibc malloc settings for the CLI.

The exact GP evaluates thousands of (φ, α) cells, draws and leave-one-out factorisations, each
with arrays of N² doubles (2 MB at N = 500) that NumPy and LAPACK allocate and free. With
glibc's defaults, memory freed at the top of a heap is handed back to the kernel once more than
a few MB are free (``M_TRIM_THRESHOLD``), and every arena of the thread pool does so on its own;
the next array is then faulted in again, page by page. Measured on
``synthgeo compare models/paper_simulation.toml`` (2 cores): 1.3-1.5 million minor page
faults and 2-4 s of system time with the defaults; 88 thousand and 0.6 s with the settings
below, the results bit for bit the same (they change where memory comes from, nothing else).

:func:`keep_freed_memory` sets, through ``mallopt(3)``:

- ``M_MMAP_THRESHOLD`` = 32 MiB: blocks below it come from the heap (with the threshold set,
  glibc no longer adjusts it dynamically); larger ones (the 10⁵-record runs' arrays) are still
  mapped and unmapped on their own;
- ``M_TRIM_THRESHOLD`` = 64 MiB: up to that much free memory at a heap's top is kept for reuse
  rather than returned.

It is called by the ``synthgeo`` command only (a library should not change the allocator of
the program that imports it), and does nothing where the C library has no ``mallopt`` (musl,
macOS, Windows) or where the environment sets malloc's own (``MALLOC_*_`` variables, or
``glibc.malloc.*`` tunables in ``GLIBC_TUNABLES``): the user's own choice wins, all of it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

__all__ = ["keep_freed_memory", "MMAP_THRESHOLD_BYTES", "TRIM_THRESHOLD_BYTES"]

#: Blocks from this size are mapped on their own (and unmapped when freed).
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
#: Free memory at a heap's top up to this size is kept for reuse.
TRIM_THRESHOLD_BYTES = 64 * 1024 * 1024

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's <malloc.h>


def keep_freed_memory() -> bool:
    """Set glibc's mmap and trim thresholds (module docstring); return whether they were set.

    Returns
    -------
    bool
        False where the C library has no ``mallopt`` or the environment already sets malloc's
        parameters (a ``MALLOC_*_`` variable, a ``glibc.malloc.*`` tunable).

    Examples
    --------
    >>> keep_freed_memory() in (True, False)
    True
    """
    if (any(k.startswith("MALLOC_") and k.endswith("_") for k in os.environ)
            or "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", "")):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    # mallopt returns 1 on success; set the mmap threshold first (setting either one turns
    # off glibc's dynamic adjustment of both)
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
                and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
