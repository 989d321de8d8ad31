"""Location diagnostics: spatial k-anonymity and the outlier policy (docs/locations.md).

- :func:`measure_spatial_k` → :class:`SpatialKResult`: per-record k within a radius (itself
  included), within quasi-identifier groups, after subject deduplication; summary, distribution,
  histogram data, worst offenders.
- :func:`apply_outlier_policy` with an :class:`OutlierPolicy` → :class:`OutlierResult`: isolation
  ratios, labels, disposals to a fixed point, caps, hole check, group extent, bias statement;
  temporal outliers on their own tolerance.
- :func:`location_diagnostics` → :class:`LocationDiagnostics`: both, for ``synthgeo run``;
  :func:`report_tables` for the report.
- :mod:`synthgeo.locations.neighbours`: the shared KD-tree machinery (also used by the at-risk
  rule).
"""

from synthgeo.locations.diagnostics import LocationDiagnostics, location_diagnostics, report_tables
from synthgeo.locations.nearest import kth_neighbour_distance, nearest_other_subjects
from synthgeo.locations.neighbours import other_subject_record_counts, radius_counts
from synthgeo.locations.outliers import OutlierResult, apply_outlier_policy
from synthgeo.locations.policy import OutlierPolicy, parse_duration_s
from synthgeo.locations.spatial_k import SpatialKResult, measure_spatial_k

__all__ = [
    "measure_spatial_k", "SpatialKResult",
    "OutlierPolicy", "apply_outlier_policy", "OutlierResult", "parse_duration_s",
    "location_diagnostics", "LocationDiagnostics", "report_tables",
    "radius_counts", "other_subject_record_counts", "nearest_other_subjects",
    "kth_neighbour_distance",
]
