"""The release pipeline: prepare the data, run the job, hold the result.

- :mod:`synthgeo.pipeline.data`: :func:`prepare_data` (a spec's file or a GeoDataFrame in
  memory → checked y, X, sites), the input refusals.
- :mod:`synthgeo.pipeline.run`: :func:`run_release`, the one route of every release (per
  response: fit both models, at-risk rule, synthesis; then risk, utility), the engine choice
  and the restricted model's smoothing.
- :mod:`synthgeo.pipeline.responses`: what is particular to several responses and to the
  yes/no / count families (:class:`SequentialResult`).
- :mod:`synthgeo.pipeline.result`: :class:`ReleaseResult`. The pipeline writes nothing:
  :mod:`synthgeo.release` does, and :class:`synthgeo.api.Release` is the front door's view.
"""

from synthgeo.pipeline.data import (
    DISCLOSURE_CORRELATION,
    FORMULA_FUNCTIONS,
    PreparedData,
    check_formula_names,
    prepare_data,
)
from synthgeo.pipeline.responses import ResponseResult, SequentialResult
from synthgeo.pipeline.result import MODELS, ReleaseResult, ReleaseRisk, risk_per_record
from synthgeo.pipeline.run import (
    Fitter,
    as_spec,
    make_fitter,
    restricted_smoothing,
    run_release,
)

__all__ = ["PreparedData", "ReleaseResult", "SequentialResult", "ResponseResult",
           "ReleaseRisk", "prepare_data",
           "run_release", "restricted_smoothing", "risk_per_record", "check_formula_names",
           "as_spec", "make_fitter", "Fitter", "MODELS", "DISCLOSURE_CORRELATION",
           "FORMULA_FUNCTIONS"]
