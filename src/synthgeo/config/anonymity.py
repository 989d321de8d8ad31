"""Spec sections ``[anonymity]`` and ``[compute]``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from synthgeo._errors import SpecError
from synthgeo.config._common import (
    _err,
    _is_int,
    _is_number,
)


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


