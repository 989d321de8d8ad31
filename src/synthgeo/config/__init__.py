"""The release spec: a reviewed TOML file under ``models/`` parsed into frozen dataclasses.

Unknown keys are errors, not ignored (docs/release.md). Paths resolve relative to the spec
file; ``synthgeo:NAME`` names a data file shipped inside the package. Every default is written
into the release record through :meth:`ReleaseSpec.to_dict`.

One module per group of sections, in the order of a spec file: :mod:`.data` (``[data]``,
``[[data.responses]]``), :mod:`.model` (``[model]``, ``[sampling]``, ``[synthesis]``),
:mod:`.risk` (``[risk]``, ``[risk.targets]``, ``[utility]``), :mod:`.anonymity`
(``[anonymity]``, ``[compute]``) and :mod:`.spec` (the whole spec and :func:`load_spec`);
:mod:`._common` holds the constants, the table of allowed values (``SPEC_CONSTRAINTS``) and
the shared checks.
"""

from synthgeo.config._common import (
    _POSITIVE_PRIORS,
    _PRIOR_KEYS,
    AT_RISK_RULES,
    AUTO_EXACT_MAX_RECORDS,
    BUNDLED_SPEC,
    PMSE_COORDINATES,
    PMSE_TERMS,
    RESPONSE_FAMILIES,
    SPEC_CONSTRAINTS,
)
from synthgeo.config.anonymity import AnonymityConfig, ComputeConfig
from synthgeo.config.data import DataConfig, ResponseConfig
from synthgeo.config.model import ModelConfig, SamplingConfig, SynthesisConfig
from synthgeo.config.risk import RiskConfig, RiskTarget, UtilityConfig
from synthgeo.config.spec import (
    _SECTIONS,
    ReleaseSpec,
    bundled_spec_path,
    load_spec,
    spec_from_dict,
)

__all__ = [
    "ResponseConfig", "DataConfig", "ModelConfig", "SamplingConfig", "SynthesisConfig",
    "RiskConfig", "RiskTarget", "UtilityConfig", "AnonymityConfig", "ComputeConfig",
    "ReleaseSpec", "load_spec", "spec_from_dict", "bundled_spec_path",
    "AUTO_EXACT_MAX_RECORDS", "AT_RISK_RULES",
    "BUNDLED_SPEC", "RESPONSE_FAMILIES", "SPEC_CONSTRAINTS", "PMSE_TERMS", "PMSE_COORDINATES",
]
# private names other modules and tests use
_ = (_POSITIVE_PRIORS, _PRIOR_KEYS, _SECTIONS)
