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
from collections.abc import Iterable
from pathlib import Path

import numpy as np

__all__ = ["resolve_seed", "seed_sha256", "run_seed", "write_seed", "read_seed", "keyed_seeds",
           "confidential_words", "confidential_seed", "keyed_permutation", "guessable_seed_warning",
           "GUESSABLE_SEED", "SEED_FILE"]

#: Seeds below this can be searched (2^64): break-it trial 2026-12-07 tried a seed and a
#: candidate value together in 0.023 ms against the released row order.
GUESSABLE_SEED = 2**64

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


def read_seed(confidential: Path) -> int | None:
    """Return the seed in ``confidential/`` (:data:`SEED_FILE`); None when absent or not a seed.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     write_seed(Path(d), 20181)
    ...     read_seed(Path(d)), read_seed(Path(d) / "nowhere")
    (20181, None)
    """
    path = confidential / SEED_FILE
    try:
        return int(path.read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None


def keyed_seeds(seed, keys: Iterable[int]) -> list[np.random.SeedSequence]:
    """One child seed per key: ``SeedSequence(seed)``'s child with spawn key ``(..., key)``.

    The child for key k is ``SeedSequence(seed).spawn(k + 1)[k]``, computed without spawning
    from (and so without changing) a SeedSequence passed in: the same argument always gives
    the same children, and a child depends on its key only, not on which other keys are asked
    for. This is what makes a random step *per item* (per implicate ℓ, per posterior draw d):
    item d of two computations with one seed uses the same random numbers (common random
    numbers), whatever else each computes.

    Parameters
    ----------
    seed : int, SeedSequence, Generator or None
        A Generator contributes 128 bits drawn from it; None, fresh entropy.
    keys : iterable of int
        Non-negative item indices.

    Returns
    -------
    list of numpy.random.SeedSequence

    Examples
    --------
    >>> a = keyed_seeds(5, [2, 0])
    >>> b = np.random.SeedSequence(5).spawn(3)
    >>> bool((a[0].generate_state(2) == b[2].generate_state(2)).all())
    True
    """
    if isinstance(seed, np.random.Generator):
        seed = np.random.SeedSequence(seed.integers(0, 2**32, size=4, dtype=np.uint64))
    elif not isinstance(seed, np.random.SeedSequence):
        seed = np.random.SeedSequence(seed)
    return [np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, int(k)),
                                   pool_size=seed.pool_size)
            for k in keys]


def confidential_words(y: np.ndarray) -> list[int]:
    """Eight 32-bit words of the SHA-256 of the confidential response (float64 bytes).

    Examples
    --------
    >>> len(confidential_words(np.array([1.0, 2.0])))
    8
    """
    digest = hashlib.sha256(np.ascontiguousarray(y, dtype=np.float64).tobytes()).digest()
    return [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 32, 4)]


def confidential_seed(seed, y: np.ndarray) -> np.random.SeedSequence:
    """Return ``seed`` with the SHA-256 of the confidential response mixed into its entropy.

    A seed written in a spec may be small (the bundled example's is 20181). Whoever finds it
    regenerates every random number keyed by it alone; break-it trial 2026-12-07: correlating
    the released implicates' spreads with each candidate seed's normals found 20181 from
    ``release/`` in 9 s, and with the seed and θ the input noise e came back and with it 96 % of
    the prices within 10 %. A noise that protects (input noise, mean noise) and the released
    implicates' normals under it are therefore keyed by this seed: the same spec, data and seed
    give the same files, and no one without the confidential values can try seeds. (An
    attacker who knows every value but one could try candidate values of that one with a
    known seed; a spec without a seed gets 128 random bits, which no one can try.)

    Parameters
    ----------
    seed : int or numpy.random.SeedSequence
        The run's seed or one of its streams; its spawn key is kept.
    y : ndarray of shape (n_records,)
        The confidential response (model scale).

    Returns
    -------
    numpy.random.SeedSequence

    Examples
    --------
    >>> a = confidential_seed(5, np.array([1.0, 2.0]))
    >>> b = confidential_seed(5, np.array([1.0, 2.5]))
    >>> bool((a.generate_state(4) == b.generate_state(4)).all())
    False
    """
    if not isinstance(seed, np.random.SeedSequence):
        seed = np.random.SeedSequence(int(seed))
    first = seed.entropy
    entropy = [*(first if isinstance(first, (list, tuple)) else [int(first)]),
               *confidential_words(y)]
    return np.random.SeedSequence(entropy, spawn_key=seed.spawn_key, pool_size=seed.pool_size)


def keyed_permutation(n: int, seed, values: np.ndarray, spawn_key: int) -> np.ndarray:
    """Return a permutation of ``range(n)`` keyed by a seed and confidential values.

    The row order of a release (and its pseudonyms 1..n in that order): the stream with spawn
    key ``(spawn_key,)`` under ``seed``, with the SHA-256 of `values` mixed into its entropy
    (:func:`confidential_seed`). The same seed and values give the same permutation, so the
    same inputs give byte-identical files; no one without the confidential values can
    recompute it, even from a seed small enough to guess (docs/release.md, "Released ids";
    docs/locations.md, "Donut geomasking and choosing k").

    Parameters
    ----------
    n : int
        Records released.
    seed : int or numpy.random.SeedSequence
        The key (a run's or a mask's seed); a SeedSequence contributes its entropy only.
    values : ndarray
        Confidential values never released (a run's response; a mask's displacements), any
        shape, read as float64.
    spawn_key : int
        Keeps the permutation's stream apart from the other streams of `seed`.

    Returns
    -------
    ndarray of int, shape (n,)

    Raises
    ------
    ValueError
        `seed` is None.

    Examples
    --------
    >>> p = keyed_permutation(5, 7, np.array([1.0, 2.0]), spawn_key=3)
    >>> sorted(p.tolist())
    [0, 1, 2, 3, 4]
    >>> bool((p == keyed_permutation(5, 7, np.array([1.0, 2.5]), spawn_key=3)).all())
    False
    """
    if seed is None:
        raise ValueError("a keyed permutation needs a seed (got None)")
    first = seed.entropy if isinstance(seed, np.random.SeedSequence) else int(seed)
    stream = confidential_seed(
        np.random.SeedSequence(int(first), spawn_key=(int(spawn_key),)), values)
    return np.random.default_rng(stream).permutation(int(n))


def guessable_seed_warning(seed: int | None) -> str | None:
    """Say why a seed below :data:`GUESSABLE_SEED` weakens the release; None when it does not.

    Signed or not: the seed keys the released row order and the implicates' normals, so a seed
    that can be searched lets an attacker who knows every other record check candidate values
    of one record against ``release/`` (break-it trial 2026-12-07: the bundled seed and a sale's
    exact price among two million candidates in 83 s, from the released row order alone; with
    no input noise the implicates' normals give the seed away from ``release/`` as well). The
    risk figures assume the seed is secret.

    Parameters
    ----------
    seed : int or None
        The run's seed (None: nothing to say).

    Returns
    -------
    str or None
        One line naming the fix; never the seed.

    Examples
    --------
    >>> guessable_seed_warning(20181)[:30]
    'the seed is below 2^64, so an '
    >>> guessable_seed_warning(2**100) is None
    True
    """
    if seed is None or int(seed) >= GUESSABLE_SEED:
        return None
    return ("the seed is below 2^64, so an attacker can search it: with every other record known "
            "they can then check candidate values of one record exactly against release/ (the "
            "released row order and the implicates' random numbers follow from the seed and "
            "the values), which the risk figures do not count; leave `[sampling] seed` unset "
            "(and no --seed) for a fresh 128-bit seed before releasing")
