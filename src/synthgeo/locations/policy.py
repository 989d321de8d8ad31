"""The outlier policy's parameters (docs/locations.md, "The outlier policy"), validated once."""

from __future__ import annotations

import datetime
import math
import re
from dataclasses import dataclass
from typing import Any

from synthgeo._errors import SpecError

__all__ = ["OutlierPolicy", "parse_duration_s", "check_policy"]

_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]+)\s*$")
_UNITS_S = {
    "s": 1, "sec": 1, "second": 1, "seconds": 1,
    "min": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
}


def parse_duration_s(value: Any, name: str = "r_max_time") -> float:
    """Seconds in a duration such as ``"6h"``, ``"2 days"``, ``"90min"`` or a timedelta.

    Parameters
    ----------
    value : str or datetime.timedelta or pandas.Timedelta
        A positive number with a unit among s, min, h, d (or their long names). A bare number
        is refused: its unit would be a guess.
    name : str
        Parameter name for messages.

    Returns
    -------
    float
        Seconds, > 0.

    Raises
    ------
    SpecError
        If the value has no unit, an unknown unit, or is not positive.
    """
    if isinstance(value, datetime.timedelta):  # pandas.Timedelta is a subclass
        seconds = value.total_seconds()
    elif isinstance(value, str) and (m := _DURATION.match(value)) and \
            m.group(2).lower() in _UNITS_S:
        seconds = float(m.group(1)) * _UNITS_S[m.group(2).lower()]
    else:
        raise SpecError(f"`{name}` must be a duration with a unit, e.g. \"6h\", \"2d\", "
                        f"\"90min\", \"3600s\" (units: s, min, h, d), got {value!r}")
    if not (math.isfinite(seconds) and seconds > 0):
        raise SpecError(f"`{name}` must be a positive duration, got {value!r}")
    return float(seconds)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def check_policy(*, prefix: str = "`", **values: Any) -> None:
    """Refuse impossible policy values; messages name ``{prefix}{key}```.

    Keys (any subset): ``k``, ``r_max_m``, ``merge_ratio``, ``generalise_ratio``,
    ``max_suppressed_share``, ``max_unit_suppressed_share``, ``r_max_time``, ``max_passes``,
    ``group_diameter_ratio``, ``disposal_bound_ratio``.

    Raises
    ------
    SpecError
        Naming the key, the value and what is allowed.
    """
    def bad(key: str, expect: str) -> SpecError:
        return SpecError(f"{prefix}{key}` must be {expect}, got {values[key]!r}")

    if "k" in values:
        k = values["k"]
        if isinstance(k, bool) or not isinstance(k, int) or k < 2:
            raise bad("k", "an integer >= 2 (the anonymity threshold)")
    if "r_max_m" in values and not (_number(values["r_max_m"]) and values["r_max_m"] > 0):
        raise bad("r_max_m", "a positive distance in metres (the largest tolerable "
                             "generalisation)")
    for key in ("merge_ratio", "generalise_ratio"):
        if key in values and not (_number(values[key]) and values[key] >= 1):
            raise bad(key, "a number >= 1 (a multiple of r_max)")
    if "merge_ratio" in values and "generalise_ratio" in values and \
            not values["merge_ratio"] <= values["generalise_ratio"]:
        raise bad("merge_ratio", f"<= `generalise_ratio` = {values['generalise_ratio']!r}")
    for key in ("max_suppressed_share", "max_unit_suppressed_share"):
        if key in values and not (_number(values[key]) and 0 <= values[key] <= 1):
            raise bad(key, "a share between 0 and 1 (e.g. 0.01 for 1%)")
    if values.get("r_max_time") is not None:
        try:
            parse_duration_s(values["r_max_time"], "r_max_time")
        except SpecError:
            raise bad("r_max_time", 'a duration with a unit, e.g. "6h", "2d", "90min" '
                                    "(units: s, min, h, d)") from None
    if "group_diameter_ratio" in values and not (_number(values["group_diameter_ratio"])
                                                 and values["group_diameter_ratio"] > 0):
        raise bad("group_diameter_ratio", "a positive number (the widest merge group allowed, "
                                          "a multiple of r_max; default 1)")
    if "disposal_bound_ratio" in values and not (_number(values["disposal_bound_ratio"])
                                                 and values["disposal_bound_ratio"] > 0):
        raise bad("disposal_bound_ratio", "a positive number (the largest distance from a "
                                          "record to its published point, a multiple of "
                                          "r_max; default 1)")
    if "max_passes" in values:
        mp = values["max_passes"]
        if isinstance(mp, bool) or not isinstance(mp, int) or not 1 <= mp <= 100:
            raise bad("max_passes", "an integer between 1 and 100 (spec: at most 5)")


@dataclass(frozen=True, kw_only=True)
class OutlierPolicy:
    """Parameters of the outlier policy.

    Attributes
    ----------
    r_max_m : float
        r_max, the largest generalisation the release can tolerate, metres.
    k : int, default=5
        Anonymity threshold; d_i is the distance to the (k−1)-th nearest other subject.
    merge_ratio : float, default=2
        1 < ι ≤ merge_ratio: merge (microaggregation to a group centroid).
    generalise_ratio : float, default=4
        merge_ratio < ι ≤ generalise_ratio: generalise (smallest quadtree cell with ≥ k);
        ι > generalise_ratio: suppress.
    max_suppressed_share : float, default=0.01
        Global cap on the share of records suppressed.
    max_unit_suppressed_share : float, default=0.10
        Cap on the share suppressed within each administrative unit.
    r_max_time : str or datetime.timedelta, optional
        Tolerance on the time axis (e.g. ``"6h"``, ``"2d"``); needed with a time column.
    max_passes : int, default=5
        Classification passes allowed to reach a fixed point (the confirming pass included).
    group_diameter_ratio : float, default=1
        Widest merge group allowed, as a multiple of r_max (of r_max_time on the time axis):
        the largest distance between two members' true locations (docs/locations.md). A merge
        that would make a group (chained merges included) wider fails, and its record is
        generalised instead. With the default 1 (a group wider than r_max is k-anonymous in
        name only) no record labelled merge can be merged in the first pass: its (k−1)-th
        nearest other subject lies beyond r_max, so every group of k holding it is wider.
    disposal_bound_ratio : float, default=1
        The bound on every disposal, as a multiple of r_max (of r_max_time on the time axis):
        the largest distance from a record's true location to the point published for it that
        a disposal may allow — a cell's half-diagonal, a merge group's largest member-to-centroid
        distance (docs/locations.md, "The bound on every disposal"). A record that cannot be
        placed within it is suppressed. r_max is the largest generalisation the release can
        tolerate, so the spec and the command line fix this at 1; a larger value (the API only)
        studies the disposals beyond r_max, and the location verdict then fails on any disposal
        wider than r_max.

    Raises
    ------
    SpecError
        On an impossible value (named in the message).
    """

    r_max_m: float
    k: int = 5
    merge_ratio: float = 2.0
    generalise_ratio: float = 4.0
    max_suppressed_share: float = 0.01
    max_unit_suppressed_share: float = 0.10
    r_max_time: str | datetime.timedelta | None = None
    max_passes: int = 5
    group_diameter_ratio: float = 1.0
    disposal_bound_ratio: float = 1.0

    def __post_init__(self) -> None:
        """Validate every value (SpecError names the key)."""
        check_policy(k=self.k, r_max_m=self.r_max_m, merge_ratio=self.merge_ratio,
                     generalise_ratio=self.generalise_ratio,
                     max_suppressed_share=self.max_suppressed_share,
                     max_unit_suppressed_share=self.max_unit_suppressed_share,
                     r_max_time=self.r_max_time, max_passes=self.max_passes,
                     group_diameter_ratio=self.group_diameter_ratio,
                     disposal_bound_ratio=self.disposal_bound_ratio)

    @property
    def group_diameter_bound_m(self) -> float:
        """Widest merge group allowed in space, metres (group_diameter_ratio · r_max_m)."""
        return float(self.group_diameter_ratio * self.r_max_m)

    @property
    def disposal_bound_m(self) -> float:
        """Largest distance from a record to its published point in space, metres.

        ``disposal_bound_ratio`` · r_max_m (docs/locations.md, "The bound on every disposal").
        """
        return float(self.disposal_bound_ratio * self.r_max_m)

    @property
    def r_max_time_s(self) -> float | None:
        """r_max_time in seconds (None when not set)."""
        return None if self.r_max_time is None else parse_duration_s(self.r_max_time)

    def to_dict(self) -> dict[str, Any]:
        """Values as JSON-ready numbers and strings."""
        return {"k": self.k, "r_max_m": float(self.r_max_m), "merge_ratio": self.merge_ratio,
                "generalise_ratio": self.generalise_ratio,
                "max_suppressed_share": self.max_suppressed_share,
                "max_unit_suppressed_share": self.max_unit_suppressed_share,
                "r_max_time": None if self.r_max_time is None else str(self.r_max_time),
                "r_max_time_s": self.r_max_time_s, "max_passes": self.max_passes,
                "group_diameter_ratio": self.group_diameter_ratio,
                "disposal_bound_ratio": self.disposal_bound_ratio}
