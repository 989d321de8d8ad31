"""The release register: a database of every release, and the files beside it.

By default a SQLite file (through SQLAlchemy) in the agency's confidential store; any
SQLAlchemy URL (``postgresql+psycopg://...``) for a server. SQLite runs in WAL mode with a
busy timeout and every write in ``BEGIN IMMEDIATE``, so two runs registering at once wait for
each other instead of failing or interleaving; on PostgreSQL a write takes an exclusive lock
on the releases table. The per-record predictive summaries are files in the register's
files folder (``<register>.files/`` beside a SQLite file), named by the release's uid and
pointed to, with their SHA-256, by a row. docs/release.md ("The release register").
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import shutil
import sqlite3
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import create_engine, event, insert, select, text
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError, OperationalError, SQLAlchemyError

from synthgeo._errors import InputError
from synthgeo.io.file_list import check_file_list
from synthgeo.io.provenance import file_sha256
from synthgeo.register.schema import (
    SCHEMA_VERSION,
    metadata,
    noise_records,
    predictive_summaries,
    register_info,
    release_files,
    releases,
)
from synthgeo.register.signing import ReleaseKey, verify_record

__all__ = ["REGISTER_ENV", "FILES_ENV", "BUSY_TIMEOUT_S", "SQLITE_SUFFIXES", "Register",
           "RegisteredRelease", "NewRelease", "open_register", "sqlite_path", "value_fingerprints"]

#: Environment variable naming the register (a SQLite path or a SQLAlchemy URL).
REGISTER_ENV = "SYNTHGEO_REGISTER"
#: Environment variable naming the files folder of a server register (PostgreSQL).
FILES_ENV = "SYNTHGEO_REGISTER_FILES"
#: How long a writer waits for another one's lock, seconds.
BUSY_TIMEOUT_S = 60.0
#: File name endings of a SQLite register (anything else is refused, e.g. ``.jsonl``).
SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
#: An existing SQLite file without tables may be a register another run is creating: how long
#: opening it waits for the tables before refusing it as not a register, seconds.
NEW_REGISTER_WAIT_S = 2.0
_SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass(frozen=True, kw_only=True)
class RegisteredRelease:
    """One row of the register (no confidential value: hashes, counts, paths).

    Attributes
    ----------
    id : int
        The register's number of the release (1, 2, ...).
    release_uid : str
        32 hex digits, also in release.json's ``register`` block.
    folder : str
        Where the release was written.
    release_json_sha256, seed_hash : str
    signed : bool
    key_id : str or None
    previous_id : int or None
        The release it was pooled with.
    files : tuple of dict
        ``{path, bytes, sha256}`` of every file under its ``release/``.
    summary : dict or None
        ``{path, bytes, sha256, n_records, n_implicates, scale}`` of its predictive summaries.
    """

    id: int
    release_uid: str
    registered_at: str
    created_at: str | None
    folder: str
    release_json_sha256: str
    seed_hash: str | None
    seed_hash_kind: str
    signed: bool
    signature: str | None = field(repr=False)
    key_id: str | None
    unsigned_reason: str | None = field(repr=False)
    spec_json: str = field(repr=False)
    n_records: int
    n_implicates: int
    n_draws: int | None
    previous_id: int | None
    synthgeo_version: str
    files: tuple[dict[str, Any], ...] = field(default=(), repr=False)
    summary: dict[str, Any] | None = field(default=None, repr=False)


@dataclass(frozen=True, kw_only=True)
class NewRelease:
    """What the writer registers for a release (see :meth:`Register.add`)."""

    release_uid: str
    created_at: str | None
    folder: str
    release_json_sha256: str
    seed_hash: str | None
    seed_hash_kind: str
    signed: bool
    signature: str | None
    key_id: str | None
    unsigned_reason: str | None
    spec: dict[str, Any] = field(repr=False)
    n_records: int
    n_implicates: int
    n_draws: int | None
    previous_id: int | None
    synthgeo_version: str
    files: list[dict[str, Any]] = field(repr=False)
    #: Under input noise: one fingerprint per record value that had a noise draw (bytes of
    #: location and value on the person's scale; confidential, keyed by the register before it
    #: is kept).
    noise_fingerprints: list[bytes] = field(default_factory=list, repr=False)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def new_uid() -> str:
    """Return a fresh release uid (32 hex digits)."""
    return uuid.uuid4().hex


def _use_wal(cur, timeout_s: float) -> None:
    """Put the database in WAL mode, waiting up to ``timeout_s`` for another connection.

    SQLite answers "database is locked" to ``PRAGMA journal_mode=WAL`` at once when another
    connection holds a lock, whatever the busy timeout (two runs creating a new register at
    the same moment: the flaky ``test_two_concurrent_writers_serialise[sqlite]``), so the switch
    is retried; a database already in WAL mode is left as it is.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            # fetchall: a statement left stepping would hold its lock
            if str(cur.execute("PRAGMA journal_mode").fetchall()[0][0]).lower() != "wal":
                cur.execute("PRAGMA journal_mode=WAL").fetchall()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.02)


def _sqlite_engine(path: Path) -> Engine:
    """Return a SQLite engine: WAL, busy timeout, foreign keys, BEGIN IMMEDIATE."""
    engine = create_engine(f"sqlite:///{path}", connect_args={"timeout": BUSY_TIMEOUT_S})

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn, _record):  # SQLAlchemy docs, "Serializable isolation"
        dbapi_conn.isolation_level = None  # SQLAlchemy emits BEGIN below, not pysqlite
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")  # first: then wait
        _use_wal(cur, BUSY_TIMEOUT_S)
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn):  # take the write lock at once: no deadlock between two readers-to-be
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


class Register:
    """An open release register (see :func:`open_register`).

    Attributes
    ----------
    url : str
        The SQLAlchemy URL, password hidden.
    files_dir : Path
        The folder of the predictive summaries.
    """

    def __init__(self, engine: Engine, files_dir: Path, location: str, *,
                 new: bool = False) -> None:
        self.engine, self.files_dir, self.location = engine, Path(files_dir), location
        self.url = engine.url.render_as_string(hide_password=True)
        # no tables yet (a new SQLite file, an empty database): made by the first write, so a
        # failed run leaves nothing behind
        self._new = new

    def _ready(self, *, create: bool) -> bool:
        """Whether the register's tables exist; create them when ``create`` (first write).

        A new register (SQLite file or server tables) is made by its first release, not by
        opening it: until then it reads as empty.
        """
        if self._new:
            if not create and not _exists(self.engine, self.location):
                return False
            _create_schema(self.engine, self.location)
            self._new = False
        return True

    def __repr__(self) -> str:
        """Name the register (password hidden)."""
        return f"Register({self.url!r}, files_dir={str(self.files_dir)!r})"

    @property
    def is_sqlite(self) -> bool:
        """Whether the register is a SQLite file."""
        return self.engine.dialect.name == "sqlite"

    # --- reading -------------------------------------------------------------------------

    def _row(self, conn: Connection, row) -> RegisteredRelease:
        m = row._mapping
        files = tuple(dict(r._mapping) for r in conn.execute(
            select(release_files.c.path, release_files.c.bytes, release_files.c.sha256)
            .where(release_files.c.release_id == m["id"]).order_by(release_files.c.path)))
        s = conn.execute(select(predictive_summaries).where(
            predictive_summaries.c.release_id == m["id"])).first()
        summary = None if s is None else {k: v for k, v in s._mapping.items()
                                          if k != "release_id"}
        return RegisteredRelease(**{k: m[k] for k in releases.c.keys()}, files=files,
                                 summary=summary)

    def _one(self, where) -> RegisteredRelease | None:
        if not self._ready(create=False):
            return None
        with self.engine.connect() as conn:
            row = conn.execute(select(releases).where(where)).first()
            return None if row is None else self._row(conn, row)

    def get(self, id: int) -> RegisteredRelease:
        """Return release number ``id``.

        Raises
        ------
        synthgeo.InputError
            If there is none.
        """
        r = self._one(releases.c.id == int(id))
        if r is None:
            raise InputError(f"the register {self.location!r} holds no release {id}; "
                             "`synthgeo releases` lists them")
        return r

    def by_release_json(self, sha256: str) -> RegisteredRelease | None:
        """Return the release whose release.json has this SHA-256, or None."""
        return self._one(releases.c.release_json_sha256 == sha256)

    def seed_used(self, hashes: Iterable[str]) -> RegisteredRelease | None:
        """Return a release whose seed hash is one of ``hashes``, or None."""
        hashes = [h for h in hashes if h]
        return self._one(releases.c.seed_hash.in_(hashes)) if hashes else None

    def noise_used(self, fingerprints: list[bytes]) -> tuple[int, int] | None:
        """Return (earliest release, records) whose input noise covers these values, or None.

        Read only (a new register stays unmade): the check :meth:`add` makes, run before
        anything is fitted (:meth:`synthgeo.register.Ledger.check_noise`).

        Parameters
        ----------
        fingerprints : list of bytes
            :func:`value_fingerprints` of the records that would get an input-noise draw.
        """
        if not fingerprints or not self._ready(create=False):
            return None
        with self.engine.connect() as conn:
            salt = conn.execute(select(register_info.c.value).where(
                register_info.c.name == "record_salt")).scalar()
            if salt is None:  # no release under input noise yet
                return None
            hits = _noise_hits(conn, _keyed(salt, fingerprints))
        return (min(hits), sum(hits.values())) if hits else None

    def successor(self, id: int) -> RegisteredRelease | None:
        """Return a release registered after release ``id`` (its ``previous_id``), or None."""
        return self._one(releases.c.previous_id == int(id))

    def chain(self, id: int) -> list[RegisteredRelease]:
        """Return release ``id`` and every release it was pooled after, oldest first."""
        out, seen, cur = [], set(), int(id)
        while cur is not None:
            if cur in seen:  # a foreign key cannot loop, but a hand-edited table could
                raise InputError(f"the register {self.location!r}: the chain of release {id} "
                                 "loops; restore the register from its backup")
            seen.add(cur)
            r = self.get(cur)
            out.append(r)
            cur = r.previous_id
        return out[::-1]

    def list(self, key: ReleaseKey | None = None) -> pd.DataFrame:
        """Every release, one row each (no confidential value).

        Parameters
        ----------
        key : ReleaseKey, optional
            The release key at hand: adds the column ``this_key``, whether each release was
            signed under it (``"yes"``; ``"no"``: under another key, which cannot verify or
            pool it; ``"unsigned"``).

        Returns
        -------
        pandas.DataFrame
            Columns ``id``, ``release_uid``, ``registered_at``, ``created_at``, ``previous_id``,
            ``n_records``, ``n_implicates``, ``draws_per_chain`` (``[sampling] draws``, the
            register's ``n_draws``), ``chains``, ``posterior_draws`` (draws per chain ×
            chains: the posterior the implicates were drawn from), ``signed``, ``key_id``,
            (``this_key``), ``release_json_sha256`` (first 16 digits), ``folder``.
        """
        cols = [releases.c.id, releases.c.release_uid, releases.c.registered_at,
                releases.c.created_at, releases.c.previous_id, releases.c.n_records,
                releases.c.n_implicates, releases.c.n_draws, releases.c.signed,
                releases.c.key_id, releases.c.release_json_sha256, releases.c.folder]
        rows = []
        if self._ready(create=False):
            with self.engine.connect() as conn:
                rows = [dict(r._mapping) for r in conn.execute(
                    select(*cols, releases.c.spec_json).order_by(releases.c.id))]
        chains = [_chains(r.pop("spec_json")) for r in rows]
        frame = pd.DataFrame(rows, columns=[c.name for c in cols])
        frame["release_json_sha256"] = frame["release_json_sha256"].str[:16]
        frame = frame.rename(columns={"n_draws": "draws_per_chain"})
        at = int(frame.columns.get_loc("draws_per_chain")) + 1
        frame.insert(at, "chains", pd.array(chains, dtype="Int64"))
        frame.insert(at + 1, "posterior_draws",
                     frame["draws_per_chain"].astype("Int64") * frame["chains"])
        for col in ("previous_id", "draws_per_chain"):  # whole numbers, "<NA>" where none
            frame[col] = frame[col].astype("Int64")
        if key is not None:
            this = [("yes" if k == key.key_id else "no") if signed else "unsigned"
                    for signed, k in zip(frame["signed"], frame["key_id"])]
            frame.insert(int(frame.columns.get_loc("key_id")) + 1, "this_key",
                         pd.Series(this, index=frame.index, dtype=object))
        return frame

    # --- writing -------------------------------------------------------------------------

    def add(self, new: NewRelease, *, summary: dict[str, Any] | None = None) -> int:
        """Register a release in one transaction; return its id.

        Parameters
        ----------
        new : NewRelease
        summary : dict, optional
            ``{path, bytes, sha256, n_records, n_implicates, scale}`` of its predictive
            summaries (the file already written under :attr:`files_dir`).

        Raises
        ------
        synthgeo.InputError
            Its seed hash or release.json is registered already (one seed, one release: a
            concurrent run with the same seed loses here), or ``previous_id`` is unknown.
        """
        row = {k: getattr(new, k) for k in releases.c.keys() if k not in ("id", "spec_json",
                                                                           "registered_at")}
        row.update(spec_json=json.dumps(new.spec, sort_keys=True), registered_at=_now())
        self._ready(create=True)
        try:
            with self.engine.begin() as conn:
                if self.engine.dialect.name == "postgresql":  # writers one at a time
                    conn.execute(text(f"LOCK TABLE {releases.name} IN EXCLUSIVE MODE"))
                if new.seed_hash is not None:
                    clash = conn.execute(select(releases.c.id).where(
                        releases.c.seed_hash == new.seed_hash)).first()
                    if clash is not None:
                        raise _seed_refusal(self.location, clash[0])
                if new.previous_id is not None and conn.execute(select(releases.c.id).where(
                        releases.c.id == new.previous_id)).first() is None:
                    raise InputError(f"the register {self.location!r} holds no release "
                                     f"{new.previous_id} to chain after")
                keys = self._noise_keys(conn, new.noise_fingerprints)
                if keys:
                    _refuse_second_noise(conn, keys, self.location)
                rid = conn.execute(insert(releases).values(**row)).inserted_primary_key[0]
                for start in range(0, len(keys), _CHUNK):
                    conn.execute(insert(noise_records), [
                        {"record_key": k, "release_id": rid}
                        for k in keys[start:start + _CHUNK]])
                if new.files:
                    conn.execute(insert(release_files), [
                        {"release_id": rid, "path": f["path"], "bytes": int(f["bytes"]),
                         "sha256": f["sha256"]} for f in new.files])
                if summary is not None:
                    conn.execute(insert(predictive_summaries).values(release_id=rid, **summary))
        except IntegrityError as exc:  # the unique seed hash, release.json or noise key, raced
            raise InputError(f"the register {self.location!r} refused the release: its seed, "
                             "release.json or a record's input-noise draw is registered already "
                             "(another run at the same time?); set a new `[sampling] seed` (or "
                             "leave it out), or release these records once under input "
                             "noise") from exc
        except OperationalError as exc:
            raise InputError(f"the register {self.location!r} could not be written "
                             f"({type(exc.orig).__name__}: {exc.orig}); check that the file "
                             "or server is reachable and writable") from None
        return int(rid)

    def _noise_keys(self, conn: Connection, fingerprints: list[bytes]) -> list[str]:
        """Key each fingerprint by the register's own salt (HMAC-SHA256, hex); sorted, unique.

        The salt is made on first use and kept in the register (confidential, like the rest of
        it): a fingerprint without it cannot be checked against guessed values.
        """
        if not fingerprints:
            return []
        salt = conn.execute(select(register_info.c.value).where(
            register_info.c.name == "record_salt")).scalar()
        if salt is None:
            salt = secrets.token_hex(32)
            conn.execute(insert(register_info).values(name="record_salt", value=salt))
        return _keyed(salt, fingerprints)

    def summary_path(self, uid: str) -> Path:
        """Where the predictive summaries of release ``uid`` go (under :attr:`files_dir`)."""
        return self.files_dir / "predictive" / f"{uid}.parquet"

    # --- verifying an earlier release ------------------------------------------------------

    def verify_folder(self, folder: str | os.PathLike, key: ReleaseKey | None, *,
                      allow_unsigned: bool = False, flag: str = "--previous"
                      ) -> tuple[RegisteredRelease, dict[str, Any]]:
        """Check a release folder against the register; return its row and its release.json.

        The register decides, not the folder: its release.json must be registered (by
        SHA-256), its HMAC must verify under ``key`` when it was registered signed, and every
        file under ``release/`` must match the register's list (bytes and SHA-256), none
        missing and none extra.

        Raises
        ------
        synthgeo.InputError
            A folder without release.json, a release.json not in the register (fabricated,
            edited, or never registered), a signature missing or wrong under ``key``, a signed
            release checked without a key, an unsigned one without ``allow_unsigned``, or a
            file that differs from the register's list.
        """
        folder = Path(folder)

        def refuse(what: str) -> InputError:
            return InputError(f"{flag} {str(folder)!r}: {what}; nothing was fitted")

        rec_path = folder / "release.json"
        if not rec_path.is_file():
            raise refuse("no release.json there")
        entry = self.by_release_json(file_sha256(rec_path))
        if entry is None:
            raise refuse(f"its release.json is not in the register {self.location!r} (a "
                         "release written without this register, or edited or fabricated "
                         "after it was registered); give a registered release's folder, "
                         "unchanged (`synthgeo releases` lists them)")
        try:
            record = json.loads(rec_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise refuse(f"release.json is not readable JSON ({exc})") from None
        if entry.signed:
            if key is None:
                raise refuse("it was signed, and no release key is given: set "
                             "SYNTHGEO_RELEASE_KEY or give --key-file")
            if key.key_id != entry.key_id:
                raise refuse(f"it was signed under key {entry.key_id}, the key given is "
                             f"{key.key_id}: give the key it was signed with")
            sig = (record.get("signature") or {}).get("value")
            if sig != entry.signature or not verify_record(record, key):
                raise refuse("its release.json's HMAC does not verify under the release key "
                             "(edited after signing)")
        elif not allow_unsigned:
            raise refuse("it was registered unsigned; pooling with an unsigned release needs "
                         "--allow-unsigned (allow_unsigned=True)")
        listed = {f["path"]: f for f in entry.files}
        # the register's rows are not signed: they must be the HMAC-signed release.json's own
        # list, or an edited row could vouch for an edited file (one hashing pass below)
        signed = {f["path"]: (f["sha256"], f["bytes"]) for f in record.get("release_files") or []}
        if signed != {path: (f["sha256"], f["bytes"]) for path, f in listed.items()}:
            raise refuse("the register's list of its files differs from its release.json's "
                         "(the register was edited)")
        check_file_list(folder, listed.values(), listed_in="the register", refuse=refuse)
        return entry, record

    def read_summary(self, entry: RegisteredRelease) -> pd.DataFrame:
        """Read a release's predictive summaries, checked against the register's SHA-256.

        Returns
        -------
        pandas.DataFrame
            Columns ``record`` (confidential id), ``implicate``, ``mean``, ``sd`` (model scale).

        Raises
        ------
        synthgeo.InputError
            None registered, the file missing, or its SHA-256 not the register's.
        """
        s = entry.summary
        if s is None:
            raise InputError(f"the register {self.location!r} holds no predictive summaries "
                             f"for release {entry.id}")
        path = self.files_dir / s["path"]
        if not path.is_file():
            raise InputError(f"the predictive summaries of release {entry.id} are missing "
                             f"({path}): restore the register's files folder with the register")
        if file_sha256(path) != s["sha256"]:
            raise InputError(f"the predictive summaries of release {entry.id} ({path}) do not "
                             "match the SHA-256 in the register (changed after release)")
        return pd.read_parquet(path)

    # --- backup --------------------------------------------------------------------------

    def backup(self, dest: str | os.PathLike) -> Path:
        """Write a consistent copy of a SQLite register and its files folder to ``dest``.

        The database is copied with SQLite's online backup API (a consistent snapshot while
        other runs may be writing); then the files folder (its files are written once and
        never changed, so every file a copied row points to is there).

        Parameters
        ----------
        dest : path
            New SQLite file (its parent must exist); the files go to its files folder.

        Returns
        -------
        Path

        Raises
        ------
        synthgeo.InputError
            ``dest`` exists, its folder does not, or the register is not SQLite (back up a
            server register with its own tools, e.g. ``pg_dump``, and copy the files folder).
        """
        dest = Path(dest)
        if not self.is_sqlite:
            raise InputError(f"--backup copies a SQLite register; {self.url} is "
                             f"{self.engine.dialect.name}: use its own backup (pg_dump) and "
                             f"copy {self.files_dir}")
        if dest.exists():
            raise InputError(f"--backup {str(dest)!r} exists; give a new file name")
        if dest.suffix.lower() not in SQLITE_SUFFIXES:
            raise InputError(f"--backup {str(dest)!r}: the copy is a SQLite file named "
                             f"{' or '.join(f'*{x}' for x in SQLITE_SUFFIXES)}; give such a name")
        if not dest.parent.is_dir():
            raise InputError(f"--backup {str(dest)!r}: folder {str(dest.parent)!r} does not "
                             "exist")
        self._ready(create=True)  # a new register's copy is an empty register
        raw = self.engine.raw_connection()
        try:
            target = sqlite3.connect(dest)
            try:
                raw.driver_connection.backup(target)
            finally:
                target.close()
        finally:
            raw.close()
        if self.files_dir.is_dir():
            shutil.copytree(self.files_dir, files_dir_of(dest))
        return dest


def _chains(spec_json: str | None) -> int | None:
    """Return ``[sampling] chains`` of a registered release's spec (None when not recorded)."""
    try:
        value = (json.loads(spec_json or "{}").get("sampling") or {}).get("chains")
    except ValueError:
        return None
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


#: Rows per statement when the register reads or writes many noise keys.
_CHUNK = 900


def _keyed(salt: str, fingerprints: list[bytes]) -> list[str]:
    """HMAC-SHA256 (hex) of each fingerprint under the register's salt; sorted, unique."""
    key = bytes.fromhex(salt)
    return sorted({hmac.new(key, fp, hashlib.sha256).hexdigest() for fp in fingerprints})


def _noise_hits(conn: Connection, keys: list[str]) -> dict[int, int]:
    """``release id -> how many of keys`` among the registered input-noise draws."""
    hits: dict[int, int] = {}
    for start in range(0, len(keys), _CHUNK):
        for (rid,) in conn.execute(select(noise_records.c.release_id).where(
                noise_records.c.record_key.in_(keys[start:start + _CHUNK]))):
            hits[rid] = hits.get(rid, 0) + 1
    return hits


def noise_refusal(location: str, rid: int, n: int, fix: str = "") -> InputError:
    """Return the one-line refusal of a second, independent noise draw of registered values."""
    return InputError(
        f"the register {location!r} holds release {rid} whose input noise already covers "
        f"{n} of these records' values: a second, independent noise draw "
        "of the same values lets the two releases be averaged and the noise taken away; "
        "release these records once under input noise, or leave `[synthesis] input_noise` "
        "out" + fix)


def _refuse_second_noise(conn: Connection, keys: list[str], location: str) -> None:
    """Refuse a release whose input noise would give a record value a second, independent draw.

    Raises
    ------
    synthgeo.InputError
        One line: how many records and which earlier release.
    """
    hits = _noise_hits(conn, keys)
    if hits:
        raise noise_refusal(location, min(hits), sum(hits.values()))


def value_fingerprints(gdf, parts) -> list[bytes]:
    """Return one fingerprint per record value: what the register keys for input noise.

    Bytes of (location in WGS 84 to 4 decimals, about 10 m; value on the person's scale, e.g.
    dollars, to 6 significant figures): the same value at the same place is the same record
    to the register, whatever the column is called, the target CRS or whether the file held
    prices or log-prices (the break-it trial of 2026-12-03 passed those changes through a
    fingerprint of name, projected metres and model-scale value). Confidential (in memory
    only); the register keys them with its salt.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        The records (n rows, any CRS).
    parts : iterable of (ndarray of shape (n,), bool)
        Each noised response's values on the model scale, and whether the model scale is the
        log of the person's.

    Returns
    -------
    list of bytes
        n per part.

    Examples
    --------
    >>> import geopandas
    >>> g = geopandas.GeoDataFrame(geometry=geopandas.points_from_xy([-121.5], [38.5]),
    ...                            crs="EPSG:4326")
    >>> value_fingerprints(g, [(np.array([100.0]), False)])
    [b'-121.5000|38.5000|100']
    """
    parts = list(parts)
    if not parts:
        return []
    pts = gdf.geometry.to_crs(4326)
    lonlat = np.round(np.column_stack([pts.x, pts.y]), 4)
    out: list[bytes] = []
    for y, logged in parts:
        value = np.exp(y) if logged else np.asarray(y, float)
        out += [f"{a:.4f}|{b:.4f}|{v:.6g}".encode() for (a, b), v in zip(lonlat, value)]
    return out


def _seed_refusal(location: str, id: int) -> InputError:
    return InputError(f"this run's seed was used by release {id} of the register {location!r}: "
                      "one seed, one release (its implicates would repeat that release's "
                      "noise, whatever --draws or the spec say); give a new seed (`--seed N`, or "
                      "`[sampling] seed` in the spec) or leave it out for a fresh one")


def files_dir_of(sqlite_path: Path) -> Path:
    """Return the files folder beside a SQLite register: ``<file>.files``."""
    return sqlite_path.with_name(sqlite_path.name + ".files")


def open_register(location: str | os.PathLike, *,
                  files_dir: str | os.PathLike | None = None) -> Register:
    """Open a register (a new one is created by its first release, not here).

    Parameters
    ----------
    location : path or str
        A SQLite file named ``*.sqlite``, ``*.sqlite3`` or ``*.db`` (:data:`SQLITE_SUFFIXES`;
        its folder must exist), or a SQLAlchemy URL (``postgresql+psycopg://user@host/db``).
        A new register (no file; a database without the tables) reads as empty and is
        created by the first :meth:`Register.add`, so a run that fails leaves nothing.
    files_dir : path, optional
        The folder of the predictive summaries. Default: ``<file>.files`` beside a SQLite
        file; for a server, :data:`FILES_ENV` (required).

    Returns
    -------
    Register

    Raises
    ------
    synthgeo.InputError
        A path with another ending (e.g. ``register.jsonl``), a SQLite file whose folder does
        not exist, an existing file that is not a synthgeo register (a CSV, another
        application's SQLite database: refused, never written), an unreachable server, no
        files folder for a server register, or a register of another schema version.

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "register.sqlite"
    >>> reg = open_register(path)
    >>> len(reg.list()), path.exists()
    (0, False)
    """
    text_loc = os.fspath(location)
    if "://" in text_loc:
        try:
            engine = create_engine(text_loc)
        except (SQLAlchemyError, ImportError) as exc:
            raise InputError(f"--register {text_loc.split('@')[-1]!r} is not a usable "
                             f"SQLAlchemy URL ({exc}); give a SQLite file path or a URL such as "
                             "postgresql+psycopg://user@host/db") from None
        files = files_dir if files_dir is not None else os.environ.get(FILES_ENV)
        if not files:
            raise InputError(f"a server register needs a folder for its files: set {FILES_ENV} "
                             "(a folder in the agency's confidential store)")
        shown = engine.url.render_as_string(hide_password=True)
    else:
        path = sqlite_path(text_loc)
        if path.suffix.lower() not in SQLITE_SUFFIXES:
            raise InputError(f"--register {text_loc!r}: a register is a SQLite file named "
                             f"{' or '.join(f'*{x}' for x in SQLITE_SUFFIXES)}, or a SQLAlchemy "
                             "URL (postgresql+psycopg://user@host/db); give one of those")
        if not path.parent.is_dir():
            raise InputError(f"--register {text_loc!r}: folder {str(path.parent)!r} does not "
                             "exist; create it (in the agency's confidential store) first")
        if path.exists():  # read only: a file that is not a register is never written to
            _check_register_file(path, text_loc)
        engine = _sqlite_engine(path)
        files = files_dir if files_dir is not None else files_dir_of(path)
        shown = str(path)
    new = not _exists(engine, shown)  # created by its first release: a failed run leaves none
    if not new:
        _create_schema(engine, shown)
    return Register(engine, Path(files), shown, new=new)


def sqlite_path(given: str) -> Path:
    """Return the absolute path of a SQLite register given as `given`, refusing what is no file.

    Parameters
    ----------
    given : str
        ``--register`` as given (a path; ``~`` expanded).

    Returns
    -------
    pathlib.Path
        The resolved path (it need not exist: a register is created by its first release).

    Notes
    -----
    A symbolic link is refused (a register is an audit ledger: a link can be re-pointed at
    another file, and the register's files folder sits beside the real one), as is a folder,
    with or without a register's suffix, and a path that cannot be resolved (a link loop in
    a folder above).

    Raises
    ------
    synthgeo.InputError
        One line naming `given` and the fix.

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> sqlite_path(f"{folder}/register.sqlite").name
    'register.sqlite'
    >>> sqlite_path(folder)
    Traceback (most recent call last):
    ...
    synthgeo._errors.InputError: --register '...' is a folder; give a file name such as ...
    """
    if not given.strip():
        raise InputError("--register is empty; give a file name such as register.sqlite")
    raw = Path(given).expanduser()
    if raw.is_symlink():
        raise InputError(f"--register {given!r} is a symbolic link; give the path of the "
                         "register file itself (a link can be re-pointed, and the register's "
                         "files folder sits beside the real file)")
    if raw.is_dir():
        raise InputError(f"--register {given!r} is a folder; give a file name such as "
                         "register.sqlite inside it")
    try:
        return raw.resolve()
    except (RuntimeError, OSError) as exc:  # a symlink loop in a folder above (3.11: Runtime)
        raise InputError(f"--register {given!r} cannot be resolved ({type(exc).__name__}: a "
                         "symbolic link loop in its folders?); give the path of the register "
                         "file itself") from None


def _sqlite_tables(path: Path) -> set[str] | None:
    """Table names of the SQLite file at `path`, read only (None: not a SQLite database)."""
    with open(path, "rb") as fh:
        head = fh.read(len(_SQLITE_MAGIC))
    if not head:
        return set()  # 0 bytes: SQLite's empty database (or one being created)
    if head != _SQLITE_MAGIC:
        return None
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
        try:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return None
    return {r[0] for r in rows}


def _check_register_file(path: Path, given: str) -> None:
    """Refuse an existing file that is not a synthgeo register, without writing to it.

    A register holds the tables :data:`synthgeo.register.schema.metadata` names (at least its
    info and releases tables). A file with no tables at all may be a register another run is
    creating at this moment: it is read again for :data:`NEW_REGISTER_WAIT_S` before it is
    refused.

    Raises
    ------
    synthgeo.InputError
        A file that is not a SQLite database (e.g. a CSV), or a SQLite database without the
        register's tables (another application's, or an empty one).
    """
    fix = ("give the path of an existing synthgeo register, or a new file name (a register "
           "is created by its first release)")
    needed = {register_info.name, releases.name}
    deadline = time.monotonic() + NEW_REGISTER_WAIT_S
    while True:
        tables = _sqlite_tables(path)
        if tables is None:
            raise InputError(f"--register {given!r} is an existing file that is not a SQLite "
                             f"database (e.g. a CSV), so not a synthgeo register; {fix}")
        if needed <= tables:
            return
        if tables or time.monotonic() >= deadline:
            raise InputError(f"--register {given!r} is an existing SQLite database without the "
                             f"register's tables ({len(tables)} other table(s)), so not a "
                             f"synthgeo register, and is left untouched; {fix}")
        time.sleep(0.1)  # no table yet: perhaps a register being created by another run


def _exists(engine: Engine, shown: str) -> bool:
    """Whether the register exists (its SQLite file; a server's releases table), read only.

    Raises
    ------
    synthgeo.InputError
        A server that cannot be reached.
    """
    if engine.dialect.name == "sqlite":
        return Path(engine.url.database or "").exists()
    try:
        return sa_inspect(engine).has_table(releases.name)
    except SQLAlchemyError as exc:
        raise InputError(f"the register {shown!r} cannot be opened ({exc.__class__.__name__}: "
                         f"{getattr(exc, 'orig', exc)}); give a SQLite file or a reachable "
                         "database") from None


def _create_schema(engine: Engine, shown: str) -> None:
    """Create the register's tables when absent; refuse another schema version.

    Raises
    ------
    synthgeo.InputError
        A register of another schema version, or one that cannot be opened.
    """
    try:
        with engine.begin() as conn:
            metadata.create_all(conn)
            version = conn.execute(select(register_info.c.value).where(
                register_info.c.name == "schema_version")).scalar()
            if version is None:
                conn.execute(insert(register_info), [
                    {"name": "schema_version", "value": str(SCHEMA_VERSION)},
                    {"name": "created_at", "value": _now()}])
            elif int(version) != SCHEMA_VERSION:
                raise InputError(f"the register {shown!r} has schema version {version}; this "
                                 f"synthgeo reads version {SCHEMA_VERSION}")
    except IntegrityError:  # two runs created a new register at once: the other one won
        pass
    except (OperationalError, sqlite3.DatabaseError) as exc:
        raise InputError(f"the register {shown!r} cannot be opened ({exc.__class__.__name__}: "
                         f"{getattr(exc, 'orig', exc)}); give a SQLite file or a reachable "
                         "database") from None
