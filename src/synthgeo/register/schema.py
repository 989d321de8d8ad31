"""The register's tables (SQLAlchemy 2 Core), one row per release; docs/release.md.

``synthgeo_releases``
    One row per release: its uid, where it was written, the SHA-256 of its release.json, the
    keyed seed hash (unique: one seed, one release), the release.json HMAC and the key's id,
    the spec as run (JSON, seed removed), counts, and ``previous_id``: the release it was
    pooled with (the chain of earlier releases is followed through it).
``synthgeo_release_files``
    Every file under the release's ``release/``: path, bytes, SHA-256.
``synthgeo_predictive_summaries``
    A pointer (path relative to the register's files folder, bytes, SHA-256) to the
    per-record predictive summaries of the released model (mean and sd per implicate and
    record, model scale): what a later release needs to pool Rao-Blackwellised risk. They are
    files, not rows: two float64 per record and implicate, 1.6 GB a release at 10⁶ records and
    L = 100.
``synthgeo_register_info``
    ``schema_version`` and when the register was created.

The names carry a ``synthgeo_`` prefix so that the register can share a PostgreSQL database.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

__all__ = ["SCHEMA_VERSION", "metadata", "releases", "release_files", "predictive_summaries",
           "register_info", "noise_records"]

#: Bumped whenever a table changes; a register of another version is refused.
SCHEMA_VERSION = 1

metadata = MetaData()

register_info = Table(
    "synthgeo_register_info", metadata,
    Column("name", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

releases = Table(
    "synthgeo_releases", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("release_uid", String(32), nullable=False, unique=True),
    Column("registered_at", String(40), nullable=False),  # ISO 8601, UTC
    Column("created_at", String(40)),  # release.json's created_at
    Column("folder", Text, nullable=False),  # where it was written (absolute; informative)
    Column("release_json_sha256", String(64), nullable=False, unique=True),
    Column("seed_hash", String(64), unique=True),  # null: no seed (never for synthgeo run)
    Column("seed_hash_kind", String(16), nullable=False),  # "hmac-sha256" | "sha256"
    Column("signed", Boolean, nullable=False),
    Column("signature", String(64)),  # release.json's HMAC (null when unsigned)
    Column("key_id", String(16)),
    Column("unsigned_reason", Text),
    Column("spec_json", Text, nullable=False),  # the spec as run, seed removed
    Column("n_records", Integer, nullable=False),
    Column("n_implicates", Integer, nullable=False),
    Column("n_draws", Integer),
    Column("previous_id", Integer, ForeignKey("synthgeo_releases.id")),
    Column("synthgeo_version", String(40), nullable=False),
)

release_files = Table(
    "synthgeo_release_files", metadata,
    Column("release_id", Integer, ForeignKey("synthgeo_releases.id"), primary_key=True),
    Column("path", Text, primary_key=True),  # relative to the release folder: release/...
    Column("bytes", BigInteger, nullable=False),
    Column("sha256", String(64), nullable=False),
)

#: One row per record value that has had an input-noise draw (``[synthesis] input_noise``): a
#: keyed fingerprint of (response, location, value), never the value. The primary key makes
#: "one noise draw per record" the database's rule: two independent noise draws of one value,
#: pooled, average the noise away (docs/risk-and-utility.md, "Input noise"). Added without a
#: schema version bump: an older register gets the table on its next write.
noise_records = Table(
    "synthgeo_noise_records", metadata,
    Column("record_key", String(64), primary_key=True),
    Column("release_id", Integer, ForeignKey("synthgeo_releases.id"), nullable=False),
)

predictive_summaries = Table(
    "synthgeo_predictive_summaries", metadata,
    Column("release_id", Integer, ForeignKey("synthgeo_releases.id"), primary_key=True),
    Column("path", Text, nullable=False),  # relative to the register's files folder
    Column("bytes", BigInteger, nullable=False),
    Column("sha256", String(64), nullable=False),
    Column("n_records", Integer, nullable=False),
    Column("n_implicates", Integer, nullable=False),
    Column("scale", Text, nullable=False),  # e.g. "model scale (log-dollars)"
    UniqueConstraint("path"),
)
