"""synthgeo: partially synthetic geocoded public-use files with differential smoothing.

Pipeline: load (:mod:`synthgeo.io.points`) → model (:mod:`synthgeo.model`) → fit
(:mod:`synthgeo.inference.nuts`) → synthesize → risk → utility → release/report.
"""

from synthgeo._errors import ConvergenceError, InputError, SpecError, SynthgeoError

__version__ = "0.1.0"

__all__ = [
    "__version__", "SynthgeoError", "InputError", "SpecError", "ConvergenceError",
]
