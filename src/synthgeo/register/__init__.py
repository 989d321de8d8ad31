"""The release register: every release, its seed hash, files, chain and predictive summaries.

A database (SQLite through SQLAlchemy by default, PostgreSQL by URL) in the agency's
confidential store, and release.json signed with an HMAC under a key kept outside it, so that
``--previous`` trusts the register and the key, never a folder's own word (issue 26, item 4;
docs/release.md, "The release register").

- :mod:`synthgeo.register.schema`: the tables.
- :mod:`synthgeo.register.store`: :func:`open_register`, :class:`Register` (add, verify a
  folder, chain, list, backup).
- :mod:`synthgeo.register.signing`: the key, release.json's HMAC, the keyed seed hash.
- :mod:`synthgeo.register.ledger`: :class:`Ledger`, what one run uses.
"""

from synthgeo.register.ledger import Ledger, make_ledger
from synthgeo.register.signing import (
    KEY_ENV,
    ReleaseKey,
    load_key,
    seed_hash,
    sign_record,
    small_seed_warning,
    verify_record,
)
from synthgeo.register.store import (
    FILES_ENV,
    REGISTER_ENV,
    NewRelease,
    Register,
    RegisteredRelease,
    open_register,
)

__all__ = ["Ledger", "make_ledger", "KEY_ENV", "ReleaseKey", "load_key", "seed_hash",
           "sign_record", "verify_record", "small_seed_warning", "FILES_ENV", "REGISTER_ENV",
           "NewRelease", "Register", "RegisteredRelease", "open_register"]
