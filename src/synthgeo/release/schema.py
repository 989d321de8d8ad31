"""The JSON Schema of ``release.json`` (shipped as ``synthgeo/data/release.schema.json``).

Every object in the schema is closed (``additionalProperties: false``), so a field that the
schema does not name fails validation: a new field must be added to the schema on purpose.
The review fields (``review.reviewer``, ``decision``, ``date``, ``conditions``) are written as
null by synthgeo; the board fills them in, and the filled-in record must still validate.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

__all__ = ["release_schema", "validate_release_record", "SCHEMA_FILE"]

#: File name of the schema inside the package's ``data`` folder.
SCHEMA_FILE = "release.schema.json"


@lru_cache(maxsize=1)
def _schema_text() -> str:
    return (resources.files("synthgeo") / "data" / SCHEMA_FILE).read_text(encoding="utf-8")


def release_schema() -> dict[str, Any]:
    """Return the release-record JSON Schema (Draft 2020-12) as a dict (a fresh copy)."""
    return json.loads(_schema_text())


def validate_release_record(record: dict[str, Any]) -> None:
    """Check a release record against the schema.

    Parameters
    ----------
    record : dict
        A parsed ``release.json`` (or :func:`synthgeo.release.writer.release_record`'s output).

    Raises
    ------
    ValueError
        Naming every violation as ``path: message`` (e.g. an unknown field, a missing field,
        a review decision outside the allowed values).
    """
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(release_schema())
    errors = sorted(validator.iter_errors(record), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
                 for e in errors[:20]]
        more = f" (and {len(errors) - 20} more)" if len(errors) > 20 else ""
        raise ValueError("release record does not match synthgeo/data/release.schema.json: "
                         + "; ".join(lines) + more)
