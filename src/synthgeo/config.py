"""The release spec: a reviewed TOML file under ``models/`` parsed into frozen dataclasses.

Unknown keys are errors, not ignored (docs/release.md). Paths resolve relative to the spec
file; ``synthgeo:NAME`` names a data file shipped inside the package. Every default is written
into the release record through :meth:`ReleaseSpec.to_dict`.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from synthgeo._errors import SpecError
from synthgeo.io.paths import resolve_input

__all__ = [
    "ResponseConfig", "DataConfig", "ModelConfig", "SamplingConfig", "SynthesisConfig",
    "RiskConfig", "RiskTarget", "UtilityConfig", "AnonymityConfig", "ComputeConfig",
    "ReleaseSpec", "load_spec", "bundled_spec_path",
]

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
        **{key: {"minLength": 1, "maxLength": 1} for key in ("sep", "decimal")},
        "encoding": {"minLength": 1},  # a codec Python knows: checked by DataConfig only
    },
    "model": {
        "gp": {"enum": ["exact", "nngp", "auto"]},
        "n_neighbors": {"minimum": 2, "maximum": 50},
        "rho0": {"exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "M_m": {"exclusiveMinimum": 0},
        "k": {"minimum": 2},
        "gamma": {"anyOf": [{"type": "number", "minimum": 0}, {"enum": ["inf", "auto"]}]},
        "at_risk_weight": {"enum": ["binary", "continuous"]},
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
                                                        "exclusiveMaximum": 1}},
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


@dataclass(frozen=True, kw_only=True)
class ResponseConfig:
    """One confidential response of ``[[data.responses]]`` (synthesised in the order given).

    ``name``: the column; ``family`` {"gaussian", "bernoulli", "poisson"}; ``transform``
    {"log"} (gaussian only: the column is on its original scale, modelled as log y and
    released as exp(y†)); ``exposure``: poisson exposure column (offset log E); ``positive``
    (bernoulli only): the event level of a yes/no text column, e.g. "YES" (without it the column
    must hold 0/1). Response j is fitted with the confidential responses before it as
    covariates; implicate l of response j is drawn given implicate l of the earlier synthetic
    responses (sequential synthesis, docs/model.md "Several responses").
    """

    name: str
    family: Literal["gaussian", "bernoulli", "poisson"] = "gaussian"
    transform: Literal["log"] | None = None
    exposure: str | None = None
    positive: str | None = None

    def __post_init__(self) -> None:
        """Refuse impossible values with a :class:`SpecError` naming the key."""
        sec = "data.responses"
        if not (isinstance(self.name, str) and self.name):
            raise _err(sec, "name", self.name, "a non-empty column name")
        if self.family not in RESPONSE_FAMILIES:
            raise _err(sec, "family", self.family, 'one of "gaussian", "bernoulli", "poisson"')
        if self.transform is not None and self.transform != "log":
            raise _err(sec, "transform", self.transform, '"log" (or left out)')
        if self.transform is not None and self.family != "gaussian":
            raise _err(sec, "transform", self.transform,
                       f'left out for family "{self.family}" (gaussian only)')
        for key in ("exposure", "positive"):
            v = getattr(self, key)
            if v is not None and not (isinstance(v, str) and v):
                raise _err(sec, key, v, "a non-empty string (or left out)")
        if self.exposure is not None and self.family != "poisson":
            raise _err(sec, "exposure", self.exposure,
                       f'left out for family "{self.family}" (poisson only)')
        if self.positive is not None and self.family != "bernoulli":
            raise _err(sec, "positive", self.positive,
                       f'left out for family "{self.family}" (bernoulli only)')


def _response(raw: Any) -> ResponseConfig:
    """Build a :class:`ResponseConfig` from a TOML table (unknown keys refused), or pass it on."""
    if isinstance(raw, ResponseConfig):
        return raw
    if not isinstance(raw, dict):
        raise _err("data", "responses", raw, "`[[data.responses]]` tables")
    return _build("data.responses", ResponseConfig, raw)


@dataclass(frozen=True, kw_only=True)
class DataConfig:
    """Where the confidential points are and which columns play which role.

    ``path`` (str): points file, relative to the spec or ``synthgeo:NAME`` (required in a spec
    file; None for records handed over in memory, see :func:`synthgeo.synthesize`); ``x``/``y``:
    CSV coordinate columns; ``crs``: CRS of those coordinates when the file has none; ``id``:
    record id column; ``query``: pandas query selecting records; ``response``: response column on
    the model scale (e.g. log-dollars); ``back_transform`` {"exp", "identity"}: g, from the model
    scale to the scale a person knows (dollars); ``transform`` {"log"}: the response column is on
    its original scale (dollars), modelled as log(y) and released as exp(y†) under the same name
    (exclusive with ``back_transform``, which is then exp;
    :class:`synthgeo.model.transform.ResponseScale`); ``covariates``: released unchanged;
    ``subject``: subject id column (records of one subject are never each other's neighbours);
    ``target_crs``: "utm" or a projected CRS in metres; ``drop_duplicates``: drop exact
    duplicate rows (they are always reported); ``coord_unit_m``: metres per unit of the x/y
    columns (default: the CRS's unit; 1000 for kilometres; refused with a geographic CRS);
    ``sep``, ``decimal``, ``encoding``: how the CSV is written (default ",", ".", "utf-8");
    ``responses``: :class:`ResponseConfig` tables, ``[[data.responses]]``, synthesised in
    sequence (``response`` is the shorthand for one gaussian response; with ``responses`` it
    is the first one's name); ``missing`` {"refuse", "drop"}: a record with a missing response
    or covariate is refused, or dropped (not released; counts reported, by
    ``[anonymity] unit`` when set). A covariate column of text becomes treatment-coded design
    columns (first level in sorted order is the reference; recorded in release.json) and is
    released unchanged;
    ``accept_small_extent``: go on (with a warning in the release record) when ≥ 50 distinct
    locations span under 1 km or lie a median under 1 m apart, otherwise refused as a likely
    unit error (docs/locations.md, "Units and plausibility").
    """

    response: str | None = None
    path: str | None = None
    covariates: list[str] = field(default_factory=list)
    x: str | None = None
    y: str | None = None
    crs: str | int | None = None
    id: str | None = None
    query: str | None = None
    back_transform: str = "exp"
    transform: Literal["log"] | None = None
    subject: str | None = None
    target_crs: str | int = "utm"
    drop_duplicates: bool = False
    coord_unit_m: float | None = None
    sep: str = ","
    decimal: str = "."
    encoding: str = "utf-8"
    accept_small_extent: bool = False
    responses: list[ResponseConfig] = field(default_factory=list)
    missing: Literal["refuse", "drop"] = "refuse"

    def __post_init__(self) -> None:
        """Refuse impossible values with a :class:`SpecError` naming the key."""
        if not isinstance(self.responses, list):
            raise _err("data", "responses", self.responses, "`[[data.responses]]` tables")
        object.__setattr__(self, "responses", [_response(r) for r in self.responses])
        names = [r.name for r in self.responses]
        if len(set(names)) != len(names):
            raise _err("data.responses", "name", names, "distinct column names")
        if self.responses:
            if self.response is None:
                object.__setattr__(self, "response", names[0])
            elif self.response != names[0]:
                raise _err("data", "response", self.response,
                           f"left out with `[[data.responses]]` (or the first one, {names[0]!r})")
            if self.transform is not None:
                raise _err("data", "transform", self.transform,
                           "left out with `[[data.responses]]` (give it per response)")
        elif self.response is None:
            raise SpecError("spec `[data]` is missing required key(s) ['response'] (one gaussian "
                            "response; or give `[[data.responses]]` tables)")
        if self.missing not in ("refuse", "drop"):
            raise _err("data", "missing", self.missing, 'one of "refuse", "drop"')
        if not (isinstance(self.response, str) and self.response):
            raise _err("data", "response", self.response, "a non-empty string")
        if self.path is not None and not (isinstance(self.path, str) and self.path):
            raise _err("data", "path", self.path, "a non-empty string")
        for key in ("x", "y", "id", "query", "subject"):
            v = getattr(self, key)
            if v is not None and not (isinstance(v, str) and v):
                raise _err("data", key, v, "a non-empty string (or left out)")
        for key in ("crs", "target_crs"):
            v = getattr(self, key)
            if v is not None and not ((isinstance(v, str) and v) or _is_int(v)):
                raise _err("data", key, v, 'a CRS such as "EPSG:4326" (a string or EPSG code)')
        if (self.x is None) != (self.y is None):
            raise _err("data", "x" if self.x is None else "y", None,
                       "given together with the other coordinate column")
        for key in ("drop_duplicates", "accept_small_extent"):
            if not isinstance(getattr(self, key), bool):
                raise _err("data", key, getattr(self, key), "true or false")
        if self.coord_unit_m is not None and not (_is_number(self.coord_unit_m)
                                                  and self.coord_unit_m > 0):
            raise _err("data", "coord_unit_m", self.coord_unit_m,
                       "a positive number of metres per coordinate unit (1000 for km)")
        for key in ("sep", "decimal"):
            v = getattr(self, key)
            if not (isinstance(v, str) and len(v) == 1):
                raise _err("data", key, v, 'one character, e.g. ";" or "\\t"')
        if self.sep == self.decimal:
            raise _err("data", "decimal", self.decimal, f"different from `sep` {self.sep!r}")
        if not (isinstance(self.encoding, str) and _known_encoding(self.encoding)):
            raise _err("data", "encoding", self.encoding,
                       'a text encoding Python knows, e.g. "utf-8", "latin-1", "cp1252"')
        if self.back_transform not in ("exp", "identity"):
            raise _err("data", "back_transform", self.back_transform, 'one of "exp", "identity"')
        if self.transform is not None and self.transform != "log":
            raise _err("data", "transform", self.transform, '"log" (or left out)')
        if self.transform == "log" and self.back_transform != "exp":
            raise SpecError(_EXCLUSIVE_TRANSFORM)
        if not isinstance(self.covariates, list) or not all(
            isinstance(c, str) for c in self.covariates
        ):
            raise _err("data", "covariates", self.covariates, "a list of column names")
        if len(set(self.covariates)) != len(self.covariates):
            raise _err("data", "covariates", self.covariates, "a list without repeated names")
        for name in self.response_names:
            if name in self.covariates:
                raise _err("data", "covariates", self.covariates,
                           f"columns other than the response {name!r}")
        for r in self.responses:
            if r.exposure is not None and r.exposure in self.response_names:
                raise _err("data.responses", "exposure", r.exposure,
                           "a column that is not a response")

    @property
    def response_names(self) -> list[str]:
        """Names of the confidential responses, in synthesis order."""
        return [r.name for r in self.responses] or [self.response]

    @property
    def response_configs(self) -> list[ResponseConfig]:
        """The responses as :class:`ResponseConfig` (``response`` alone: one gaussian)."""
        return list(self.responses) or [ResponseConfig(name=self.response,
                                                       transform=self.transform)]

    @property
    def sequential(self) -> bool:
        """Return whether the run takes the several-responses / GLMM route.

        True for ``[[data.responses]]`` with more than one response or a non-gaussian one.
        """
        return len(self.responses) > 1 or any(r.family != "gaussian" for r in self.responses)


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """GP model and differential smoothing.

    ``gp`` {"exact", "nngp", "auto"}: GP representation (auto: exact up to
    ``AUTO_EXACT_MAX_RECORDS`` records, NNGP beyond); ``n_neighbors``: NNGP conditioning-set
    size m (2–50, default 15); ``rho0``: correlation defining M = −log(ρ₀)/φ̂; ``M_m``: fixed M
    in metres
    (skips the rule); ``k``: at risk when fewer than k − 1 neighbours within M (2 = paper);
    ``gamma``: smoothing strength, a number ≥ 0, "inf" (paper's restricted model) or "auto"
    (γ = max(0, σ²/τ² − 1) per posterior draw, grid sampler only); ``at_risk_weight``
    {"binary", "continuous"}: a_s ∈ {0, 1} by the rule, or graded a = 1 − min(1, ρ_nn/ρ₀)
    (needs a finite γ); ``at_risk_effect`` {"zero", "kriged", "independent"}: the effect
    synthesised at at-risk sites under γ = "inf" (none, or kriged from the other sites; gaussian
    responses); bernoulli / poisson responses always use "independent" (an iid effect of
    variance (1 − d²)σ² drawn afresh; under γ = ∞ without it an isolated high count leaks
    through β₀, docs/model.md), so "zero" (the default) means "independent" for them;
    ``parametrization`` {"natural", "ridge"}; ``priors``: overrides of
    :class:`synthgeo.model.GPPriors` fields;
    ``at_risk`` {"spatial", "risk", "both"}: at-risk records by the spatial rule (the paper),
    by Rao-Blackwellised attributable risk above a ``[risk.targets] record_threshold`` under the
    unrestricted fit, or either (docs/risk-and-utility.md); ``at_risk_nugget`` {"shared",
    "marginal"} (binary weights, γ = "inf", ``at_risk_effect = "zero"`` and the grid sampler
    only): at-risk records share the nugget τ² (the paper), or get variance σ² + τ² in the
    likelihood and are synthesised as x'β + N(0, σ² + τ²) (docs/model.md, "At-risk variance").
    """

    gp: str = "exact"
    n_neighbors: int = 15
    rho0: float = 0.2
    M_m: float | None = None
    k: int = 2
    gamma: float | str = "inf"
    at_risk_weight: str = "binary"
    at_risk_effect: str = "zero"
    parametrization: str = "ridge"
    priors: dict[str, float] = field(default_factory=dict)
    at_risk: Literal["spatial", "risk", "both"] = "spatial"
    at_risk_nugget: Literal["shared", "marginal"] = "shared"

    def __post_init__(self) -> None:
        """Refuse impossible values with a :class:`SpecError` naming the key."""
        if self.at_risk not in AT_RISK_RULES:
            raise _err("model", "at_risk", self.at_risk, 'one of "spatial", "risk", "both"')
        if self.at_risk_nugget not in ("shared", "marginal"):
            raise _err("model", "at_risk_nugget", self.at_risk_nugget, '"shared" or "marginal"')
        if self.gp not in ("exact", "nngp", "auto"):
            raise _err("model", "gp", self.gp, 'one of "exact", "nngp", "auto"')
        if not (_is_int(self.n_neighbors) and 2 <= self.n_neighbors <= 50):
            raise _err("model", "n_neighbors", self.n_neighbors, "an integer from 2 to 50")
        if not (_is_number(self.rho0) and 0 < self.rho0 < 1):
            raise _err("model", "rho0", self.rho0, "a number strictly between 0 and 1")
        if self.M_m is not None and not (_is_number(self.M_m) and self.M_m > 0):
            raise _err("model", "M_m", self.M_m, "a positive, finite distance in metres")
        if not (_is_int(self.k) and self.k >= 2):
            raise _err("model", "k", self.k, "an integer >= 2")
        g = self.gamma
        numeric = isinstance(g, (int, float)) and not isinstance(g, bool)
        if not (g in ("inf", "auto") or (numeric and g >= 0 and not math.isnan(g))):
            raise _err("model", "gamma", g, 'a number >= 0, "inf" or "auto"')
        is_inf = g == "inf" or (numeric and math.isinf(g))
        if self.at_risk_weight not in ("binary", "continuous"):
            raise _err("model", "at_risk_weight", self.at_risk_weight,
                       'one of "binary", "continuous"')
        if self.at_risk_weight == "continuous" and is_inf:
            raise SpecError(
                '`[model] at_risk_weight = "continuous"` needs a finite `gamma` (a number or '
                '"auto"): with gamma = "inf" every site with a > 0 loses its effect, so the '
                "graded weights collapse to the binary rule"
            )
        if self.at_risk_effect not in ("zero", "kriged", "independent"):
            raise _err("model", "at_risk_effect", self.at_risk_effect,
                       '"zero", "kriged" or "independent"')
        if self.at_risk_effect == "kriged" and not is_inf:
            raise SpecError(
                '`[model] at_risk_effect = "kriged"` replaces the removed effect at at-risk '
                'sites, which only happens with `gamma = "inf"`; with a finite gamma the '
                'at-risk sites keep a (shrunk) effect of their own. Use gamma = "inf" or '
                'at_risk_effect = "zero"'
            )
        if self.at_risk_nugget == "marginal" and not (
                is_inf and self.at_risk_weight == "binary" and self.at_risk_effect == "zero"):
            raise SpecError(
                '`[model] at_risk_nugget = "marginal"` needs binary weights and gamma = "inf" '
                '(at_risk_weight = "binary", gamma = "inf", at_risk_effect = "zero"); use '
                'at_risk_nugget = "shared" otherwise'
            )
        if self.parametrization not in ("natural", "ridge"):
            raise _err("model", "parametrization", self.parametrization, '"natural" or "ridge"')
        if not isinstance(self.priors, dict):
            raise _err("model", "priors", self.priors,
                       f"a table with keys among {sorted(_PRIOR_KEYS)}")
        for key, val in self.priors.items():
            if key not in _PRIOR_KEYS:
                raise SpecError(
                    f"unknown key `[model.priors] {key}`; allowed: {sorted(_PRIOR_KEYS)}"
                )
            if not _is_number(val):
                raise _err("model.priors", key, val, "a finite number")
            if key in _POSITIVE_PRIORS and not val > 0:
                raise _err("model.priors", key, val, "a positive number")
        lo, hi = self.priors.get("range_min_m"), self.priors.get("range_max_m")
        if lo is not None and hi is not None and not lo < hi:
            raise _err("model.priors", "range_min_m", lo,
                       f"smaller than `range_max_m` = {hi!r}")

    def engine_for(self, n_records: int) -> str:
        """Return the GP representation for ``n_records`` records ("exact" or "nngp")."""
        if self.gp == "auto":
            return "exact" if n_records <= AUTO_EXACT_MAX_RECORDS else "nngp"
        return self.gp

    @property
    def gamma_value(self) -> float | str:
        """γ as a float (``inf`` for the paper's restricted model) or ``"auto"``."""
        if self.gamma == "auto":
            return "auto"
        return math.inf if self.gamma == "inf" else float(self.gamma)


@dataclass(frozen=True, kw_only=True)
class SamplingConfig:
    """Posterior sampling settings.

    ``sampler`` {"grid", "nutpie"}, default "grid": independent draws from the conjugate grid
    posterior (:mod:`synthgeo.inference.grid`, ``docs/inference.md``; seconds at N = 150 and
    the only route for ``gp = "nngp"``), or NUTS (nutpie) over the collapsed posterior;
    ``backend`` {"numba", "jax"} (NUTS only), ``chains`` (>= 2 unless
    ``on_convergence_failure = "warn"``: R-hat compares chains; the grid arranges its
    independent draws as chains), ``draws`` (per chain) and ``tune`` (NUTS only), ``seed``
    (int; default None: a fresh random seed per run. The seed is a key (with it the noise
    draws can be regenerated and stripped): it is written to ``confidential/seed.txt`` only,
    release.json keeps its SHA-256; give one only where reproducibility is asked for, as the
    bundled example does), ``on_convergence_failure`` {"stop", "warn"}, ``target_accept``
    (NUTS only).
    """

    sampler: str = "grid"
    backend: str = "numba"
    chains: int = 2
    draws: int = 1000
    tune: int = 1000
    seed: int | None = None
    target_accept: float = 0.9
    on_convergence_failure: Literal["stop", "warn"] = "stop"

    def __post_init__(self) -> None:
        """Refuse impossible values with a :class:`SpecError` naming the key."""
        if self.sampler not in ("nutpie", "grid"):
            raise _err("sampling", "sampler", self.sampler, '"nutpie" or "grid"')
        if self.backend not in ("numba", "jax"):
            raise _err("sampling", "backend", self.backend, '"numba" or "jax"')
        for key, lo in (("chains", 1), ("draws", 10), ("tune", 10)):
            v = getattr(self, key)
            if not (_is_int(v) and v >= lo):
                raise _err("sampling", key, v, f"an integer >= {lo}")
        if self.seed is not None and not (_is_int(self.seed) and self.seed >= 0):
            raise _err("sampling", "seed", self.seed,
                       "a non-negative integer (or left out: a fresh random seed)")
        if not (_is_number(self.target_accept) and 0.5 <= self.target_accept < 1):
            raise _err("sampling", "target_accept", self.target_accept, "a number in [0.5, 1)")
        if self.on_convergence_failure not in ("stop", "warn"):
            raise _err(
                "sampling", "on_convergence_failure", self.on_convergence_failure,
                '"stop" or "warn"',
            )
        if self.chains < 2 and self.on_convergence_failure == "stop":
            raise _err("sampling", "chains", self.chains,
                       ">= 2 when `on_convergence_failure` = \"stop\" (R-hat compares chains); "
                       'use more chains, or "warn" for a preview')


@dataclass(frozen=True, kw_only=True)
class SynthesisConfig:
    """``n_implicates``: L, the number of partially synthetic data sets (Reiter's m)."""

    n_implicates: int = 100

    def __post_init__(self) -> None:
        """Refuse impossible values with a :class:`SpecError` naming the key."""
        if not (_is_int(self.n_implicates) and self.n_implicates >= 2):
            raise _err("synthesis", "n_implicates", self.n_implicates, "an integer >= 2")


@dataclass(frozen=True, kw_only=True)
class RiskTarget:
    """One target of the review board on attributable risk (a ``[risk.targets]`` table).

    ``measure``: ``"rel:<p>"`` or ``"abs:<eps>"`` (one of ``[risk] p`` / ``eps``); ``attack``
    {"share", "average"}: the Rao-Blackwellised per-implicate risk or the implicate-average
    attack's hit; ``max_attributable_record``: the largest per-record attributable risk allowed
    (FAIL above it); ``record_threshold``: a record is "above" when its attributable risk
    exceeds it (it also drives ``[model] at_risk = "risk"``); ``max_share_above``: the largest
    share of records above ``record_threshold`` allowed. Attributable = release − the stronger
    baseline (docs/risk-and-utility.md).
    """

    measure: str
    attack: Literal["share", "average"] = "share"
    max_attributable_record: float | None = None
    record_threshold: float | None = None
    max_share_above: float | None = None

    def __post_init__(self) -> None:
        """Refuse impossible values with a :class:`SpecError` naming the key."""
        from synthgeo.risk.measure import Measure

        try:
            Measure.parse(self.measure)
        except ValueError as exc:
            raise _err("risk.targets", "measure", self.measure,
                       '"rel:<fraction>" or "abs:<amount>", e.g. "rel:0.1"') from exc
        if self.attack not in ("share", "average"):
            raise _err("risk.targets", "attack", self.attack, '"share" or "average"')
        for key, lo, hi in (("max_attributable_record", -1.0, 1.0),
                            ("record_threshold", -1.0, 1.0), ("max_share_above", 0.0, 1.0)):
            v = getattr(self, key)
            if v is not None and not (_is_number(v) and lo <= v <= hi):
                raise _err("risk.targets", key, v, f"a number in [{lo:g}, {hi:g}] (or left out)")
        if self.max_share_above is not None and self.record_threshold is None:
            raise _err("risk.targets", "record_threshold", None,
                       "given with `max_share_above` (the share of records above what)")
        if self.max_attributable_record is None and self.record_threshold is None:
            raise SpecError(
                f"spec `[risk.targets]` for {self.measure!r} sets no target: give "
                "`max_attributable_record`, or `record_threshold` (with `max_share_above`)"
            )


@dataclass(frozen=True, kw_only=True)
class RiskConfig:
    """Risk measures, the board's targets and the gate on them.

    ``eps``: absolute tolerances on the back-transformed scale (dollars); ``p``: relative;
    ``targets``: :class:`RiskTarget` tables (``[risk.targets]`` for one, ``[[risk.targets]]``
    for several; none: the verdict is "NOT ASSESSED", never PASS); ``on_risk_failure``
    {"stop", "warn"}: what a FAIL does (stop: nothing is written to release/).
    """

    eps: list[float] = field(default_factory=lambda: [10_000.0])
    p: list[float] = field(default_factory=lambda: [0.1])
    targets: list[RiskTarget] = field(default_factory=list)
    on_risk_failure: Literal["stop", "warn"] = "stop"

    def __post_init__(self) -> None:
        """Refuse impossible values with a :class:`SpecError` naming the key."""
        for key in ("eps", "p"):
            v = getattr(self, key)
            if not (isinstance(v, list) and v and all(_is_number(e) and e > 0 for e in v)):
                raise _err("risk", key, v, "a non-empty list of positive, finite numbers")
        if self.on_risk_failure not in ("stop", "warn"):
            raise _err("risk", "on_risk_failure", self.on_risk_failure, '"stop" or "warn"')
        raw = [self.targets] if isinstance(self.targets, dict) else self.targets
        if not isinstance(raw, list):
            raise _err("risk", "targets", self.targets,
                       "a `[risk.targets]` table or `[[risk.targets]]` tables")
        object.__setattr__(self, "targets", [_target(t) for t in raw])
        from synthgeo.risk.measure import Measure, measures_from

        scored = {m.key for m in measures_from(eps=self.eps, p=self.p)}
        for t in self.targets:
            if Measure.parse(t.measure).key not in scored:
                raise _err("risk.targets", "measure", t.measure,
                           f"one of the scored measures {sorted(scored)}; add its tolerance "
                           "to `[risk] eps` or `p`")


def _target(raw: Any) -> RiskTarget:
    """Build a :class:`RiskTarget` from a TOML table (unknown keys refused), or pass it on."""
    if isinstance(raw, RiskTarget):
        return raw
    if not isinstance(raw, dict):
        raise _err("risk", "targets", raw, "tables of target keys")
    return _build("risk.targets", RiskTarget, raw)


@dataclass(frozen=True, kw_only=True)
class UtilityConfig:
    """The analyst's model: ``formula`` (patsy, OLS) and ``alpha`` for (1 − α) intervals."""

    formula: str | None = None
    alpha: float = 0.05

    def __post_init__(self) -> None:
        """Refuse impossible values with a :class:`SpecError` naming the key."""
        if self.formula is not None and not (isinstance(self.formula, str) and "~" in self.formula):
            raise _err("utility", "formula", self.formula,
                       'a patsy formula such as "log_price ~ sqft_living" (or left out)')
        if not (_is_number(self.alpha) and 0 < self.alpha < 1):
            raise _err("utility", "alpha", self.alpha, "a number in (0, 1)")


@dataclass(frozen=True, kw_only=True)
class AnonymityConfig:
    """Location diagnostics of the released locations (docs/locations.md; optional section).

    ``radius_m``: the attacker's positional uncertainty about an exact location, metres
    (spatial k counts records within it); ``k``: anonymity threshold (spatial k below it, and
    the outlier policy's (k−1)-th neighbour); ``k_max``: cap on counts (read "≥ k_max");
    ``r_max_m``: the largest generalisation tolerable, metres (default 2,000 m, the spec's
    worked example); ``merge_ratio``, ``generalise_ratio``: label thresholds on ι = d/r_max;
    ``max_suppressed_share``, ``max_unit_suppressed_share``: caps; ``max_passes``: passes to a
    fixed point; ``group_by``: quasi-identifier columns for spatial k; ``unit``: administrative
    unit column (per-unit cap, hole check); ``time`` and ``r_max_time`` (e.g. "6h"): temporal
    outliers; ``group_diameter_ratio``: widest merge group allowed, a multiple of r_max
    (default 1);
    ``treatment`` {"none", "apply"}: release exact locations (the location verdict fails when
    a record labelled merge/generalise/suppress is released exactly), or publish the policy's
    disposals (merged records at the group centroid, generalised at the cell centre, suppressed
    records withheld); ``on_location_failure`` {"stop", "warn"}: what a FAIL verdict does
    (docs/locations.md).
    """

    radius_m: float = 100.0
    k: int = 5
    k_max: int = 100
    r_max_m: float = 2000.0
    merge_ratio: float = 2.0
    generalise_ratio: float = 4.0
    max_suppressed_share: float = 0.01
    max_unit_suppressed_share: float = 0.10
    max_passes: int = 5
    group_by: list[str] = field(default_factory=list)
    unit: str | None = None
    time: str | None = None
    r_max_time: str | None = None
    group_diameter_ratio: float = 1.0
    treatment: Literal["none", "apply"] = "none"
    on_location_failure: Literal["stop", "warn"] = "stop"

    def __post_init__(self) -> None:
        """Refuse impossible values with a :class:`SpecError` naming the key."""
        from synthgeo.locations.policy import check_policy

        if self.treatment not in ("none", "apply"):
            raise _err("anonymity", "treatment", self.treatment, 'one of "none", "apply"')
        if self.on_location_failure not in ("stop", "warn"):
            raise _err("anonymity", "on_location_failure", self.on_location_failure,
                       'one of "stop", "warn"')

        if not (_is_number(self.radius_m) and self.radius_m > 0):
            raise _err("anonymity", "radius_m", self.radius_m, "a positive distance in metres")
        check_policy(prefix="spec `[anonymity] ", k=self.k, r_max_m=self.r_max_m,
                     merge_ratio=self.merge_ratio, generalise_ratio=self.generalise_ratio,
                     max_suppressed_share=self.max_suppressed_share,
                     max_unit_suppressed_share=self.max_unit_suppressed_share,
                     max_passes=self.max_passes, r_max_time=self.r_max_time,
                     group_diameter_ratio=self.group_diameter_ratio)
        if not (_is_int(self.k_max) and self.k_max >= self.k):
            raise _err("anonymity", "k_max", self.k_max,
                       f"an integer >= `k` = {self.k} (counts are exact below the cap)")
        if not (isinstance(self.group_by, list) and all(isinstance(c, str) and c
                                                        for c in self.group_by)):
            raise _err("anonymity", "group_by", self.group_by, "a list of column names")
        for key in ("unit", "time", "r_max_time"):
            v = getattr(self, key)
            if v is not None and not (isinstance(v, str) and v):
                raise _err("anonymity", key, v, "a non-empty string (or left out)")
        if (self.time is None) != (self.r_max_time is None):
            missing = "r_max_time" if self.r_max_time is None else "time"
            raise _err("anonymity", missing, None,
                       "given together with `time` / `r_max_time` (temporal outliers need both)")

    def policy(self):
        """Return the :class:`synthgeo.locations.OutlierPolicy` these keys describe."""
        from synthgeo.locations.policy import OutlierPolicy

        return OutlierPolicy(
            k=self.k, r_max_m=self.r_max_m, merge_ratio=self.merge_ratio,
            generalise_ratio=self.generalise_ratio,
            max_suppressed_share=self.max_suppressed_share,
            max_unit_suppressed_share=self.max_unit_suppressed_share,
            r_max_time=self.r_max_time, max_passes=self.max_passes,
            group_diameter_ratio=self.group_diameter_ratio,
        )


@dataclass(frozen=True, kw_only=True)
class ComputeConfig:
    """Where the parallel work runs (optional section; docs/inference.md).

    ``scheduler``: address of a ``dask.distributed`` scheduler (e.g. ``"tcp://10.0.0.5:8786"``)
    that computes the grid's cell evaluations and the implicate blocks
    (:func:`synthgeo.compute.map_batches`); left out, the
    work runs in this process. The files do not depend on it (same seed, same bytes).
    """

    scheduler: str | None = None

    def __post_init__(self) -> None:
        """Refuse anything but a scheduler URL with a :class:`SpecError` naming the key."""
        from synthgeo.compute import check_scheduler_address

        try:
            check_scheduler_address(self.scheduler, where="spec `[compute] scheduler`")
        except ValueError as exc:
            raise SpecError(str(exc)) from None


@dataclass(frozen=True, kw_only=True)
class ReleaseSpec:
    """A whole release spec. ``source`` is the spec file (paths resolve against its folder)."""

    data: DataConfig
    model: ModelConfig = field(default_factory=ModelConfig)
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    synthesis: SynthesisConfig = field(default_factory=SynthesisConfig)
    risk: RiskConfig = field(default_factory=RiskConfig)
    utility: UtilityConfig = field(default_factory=UtilityConfig)
    anonymity: AnonymityConfig = field(default_factory=AnonymityConfig)
    compute: ComputeConfig = field(default_factory=ComputeConfig)
    source: Path | None = None

    def __post_init__(self) -> None:
        """Refuse combinations of sections that cannot work together."""
        families = {r.family for r in self.data.response_configs}
        if self.model.gamma == "auto" and "bernoulli" in families:
            raise SpecError(
                '`[model] gamma = "auto"` (gamma = max(0, sigma2/tau2 - 1)) needs a nugget, and '
                'a bernoulli response has none: use a number or "inf"')
        if self.model.at_risk_effect == "independent" and "gaussian" in families:
            raise SpecError(
                '`[model] at_risk_effect = "independent"` applies to bernoulli / poisson '
                'responses only; use "zero" or "kriged" with a gaussian response')
        if self.model.at_risk_effect == "kriged" and families - {"gaussian"}:
            raise SpecError(
                '`[model] at_risk_effect = "kriged"` applies to gaussian responses only; '
                'bernoulli / poisson responses use "independent" (the default for them)')
        if self.data.sequential and self.sampling.sampler != "grid":
            raise SpecError(
                'spec `[[data.responses]]` (several responses or a bernoulli / poisson one) '
                'needs `[sampling] sampler = "grid"`')
        if self.model.at_risk != "spatial" and self.data.sequential:
            raise SpecError('`[model] at_risk` other than "spatial" is not available with '
                            '`[[data.responses]]` yet; use at_risk = "spatial"')
        if self.model.gamma == "auto" and self.sampling.sampler != "grid":
            raise SpecError(
                '`[model] gamma = "auto"` (gamma = max(0, sigma2/tau2 - 1) per draw) needs '
                '`[sampling] sampler = "grid"`, where it enters every grid cell exactly'
            )
        if self.model.at_risk != "spatial" and not any(
                t.record_threshold is not None for t in self.risk.targets):
            raise SpecError(
                f'`[model] at_risk = "{self.model.at_risk}"` needs a `[risk.targets] '
                "record_threshold` (records whose attributable risk under the unrestricted fit "
                'exceeds it become at risk); add one or use at_risk = "spatial"'
            )
        if self.model.at_risk_nugget == "marginal" and self.sampling.sampler != "grid":
            raise SpecError(
                '`[model] at_risk_nugget = "marginal"` needs `[sampling] sampler = "grid"` (the '
                'NUTS model has one nugget for every record); use sampler = "grid" or '
                'at_risk_nugget = "shared"'
            )
        if self.model.gp == "nngp" and self.sampling.sampler != "grid":
            raise SpecError(
                'spec `[model] gp = "nngp"` needs `[sampling] sampler = "grid"`: NUTS over the '
                "NNGP likelihood needs thousands of gradient evaluations (~0.1 s each at 25,000 "
                "records), the grid a few hundred evaluations without gradients"
            )

    @property
    def formula(self) -> str:
        """Analyst's formula; default ``response ~ covariate + ...``."""
        if self.utility.formula:
            return self.utility.formula
        rhs = " + ".join(self.data.covariates) or "1"
        lhs = self.data.response
        if self.data.transform == "log":  # the released column is on the original scale
            lhs = f"log({lhs})"
        return f"{lhs} ~ {rhs}"

    def data_path(self) -> Path | None:
        """Return the resolved path of the points file (None for records given in memory)."""
        if self.data.path is None:
            return None
        return resolve_input(self.data.path,
                             relative_to=None if self.source is None else self.source.parent)

    def to_dict(self) -> dict[str, Any]:
        """Return the spec as run, every default filled in (JSON-serialisable)."""
        out = {
            f.name: dataclasses.asdict(getattr(self, f.name))
            for f in dataclasses.fields(self) if f.name != "source"
        }
        out["source"] = str(self.source) if self.source else None
        return out

    def replace(self, section: str, **changes: Any) -> ReleaseSpec:
        """Copy with some keys of one section changed (validated again)."""
        if section not in _SECTIONS:
            raise SpecError(f"unknown spec section {section!r}; allowed: {sorted(_SECTIONS)}")
        cls = type(getattr(self, section))
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise SpecError(f"unknown key(s) in `[{section}]`: {unknown}")
        new = dataclasses.replace(getattr(self, section), **changes)
        return dataclasses.replace(self, **{section: new})


_SECTIONS = {
    "data": DataConfig, "model": ModelConfig, "sampling": SamplingConfig,
    "synthesis": SynthesisConfig, "risk": RiskConfig, "utility": UtilityConfig,
    "anonymity": AnonymityConfig, "compute": ComputeConfig,
}


#: Keys a spec *file* must give although the Python types default them (data in memory).
_REQUIRED_IN_FILE = {"data": ("path",)}


def _build(section: str, cls: type, raw: Any) -> Any:
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


def load_spec(path: str | Path) -> ReleaseSpec:
    """Read and validate a release spec.

    Parameters
    ----------
    path : str or Path
        TOML file.

    Returns
    -------
    ReleaseSpec

    Raises
    ------
    SpecError
        If the file is missing, not UTF-8 or not TOML (a UTF-8 byte-order mark is allowed), a
        section or key is unknown, a required key is missing, or a value is impossible (each
        message names the key and the valid values).
    """
    path = Path(path)
    if path.is_dir():
        raise SpecError(f"spec file {str(path)!r} is a folder; give the TOML file itself")
    if not path.is_file():
        raise SpecError(f"spec file {str(path)!r} does not exist")
    try:  # utf-8-sig: a byte-order mark (Windows editors) is not part of the TOML
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SpecError(f"spec file {str(path)!r} is not UTF-8 text (byte "
                        f"{exc.object[exc.start]:#04x} at position {exc.start}): save it as "
                        "UTF-8, as TOML requires") from exc
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"spec file {str(path)!r} is not valid TOML: {exc}") from exc
    unknown = sorted(set(raw) - set(_SECTIONS))
    if unknown:
        raise SpecError(f"unknown spec section(s) {unknown}; allowed: {sorted(_SECTIONS)}")
    if "data" not in raw:
        raise SpecError("spec has no `[data]` section (path, response, covariates, ...)")
    parts = {name: _build(name, cls, raw.get(name, {})) for name, cls in _SECTIONS.items()}
    return ReleaseSpec(**parts, source=path.resolve())


def bundled_spec_path() -> Path:
    """Path of the example spec shipped inside the package (Sacramento two-bedroom sales)."""
    return Path(str(resources.files("synthgeo") / "data" / BUNDLED_SPEC))
