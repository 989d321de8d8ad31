"""Constants, the table of allowed values and the checks the spec sections share."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from synthgeo._errors import SpecError

BUNDLED_SPEC = "sacramento_2bed.toml"

#: ``gp = "auto"`` uses the exact GP up to this many records and the NNGP beyond: the measured
#: break-even of the grid route's cost per cell (benchmarks/bench_nngp.py, 2 cores).
AUTO_EXACT_MAX_RECORDS = 1000

#: ``[[data.responses]] family``: response families (gaussian: the conjugate grid / NUTS route;
#: bernoulli, poisson: the nested Laplace GLMM route, :mod:`synthgeo.inference.glmm`).
RESPONSE_FAMILIES = ("gaussian", "bernoulli", "poisson")

#: ``[model] at_risk``: which rule makes a record at risk.
AT_RISK_RULES = ("spatial", "risk", "both")


def _err(section: str, key: str, value: Any, expect: str) -> SpecError:
    return SpecError(f"spec `[{section}] {key}` must be {expect}, got {value!r}")


def _is_int(value: Any) -> bool:
    """Return whether `value` is an integer, not a bool (TOML ``true`` is no count)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _known_encoding(name: str) -> bool:
    import codecs

    try:
        codecs.lookup(name)
    except LookupError:
        return False
    return True


def _is_number(value: Any) -> bool:
    """Return whether `value` is a finite int or float, not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# GPPriors fields that must be > 0 (beta_mean may be any finite number); kept here so that
# loading a spec does not import PyMC; a test checks that they match GPPriors' fields
_POSITIVE_PRIORS = (
    "beta_sd", "sigma2_shape", "sigma2_scale", "nugget_sd_scale", "range_min_m", "range_max_m",
)
_PRIOR_KEYS = ("beta_mean", *_POSITIVE_PRIORS)
#: ``[utility] pmse_terms``: the propensity model's main effects, or also every two-way
#: interaction (docs/risk-and-utility.md, "General utility: pMSE").
PMSE_TERMS = ("main", "interactions")
#: ``[utility] pmse_coordinates``: no coordinate term, linear, or a B-spline of each axis.
PMSE_COORDINATES = ("none", "linear", "spline")


#: Allowed values and ranges of spec keys, as JSON Schema keywords (``enum``, ``minimum``,
#: ``exclusiveMaximum``, ``minItems``, ``items``, ...), by section and key. With the
#: dataclasses' fields and type hints (a ``Literal`` type gives its ``enum`` by itself) this is
#: the one source of the ``spec`` part of ``release.schema.json``
#: (:func:`synthgeo.release.schema.spec_schema`); a test checks that each ``__post_init__``
#: accepts and refuses what this table says. A key without an entry is described by its type.
SPEC_CONSTRAINTS: dict[str, dict[str, dict[str, Any]]] = {
    "data": {
        "path": {"minLength": 1}, "response": {"minLength": 1},
        "covariates": {"uniqueItems": True},
        **{key: {"minLength": 1} for key in ("x", "y", "crs", "id", "query", "subject",
                                             "target_crs")},
        "back_transform": {"enum": ["exp", "identity"]},
        "coord_unit_m": {"exclusiveMinimum": 0},
        **{key: {"minLength": 1, "maxLength": 1} for key in ("sep", "decimal", "thousands")},
        "encoding": {"minLength": 1},  # a codec Python knows: checked by DataConfig only
    },
    "model": {
        "gp": {"enum": ["exact", "nngp", "auto"]},
        "n_neighbors": {"minimum": 2, "maximum": 50},
        "rho0": {"exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "M_m": {"exclusiveMinimum": 0},
        "k": {"minimum": 2},
        "gamma": {"anyOf": [{"type": "number", "minimum": 0}, {"enum": ["inf", "auto"]}]},
        "at_risk_weight": {"enum": ["binary", "continuous", "pseudo_likelihood"]},
        "at_risk_effect": {"enum": ["zero", "kriged", "independent"]},
        "parametrization": {"enum": ["natural", "ridge"]},
        "priors": {"properties": {key: {"type": "number"} | (
            {"exclusiveMinimum": 0} if key in _POSITIVE_PRIORS else {}) for key in _PRIOR_KEYS}},
    },
    "sampling": {
        "sampler": {"enum": ["nutpie", "grid"]},
        "backend": {"enum": ["numba", "jax"]},
        "chains": {"minimum": 1}, "draws": {"minimum": 10}, "tune": {"minimum": 10},
        "seed": {"minimum": 0},
        "target_accept": {"minimum": 0.5, "exclusiveMaximum": 1},
        "on_convergence_failure": {"enum": ["stop", "warn"]},
    },
    "synthesis": {"n_implicates": {"minimum": 2}},
    "risk": {key: {"minItems": 1, "items": {"exclusiveMinimum": 0}} for key in ("eps", "p")},
    "utility": {"formula": {"pattern": "~"}, "alpha": {"exclusiveMinimum": 0,
                                                        "exclusiveMaximum": 1},
                "pmse_terms": {"enum": list(PMSE_TERMS)},
                "pmse_coordinates": {"enum": list(PMSE_COORDINATES)},
                "pmse_spline_df": {"minimum": 3}, "pmse_permutations": {"minimum": 2},
                "pmse_null_max_pairs": {"minimum": 10}},
    "anonymity": {
        "radius_m": {"exclusiveMinimum": 0}, "k": {"minimum": 2},
        "r_max_m": {"exclusiveMinimum": 0},
        "merge_ratio": {"minimum": 1}, "generalise_ratio": {"minimum": 1},
        "max_suppressed_share": {"minimum": 0, "maximum": 1},
        "max_unit_suppressed_share": {"minimum": 0, "maximum": 1},
        "max_passes": {"minimum": 1, "maximum": 100},
        "group_diameter_ratio": {"exclusiveMinimum": 0},
        "group_by": {"items": {"minLength": 1}},
        **{key: {"minLength": 1} for key in ("unit", "time", "r_max_time")},
    },
}


_EXCLUSIVE_TRANSFORM = (
    '`[data] transform = "log"` and `back_transform` are exclusive: with `transform` the '
    "response column is on its original scale (dollars) and is released on it; with "
    "`back_transform` the column is already on the model scale (log-dollars). Keep one"
)


#: Keys a spec *file* must give although the Python types default them (data in memory).
_REQUIRED_IN_FILE = {"data": ("path",)}


def _build(section: str, cls: type, raw: Any) -> Any:
    """Return ``cls(**raw)`` for one spec table; refuse unknown and missing keys (SpecError)."""
    if not isinstance(raw, dict):
        raise SpecError(f"spec section `[{section}]` must be a table, got {raw!r}")
    names = {f.name for f in dataclasses.fields(cls)}
    if section == "data" and "transform" in raw and "back_transform" in raw:
        raise SpecError(_EXCLUSIVE_TRANSFORM)
    unknown = sorted(set(raw) - names)
    if unknown:
        raise SpecError(
            f"unknown key(s) in `[{section}]`: {unknown}; allowed: {sorted(names)}"
        )
    missing = sorted({f.name for f in dataclasses.fields(cls)
                      if f.default is dataclasses.MISSING
                      and f.default_factory is dataclasses.MISSING}
                     .union(_REQUIRED_IN_FILE.get(section, ())) - set(raw))
    if missing:
        raise SpecError(f"spec `[{section}]` is missing required key(s) {missing}")
    return cls(**raw)


def _sub_table(raw: Any, cls: type, section: str, key: str, expect: str) -> Any:
    """Build ``cls`` from one table of an array of tables, or pass an instance on.

    For ``[[data.responses]]`` and ``[[risk.targets]]``; anything else is a SpecError.
    """
    if isinstance(raw, cls):
        return raw
    if not isinstance(raw, dict):
        raise _err(section, key, raw, expect)
    return _build(f"{section}.{key}", cls, raw)
