"""How a run uses the register and the key: :class:`Ledger`, built by :func:`make_ledger`."""

from __future__ import annotations

import os
from dataclasses import dataclass

from synthgeo._errors import InputError
from synthgeo.register.signing import KEY_ENV, ReleaseKey, load_key, seed_hash
from synthgeo.register.store import REGISTER_ENV, Register, open_register

__all__ = ["Ledger", "make_ledger"]


@dataclass(frozen=True, eq=False)
class Ledger:
    """The register a run reads and writes, the release key, and whether unsigned is allowed.

    Attributes
    ----------
    register : Register or None
        None: the release is not registered (and ``--previous`` is refused).
    key : ReleaseKey or None
        Signs release.json and salts the seed hash; never shown.
    allow_unsigned : bool
        A registered release without a key is written unsigned, saying so, instead of refused.

    Examples
    --------
    >>> Ledger(None, None).seed_hashes(7)[0][:8]
    '7902699b'
    """

    register: Register | None
    key: ReleaseKey | None
    allow_unsigned: bool = False

    def seed_hashes(self, seed: int) -> list[str]:
        """Return the seed's hashes the register may hold: unkeyed, and keyed when a key is set."""
        return [seed_hash(seed, None)] + ([seed_hash(seed, self.key)] if self.key else [])

    def check_seed(self, seed: int | None) -> None:
        """Refuse a seed the register has seen (one seed, one release), before fitting.

        Raises
        ------
        synthgeo.InputError
            The seed's hash (keyed or not) is a registered release's.
        """
        if self.register is None or seed is None:
            return
        used = self.register.seed_used(self.seed_hashes(seed))
        if used is not None:
            from synthgeo.register.store import _seed_refusal

            raise _seed_refusal(self.register.location, used.id)

    def check_noise(self, fingerprints: list[bytes], fix: str = "") -> None:
        """Refuse input noise on record values the register's releases already noised.

        The refusal :meth:`~synthgeo.register.Register.add` would make at the end of the
        run, made before anything is fitted (read only).

        Parameters
        ----------
        fingerprints : list of bytes
            :func:`~synthgeo.register.store.value_fingerprints` of the values to be noised.
        fix : str, optional
            Appended to the refusal (another way out, e.g. for ``protect = "targets"``).

        Raises
        ------
        synthgeo.InputError
            One line: which earlier release and how many records.
        """
        if self.register is None or not fingerprints:
            return
        used = self.register.noise_used(fingerprints)
        if used is not None:
            from synthgeo.register.store import noise_refusal

            raise noise_refusal(self.register.location, *used, fix=fix)

    @property
    def unsigned_reason(self) -> str:
        """Why a release of this run is unsigned (empty when it is signed)."""
        if self.key is not None:
            return ""
        if self.allow_unsigned:
            return "--allow-unsigned (allow_unsigned=True): written unsigned on purpose"
        return f"no release key given ({KEY_ENV} or --key-file) and the release is not registered"


def make_ledger(register: str | os.PathLike | Register | None = None, *,
                key_file: str | os.PathLike | None = None, allow_unsigned: bool = False,
                need_register: bool = False, environ: dict[str, str] | None = None) -> Ledger:
    """Open the register and read the key of a run.

    Parameters
    ----------
    register : path, URL or Register, optional
        The register (default: :data:`~synthgeo.register.store.REGISTER_ENV` when set; else
        none).
    key_file : path, optional
        The release key's file (default: :data:`~synthgeo.register.signing.KEY_ENV`).
    allow_unsigned : bool, default=False
        Register a release without a key (unsigned, said in release.json and the report).
    need_register : bool, default=False
        ``--previous`` was given: a register is required.
    environ : mapping, optional
        The environment (default ``os.environ``).

    Returns
    -------
    Ledger

    Raises
    ------
    synthgeo.InputError
        ``need_register`` without a register; a register without a key and without
        ``allow_unsigned``; a bad key or register (see :func:`load_key`,
        :func:`~synthgeo.register.store.open_register`).

    Examples
    --------
    >>> make_ledger(environ={}).register is None
    True
    """
    env = os.environ if environ is None else environ
    if register is None and env.get(REGISTER_ENV):
        register = env[REGISTER_ENV]
    if register is None and need_register:
        raise InputError(f"--previous reads the release register, not the folder's own "
                         f"release.json: give --register PATH (or set {REGISTER_ENV}) where the "
                         "earlier release was registered")
    key = load_key(key_file, environ=env)
    if register is not None and key is None and not allow_unsigned:
        raise InputError(f"a registered release is signed: set {KEY_ENV} or give --key-file "
                         "(a key kept outside the register), or pass --allow-unsigned to "
                         "register it unsigned")
    reg = register if isinstance(register, Register) or register is None else open_register(
        register)
    return Ledger(reg, key, allow_unsigned)
