"""Normal guess distributions per implicate and record: the release's and the baselines'.

Every attacker in docs/risk-and-utility.md holds, for record i and implicate ℓ, a normal
distribution for y_i on the model scale: the release's own predictive
N(x_iβ^(ℓ) + d_s w_s^(ℓ), τ²^(ℓ)), the leave-one-out GP predictive, or the public regression's.
:class:`Predictive` carries their means and standard deviations, shape (implicate, record).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from synthgeo._spill import Spilled, spill, unspill

__all__ = ["Predictive", "release_predictive", "pool_predictives", "pool_synthetic",
           "kept_predictive", "record_slices", "RECORD_BLOCK", "ImplicateRecordShape"]

#: Records per block where a per-record figure is computed block by block (all of a record's
#: implicates in one block): (L, 4096) temporaries, 3.3 MB at L = 100, instead of (L, n).
RECORD_BLOCK = 4096


def record_slices(n_records: int, size: int | None = None) -> list[slice]:
    """Split ``range(n_records)`` into consecutive slices of about ``size`` records.

    Every record's implicates stay in one block, so a figure reduced over implicates per record
    (a mean, a variance, a log-sum-exp over axis 0) is the same to the bit on a block of
    columns as on the whole (L, n) array: NumPy reduces axis 0 of a C-ordered block in the same
    order. The blocks are of near-equal size, none of fewer than ``size // 2`` records when
    ``n_records >= size`` (a single column would be reduced by NumPy's pairwise summation
    instead, which can differ in the last bit).

    Parameters
    ----------
    n_records : int
        n ≥ 0.
    size : int, optional
        Target records per block, ≥ 4; default :data:`RECORD_BLOCK` (read at the call).

    Returns
    -------
    list of slice
        In order, covering 0..n_records; one slice (all records) when n_records ≤ size.

    Raises
    ------
    ValueError
        If ``size`` is below 4 or ``n_records`` negative.

    Examples
    --------
    >>> [(s.start, s.stop) for s in record_slices(10, size=4)]
    [(0, 3), (3, 6), (6, 10)]
    >>> record_slices(3, size=4)
    [slice(0, 3, None)]
    """
    size = RECORD_BLOCK if size is None else int(size)
    if size < 4 or n_records < 0:
        raise ValueError(f"`size` must be at least 4 and `n_records` not negative, got size "
                         f"{size} and n_records {n_records}.")
    k = max(1, -(-n_records // size))
    edges = [n_records * j // k for j in range(k + 1)]
    return [slice(a, b) for a, b in zip(edges[:-1], edges[1:], strict=True)]


class ImplicateRecordShape:
    """``n_implicates`` and ``n_records`` of a class whose ``mean`` is (L, n_records)."""

    mean: np.ndarray

    @property
    def n_implicates(self) -> int:
        """L."""
        return int(self.mean.shape[0])

    @property
    def n_records(self) -> int:
        """Number of records."""
        return int(self.mean.shape[1])


@dataclass(frozen=True, kw_only=True, eq=False)
class Predictive(ImplicateRecordShape):
    """Normal predictive distributions N(mean, sd²) of y, model scale.

    Attributes
    ----------
    mean : ndarray of shape (n_implicates, n_records)
        Means (model scale, e.g. log-dollars).
    sd : ndarray of shape (n_implicates, n_records)
        Standard deviations (same unit), ≥ 0; 0 is a point guess.
    name : str, default=""
        Which attacker (``"release"``, ``"baseline_loo"``, ``"baseline_public"``).

    Raises
    ------
    ValueError
        If the shapes differ or are not 2-D, or a value is not finite, or an sd is negative.

    Examples
    --------
    >>> g = Predictive(mean=np.zeros((2, 3)), sd=np.ones((2, 3)), name="release")
    >>> g.n_implicates, g.n_records
    (2, 3)
    >>> g.to_dataframe().shape
    (6, 4)
    """

    mean: np.ndarray
    sd: np.ndarray
    name: str = ""

    def __post_init__(self) -> None:
        """Check shapes and values; store float arrays."""
        mean = np.asarray(self.mean, dtype=float)
        sd = np.asarray(self.sd, dtype=float)
        if mean.ndim != 2 or sd.shape != mean.shape:
            raise ValueError(
                f"predictive `mean` and `sd` must both have shape (n_implicates, n_records), got "
                f"{mean.shape} and {sd.shape}."
            )
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(sd))):
            raise ValueError(f"predictive {self.name!r} holds NaN or infinite values.")
        if np.any(sd < 0):
            raise ValueError(f"predictive {self.name!r} has a negative sd.")
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "sd", sd)

    def columns(self, records: slice) -> Predictive:
        """Return the predictive of a block of records (views of ``mean`` and ``sd``, no copy).

        Examples
        --------
        >>> g = Predictive(mean=np.arange(6.0).reshape(2, 3), sd=np.ones((2, 3)), name="x")
        >>> g.columns(slice(1, 3)).mean.tolist()
        [[1.0, 2.0], [4.0, 5.0]]
        """
        return Predictive(mean=self.mean[:, records], sd=self.sd[:, records], name=self.name)

    def to_dataframe(self) -> pd.DataFrame:
        """Long table: ``implicate`` (0-based), ``record`` (0-based), ``mean``, ``sd``."""
        ell, rec = np.indices(self.mean.shape)
        return pd.DataFrame({"implicate": ell.ravel(), "record": rec.ravel(),
                             "mean": self.mean.ravel(), "sd": self.sd.ravel()})


def release_predictive(X: np.ndarray, beta: np.ndarray, effect: np.ndarray,
                       nugget: np.ndarray) -> Predictive:
    r"""Build the release's predictive per implicate: N(x_iβ^(ℓ) + d_s w_s^(ℓ), τ²^(ℓ)).

    Parameters
    ----------
    X : ndarray of shape (n_records, p)
        Design matrix (intercept included).
    beta : ndarray of shape (L, p)
        β^(ℓ) of the draws that made the implicates.
    effect : ndarray of shape (L, n_records)
        d_s w_s^(ℓ) at each record's site (the effect that was synthesised; 0 where removed).
    nugget : ndarray of shape (L,)
        τ²^(ℓ) (model-scale units²).

    Returns
    -------
    Predictive
        ``name="release"``. Y†^(ℓ) is one draw from it (docs/model.md, "Synthesis").

    Examples
    --------
    >>> X = np.ones((2, 1)); beta = np.array([[1.0], [2.0]])
    >>> g = release_predictive(X, beta, np.zeros((2, 2)), np.array([0.25, 1.0]))
    >>> g.mean.tolist(), g.sd.tolist()
    ([[1.0, 1.0], [2.0, 2.0]], [[0.5, 0.5], [1.0, 1.0]])
    """
    X, beta = np.asarray(X, float), np.atleast_2d(np.asarray(beta, float))
    nugget = np.asarray(nugget, float)
    mean = beta @ X.T + np.asarray(effect, float)
    sd = np.broadcast_to(np.sqrt(nugget)[:, None], mean.shape).copy()
    return Predictive(mean=mean, sd=sd, name="release")


def pool_predictives(*parts: Predictive) -> Predictive:
    """Stack the implicates of several releases of the same records (cumulative risk).

    Parameters
    ----------
    *parts : Predictive
        Same records in the same order (link by id before calling).

    Returns
    -------
    Predictive
        L = Σ L_k implicates, named after the first part.

    Raises
    ------
    ValueError
        If no part is given or the record counts differ.

    Examples
    --------
    >>> a = Predictive(mean=np.zeros((2, 3)), sd=np.ones((2, 3)))
    >>> pool_predictives(a, a).n_implicates
    4
    """
    if not parts:
        raise ValueError("pool_predictives needs at least one Predictive.")
    n = {p.n_records for p in parts}
    if len(n) != 1:
        raise ValueError(f"releases to pool must hold the same records, got record counts "
                         f"{sorted(n)}; link them by id first.")
    return Predictive(mean=np.concatenate([p.mean for p in parts]),
                      sd=np.concatenate([p.sd for p in parts]), name=parts[0].name)


def pool_synthetic(*parts: np.ndarray) -> np.ndarray:
    """Stack the implicates (model scale) of several releases of the same records.

    Parameters
    ----------
    *parts : array-like of shape (L_k, n_records)
        Synthetic responses, same records in the same order (an ``xarray.DataArray`` with
        dims (implicate, record) works).

    Returns
    -------
    ndarray of shape (Σ L_k, n_records)

    Raises
    ------
    ValueError
        If no part is given, a part is not 2-D, or the record counts differ.

    Examples
    --------
    >>> pool_synthetic(np.zeros((2, 3)), np.ones((1, 3))).shape
    (3, 3)
    """
    arrays = [np.asarray(getattr(p, "values", p), dtype=float) for p in parts]
    if not arrays or any(a.ndim != 2 for a in arrays):
        raise ValueError("pool_synthetic needs one or more (implicate, record) arrays.")
    n = {a.shape[1] for a in arrays}
    if len(n) != 1:
        raise ValueError(f"releases to pool must hold the same records, got record counts "
                         f"{sorted(n)}; link them by id first.")
    return np.concatenate(arrays)


def kept_predictive(pred: Predictive) -> Callable[[], Predictive]:
    """Return a loader of ``pred`` for a later stage: itself when small, else from disk.

    Large means and sds (:data:`synthgeo._spill.SPILL_BYTES` each, from about 10⁵ records at
    L = 100) go to an unnamed temporary file (:func:`synthgeo._spill.spill`); each call then
    returns a fresh :class:`Predictive` with the same doubles, and between calls none of it is
    resident (the leave-one-out baseline kept for the cumulative risk and the release record).

    Parameters
    ----------
    pred : Predictive

    Returns
    -------
    callable
        ``loader() -> Predictive``.

    Examples
    --------
    >>> g = Predictive(mean=np.zeros((2, 3)), sd=np.ones((2, 3)), name="baseline_loo")
    >>> kept_predictive(g)() is g
    True
    """
    mean, sd = spill(pred.mean), spill(pred.sd)
    if not (isinstance(mean, Spilled) or isinstance(sd, Spilled)):
        return _held(pred)
    return _loaded(mean, sd, pred.name)  # the loader holds the files, not the arrays


def _held(pred: Predictive) -> Callable[[], Predictive]:
    """Return ``() -> pred``."""
    return lambda: pred


def _loaded(mean, sd, name: str) -> Callable[[], Predictive]:
    """Return ``() -> Predictive`` read from spilled (or in-memory) arrays."""
    return lambda: Predictive(mean=unspill(mean), sd=unspill(sd), name=name)
