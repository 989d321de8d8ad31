"""Risk measures, ``"rel:0.1"`` / ``"abs:10000"``: defined in :mod:`synthgeo.config.measure`.

The spec checks them (``[risk.targets] measure``), so they live below the risk stage; this
module names them where the risk stage reads them.
"""

from synthgeo.config.measure import Measure, measure_label, measures_from

__all__ = ["Measure", "measures_from", "measure_label"]
