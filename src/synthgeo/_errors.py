"""Exception types raised by synthgeo.

Every error a user can cause derives from :class:`SynthgeoError` so that the command line can
print it as one line. They also derive from the built-in type a Python user would expect
(``ValueError`` for a bad value, ``FileNotFoundError`` for a missing file).
"""

from __future__ import annotations

__all__ = ["SynthgeoError", "InputError", "SpecError", "ConvergenceError", "RiskError",
           "LocationError"]


class SynthgeoError(Exception):
    """Base class of all errors synthgeo raises on purpose."""


class InputError(SynthgeoError, ValueError):
    """The input points file is unusable (missing column, NaN, text in numbers, no CRS, ...)."""


class SpecError(SynthgeoError, ValueError):
    """The release spec (TOML) is invalid: unknown key, impossible parameter, bad type."""


class ConvergenceError(SynthgeoError, RuntimeError):
    """MCMC diagnostics failed the thresholds and ``on_convergence_failure = "stop"``."""


class RiskError(SynthgeoError, RuntimeError):
    """Disclosure-risk targets failed and ``[risk] on_risk_failure = "stop"``."""


class LocationError(SynthgeoError, RuntimeError):
    """The location verdict is FAIL and ``on_location_failure = "stop"`` (docs/locations.md)."""
