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

When the interpreter exits it collects once more over every object, all of them garbage by
then: 0.8-0.9 s of the same draw's CPU. :func:`no_collection_at_exit`, which the ``synthgeo``
program (not an in-process call) registers, freezes the objects at exit (``gc.freeze``), so
that last collection skips them (0.07 s): the process ends and the system takes its memory
back. Nothing is left unwritten: the command has closed its files, and an object that is not
in a reference cycle is still freed, its finaliser run, as the modules are torn down.
"""

from __future__ import annotations

import atexit
import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["fewer_full_collections", "no_collection_at_exit", "FULL_COLLECTION_EVERY"]

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


_at_exit = []


def no_collection_at_exit() -> bool:
    """Register ``gc.freeze`` to run at interpreter exit (once); return whether it was new.

    For the ``synthgeo`` program only: the last collection of the interpreter's shutdown then
    skips every object alive at exit (module docstring).

    Examples
    --------
    >>> no_collection_at_exit() in (True, False)
    True
    """
    if _at_exit:
        return False
    atexit.register(gc.freeze)
    _at_exit.append(True)
    return True
