"""synthgeo: partially synthetic geocoded public-use files with differential smoothing.

The front door (Quick, Holan & Wikle 2018, doi:10.1111/rssa.12360; docs/model.md)::

    import synthgeo as sg
    pts = sg.read_points("sales.csv", x="lon", y="lat", crs="EPSG:4326")  # metres
    rel = sg.synthesize(pts, response="log_price", covariates=["sqft"], implicates=100,
                        seed=1, model=sg.ModelConfig(gamma="inf"))
    rel.implicates; rel.posterior["restricted"]; rel.risk.to_dataframe(); rel.reiter
    rel.write("out/")                     # exactly what `synthgeo run` writes
    sg.run("models/sacramento_2bed.toml")  # the spec route, same result type

Location diagnostics and masking: :func:`spatial_k`, :func:`outlier_policy`, :func:`mask`,
:func:`choose_k`; the methodologist's comparison: :func:`compare`. The spec's sections are the
config types below. Names are imported on first use (PEP 562), so ``import synthgeo`` stays
cheap; the stages live in :mod:`synthgeo.io` → :mod:`synthgeo.locations` →
:mod:`synthgeo.model` → :mod:`synthgeo.inference` → :mod:`synthgeo.synthesis` →
:mod:`synthgeo.risk` → :mod:`synthgeo.utility` → :mod:`synthgeo.pipeline` →
:mod:`synthgeo.release`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from synthgeo._errors import ConvergenceError, InputError, RiskError, SpecError, SynthgeoError

__version__ = "0.1.0"

#: Public name → (module, attribute), imported on first access.
_LAZY: dict[str, tuple[str, str]] = {
    # jobs
    "read_points": ("synthgeo.io.read", "read_points"),
    "synthesize": ("synthgeo.api", "synthesize"),
    "run": ("synthgeo.api", "run"),
    "draw": ("synthgeo.api", "draw"),
    "compare": ("synthgeo.api", "compare"),
    "show_versions": ("synthgeo.api", "show_versions"),
    "spatial_k": ("synthgeo.locations.spatial_k", "measure_spatial_k"),
    "outlier_policy": ("synthgeo.locations.outliers", "apply_outlier_policy"),
    "mask": ("synthgeo.masking.donut", "mask_to_k"),
    "choose_k": ("synthgeo.masking.sweep", "choose_k"),
    "verify": ("synthgeo.verification.api", "verify"),
    # the spec's sections and the result
    "load_spec": ("synthgeo.config", "load_spec"),
    "ReleaseSpec": ("synthgeo.config", "ReleaseSpec"),
    "DataConfig": ("synthgeo.config", "DataConfig"),
    "ModelConfig": ("synthgeo.config", "ModelConfig"),
    "SamplingConfig": ("synthgeo.config", "SamplingConfig"),
    "SynthesisConfig": ("synthgeo.config", "SynthesisConfig"),
    "RiskConfig": ("synthgeo.config", "RiskConfig"),
    "UtilityConfig": ("synthgeo.config", "UtilityConfig"),
    "AnonymityConfig": ("synthgeo.config", "AnonymityConfig"),
    "OutlierPolicy": ("synthgeo.locations.policy", "OutlierPolicy"),
    "Release": ("synthgeo.api", "Release"),
}

__all__ = [
    "__version__", "SynthgeoError", "InputError", "SpecError", "ConvergenceError", "RiskError",
    "read_points", "synthesize", "run", "draw", "compare", "show_versions", "spatial_k",
    "outlier_policy", "mask", "choose_k", "verify", "load_spec", "ReleaseSpec", "DataConfig",
    "ModelConfig", "SamplingConfig", "SynthesisConfig", "RiskConfig", "UtilityConfig",
    "AnonymityConfig", "OutlierPolicy", "Release",
]


def __getattr__(name: str) -> Any:
    """Import a public name on first use (PEP 562) and cache it in the module."""
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'synthgeo' has no attribute {name!r}") from None
    value = getattr(import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """Return the module's names and the lazily imported public ones (tab completion)."""
    return sorted(set(globals()) | set(_LAZY))


if TYPE_CHECKING:  # for type checkers and IDEs: the names __getattr__ provides
    from synthgeo.api import Release, compare, draw, run, show_versions, synthesize
    from synthgeo.config import (
        AnonymityConfig,
        DataConfig,
        ModelConfig,
        ReleaseSpec,
        RiskConfig,
        SamplingConfig,
        SynthesisConfig,
        UtilityConfig,
        load_spec,
    )
    from synthgeo.io.read import read_points
    from synthgeo.locations.outliers import apply_outlier_policy as outlier_policy
    from synthgeo.locations.policy import OutlierPolicy
    from synthgeo.locations.spatial_k import measure_spatial_k as spatial_k
    from synthgeo.masking.donut import mask_to_k as mask
    from synthgeo.masking.sweep import choose_k
    from synthgeo.verification.api import verify
