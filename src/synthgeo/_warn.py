"""Warnings attributed to the user's call: the first frame outside the synthgeo package.

A fixed ``stacklevel`` fits one call path only: the same check is reached from
``sg.synthesize``, ``sg.run``, ``load_points`` and the command line at different depths, and a
level that is right for one points into synthgeo's own code for the others. :func:`warn` walks
the stack instead, as ``warnings.warn(skip_file_prefixes=...)`` does from Python 3.12.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

__all__ = ["warn", "user_stacklevel"]

_PACKAGE = str(Path(__file__).resolve().parent) + os.sep


def _inside(filename: str) -> bool:
    try:
        return str(Path(filename).resolve()).startswith(_PACKAGE)
    except (OSError, ValueError):  # "<string>", "<doctest ...>": not a file of the package
        return False


def user_stacklevel(skip: int = 1) -> int:
    """Return the ``stacklevel`` of the first frame outside synthgeo, seen from the caller.

    Parameters
    ----------
    skip : int, default=1
        Frames to step over before counting: 1 counts from the function that calls this one
        (level 1 is that function, as for :func:`warnings.warn`).

    Returns
    -------
    int
        At least 1: 1 when the caller itself is outside the package.
    """
    frame = sys._getframe(skip)
    level = 1
    while frame is not None and _inside(frame.f_code.co_filename):
        frame = frame.f_back
        level += 1
    return level if frame is not None else 1


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """Issue `message` as a warning attributed to the user's line (outside synthgeo).

    Parameters
    ----------
    message : str
        One line; never a confidential value.
    category : type, default=UserWarning

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn("the points span 3 m")
    >>> caught[0].filename.endswith("_warn.py")  # called from outside the package: that line
    False
    """
    warnings.warn(message, category, stacklevel=user_stacklevel(2) + 1)
