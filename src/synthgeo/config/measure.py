"""A risk measure: relative ("within 10 %") or absolute ("within $10,000") closeness.

Spelled ``"rel:0.1"`` / ``"abs:10000"`` in a spec's ``[risk.targets]`` (docs/risk-and-utility.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["Measure", "measures_from"]

_KINDS = ("rel", "abs")


def _fmt(x: float) -> str:
    """Format a tolerance without trailing zeros (10000.0 -> "10000", 0.1 -> "0.1")."""
    return np.format_float_positional(float(x), trim="-")


def measure_label(kind: str, tol: float) -> str:
    """Human label: "within $10,000" (absolute) or "within 10%" (relative)."""
    if kind == "rel":
        return f"within {_fmt(round(tol * 100, 10))}%"
    return f"within ${int(tol):,}" if tol == int(tol) else f"within ${tol:,}"


@dataclass(frozen=True, kw_only=True)
class Measure:
    """One closeness measure.

    Attributes
    ----------
    kind : {"rel", "abs"}
        Relative (``tol`` a fraction of |g(y)|) or absolute (``tol`` on the person's scale,
        e.g. dollars).
    tol : float
        p or ε, > 0.

    Raises
    ------
    ValueError
        For an unknown kind or a tolerance that is not a positive finite number.

    Examples
    --------
    >>> m = Measure.parse("rel:0.1")
    >>> m.kind, m.tol, m.key, m.label
    ('rel', 0.1, 'rel:0.1', 'within 10%')
    >>> Measure(kind="abs", tol=10_000).label
    'within $10,000'
    """

    kind: str
    tol: float

    def __post_init__(self) -> None:
        """Refuse an unknown kind or a tolerance that is not positive."""
        if self.kind not in _KINDS:
            raise ValueError(f"measure kind must be one of {_KINDS!r}, got {self.kind!r}.")
        tol = self.tol
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not (
                np.isfinite(tol) and tol > 0):
            raise ValueError(f"measure tolerance must be a positive finite number, got {tol!r}.")
        object.__setattr__(self, "tol", float(tol))

    @classmethod
    def parse(cls, text: str) -> Measure:
        """Read ``"rel:0.1"`` or ``"abs:10000"``.

        Raises
        ------
        ValueError
            If the text is not ``kind:number`` with a known kind and a positive number.
        """
        if not isinstance(text, str) or text.count(":") != 1:
            raise ValueError(
                f'a measure is written "rel:<fraction>" or "abs:<amount>" (e.g. "rel:0.1", '
                f'"abs:10000"), got {text!r}.'
            )
        kind, _, num = text.partition(":")
        try:
            tol = float(num)
        except ValueError:
            raise ValueError(f"measure {text!r}: {num!r} is not a number.") from None
        return cls(kind=kind.strip(), tol=tol)

    @property
    def key(self) -> str:
        """``"rel:0.1"`` / ``"abs:10000"``: the spec spelling, used as a table key."""
        return f"{self.kind}:{_fmt(self.tol)}"

    @property
    def label(self) -> str:
        """``"within 10%"`` / ``"within $10,000"``."""
        return measure_label(self.kind, self.tol)

    def to_dataframe(self) -> pd.DataFrame:
        """One row: ``key``, ``kind``, ``tol``, ``label``."""
        return pd.DataFrame([{"key": self.key, "kind": self.kind, "tol": self.tol,
                              "label": self.label}])


def measures_from(eps=(), p=(), extra=()) -> tuple[Measure, ...]:
    """Measures for absolute tolerances ``eps``, relative ``p`` and ``extra`` keys, no repeats.

    Examples
    --------
    >>> [m.key for m in measures_from(eps=[10_000.0], p=[0.1], extra=["rel:0.1", "rel:0.05"])]
    ['abs:10000', 'rel:0.1', 'rel:0.05']
    """
    out = [Measure(kind="abs", tol=e) for e in eps] + [Measure(kind="rel", tol=q) for q in p]
    out += [m if isinstance(m, Measure) else Measure.parse(m) for m in extra]
    return tuple(dict.fromkeys(out))
