"""Utility tests for masked point releases: does the analysis still give the right answer.

A utility test answers, for each replicate mask, whether the analysis the release must support
reaches the same conclusion as on the true locations. The default, :class:`ExcessNearSource`, is
the spec's excess-cases-near-a-source test. Any object with ``passes`` and ``to_dict`` (see
:class:`UtilityTest`) can replace it, or wrap a plain function with :class:`FunctionUtility`.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import geopandas
import numpy as np

from synthgeo._errors import SpecError
from synthgeo.masking._validate import check_weights, layer_xy

__all__ = ["UtilityTest", "ExcessNearSource", "FunctionUtility"]


@runtime_checkable
class UtilityTest(Protocol):
    """What :func:`~synthgeo.masking.choose_k` needs of a utility test."""

    def passes(self, xy_m: np.ndarray) -> np.ndarray:
        """Whether the analysis gives the right answer: bool of shape (n_masks,).

        `xy_m` has shape (n_masks, n_cases, 2), in metres; the true locations are passed as one
        mask, and the test must pass on them.
        """
        ...

    def to_dict(self) -> dict[str, Any]:
        """Name and parameters for the compliance record."""
        ...


def _as_masks(xy_m: np.ndarray) -> np.ndarray:
    xy_m = np.asarray(xy_m, dtype=float)
    if xy_m.ndim == 2:
        xy_m = xy_m[None]
    if xy_m.ndim != 3 or xy_m.shape[-1] != 2:
        raise ValueError(f"expected points of shape (n_masks, n_cases, 2), got {xy_m.shape}")
    return xy_m


@dataclass(frozen=True, kw_only=True)
class ExcessNearSource:
    """Excess of cases within a radius of a suspected source.

    Parameters
    ----------
    source_xy_m : tuple of float
        Source location (x, y) in metres, in the CRS of the cases.
    radius_m : float
        Radius R in metres around the source (distance <= R counts).
    household_share : float
        Share of households (population weight) within R of the source, in [0, 1]; see
        :meth:`from_households`.
    min_ratio : float, default=2.0
        The observed count must be at least this multiple of the expected count.
    min_count : int, default=3
        ... and at least this many cases.

    Notes
    -----
    With n cases, expected E = n · s, s the household share within R (so the expectation
    follows the population, not a constant density), observed O = #{cases within R}. The test
    passes when O >= min_ratio · E and O >= min_count (docs/locations.md). This is
    the simple observed/expected screen for raised incidence near a prespecified point whose
    model-based version is Diggle (1990), on the same Chorley-Ribble data.

    References
    ----------
    Diggle PJ (1990). A point process modelling approach to raised incidence of a rare
    phenomenon in the vicinity of a prespecified point. Journal of the Royal Statistical
    Society A 153(3), 349-362. doi:10.2307/2982711
    """

    source_xy_m: tuple[float, float]
    radius_m: float
    household_share: float
    min_ratio: float = 2.0
    min_count: int = 3
    name: str = field(default="excess cases within radius of a source", init=False)

    def __post_init__(self) -> None:  # noqa: D105
        try:
            src = tuple(float(v) for v in self.source_xy_m)
        except (TypeError, ValueError) as exc:
            raise SpecError(f"`source_xy_m` must be two numbers (x, y) in metres, got "
                            f"{self.source_xy_m!r}") from exc
        if len(src) != 2 or not np.isfinite(src).all():
            raise SpecError(f"`source_xy_m` must be two finite numbers (x, y) in metres, got "
                            f"{self.source_xy_m!r}")
        object.__setattr__(self, "source_xy_m", src)
        for name, lo in (("radius_m", 0.0), ("min_ratio", 0.0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not v > lo \
                    or not np.isfinite(v):
                raise SpecError(f"`{name}` must be a positive number, got {v!r}")
        s = self.household_share
        if isinstance(s, bool) or not isinstance(s, numbers.Real) or not 0 <= s <= 1:
            raise SpecError(f"`household_share` must be a share in [0, 1], got {s!r}")
        c = self.min_count
        if isinstance(c, bool) or not isinstance(c, numbers.Integral) or c < 1:
            raise SpecError(f"`min_count` must be a positive integer, got {c!r}")

    @classmethod
    def from_households(
        cls,
        households: geopandas.GeoDataFrame | geopandas.GeoSeries,
        *,
        source_xy_m: tuple[float, float],
        radius_m: float,
        weights: str | np.ndarray | None = None,
        min_ratio: float = 2.0,
        min_count: int = 3,
    ) -> ExcessNearSource:
        """Build the test with the expected count taken from a household layer.

        Parameters
        ----------
        households : geopandas.GeoDataFrame or geopandas.GeoSeries
            Household points (n_points) in a projected CRS in metres, the cases' CRS.
        source_xy_m : tuple of float
            Source (x, y) in metres in that CRS.
        radius_m : float
            Radius R in metres.
        weights : str or ndarray of shape (n_points,), optional
            Households per point (column name or array); default one per point.
        min_ratio : float, default=2.0
            See the class.
        min_count : int, default=3
            See the class.

        Returns
        -------
        ExcessNearSource

        Raises
        ------
        InputError
            Bad layer (CRS, NaN) or weights.
        SpecError
            Bad source, radius or thresholds.
        """
        hxy, _ = layer_xy(households, "households")
        w = check_weights(weights, households, len(hxy))
        probe = cls(source_xy_m=source_xy_m, radius_m=radius_m, household_share=0.0,
                    min_ratio=min_ratio, min_count=min_count)  # validates the parameters
        near = np.hypot(*(hxy - np.asarray(probe.source_xy_m)).T) <= probe.radius_m
        share = float(near.mean()) if w is None else float(w[near].sum() / w.sum())
        return cls(source_xy_m=probe.source_xy_m, radius_m=radius_m, household_share=share,
                   min_ratio=min_ratio, min_count=min_count)

    def expected(self, n_cases: int) -> float:
        """Return the expected cases within R, ``n_cases · household_share``."""
        return n_cases * self.household_share

    def observed(self, xy_m: np.ndarray) -> np.ndarray:
        """Cases within R of the source (inclusive), per mask: int array of shape (n_masks,).

        Parameters
        ----------
        xy_m : ndarray of shape (n_masks, n_cases, 2) or (n_cases, 2)
            Case locations in metres.

        Returns
        -------
        ndarray of shape (n_masks,)
        """
        xy_m = _as_masks(xy_m)
        d = np.hypot(xy_m[..., 0] - self.source_xy_m[0], xy_m[..., 1] - self.source_xy_m[1])
        return (d <= self.radius_m).sum(axis=1)

    def passes(self, xy_m: np.ndarray) -> np.ndarray:
        """Whether the excess is detected: O >= min_ratio · E and O >= min_count, per mask.

        Parameters
        ----------
        xy_m : ndarray of shape (n_masks, n_cases, 2) or (n_cases, 2)
            Case locations in metres.

        Returns
        -------
        ndarray of bool, shape (n_masks,)
        """
        xy_m = _as_masks(xy_m)
        obs = self.observed(xy_m)
        return (obs >= self.min_ratio * self.expected(xy_m.shape[1])) & (obs >= self.min_count)

    def to_dict(self) -> dict[str, Any]:
        """Name and parameters for the compliance record."""
        return {"name": self.name, "source_xy_m": list(self.source_xy_m),
                "radius_m": float(self.radius_m), "household_share": self.household_share,
                "min_ratio": float(self.min_ratio), "min_count": int(self.min_count),
                "rule": "observed >= min_ratio * expected and observed >= min_count; "
                        "expected = n_cases * household_share"}


@dataclass(frozen=True, kw_only=True)
class FunctionUtility:
    """A user's utility test from a plain function.

    Parameters
    ----------
    func : callable
        ``func(xy_m) -> bool array of shape (n_masks,)`` with `xy_m` of shape
        (n_masks, n_cases, 2) in metres: True where the analysis gives the right answer.
    name : str
        Name for the compliance record.
    params : dict, default={}
        Parameters for the compliance record (JSON-serialisable).
    """

    func: Callable[[np.ndarray], Any]
    name: str
    params: dict[str, Any] = field(default_factory=dict)

    def passes(self, xy_m: np.ndarray) -> np.ndarray:
        """Call `func` and check its answer: bool of shape (n_masks,)."""
        xy_m = _as_masks(xy_m)
        out = np.asarray(self.func(xy_m))
        if out.shape != (xy_m.shape[0],) or out.dtype != bool:
            raise ValueError(f"utility function {self.name!r} must return a bool array of shape "
                             f"({xy_m.shape[0]},), got {out.dtype} of shape {out.shape}")
        return out

    def to_dict(self) -> dict[str, Any]:
        """Name and parameters for the compliance record."""
        return {"name": self.name, **self.params}
