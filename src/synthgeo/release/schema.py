"""The JSON Schema of ``release.json``: the shipped file plus a ``spec`` part built from config.

Every object in the schema is closed (``additionalProperties: false``), so a field that the
schema does not name fails validation: a new field must be added to the schema on purpose.
The review fields (``review.reviewer``, ``decision``, ``date``, ``conditions``) are written as
null by synthgeo; the board fills them in, and the filled-in record must still validate.

The ``spec`` part (the spec as run) is not written by hand: :func:`spec_schema` builds it from
the config dataclasses (:mod:`synthgeo.config`): one closed object per section, one property
per field, its JSON type from the field's type hint, its allowed values and ranges from
:data:`synthgeo.config.SPEC_CONSTRAINTS` (or a ``Literal`` type hint). A key added to a config
dataclass is in the schema with no other edit. The rest of the schema is
``synthgeo/data/release.schema.json``. See docs/release.md.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import types
import typing
from functools import lru_cache
from importlib import resources
from pathlib import PurePath
from typing import Any

__all__ = ["release_schema", "spec_schema", "validate_release_record", "SCHEMA_FILE"]

#: File name of the schema inside the package's ``data`` folder.
SCHEMA_FILE = "release.schema.json"
#: The placeholder the shipped file holds where :func:`spec_schema`'s output goes.
_SPEC_PLACEHOLDER = "generated from synthgeo.config by synthgeo.release.schema.spec_schema"
#: The placeholder of the ``detector`` block, filled from :data:`synthgeo.risk.detector.
#: DETECTOR_SCHEMA` (one home for the detector's schema).
_DETECTOR_PLACEHOLDER = "generated from synthgeo.risk.detector.DETECTOR_SCHEMA"

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean",
                            type(None): "null"}
#: Keys of a ``dict`` field without named ``properties``: identifiers.
_KEY_PATTERN = "^[A-Za-z_][A-Za-z0-9_]*$"


@lru_cache(maxsize=1)
def _schema_text() -> str:
    return (resources.files("synthgeo") / "data" / SCHEMA_FILE).read_text(encoding="utf-8")


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Return ``base`` with ``extra``'s keywords added; nested schemas (``items``) merged."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key != "properties":
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _type_schema(hint: Any, constraint: dict[str, Any]) -> dict[str, Any]:
    """Return the JSON Schema of a type hint (of the constraint, only ``properties`` used)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if isinstance(hint, type) and issubclass(hint, PurePath):
        return {"type": "string"}  # ReleaseSpec.to_dict writes paths as strings
    if hint is Any or hint is object:
        return {}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        parts = [_type_schema(a, {}) for a in args]
        if all(set(p) == {"type"} for p in parts):
            return {"type": [p["type"] for p in parts]}
        return {"anyOf": parts}
    if origin in (list, tuple, set, frozenset):
        item = args[0] if args else Any
        return {"type": "array", "items": _type_schema(item, constraint.get("items", {}))}
    if origin is dict:
        value = _type_schema(args[1] if len(args) == 2 else Any, {})
        if "properties" in constraint:  # named keys only (e.g. [model.priors])
            return {"type": "object", "properties": {}, "additionalProperties": False}
        return {"type": "object", "patternProperties": {_KEY_PATTERN: value},
                "additionalProperties": False}
    if dataclasses.is_dataclass(hint):
        return _object_schema(hint, {})
    raise TypeError(f"spec_schema: no JSON Schema for the type hint {hint!r}; use str, int, "
                    "float, bool, None, a Literal, a list/dict of those, or a config dataclass")


def _default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return dataclasses.MISSING


def _object_schema(cls: type, constraints: dict[str, dict[str, Any]],
                   section: str | None = None) -> dict[str, Any]:
    """Return a closed object with one required property per field of the dataclass ``cls``."""
    hints = typing.get_type_hints(cls)
    props = {}
    for f in dataclasses.fields(cls):
        constraint = constraints.get(f.name, {})
        prop = _merge(_type_schema(hints[f.name], constraint), constraint)
        if "enum" in prop and "null" in typing.cast(list, prop.get("type", [])):
            prop["enum"] = [*prop["enum"], None]
        default = _default(f)
        if default is not dataclasses.MISSING and not dataclasses.is_dataclass(default):
            prop["default"] = json.loads(json.dumps(default, default=str))
        props[f.name] = prop
    out: dict[str, Any] = {"type": "object"}
    doc = (cls.__doc__ or "").strip().splitlines()
    if doc and not doc[0].startswith(f"{cls.__name__}("):  # not dataclass's own signature
        out["description"] = (f"[{section}] " if section else "") + doc[0]
    return out | {"properties": props, "required": list(props), "additionalProperties": False}


def spec_schema(spec_type: type | None = None,
                constraints: dict[str, dict[str, dict[str, Any]]] | None = None
                ) -> dict[str, Any]:
    """Return the JSON Schema of the spec as run, built from the config dataclasses.

    Parameters
    ----------
    spec_type : type, optional
        The whole spec's dataclass; default :class:`synthgeo.config.ReleaseSpec`. Each field
        whose type is a dataclass is a section; other fields (``source``) are plain values.
    constraints : dict, optional
        Allowed values and ranges by section and key, as JSON Schema keywords; default
        :data:`synthgeo.config.SPEC_CONSTRAINTS`.

    Returns
    -------
    dict
        A closed object with one closed object per section, every key required
        (:meth:`synthgeo.config.ReleaseSpec.to_dict` writes every default).

    Raises
    ------
    TypeError
        If a field's type hint has no JSON Schema form (the message lists the forms).

    Examples
    --------
    >>> schema = spec_schema()
    >>> schema["properties"]["model"]["properties"]["gp"]
    {'type': 'string', 'enum': ['exact', 'nngp', 'auto'], 'default': 'exact'}
    >>> schema["properties"]["synthesis"]["additionalProperties"]
    False
    """
    from synthgeo import config

    spec_type = spec_type or config.ReleaseSpec
    constraints = config.SPEC_CONSTRAINTS if constraints is None else constraints
    hints = typing.get_type_hints(spec_type)
    props = {}
    for f in dataclasses.fields(spec_type):
        hint = hints[f.name]
        if dataclasses.is_dataclass(hint):
            props[f.name] = _object_schema(hint, constraints.get(f.name, {}), section=f.name)
        else:
            props[f.name] = _type_schema(hint, {})
    return {"type": "object",
            "description": "The spec as run, every default filled in "
                           "(synthgeo.config.ReleaseSpec.to_dict); " + _SPEC_PLACEHOLDER + ".",
            "properties": props, "required": list(props), "additionalProperties": False}


@lru_cache(maxsize=1)
def _release_schema() -> dict[str, Any]:
    schema = json.loads(_schema_text())
    placeholder = schema["properties"]["spec"]
    if placeholder != {"$comment": _SPEC_PLACEHOLDER}:
        raise RuntimeError(f"{SCHEMA_FILE}: properties.spec must be the placeholder "
                           f'{{"$comment": "{_SPEC_PLACEHOLDER}"}}; the spec part is built '
                           "from synthgeo.config (add keys to the config dataclasses)")
    schema["properties"]["spec"] = spec_schema()
    if schema["properties"].get("detector") != {"$comment": _DETECTOR_PLACEHOLDER}:
        raise RuntimeError(f"{SCHEMA_FILE}: properties.detector must be the placeholder "
                           f'{{"$comment": "{_DETECTOR_PLACEHOLDER}"}}')
    from synthgeo.risk.detector import DETECTOR_SCHEMA

    schema["properties"]["detector"] = {
        "description": "Can a protected record be told apart from release/? The detector's "
                       "AUC with its interval (synthgeo.pipeline.detector_stage), or why it "
                       "did not run (a cross-fitted release selects nobody)",
        **copy.deepcopy(DETECTOR_SCHEMA)}
    return schema


def release_schema() -> dict[str, Any]:
    """Return the release-record JSON Schema (Draft 2020-12) as a dict (a fresh copy).

    The shipped ``release.schema.json`` with its ``spec`` part built by :func:`spec_schema`.

    Examples
    --------
    >>> schema = release_schema()
    >>> schema["properties"]["spec"]["required"][:3]
    ['data', 'model', 'sampling']
    """
    return copy.deepcopy(_release_schema())


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
