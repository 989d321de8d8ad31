"""Progress bars (tqdm on stderr) for long steps; off unless the caller turns them on.

Library functions take ``progressbar: bool`` (PyMC's name) and default to False; the command
line turns bars on when stderr is a terminal and ``--quiet`` is not given (``--progress``
forces either way).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

__all__ = ["progress_iter", "stderr_is_tty"]

T = TypeVar("T")


def stderr_is_tty() -> bool:
    """Return whether standard error is an interactive terminal."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stream
        return False


def progress_iter(iterable: Iterable[T], *, enabled: bool, desc: str, total: int | None = None,
                  unit: str = "it") -> Iterator[T]:
    """Iterate over ``iterable``, drawing a tqdm bar on stderr when ``enabled``.

    Parameters
    ----------
    iterable : iterable
    enabled : bool
        Draw the bar; when False this is a plain iteration (tqdm is not imported).
    desc : str
        Label in front of the bar.
    total : int, optional
        Length, when ``iterable`` has none.
    unit : str, default="it"
        What one step is.

    Yields
    ------
    object
        The items of ``iterable``.
    """
    if not enabled:
        yield from iterable
        return
    from tqdm import tqdm

    try:
        size = os.get_terminal_size(sys.stderr.fileno())
        columns, lines = size.columns, size.lines
    except (OSError, ValueError, AttributeError):  # not a terminal, or a replaced stream
        columns = lines = 0
    # a pty without a size (0 x 0, e.g. under `script` or some CI runners) makes tqdm draw
    # nothing: give it a fixed width and height then
    shape = {"dynamic_ncols": True} if columns > 0 else {"ncols": 100}
    if lines <= 0:
        shape["nrows"] = 24
    yield from tqdm(iterable, desc=desc, total=total, unit=unit, file=sys.stderr, leave=False,
                    **shape)
