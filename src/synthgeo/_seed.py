"""The release seed: a key, kept in ``confidential/`` only (issue 11, item 8).

Whoever holds the seed of a release can regenerate its noise draws and strip them from the
implicates, so the seed is never written to ``release/`` or any released metadata:
``confidential/seed.txt`` holds it, ``release.json`` (the board's record) and Zarr attributes
hold only :func:`seed_sha256`. A spec without ``[sampling] seed`` gets a fresh 128-bit random
seed (:func:`resolve_seed`); a spec seed is for reproducible examples (the bundled one).
"""

from __future__ import annotations

import hashlib
import secrets
from pathlib import Path

__all__ = ["resolve_seed", "seed_sha256", "run_seed", "write_seed", "SEED_FILE"]

#: The file under ``confidential/`` that holds the seed.
SEED_FILE = "seed.txt"


def resolve_seed(seed: int | None) -> int:
    """Return ``seed``, or a fresh random 128-bit seed when it is None.

    Parameters
    ----------
    seed : int or None
        ``[sampling] seed`` (non-negative).

    Returns
    -------
    int

    Examples
    --------
    >>> resolve_seed(20181)
    20181
    >>> resolve_seed(None) >= 0
    True
    """
    return int(seed) if seed is not None else secrets.randbits(128)


def seed_sha256(seed: int) -> str:
    """Return the SHA-256 (hex) of the seed's decimal digits (UTF-8), as release.json keeps it.

    Examples
    --------
    >>> seed_sha256(1) == hashlib.sha256(b"1").hexdigest()
    True
    """
    return hashlib.sha256(str(int(seed)).encode("utf-8")).hexdigest()


def run_seed(result) -> int | None:
    """Return the seed a run used: ``result.seed`` (resolved), else the spec's, else None."""
    seed = getattr(result, "seed", None)
    return result.spec.sampling.seed if seed is None else seed


def write_seed(confidential: Path, seed: int | None) -> None:
    """Write the seed to ``confidential/`` (:data:`SEED_FILE`); nothing when it is None."""
    if seed is not None:  # the key of the noise draws: confidential/ only
        (confidential / SEED_FILE).write_text(f"{int(seed)}\n", encoding="utf-8")
