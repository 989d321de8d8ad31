r"""The response's scale: what is modelled, what is released, and how closeness is scored.

One home for the map between the three scales of the response (docs/model.md, "Data";
docs/risk-and-utility.md, "Within-ε disclosure risk"):

- the **model scale**, where the GP is Gaussian (log-dollars for a price);
- the **released scale**, what the public file holds under the response's column name;
- the **person's scale** g(·), where "within 10 %" and "within $10,000" are judged (dollars).

A spec names the scale in one of two exclusive ways:

``back_transform = "exp" | "identity"``
    The response column is already on the model scale (e.g. ``log_price``); it is released on
    that scale, and g = exp or the identity maps it to the person's scale.
``transform = "log"``
    The response column is on the original scale (``price`` in dollars); synthgeo models
    log(y), releases exp(y†) under the original column name, and g = exp.

Scoring never leaves the model scale, so a synthetic value above log(max float) ≈ 709.78 can
not overflow: with d = y† − y (model scale) and g = exp,

.. math::

    |e^{y^\dagger} - e^{y}| \le p\,e^{y} \iff |\operatorname{expm1}(d)| \le p, \qquad
    |e^{y^\dagger} - e^{y}| \le \varepsilon \iff y + \log|\operatorname{expm1}(d)|
    \le \log\varepsilon,

with log|expm1(d)| = max(d, 0) + log(−expm1(−|d|)) evaluated without overflow. The same sets
as intervals of y† (for the exact normal probabilities of :mod:`synthgeo.risk.rao_blackwell`)
are given by :func:`tolerance_bounds`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "BACK_TRANSFORMS", "TRANSFORMS", "FORMULA_NAMESPACE", "ResponseScale",
    "within_tolerance", "tolerance_bounds", "log_abs_expm1",
]

#: g, from the model scale to the person's scale, for a response column on the model scale.
BACK_TRANSFORMS = ("exp", "identity")
#: Transforms of a response column given on its original scale (modelled on the log scale).
TRANSFORMS = ("log",)
#: Functions an analyst's formula may call besides the data's columns (``log(price) ~ sqft``):
#: the evaluation environment of the utility fits (patsy evaluates formula terms as Python).
FORMULA_NAMESPACE = {"log": np.log, "exp": np.exp, "sqrt": np.sqrt, "np": np}
_KINDS = ("rel", "abs")


def _check_g(g: str) -> None:
    if g not in BACK_TRANSFORMS:
        raise ValueError(f"`g` must be one of {BACK_TRANSFORMS!r}, got {g!r}.")


def _check_tol(kind: str, tol: float) -> float:
    if kind not in _KINDS:
        raise ValueError(f"`kind` must be one of {_KINDS!r} (relative or absolute), got {kind!r}.")
    tol = float(tol)
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"tolerance `tol` must be a positive finite number, got {tol!r}.")
    return tol


def log_abs_expm1(d: np.ndarray) -> np.ndarray:
    """Return log|expm1(d)| without overflow for large d (−inf at d = 0).

    Parameters
    ----------
    d : array-like
        Differences on the log scale.

    Returns
    -------
    ndarray
        max(d, 0) + log(−expm1(−|d|)), equal to log|e^d − 1|.

    Examples
    --------
    >>> float(log_abs_expm1(1000.0))  # log(e^1000 - 1) = 1000 to double precision
    1000.0
    >>> bool(np.isclose(log_abs_expm1(-0.5), np.log(1 - np.exp(-0.5))))
    True
    """
    d = np.asarray(d, dtype=float)
    with np.errstate(divide="ignore"):
        return np.maximum(d, 0.0) + np.log(-np.expm1(-np.abs(d)))


def within_tolerance(
    synthetic: np.ndarray, truth: np.ndarray, kind: str, tol: float, g: str = "exp"
) -> np.ndarray:
    r"""Whether |g(y†) − g(y)| is within the tolerance, scored on the model scale.

    Parameters
    ----------
    synthetic : array-like
        y†, model scale (e.g. log-dollars); broadcast against ``truth``.
    truth : array-like
        y, model scale.
    kind : {"rel", "abs"}
        Relative (tolerance p, a fraction of |g(y)|) or absolute (ε, person's scale, dollars).
    tol : float
        p or ε, > 0.
    g : {"exp", "identity"}, default="exp"
        The map to the person's scale.

    Returns
    -------
    ndarray of bool
        Shape of ``synthetic`` and ``truth`` broadcast together.

    Raises
    ------
    ValueError
        For an unknown ``kind`` or ``g`` or a tolerance that is not positive.

    Notes
    -----
    For g = exp and d = y† − y: relative, :math:`|\operatorname{expm1}(d)| \le p`; absolute,
    :math:`y + \log|\operatorname{expm1}(d)| \le \log\varepsilon` (module docstring). For the
    identity: :math:`|d| \le p|y|` and :math:`|d| \le \varepsilon`. No value is exponentiated,
    so values above 709.78 (where exp overflows) are scored correctly.

    Examples
    --------
    >>> y = np.log(100_000.0)
    >>> within_tolerance(np.log([105_000.0, 120_000.0]), y, "rel", 0.1).tolist()
    [True, False]
    >>> within_tolerance(np.log([109_000.0, 111_000.0]), y, "abs", 10_000).tolist()
    [True, False]
    >>> within_tolerance(720.0, 720.05, "rel", 0.1).item()  # exp(720) overflows; this does not
    True
    """
    tol = _check_tol(kind, tol)
    _check_g(g)
    ys, y = np.asarray(synthetic, dtype=float), np.asarray(truth, dtype=float)
    d = ys - y
    if g == "identity":
        return np.abs(d) <= (tol * np.abs(y) if kind == "rel" else tol)
    if kind == "rel":
        with np.errstate(over="ignore"):
            return np.abs(np.expm1(d)) <= tol
    return y + log_abs_expm1(d) <= np.log(tol)


def tolerance_bounds(
    truth: np.ndarray, kind: str, tol: float, g: str = "exp"
) -> tuple[np.ndarray, np.ndarray]:
    r"""Return the model-scale interval [lo, hi] of y† with |g(y†) − g(y)| within tolerance.

    Parameters
    ----------
    truth : array-like
        y, model scale.
    kind : {"rel", "abs"}
    tol : float
        p (fraction) or ε (person's scale), > 0.
    g : {"exp", "identity"}, default="exp"

    Returns
    -------
    lo, hi : ndarray
        Shape of ``truth``; ``lo`` may be −inf (e.g. relative p ≥ 1, or ε ≥ e^y).

    Raises
    ------
    ValueError
        As :func:`within_tolerance`.

    Notes
    -----
    For g = exp: relative, :math:`[y + \log(1-p),\ y + \log(1+p)]`; absolute,
    :math:`[y + \log(-\operatorname{expm1}(\log\varepsilon - y)),\ \operatorname{logaddexp}(y,
    \log\varepsilon)]`, the lower end −inf when :math:`e^y \le \varepsilon`. For the identity:
    :math:`y \pm p|y|` and :math:`y \pm \varepsilon`. All evaluated without exponentiating y.

    Examples
    --------
    >>> lo, hi = tolerance_bounds(np.log(100_000.0), "abs", 10_000)
    >>> round(float(np.exp(lo))), round(float(np.exp(hi)))
    (90000, 110000)
    >>> lo, hi = tolerance_bounds(2.0, "rel", 0.5, g="identity")
    >>> float(lo), float(hi)
    (1.0, 3.0)
    """
    tol = _check_tol(kind, tol)
    _check_g(g)
    y = np.asarray(truth, dtype=float)
    if g == "identity":
        half = tol * np.abs(y) if kind == "rel" else np.full_like(y, tol)
        return y - half, y + half
    if kind == "rel":
        lo = y + (np.log1p(-tol) if tol < 1 else -np.inf)
        return lo, y + np.log1p(tol)
    log_eps = np.log(tol)
    t = log_eps - y
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = np.where(t < 0, y + np.log(-np.expm1(np.minimum(t, 0.0))), -np.inf)
    return lo, np.logaddexp(y, log_eps)


@dataclass(frozen=True, kw_only=True)
class ResponseScale:
    """How the response is modelled, released and scored (module docstring).

    Attributes
    ----------
    transform : {"log"} or None, default=None
        ``"log"``: the response column is on its original scale (dollars), modelled as log(y)
        and released as exp(y†) under the same column name.
    back_transform : {"exp", "identity"}, default="exp"
        With ``transform = None``: g, from the (model-scale) response column to the person's
        scale. With ``transform = "log"`` it must stay ``"exp"`` (g is then exp by construction;
        the spec loader refuses both keys written together).

    Raises
    ------
    ValueError
        For an unknown value, or ``transform = "log"`` with ``back_transform = "identity"``.

    Examples
    --------
    >>> s = ResponseScale(transform="log")
    >>> s.g_name, float(s.to_model(np.e)), float(s.to_released(0.0))
    ('exp', 1.0, 1.0)
    >>> ResponseScale(back_transform="identity").g_name
    'identity'
    """

    transform: str | None = None
    back_transform: str = "exp"

    def __post_init__(self) -> None:
        """Refuse unknown or contradictory scales."""
        if self.transform is not None and self.transform not in TRANSFORMS:
            raise ValueError(f"`transform` must be one of {TRANSFORMS!r} or None, "
                             f"got {self.transform!r}.")
        if self.back_transform not in BACK_TRANSFORMS:
            raise ValueError(f"`back_transform` must be one of {BACK_TRANSFORMS!r}, "
                             f"got {self.back_transform!r}.")
        if self.transform == "log" and self.back_transform != "exp":
            raise ValueError(
                '`transform = "log"` and `back_transform` are exclusive: with a log transform '
                "the response is released on its original scale and g is exp; leave "
                "`back_transform` out"
            )

    @property
    def g_name(self) -> str:
        """The map from the model scale to the person's scale, ``"exp"`` or ``"identity"``."""
        return "exp" if self.transform == "log" else self.back_transform

    def to_model(self, values: np.ndarray, *, name: str = "response") -> np.ndarray:
        """Response column → model scale (log for ``transform = "log"``).

        Raises
        ------
        ValueError
            If ``transform = "log"`` and a value is not positive (the message names ``name``).
        """
        v = np.asarray(values, dtype=float)
        if self.transform != "log":
            return v
        bad = ~(v > 0)
        if bad.any():
            raise ValueError(
                f'`transform = "log"` needs a positive `{name}`; {int(bad.sum())} value(s) are '
                "zero, negative or missing (not shown: they are confidential); drop them with "
                "`[data] query` or model the column as it is"
            )
        return np.log(v)

    def to_released(self, values: np.ndarray) -> np.ndarray:
        """Model scale → the released column (exp for ``transform = "log"``).

        Raises
        ------
        ValueError
            If a released value would overflow to infinity (a synthetic value above 709.78 on
            the log scale): the model is then far off the data.
        """
        v = np.asarray(values, dtype=float)
        if self.transform != "log":
            return v
        with np.errstate(over="ignore"):
            out = np.exp(v)
        if not np.all(np.isfinite(out)):
            raise ValueError(
                f"{int(np.sum(~np.isfinite(out)))} synthetic value(s) exceed the float range on "
                "the original scale (log value above 709.78); check the model's fit"
            )
        return out

    def g(self, values: np.ndarray) -> np.ndarray:
        """Model scale → person's scale; may overflow to inf (score by :func:`within_tolerance`)."""
        v = np.asarray(values, dtype=float)
        if self.g_name == "identity":
            return v
        with np.errstate(over="ignore"):
            return np.exp(v)

    def g_inv(self, values: np.ndarray) -> np.ndarray:
        """Person's scale → model scale (log for g = exp; non-positive values give nan/−inf)."""
        v = np.asarray(values, dtype=float)
        if self.g_name == "identity":
            return v
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(v)

    def within(self, synthetic: np.ndarray, truth: np.ndarray, kind: str,
               tol: float) -> np.ndarray:
        """:func:`within_tolerance` with this scale's g."""
        return within_tolerance(synthetic, truth, kind, tol, self.g_name)

    def bounds(self, truth: np.ndarray, kind: str, tol: float) -> tuple[np.ndarray, np.ndarray]:
        """:func:`tolerance_bounds` with this scale's g."""
        return tolerance_bounds(truth, kind, tol, self.g_name)
