r"""Per-record risk of one released model: the release, both baselines, both attacks.

For record i and a measure (within p or within ε on the person's scale):

- ``share``: the realised share of implicates within the tolerance;
- ``release``: its Rao-Blackwellised expectation r̃_i (:mod:`synthgeo.risk.rao_blackwell`);
- ``loo`` / ``public``: the same exact probability under the leave-one-out GP predictive
  (:mod:`synthgeo.risk.loo`) and the public regression (:mod:`synthgeo.risk.baselines`);
- ``hit_release`` / ``hit_loo`` / ``hit_public``: whether the average attack's point guess
  (geometric or arithmetic, :data:`synthgeo.risk.baselines.FORMS`) lands within it.

Monte Carlo moments (``var_release``, ``var_loo``, ``var_public``: sample variances over the
rows of each predictive of the exact probabilities p_iℓ; ``cov_release_loo``,
``cov_release_public``: their covariance with the release's, paired by implicate index when the
baseline has the release's L rows, else 0) give every mean its standard error without storing
an (L, n) array: se(r̃_i) = √(var_i / L) (:meth:`RecordRisk.se`). The LOO baseline is drawn at
the unrestricted model's draws, so its pairing with the unrestricted release keeps their
correlation (docs/risk-and-utility.md, "Monte Carlo error and the decisions taken on it").

A group's mean has a Monte Carlo error of its own, which the records' se do not give (records
share posterior draws, so their errors are correlated). With ``groups``, :func:`score_records`
keeps, per group and measure, the **row means** over the group's records of each predictive's
exact probabilities (one value per implicate or draw: an (L,) vector, not an (L, n) array), so
that the se of a group's mean attributable risk, and of the difference between two models'
(paired by implicate index), is the sample se over rows (:mod:`synthgeo.risk.attributable`).

Attributable risk (release − the stronger baseline) is formed in
:mod:`synthgeo.risk.attributable`. Sources: Reiter, Wang & Zhang (2014),
doi:10.29012/jpc.v6i1.635; Giomi et al. (2022), doi:10.56553/popets-2023-0055;
docs/risk-and-utility.md. The per-record table is confidential (it is computed from y).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import xarray as xr

from synthgeo.model.transform import BACK_TRANSFORMS, within_tolerance
from synthgeo.risk.baselines import FORMS, point_guesses, synthetic_point_guesses
from synthgeo.risk.measure import Measure
from synthgeo.risk.predictive import Predictive, record_slices
from synthgeo.risk.rao_blackwell import _check_truth, within_probability
from synthgeo.risk.within_eps import RiskResult

__all__ = ["RecordRisk", "score_records", "PROBABILITIES", "HITS", "MOMENTS"]

#: Per-record probabilities (record, measure) and average-attack hits (record, measure, form).
PROBABILITIES = ("share", "release", "loo", "public")
HITS = ("hit_release", "hit_loo", "hit_public")
#: Per-record Monte Carlo moments over implicates (record, measure); see the module docstring.
MOMENTS = ("var_release", "var_loo", "var_public", "cov_release_loo", "cov_release_public")


@dataclass(frozen=True, kw_only=True, eq=False)
class RecordRisk:
    """Per-record risk of one model, from :func:`score_records` (confidential).

    Attributes
    ----------
    per_record : xarray.Dataset
        Dims ``record``, ``measure`` (keys such as ``"rel:0.1"``), ``form`` (``"geometric"``,
        ``"arithmetic"``). Variables ``share``, ``release``, ``loo``, ``public``
        (record, measure) in [0, 1]; ``hit_release``, ``hit_loo``, ``hit_public``
        (record, measure, form), bool; :data:`MOMENTS` (record, measure): sample variances
        (ddof = 1; 0 with one row) and covariances over implicates of the exact probabilities.
        Attrs ``n_rows``: rows (implicates or draws) of ``release``, ``loo``, ``public``.
    measures : tuple of Measure
    g : {"exp", "identity"}
    n_implicates : int
    group_rows : dict
        ``(group, source, measure key)`` → ndarray of shape (rows,): the mean over the group's
        records of ``source``'s exact probabilities in each row (``source`` ∈ {"release",
        "loo", "public"}); empty unless :func:`score_records` was given ``groups``.
    """

    per_record: xr.Dataset
    measures: tuple[Measure, ...]
    g: str
    n_implicates: int
    group_rows: dict[tuple[str, str, str], np.ndarray] = field(default_factory=dict,
                                                                repr=False)

    def __post_init__(self) -> None:
        """Check that the dataset holds every variable over the stated measures."""
        missing = [v for v in (*PROBABILITIES, *HITS, *MOMENTS) if v not in self.per_record]
        if missing:
            raise ValueError(f"RecordRisk.per_record lacks {missing}.")
        keys = [m.key for m in self.measures]
        if list(self.per_record["measure"].values) != keys:
            raise ValueError("RecordRisk.per_record's measures differ from `measures`.")

    @property
    def n_records(self) -> int:
        """Number of records."""
        return int(self.per_record.sizes["record"])

    def n_rows(self, source: str) -> int:
        """Rows (implicates or posterior draws) the mean ``source`` was taken over."""
        if source == "share":
            return self.n_implicates
        return int(self.per_record.attrs["n_rows"][("release", "loo", "public").index(source)])

    def se(self, source: str, key: str) -> np.ndarray:
        """Monte Carlo se (n_records,) of ``source`` ∈ {"release", "loo", "public"}: √(var/L).

        Examples
        --------
        >>> from synthgeo.risk.predictive import Predictive
        >>> rel = Predictive(mean=np.array([[0.0], [2.0]]), sd=np.ones((2, 1)))
        >>> rr = score_records(np.zeros(1), synthetic=np.zeros((2, 1)), release=rel,
        ...                    baseline_loo=rel, baseline_public=rel,
        ...                    measures=[Measure(kind="abs", tol=1.0)], g="identity")
        >>> rr.se("release", "abs:1").round(4).tolist()  # p = .6827, .1573: sd .3715 / √2
        [0.2627]
        """
        var = self.per_record[f"var_{source}"].sel(measure=key).values
        return np.sqrt(var / self.n_rows(source))

    def to_dataframe(self, id_column: str | None = None) -> pd.DataFrame:
        """One row per record: ``<var>[<measure>]``, ``<var>_se[<measure>]``, hits.

        Columns ``share``, ``release``, ``release_se``, ``loo``, ``loo_se``, ``public``,
        ``public_se`` per measure (``<var>[<measure>]``), then ``<hit>[<measure>/<form>]``
        (docs/release.md, "Per-record risk columns"); the index holds the record ids, named
        ``id_column`` (default: the data's id column given to :func:`score_records`).
        """
        id_column = id_column or self.per_record.attrs.get("id_column", "record")
        ds, cols = self.per_record, {}
        for var in PROBABILITIES:
            for j, key in enumerate(ds["measure"].values):
                cols[f"{var}[{key}]"] = ds[var].values[:, j]
                if var != "share":
                    cols[f"{var}_se[{key}]"] = self.se(var, key)
        for var in HITS:
            for j, key in enumerate(ds["measure"].values):
                for f, form in enumerate(FORMS):
                    cols[f"{var}[{key}/{form}]"] = ds[var].values[:, j, f]
        return pd.DataFrame(cols, index=pd.Index(ds["record"].values, name=id_column))


def _var(p: np.ndarray) -> np.ndarray:
    """Sample variance over implicates (ddof = 1); 0 with a single row (nothing to estimate).

    By blocks of records (:func:`~synthgeo.risk.predictive.record_slices`): (L, block)
    temporaries, the same values as ``p.var(axis=0, ddof=1)``.
    """
    out = np.zeros(p.shape[1])
    if p.shape[0] > 1:
        for cols in record_slices(p.shape[1]):
            out[cols] = p[:, cols].var(axis=0, ddof=1)
    return out


def _cov(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Covariance over implicates paired by index (ddof = 1); 0 when the rows differ.

    By blocks of records, as :func:`_var`.
    """
    out = np.zeros(p.shape[1])
    if p.shape[0] != q.shape[0] or p.shape[0] < 2:
        return out
    for cols in record_slices(p.shape[1]):
        a, b = p[:, cols], q[:, cols]
        out[cols] = np.einsum("ln,ln->n", a - a.mean(axis=0), b - b.mean(axis=0))
    out /= p.shape[0] - 1
    return out


def check_groups(groups: Mapping[str, np.ndarray] | None, n: int) -> dict[str, np.ndarray]:
    """Return ``groups`` as bool masks of shape (n,), named by str, or raise ValueError."""
    out = {}
    for name, mask in (groups or {}).items():
        arr = np.asarray(mask)
        if arr.dtype != bool or arr.shape != (n,):
            raise ValueError(f"group {name!r} must be a bool array of shape ({n},), got "
                             f"{arr.dtype} {arr.shape}.")
        out[str(name)] = arr
    return out


def _probability(pred, y: np.ndarray, m: Measure, g: str) -> np.ndarray:
    """:func:`~synthgeo.risk.rao_blackwell.within_probability` (L, n), by blocks of records.

    ``pred``: a Predictive or anything with its ``columns`` (a PublicBaseline).
    """
    out = np.empty((pred.n_implicates, pred.n_records))
    for cols in record_slices(pred.n_records):
        out[:, cols] = within_probability(pred.columns(cols), y[cols], m, g)
    return out


def _share(Y: np.ndarray, y: np.ndarray, m: Measure, g: str) -> np.ndarray:
    """Realised share of implicates within ``m`` per record, by blocks of records."""
    out = np.empty(Y.shape[1])
    for cols in record_slices(Y.shape[1]):
        out[cols] = within_tolerance(Y[:, cols], y[None, cols], m.kind, m.tol, g).mean(axis=0)
    return out


def _hits(guesses: dict[str, np.ndarray], y: np.ndarray, m: Measure, g: str) -> np.ndarray:
    return np.stack([within_tolerance(guesses[f], y, m.kind, m.tol, g) for f in FORMS], axis=-1)


def score_records(
    truth: np.ndarray, *, synthetic: np.ndarray, release: Predictive, baseline_loo: Predictive,
    baseline_public: Predictive, measures: Sequence[Measure], g: str = "exp",
    record: np.ndarray | None = None, realised: RiskResult | None = None,
    id_column: str = "record", groups: Mapping[str, np.ndarray] | None = None,
) -> RecordRisk:
    """Score every record under the release and both baselines, for every measure.

    Parameters
    ----------
    truth : ndarray of shape (n_records,)
        y, model scale (confidential).
    synthetic : array-like of shape (L, n_records)
        The released implicates Y†, model scale (for the realised share and the release's
        average attack).
    release : Predictive
        The predictive each Y†^(ℓ) was drawn from
        (:func:`~synthgeo.risk.predictive.release_predictive`), same L.
    baseline_loo, baseline_public : Predictive
        :func:`~synthgeo.risk.loo.baseline_loo` and
        :func:`~synthgeo.risk.baselines.baseline_public` (any number of implicates); the
        public one may be a :class:`~synthgeo.risk.baselines.PublicBaseline`
        (:func:`~synthgeo.risk.baselines.public_regression`), whose sd is made by blocks of
        records.
    measures : sequence of Measure
    g : {"exp", "identity"}, default="exp"
        Map to the person's scale.
    record : ndarray of shape (n_records,), optional
        Record ids (default 0..n−1).
    id_column : str, default="record"
        The name of the ids (the data's id column), for :meth:`RecordRisk.to_dataframe`.
    realised : RiskResult, optional
        :func:`~synthgeo.risk.within_eps.within_eps_risk` of the same implicates, truth and
        ``g``: its realised shares are taken, not counted again (a measure it lacks is counted
        here).
    groups : mapping of str to ndarray of bool of shape (n_records,), optional
        Groups whose per-row means are kept (:attr:`RecordRisk.group_rows`), for the Monte
        Carlo se of a group's mean; an empty group is skipped.

    Returns
    -------
    RecordRisk

    Raises
    ------
    ValueError
        If shapes disagree, ``measures`` is empty or repeats, ``g`` is unknown, or
        ``realised`` is of other implicates or another ``g``.

    Examples
    --------
    >>> y = np.zeros(2)
    >>> rel = Predictive(mean=np.zeros((2, 2)), sd=np.full((2, 2), 0.25))
    >>> base = Predictive(mean=np.ones((1, 2)), sd=np.full((1, 2), 0.5))
    >>> rr = score_records(y, synthetic=np.zeros((2, 2)), release=rel, baseline_loo=base,
    ...                    baseline_public=base, measures=[Measure(kind="abs", tol=0.5)],
    ...                    g="identity")
    >>> row = rr.to_dataframe().loc[0, ["share[abs:0.5]", "release[abs:0.5]", "loo[abs:0.5]"]]
    >>> row.round(4).tolist()  # P(|N(0, .25²)| <= .5) = .9545; P(|N(1, .5²)| <= .5) = .1573
    [1.0, 0.9545, 0.1573]
    """
    y = np.asarray(truth, dtype=float)
    Y = np.asarray(getattr(synthetic, "values", synthetic), dtype=float)
    n = y.shape[0]
    measures = tuple(measures)
    if g not in BACK_TRANSFORMS:
        raise ValueError(f"`g` must be one of {BACK_TRANSFORMS!r}, got {g!r}.")
    if not measures or len(set(measures)) != len(measures):
        raise ValueError("`measures` must name at least one measure, none twice.")
    if Y.ndim != 2 or Y.shape[1] != n or not np.all(np.isfinite(Y)):
        raise ValueError(f"`synthetic` must be finite with shape (L, {n}), got {Y.shape}.")
    for pred in (release, baseline_loo, baseline_public):
        if pred.n_records != n:
            raise ValueError(f"predictive {pred.name!r} has {pred.n_records} records, "
                             f"`truth` {n}.")
    if release.n_implicates != Y.shape[0]:
        raise ValueError(f"`release` has {release.n_implicates} implicates, `synthetic` "
                         f"{Y.shape[0]}: pass the predictive the implicates were drawn from.")
    if realised is not None and (realised.transform, realised.n_implicates,
                                 realised.n_records) != (g, Y.shape[0], n):
        raise ValueError("`realised` must be the within-ε risk of these implicates under the "
                         f"same g ({g!r}, L = {Y.shape[0]}, {n} records).")
    _check_truth(y, n)  # here, not per block of records: the count in the message is all
    counted = realised.shares() if realised is not None else {}
    masks = {name: m for name, m in check_groups(groups, n).items() if m.any()}
    # one (n, G) matrix of group weights: the row means of every group in one product, with
    # no (L, n_group) copy per group
    weights = np.stack([m / m.sum() for m in masks.values()], axis=1) if masks else None
    group_rows: dict[tuple[str, str, str], np.ndarray] = {}

    def keep_rows(source: str, key: str, p: np.ndarray) -> None:
        if weights is None:
            return
        means = p @ weights
        for j, name in enumerate(masks):
            group_rows[(name, source, key)] = means[:, j]

    out: dict[str, list] = {v: [] for v in (*PROBABILITIES, *HITS, *MOMENTS)}
    guesses = {"hit_release": synthetic_point_guesses(Y, g),
               "hit_loo": point_guesses(baseline_loo, g),
               "hit_public": point_guesses(baseline_public, g)}
    for m in measures:
        share = counted.get(m.key)
        out["share"].append(_share(Y, y, m, g) if share is None else share)
        p_rel = _probability(release, y, m, g)
        keep_rows("release", m.key, p_rel)
        out["release"].append(p_rel.mean(axis=0))
        out["var_release"].append(_var(p_rel))
        for var, pred in (("loo", baseline_loo), ("public", baseline_public)):
            p = _probability(pred, y, m, g)
            keep_rows(var, m.key, p)
            out[var].append(p.mean(axis=0))
            out[f"var_{var}"].append(_var(p))
            out[f"cov_release_{var}"].append(_cov(p_rel, p))
            del p
        del p_rel
        for var, gs in guesses.items():
            out[var].append(_hits(gs, y, m, g))
    ds = xr.Dataset(
        {**{v: (("record", "measure"), np.stack(out[v], axis=1)) for v in PROBABILITIES},
         **{v: (("record", "measure"), np.stack(out[v], axis=1)) for v in MOMENTS},
         **{v: (("record", "measure", "form"), np.stack(out[v], axis=1)) for v in HITS}},
        coords={"record": np.arange(n) if record is None else np.asarray(record),
                "measure": [m.key for m in measures], "form": list(FORMS)},
        attrs={"g": g, "n_implicates": int(Y.shape[0]), "id_column": str(id_column),
               "n_rows": (release.n_implicates, baseline_loo.n_implicates,
                          baseline_public.n_implicates)},
    )
    return RecordRisk(per_record=ds, measures=measures, g=g, n_implicates=int(Y.shape[0]),
                      group_rows=group_rows)
