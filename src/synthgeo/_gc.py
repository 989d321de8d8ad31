"""Fewer full collections of Python's cyclic garbage collector, for the ``synthgeo`` command.

A full (oldest-generation) collection traverses every object the interpreter tracks, and a
command imports millions of them (NumPy, pandas, SciPy, statsmodels, xarray, matplotlib,
SQLAlchemy, ...). With CPython's default thresholds (700, 10, 10) a full collection runs after
every 10 collections of the middle generation: six of them in ``synthgeo draw --implicates 50``
on the bundled release, 1.0-1.4 s of its CPU time (measured with ``gc.callbacks`` on a shared
2-core machine, load average 7-9; issue 27's 5-second goal), when the young collections all
together took 0.3 s. :func:`fewer_full_collections` runs a full collection after every 100
middle ones instead (none in that draw): cyclic garbage that outlives two young collections
is freed later, nothing else changes (the output is the same byte for byte).

The command sets it for its own run and puts the thresholds back on return (``main`` may be
called in-process, by the tests); a library imported by someone else's program leaves the
collector alone.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["fewer_full_collections", "FULL_COLLECTION_EVERY"]

#: Middle-generation collections between two full collections (CPython's default: 10).
FULL_COLLECTION_EVERY = 100


@contextmanager
def fewer_full_collections() -> Iterator[tuple[int, int, int]]:
    """Raise the collector's oldest-generation threshold to at least 100 inside the block.

    Yields
    ------
    tuple of int
        The thresholds in force inside the block.

    Examples
    --------
    >>> before = gc.get_threshold()
    >>> with fewer_full_collections() as inside:
    ...     inside[2] >= FULL_COLLECTION_EVERY
    True
    >>> gc.get_threshold() == before
    True
    """
    old = gc.get_threshold()
    gc.set_threshold(old[0], old[1], max(old[2], FULL_COLLECTION_EVERY))
    try:
        yield gc.get_threshold()
    finally:
        gc.set_threshold(*old)
