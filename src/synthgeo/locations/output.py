"""Write a diagnostics folder atomically (temporary folder, then one rename)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from synthgeo.io.atomic import atomic_folder, check_output_dir

__all__ = ["write_folder", "jsonable"]


def jsonable(obj: Any) -> Any:
    """Numpy scalars to Python, NaN to None, ±inf to "inf"/"-inf", paths to text."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        v = float(obj)
        if math.isnan(v):
            return None
        return ("inf" if v > 0 else "-inf") if math.isinf(v) else v
    if isinstance(obj, Path):
        return str(obj)
    return obj


def write_folder(
    out: str | os.PathLike,
    files: dict[str, Callable[[Path], None] | dict],
    *,
    marker: str,
    overwrite: bool = False,
    inputs: tuple[Path, ...] = (),
) -> Path:
    """Write `files` into a new folder `out`, all or nothing.

    Parameters
    ----------
    out : path
        Output folder; refused when it exists unless `overwrite`, and then only when it holds
        `marker` (an earlier output of the same command) or is empty.
    files : dict
        File name → writer ``f(path)`` or a dict written as indented JSON.
    marker : str
        File name that identifies this command's output folders (e.g. ``"outliers.json"``).
    overwrite : bool, default=False
    inputs : tuple of Path
        Files the folder must never contain (the input).

    Returns
    -------
    Path
        The folder.

    Raises
    ------
    SpecError
        Existing folder without `overwrite`, a foreign folder, a folder holding an input.
    """
    out = check_output_dir(out, marker=marker, overwrite=overwrite, inputs=inputs)
    with atomic_folder(out) as tmp:
        for name, writer in files.items():
            if isinstance(writer, dict):
                (tmp / name).write_text(json.dumps(jsonable(writer), indent=2, allow_nan=False),
                                        encoding="utf-8")
            else:
                writer(tmp / name)
    return out
