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

__all__ = ["resolve_seed", "seed_sha256", "SEED_FILE"]

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
