"""Within-ε disclosure risk of partially synthetic values, per record and by group.

Share of implicates within ``eps`` (dollars) or ``p`` (relative) of the confidential value, on
the scale a person knows, and the implicate-average attack; restricted vs unrestricted model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from synthgeo._warn import warn
from synthgeo.config.measure import _fmt
from synthgeo.model.transform import BACK_TRANSFORMS, within_tolerance
from synthgeo.risk.measure import measure_label as _label

__all__ = ["RiskResult", "RiskTally", "within_eps_risk", "summarise_risk"]

_TRANSFORMS = BACK_TRANSFORMS
_BASE_GROUPS = ("at_risk", "other", "all")
_MIN_IMPLICATES = 5
_SUMMARY_COLUMNS = (
    "n_records", "mean_unrestricted", "mean_restricted", "reduction", "median_record_reduction",
    "attack_share_unrestricted", "attack_share_restricted",
)


def _check_synthetic(synthetic: Any, name: str = "synthetic") -> xr.DataArray:
    """Return ``synthetic`` as a finite float DataArray with dims ("implicate", "record")."""
    if not isinstance(synthetic, xr.DataArray):
        raise TypeError(
            f"`{name}` must be an xarray.DataArray with dims ('implicate', 'record'), "
            f"got {type(synthetic).__name__!r}."
        )
    if set(synthetic.dims) != {"implicate", "record"} or synthetic.ndim != 2:
        raise ValueError(
            f"`{name}` must have exactly the dims ('implicate', 'record'), got "
            f"{tuple(synthetic.dims)!r}; rename or select dims with `.rename()`/`.isel()`."
        )
    synthetic = synthetic.transpose("implicate", "record")
    if not np.issubdtype(synthetic.dtype, np.number):
        raise TypeError(f"`{name}` must hold numbers, got dtype {synthetic.dtype!r}.")
    values = np.asarray(synthetic.values, dtype=float)
    if not np.all(np.isfinite(values)):
        raise ValueError(
            f"`{name}` contains {int(np.sum(~np.isfinite(values)))} NaN or infinite value(s); "
            "every implicate must hold a value for every record."
        )
    return synthetic.copy(data=values)


def _check_tolerances(values: Any, name: str) -> tuple[float, ...]:
    """Coerce ``eps`` or ``p`` to a tuple of distinct positive finite floats."""
    arr = np.atleast_1d(np.asarray(values, dtype=float))
    if arr.ndim != 1 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"`{name}` must be positive finite number(s), got {values!r}.")
    if len(np.unique(arr)) != len(arr):
        raise ValueError(f"`{name}` must not repeat a value, got {values!r}.")
    return tuple(float(v) for v in arr)


def _check_truth(truth: Any, n_rec: int | None) -> np.ndarray:
    """Return ``truth`` as a finite float array of shape (n_rec,)."""
    try:
        y = np.asarray(truth, dtype=float)
    except (TypeError, ValueError) as err:
        msg = f"`truth` must be numeric array-like, got {type(truth).__name__!r}."
        raise TypeError(msg) from err
    if y.ndim != 1 or (n_rec is not None and y.shape != (n_rec,)):
        raise ValueError(
            f"`truth` must have shape (n_records,) = ({n_rec},) to match `synthetic`, "
            f"got shape {y.shape!r}."
        )
    if not np.all(np.isfinite(y)):
        n_bad = int(np.sum(~np.isfinite(y)))
        raise ValueError(f"`truth` contains {n_bad} NaN or infinite value(s); drop those records.")
    return y


def _prepare(
    synthetic: Any, truth: Any, eps: Any, p: Any, transform: Any
) -> tuple[xr.DataArray, np.ndarray, tuple[float, ...], tuple[float, ...]]:
    """Validate the inputs of :func:`within_eps_risk` at the door."""
    if transform not in _TRANSFORMS:
        raise ValueError(f"`transform` must be one of {_TRANSFORMS!r}, got {transform!r}.")
    synthetic = _check_synthetic(synthetic)
    eps_t, p_t = _check_tolerances(eps, "eps"), _check_tolerances(p, "p")
    y = _check_truth(truth, synthetic.sizes["record"])
    return synthetic, y, eps_t, p_t


@dataclass(frozen=True, kw_only=True, eq=False)
class RiskResult:
    """Per-record within-ε disclosure risk, from :func:`within_eps_risk`.

    Attributes
    ----------
    per_record : xarray.Dataset
        Dims ``record`` (n_records), ``eps`` and ``p``. Variables ``risk_abs`` (record, eps) and
        ``risk_rel`` (record, p): share of implicates within the tolerance, in [0, 1];
        ``attack_abs`` (record, eps) and ``attack_rel`` (record, p): bool, whether the
        implicate-average attack lands within it. Coords ``eps`` (on the scale of g, e.g.
        dollars) and ``p`` (fraction of |g(y)|). Attrs hold the transform and provenance.
    eps : tuple of float
        Absolute tolerances, on the back-transformed scale (e.g. dollars).
    p : tuple of float
        Relative tolerances, as fractions (0.1 is "within 10%").
    transform : {"exp", "identity"}
        The back-transform g that was applied.
    n_implicates : int
        L, the number of synthetic implicates.
    """

    per_record: xr.Dataset
    eps: tuple[float, ...]
    p: tuple[float, ...]
    transform: str
    n_implicates: int

    @property
    def n_records(self) -> int:
        """Number of records."""
        return int(self.per_record.sizes["record"])

    def shares(self) -> dict[str, np.ndarray]:
        """Realised share per record (n_records,) by measure key (``"abs:10000"``, ``"rel:0.1"``).

        The share :func:`synthgeo.risk.records.score_records` reports, counted once here.
        """
        ds, out = self.per_record, {}
        for var, kind, dim in (("risk_abs", "abs", "eps"), ("risk_rel", "rel", "p")):
            values = ds[var].transpose("record", dim).values
            for j, tol in enumerate(ds[dim].values):
                out[f"{kind}:{_fmt(tol)}"] = values[:, j]
        return out

    def to_dataframe(self, id_column: str = "record") -> pd.DataFrame:
        """Return one row per record, columns named as every per-record risk table.

        Parameters
        ----------
        id_column : str, default="record"
            Name of the index (the data's id column).

        Returns
        -------
        pandas.DataFrame
            Columns ``share[<measure>]`` (realised share within the tolerance) and
            ``hit_release[<measure>/geometric]`` (the implicate-average attack on the model
            scale, the geometric form of :mod:`synthgeo.risk.baselines`), e.g.
            ``share[abs:10000]``, ``hit_release[rel:0.1/geometric]`` (docs/release.md).
        """
        ds, cols = self.per_record, {}
        for prefix, suffix, kinds in (("share", "", ("risk_abs", "risk_rel")),
                                      ("hit_release", "/geometric", ("attack_abs", "attack_rel"))):
            for var in kinds:
                kind, dim = ("abs", "eps") if var.endswith("abs") else ("rel", "p")
                values = ds[var].transpose("record", dim).values
                for j, tol in enumerate(ds[dim].values):
                    cols[f"{prefix}[{kind}:{_fmt(tol)}{suffix}]"] = values[:, j]
        return pd.DataFrame(cols, index=pd.Index(ds["record"].values, name=id_column))


def within_eps_risk(
    synthetic: xr.DataArray,
    truth: Any,
    *,
    eps: float | Sequence[float] = (10_000.0,),
    p: float | Sequence[float] = (0.1,),
    transform: Literal["exp", "identity"] = "exp",
) -> RiskResult:
    r"""Within-ε disclosure risk of each record, absolute and relative, and the averaging attack.

    Parameters
    ----------
    synthetic : xarray.DataArray of shape (n_implicates, n_records)
        Synthetic values Y†, dims ``("implicate", "record")`` in either order, on the model's
        scale (e.g. log-dollars). A ``record`` coord, if any, is kept.
    truth : array-like of shape (n_records,)
        Confidential values Y on the same scale as ``synthetic``.
    eps : float or sequence of float, default=(10_000.0,)
        Absolute tolerances ε on the back-transformed scale (dollars for ``transform="exp"``).
    p : float or sequence of float, default=(0.1,)
        Relative tolerances as fractions of |g(Y_i)|.
    transform : {"exp", "identity"}, default="exp"
        g, the back-transform to the scale a person knows: ``"exp"`` for a log response.

    Returns
    -------
    RiskResult
        ``per_record`` holds ``risk_abs``, ``risk_rel``, ``attack_abs`` and ``attack_rel``.

    Raises
    ------
    TypeError
        If ``synthetic`` is not a numeric DataArray.
    ValueError
        If the dims are not ("implicate", "record"), the lengths of ``truth`` and the record dim
        differ, an input holds NaN/inf, a tolerance is not positive, or ``transform`` is unknown.

    Warns
    -----
    UserWarning
        If there are fewer than 5 implicates (the risk is then a coarse share).

    Notes
    -----
    With L implicates and g the back-transform,

    .. math::

        r_i(\varepsilon) = \frac1L \sum_\ell 1\{|g(Y_i^{\dagger(\ell)}) - g(Y_i)| \le
        \varepsilon\}, \qquad
        r_i(p) = \frac1L \sum_\ell 1\{|g(Y_i^{\dagger(\ell)}) - g(Y_i)| \le p|g(Y_i)|\}.

    The implicate-average attack averages on the **model scale** and then back-transforms:
    ``attack_abs`` is :math:`1\{|g(\bar Y_i^\dagger) - g(Y_i)| \le \varepsilon\}` with
    :math:`\bar Y_i^\dagger = L^{-1}\sum_\ell Y_i^{\dagger(\ell)}`; for ``"exp"`` that is the
    geometric mean of the synthetic dollar values. Every comparison is made on the model scale
    (:func:`synthgeo.model.transform.within_tolerance`: |expm1(y† − y)| ≤ p and
    y + log|expm1(y† − y)| ≤ log ε), so values above 709.78, where exp overflows, are scored
    correctly. Implicates are counted one at a time (:class:`RiskTally`): memory is
    O(n_records · n_tolerances), whatever L.

    References
    ----------
    .. [1] Quick, H., Holan, S. H., & Wikle, C. K. (2018). Generating partially synthetic
       geocoded public use data with decreased disclosure risk by using differential smoothing.
       JRSS A, 181(3), 649-661. doi:10.1111/rssa.12360

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> usd = [[100_500.0], [150_000.0], [95_000.0], [120_000.0], [101_000.0]]  # 5 implicates
    >>> syn = xr.DataArray(np.log(usd), dims=("implicate", "record"))
    >>> res = within_eps_risk(syn, np.log([100_000.0]), eps=10_000)
    >>> float(res.per_record["risk_abs"].item())
    0.6
    """
    synthetic, y, eps_t, p_t = _prepare(synthetic, truth, eps, p, transform)
    n_impl, n_rec = synthetic.shape
    if n_impl < _MIN_IMPLICATES:
        warn(
            f"Only L={n_impl} implicates: each record's risk is a share of {n_impl}, "
            f"a coarse estimate; use at least {_MIN_IMPLICATES}.",
        )
    tally = RiskTally(y, eps=eps_t, p=p_t, transform=transform)
    tally.add(synthetic.values)
    record = synthetic["record"].values if "record" in synthetic.coords else np.arange(n_rec)
    return tally.result(record=record)


class RiskTally:
    """Within-ε risk counted implicate by implicate (for blocks that arrive one at a time).

    :func:`within_eps_risk` is ``RiskTally(...).add(all implicates).result()``; a streamed
    synthesis adds each block as it is drawn and gets the same numbers: per record it counts
    the implicates within each tolerance (integers) and sums the implicates in order ℓ = 1..L
    for the implicate-average attack, so neither depends on how the implicates are grouped.
    Memory: O(n_records · n_tolerances), whatever L.

    Parameters
    ----------
    truth : array-like of shape (n_records,)
        Confidential values Y on the model scale.
    eps, p, transform
        As :func:`within_eps_risk`.

    Raises
    ------
    ValueError, TypeError
        As :func:`within_eps_risk` for the truth, the tolerances and the transform.

    Examples
    --------
    >>> tally = RiskTally(np.log([100_000.0]), eps=10_000)
    >>> tally.add(np.log([[100_500.0], [150_000.0]]))
    >>> tally.add(np.log([[95_000.0], [120_000.0], [101_000.0]]))
    >>> float(tally.result().per_record["risk_abs"].item())
    0.6
    """

    def __init__(self, truth: Any, *, eps: float | Sequence[float] = (10_000.0,),
                 p: float | Sequence[float] = (0.1,), transform: str = "exp") -> None:
        if transform not in _TRANSFORMS:
            raise ValueError(f"`transform` must be one of {_TRANSFORMS!r}, got {transform!r}.")
        self.eps, self.p = _check_tolerances(eps, "eps"), _check_tolerances(p, "p")
        self.transform = transform
        self.truth = _check_truth(truth, None)
        n = self.truth.size
        self._n_abs = np.zeros((n, len(self.eps)), np.int64)
        self._n_rel = np.zeros((n, len(self.p)), np.int64)
        self._sum = np.zeros(n)
        self.n_implicates = 0

    def add(self, block: Any) -> None:
        """Count the implicates of ``block``, shape (k, n_records), model scale, in row order.

        Raises
        ------
        ValueError
            For the wrong number of records, or a NaN or infinite value.
        """
        block = np.atleast_2d(np.asarray(block, dtype=float))
        if block.ndim != 2 or block.shape[1] != self.truth.size:
            raise ValueError(f"a block must have shape (k, {self.truth.size}) (implicates, "
                             f"records), got {block.shape!r}.")
        if not np.all(np.isfinite(block)):
            raise ValueError(
                f"`synthetic` contains {int(np.sum(~np.isfinite(block)))} NaN or infinite "
                "value(s); every implicate must hold a value for every record."
            )
        for row in block:
            self._n_abs += self._within(row, "abs")
            self._n_rel += self._within(row, "rel")
            self._sum += row
        self.n_implicates += block.shape[0]

    def _within(self, row: np.ndarray, kind: str) -> np.ndarray:
        """Return (n_records, n_tolerances) bool: row within each tolerance of the truth.

        Overflow-free (:func:`synthgeo.model.transform.within_tolerance`).
        """
        tols = self.eps if kind == "abs" else self.p
        return np.stack([within_tolerance(row, self.truth, kind, t, self.transform)
                         for t in tols], axis=1)

    def result(self, record: Any = None) -> RiskResult:
        """Return the :class:`RiskResult` of the implicates added so far.

        Parameters
        ----------
        record : array-like of shape (n_records,), optional
            The ``record`` coordinate (default 0..n−1).

        Raises
        ------
        ValueError
            If no implicate was added.
        """
        L = self.n_implicates
        if L == 0:
            raise ValueError("no implicates were added to the risk tally.")
        avg = self._sum / L  # implicate average on the model scale
        record = np.arange(self.truth.size) if record is None else np.asarray(record)
        from synthgeo import __version__  # here, not at the top: the package imports this

        ds = xr.Dataset(
            {
                "risk_abs": (("record", "eps"), self._n_abs / L),
                "risk_rel": (("record", "p"), self._n_rel / L),
                "attack_abs": (("record", "eps"), self._within(avg, "abs")),
                "attack_rel": (("record", "p"), self._within(avg, "rel")),
            },
            coords={"record": record, "eps": list(self.eps), "p": list(self.p)},
            attrs={"transform": self.transform, "n_implicates": L,
                   "synthgeo_version": __version__,
                   "created_at": datetime.now(timezone.utc).isoformat()},
        )
        ds["eps"].attrs["units"] = "dollars" if self.transform == "exp" else "scale of g(y)"
        ds["p"].attrs["units"] = "fraction of |g(y)|"
        return RiskResult(per_record=ds, eps=self.eps, p=self.p, transform=self.transform,
                          n_implicates=L)


def _check_mask(mask: Any, name: str, n: int) -> np.ndarray:
    """Return ``mask`` as a bool array of shape (n,)."""
    arr = np.asarray(mask)
    if arr.dtype != bool:
        raise TypeError(f"`{name}` must be an array of bool, got dtype {arr.dtype!r}.")
    if arr.shape != (n,):
        raise ValueError(f"`{name}` must have shape ({n},) (n_records), got shape {arr.shape!r}.")
    return arr


def _group_row(r_u: np.ndarray, r_r: np.ndarray, a_u: np.ndarray, a_r: np.ndarray) -> dict:
    """Summaries for one group and one measure; NaN when the group is empty."""
    n, nan = r_u.size, float("nan")
    if n == 0:
        return dict.fromkeys(_SUMMARY_COLUMNS, nan) | {"n_records": 0}
    mean_u, mean_r, pos = float(r_u.mean()), float(r_r.mean()), r_u > 0
    values = (
        n, mean_u, mean_r, 1.0 - mean_r / mean_u if mean_u > 0 else nan,
        float(np.median(1.0 - r_r[pos] / r_u[pos])) if pos.any() else nan,
        float(a_u.mean()), float(a_r.mean()),
    )
    return dict(zip(_SUMMARY_COLUMNS, values, strict=True))


def summarise_risk(
    unrestricted: RiskResult, restricted: RiskResult, at_risk: Any, *,
    extra_groups: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    r"""Compare the risk of the restricted and unrestricted models, by group of records.

    Parameters
    ----------
    unrestricted, restricted : RiskResult
        From :func:`within_eps_risk` on the same records, with the same ``eps``, ``p`` and
        ``transform``.
    at_risk : array of bool of shape (n_records,)
        True for the records flagged at risk (e.g. spatial outliers).
    extra_groups : dict of str to array of bool of shape (n_records,), optional
        More groups to report, after ``"at_risk"``, ``"other"`` (not at risk) and ``"all"``.

    Returns
    -------
    pandas.DataFrame
        One row per group × measure (each ``eps``, then each ``p``), columns ``group``,
        ``measure`` (e.g. ``"within $10,000"``, ``"within 10%"``), ``n_records``,
        ``mean_unrestricted``, ``mean_restricted``, ``reduction``, ``median_record_reduction``,
        ``attack_share_unrestricted``, ``attack_share_restricted``. An empty group has
        ``n_records`` 0 and NaN everywhere else.

    Raises
    ------
    TypeError
        If an argument is not a RiskResult or a mask is not boolean.
    ValueError
        If the two results differ in ``eps``, ``p``, ``transform`` or number of records, a mask
        has the wrong length, or an extra group reuses a reserved name.

    Notes
    -----
    ``reduction`` is the ratio of means, :math:`1 - \bar r^{res}_G / \bar r^{unres}_G` (NaN when
    :math:`\bar r^{unres}_G = 0`); ``median_record_reduction`` is the median of
    :math:`1 - r_i^{res}/r_i^{unres}` over records of G with :math:`r_i^{unres} > 0` (NaN if
    none). Negative values mean the restricted model is riskier. ``attack_share_*`` is the share
    of the group exposed by the implicate-average attack.

    References
    ----------
    .. [1] Quick, H., Holan, S. H., & Wikle, C. K. (2018). Generating partially synthetic
       geocoded public use data with decreased disclosure risk by using differential smoothing.
       JRSS A, 181(3), 649-661. doi:10.1111/rssa.12360
    """
    for name, res in (("unrestricted", unrestricted), ("restricted", restricted)):
        if not isinstance(res, RiskResult):
            raise TypeError(f"`{name}` must be a RiskResult, got {type(res).__name__!r}.")
    for field in ("eps", "p", "transform", "n_records"):
        a, b = getattr(unrestricted, field), getattr(restricted, field)
        if a != b:
            raise ValueError(
                f"`unrestricted` and `restricted` differ in {field}: {a!r} vs {b!r}; "
                "compute both with the same records and tolerances."
            )
    n = unrestricted.n_records
    mask = _check_mask(at_risk, "at_risk", n)
    groups: dict[str, np.ndarray] = {"at_risk": mask, "other": ~mask, "all": np.ones(n, bool)}
    for gname, gmask in (extra_groups or {}).items():
        if gname in _BASE_GROUPS:
            raise ValueError(f"`extra_groups` must not reuse the name {gname!r}; rename it.")
        groups[str(gname)] = _check_mask(gmask, f"extra_groups[{gname!r}]", n)

    measures = [("abs", "eps", e) for e in unrestricted.eps]
    measures += [("rel", "p", q) for q in unrestricted.p]
    du, dr = unrestricted.per_record, restricted.per_record
    rows = []
    for gname, gmask in groups.items():
        for kind, dim, tol in measures:
            cols = [
                ds[f"{var}_{kind}"].sel({dim: tol}).values[gmask]
                for ds, var in ((du, "risk"), (dr, "risk"), (du, "attack"), (dr, "attack"))
            ]
            rows.append({"group": gname, "measure": _label(kind, tol), **_group_row(*cols)})
    out = pd.DataFrame(rows, columns=["group", "measure", *_SUMMARY_COLUMNS])
    return out.astype({"n_records": int})
