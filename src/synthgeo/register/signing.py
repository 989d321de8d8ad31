"""The release key: an HMAC (SHA-256) on release.json and a keyed hash of the seed.

The key lives **outside** the register and outside every output folder: in the environment
variable :data:`KEY_ENV` or a file the agency controls (``--key-file``). Whoever can write to
the register but does not hold the key cannot make a fabricated or edited release.json pass:
its HMAC no longer verifies (RFC 2104; Python's :mod:`hmac`, SHA-256). The same key salts the
seed's hash, so a small seed (``seed = 1``) cannot be recovered from release.json by trying
every integer.

What is signed is release.json without its ``signature`` block, serialised canonically
(:func:`canonical_bytes`: sorted keys, no whitespace, UTF-8), so reading and rewriting the file
with other indentation does not change the HMAC, and any change of a value does.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synthgeo._errors import InputError

__all__ = ["KEY_ENV", "MIN_KEY_BYTES", "ReleaseKey", "load_key", "canonical_bytes",
           "sign_record", "verify_record", "seed_hash", "small_seed_warning",
           "SIGNATURE_ALGORITHM", "SMALL_SEED"]

#: Environment variable that holds the release key (text; at least :data:`MIN_KEY_BYTES`).
KEY_ENV = "SYNTHGEO_RELEASE_KEY"
#: Seeds below this (2^32) are small: an unkeyed SHA-256 of one is inverted by trying them all.
SMALL_SEED = 2**32
#: Shortest key accepted, bytes (128 bits).
MIN_KEY_BYTES = 16
#: ``signature.algorithm`` in release.json.
SIGNATURE_ALGORITHM = "HMAC-SHA256"


@dataclass(frozen=True, eq=False)
class ReleaseKey:
    """The agency's release key (never shown: the repr gives its fingerprint only).

    Attributes
    ----------
    secret : bytes
        The key material (at least :data:`MIN_KEY_BYTES` bytes).
    source : str
        Where it was read (``"SYNTHGEO_RELEASE_KEY"`` or the key file's path).

    Examples
    --------
    >>> k = ReleaseKey(b"0123456789abcdef0123456789abcdef", source="test")
    >>> repr(k).startswith("ReleaseKey(key_id=") and "0123" not in repr(k)
    True
    """

    secret: bytes = field(repr=False)
    source: str = ""

    def __post_init__(self) -> None:
        """Refuse a short key."""
        if len(self.secret) < MIN_KEY_BYTES:
            raise InputError(f"the release key from {self.source} has {len(self.secret)} bytes; "
                             f"give at least {MIN_KEY_BYTES} (e.g. `python -c \"import secrets; "
                             "print(secrets.token_hex(32))\"` into the key file)")

    @property
    def key_id(self) -> str:
        """16 hex digits that name the key without revealing it (HMAC of a fixed label)."""
        return hmac.new(self.secret, b"synthgeo key id", hashlib.sha256).hexdigest()[:16]

    def mac(self, message: bytes) -> str:
        """Return HMAC-SHA256(key, message) as 64 hex digits."""
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()

    def __repr__(self) -> str:
        """Name the key by its id; never show it."""
        return f"ReleaseKey(key_id={self.key_id!r}, source={self.source!r})"


def load_key(key_file: str | os.PathLike | None = None, *,
             environ: dict[str, str] | None = None) -> ReleaseKey | None:
    """Read the release key from ``key_file``, else from :data:`KEY_ENV`; None when neither.

    Parameters
    ----------
    key_file : path, optional
        A file holding the key (its bytes, surrounding whitespace stripped). Wins over the
        environment variable.
    environ : mapping, optional
        The environment (default ``os.environ``).

    Returns
    -------
    ReleaseKey or None

    Raises
    ------
    synthgeo.InputError
        A key file that cannot be read, or a key shorter than :data:`MIN_KEY_BYTES`.

    Examples
    --------
    >>> load_key(environ={}) is None
    True
    >>> load_key(environ={KEY_ENV: "a" * 32}).source
    'SYNTHGEO_RELEASE_KEY'
    """
    env = os.environ if environ is None else environ
    if key_file is not None:
        try:
            secret = Path(key_file).read_bytes().strip()
        except OSError as exc:
            raise InputError(f"--key-file {str(key_file)!r} cannot be read ({exc.strerror}); "
                             f"give a readable key file or set {KEY_ENV}") from None
        return ReleaseKey(secret, source=str(key_file))
    text = env.get(KEY_ENV)
    if text:
        return ReleaseKey(text.strip().encode("utf-8"), source=KEY_ENV)
    return None


def canonical_bytes(record: dict[str, Any]) -> bytes:
    """Return release.json without ``signature``, canonically serialised (sorted, compact).

    Examples
    --------
    >>> canonical_bytes({"b": 1, "a": [1.5, None], "signature": {"value": "x"}})
    b'{"a":[1.5,null],"b":1}'
    """
    body = {k: v for k, v in record.items() if k != "signature"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def sign_record(record: dict[str, Any], key: ReleaseKey | None, *,
                reason: str = "") -> dict[str, Any]:
    """Return release.json's ``signature`` block for ``record``.

    Parameters
    ----------
    record : dict
        The release record (its ``signature`` key, if any, is not signed).
    key : ReleaseKey or None
        None: an unsigned release (``reason`` says why).
    reason : str
        Why the release is unsigned (e.g. ``"--allow-unsigned"``).

    Returns
    -------
    dict
        ``{"algorithm", "key_id", "value", "signed_content", "seed_hash"}``, or ``{"algorithm":
        None, ..., "unsigned_reason"}``.

    Examples
    --------
    >>> k = ReleaseKey(b"k" * 32)
    >>> sig = sign_record({"a": 1}, k)
    >>> verify_record({"a": 1, "signature": sig}, k)
    True
    >>> verify_record({"a": 2, "signature": sig}, k)
    False
    """
    content = "release.json without this block, keys sorted, no whitespace (UTF-8)"
    if key is None:
        return {"algorithm": None, "key_id": None, "value": None, "signed_content": None,
                "seed_hash": "SHA-256 of the seed's decimal digits (no key)",
                "unsigned_reason": reason or "no release key given"}
    return {"algorithm": SIGNATURE_ALGORITHM, "key_id": key.key_id,
            "value": key.mac(canonical_bytes(record)), "signed_content": content,
            "seed_hash": "HMAC-SHA256 under the release key of 'synthgeo-seed:' + the seed's "
                         "decimal digits",
            "unsigned_reason": None}


def verify_record(record: dict[str, Any], key: ReleaseKey) -> bool:
    """Whether release.json's ``signature`` is a valid HMAC under ``key`` (constant time)."""
    sig = record.get("signature") or {}
    value = sig.get("value")
    if sig.get("algorithm") != SIGNATURE_ALGORITHM or not isinstance(value, str):
        return False
    return hmac.compare_digest(value, key.mac(canonical_bytes(record)))


def seed_hash(seed: int, key: ReleaseKey | None) -> str:
    """Return the seed's hash as the register and release.json keep it.

    With a key: HMAC-SHA256(key, ``"synthgeo-seed:" + digits``), so small seeds cannot be
    found by trying every integer; without: SHA-256 of the digits (as
    :func:`synthgeo._seed.seed_sha256`).

    Examples
    --------
    >>> seed_hash(1, None) == hashlib.sha256(b"1").hexdigest()
    True
    >>> seed_hash(1, ReleaseKey(b"k" * 32)) != seed_hash(1, None)
    True
    """
    digits = str(int(seed))
    if key is None:
        return hashlib.sha256(digits.encode("utf-8")).hexdigest()
    return key.mac(f"synthgeo-seed:{digits}".encode())


def small_seed_warning(seed: int | None, key: ReleaseKey | None) -> str | None:
    """Say why an unsigned release's seed hash gives a small seed away; None when it does not.

    Unsigned, release.json's ``seed_sha256`` is the SHA-256 of the seed's digits
    (:func:`seed_hash`): for a seed below :data:`SMALL_SEED` (2^32) trying every integer finds
    it (plain Python on one core: every seed below 10^6 in 0.5 s, below 2^32 in about 40
    minutes), and whoever holds the seed can
    regenerate the release's noise draws. A key (an HMAC, not invertible without it) or a large
    seed (the default: a fresh 128-bit one) closes this.

    Parameters
    ----------
    seed : int or None
        The run's seed (None: no seed, nothing to say).
    key : ReleaseKey or None
        The release key (signed: nothing to say).

    Returns
    -------
    str or None
        One line naming the fix (a release key, or no ``[sampling] seed``); never the seed.

    Examples
    --------
    >>> small_seed_warning(20181, None)[:40]
    'release.json is unsigned and the seed is'
    >>> small_seed_warning(2**100, None) is None, small_seed_warning(1, ReleaseKey(b"k" * 32))
    (True, None)
    """
    if seed is None or key is not None or int(seed) >= SMALL_SEED:
        return None
    return ("release.json is unsigned and the seed is small (below 2^32): its `seed_sha256` is "
            "an unkeyed SHA-256 that trying every small integer inverts, and the seed lets "
            "anyone regenerate the release's noise draws; keep release.json confidential, sign "
            f"it with a release key ({KEY_ENV} or --key-file), or leave `[sampling] seed` "
            "unset (and no --seed) for a fresh 128-bit seed")
