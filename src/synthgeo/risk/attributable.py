r"""Attributable risk by group: the release minus the stronger baseline, both models, both attacks.

For a group G of records, a measure and an attack (docs/risk-and-utility.md, "Baseline and
attributable risk"; Reiter, Wang & Zhang 2014, doi:10.29012/jpc.v6i1.635; the control-attack
principle of Giomi et al. 2022, doi:10.56553/popets-2023-0055):

.. math::

    a_i = r^{release}_i - r^{b^*}_i, \qquad a_G = \bar a_G, \qquad
    b^* = \arg\max_{b} \tfrac{1}{|\mathcal M|}\sum_{model \in \mathcal M} \bar r^{\,b}_{model},

- ``attack = "share"``: r^release is the Rao-Blackwellised risk r̃_i and the baselines
  b ∈ {loo, public} their exact probabilities; the realised share is shown beside it;
- ``attack = "average"``: r is the 0/1 hit of the average attack's point guess; the release uses
  its stronger form (geometric or arithmetic, per model, chosen on all records), the baselines
  b ∈ {loo, public} × {geometric, arithmetic}.

**One baseline rule.** b* is chosen **once per measure and attack, on all records**, by its mean
over the models, and used for every model, every group row and every per-record a_i (hence
for the verdict and the risk rule): a group's ``largest_attributable`` is the largest of the
verdict's a_i over the same records. The group's own stronger baseline is not chosen again
(that made the at-risk group's largest and the verdict's largest disagree). a may be negative:
the release then tells less than the baseline.

**Monte Carlo error** (:meth:`AttributableSummary.record_attributable_se`): for the share attack

.. math::

    se(a_i)^2 = \frac{s^2_{p,i}}{L_p} + \frac{s^2_{b,i}}{L_b} - 2\,\frac{c_{pb,i}}{L},

with s² the sample variances over implicates of the exact probabilities of the release and of
b*, and c their covariance paired by implicate index (0 when b* has another number of rows;
:mod:`synthgeo.risk.records`). The average attack's a_i are 0/1 outcomes of the file actually
released and of the baselines' point guesses: they are not Monte Carlo estimates of a
probability and get se = 0 (their variability over other releases is what the share attack
measures). A group's average-attack figure is a **rate** (the share of its records hit); its
``largest_attributable`` is not reported (NaN): the largest of 0/1 outcomes is 1 whenever one
record is hit, which reads as "100 % attributable".

**A group's mean** (``attributable_se``): records share posterior draws, so the se of the mean
is not the records' se averaged. From the per-row group means of
:attr:`~synthgeo.risk.records.RecordRisk.group_rows` (release rows p̄_ℓ, baseline rows b̄_ℓ),
se(ā_G)² = s²(p̄_ℓ − b̄_ℓ)/L when both have L rows (paired by implicate index), else
s²(p̄)/L_p + s²(b̄)/L_b; NaN when the rows were not kept. **Two models' difference**
(:meth:`AttributableSummary.difference`): the same, over the paired rows of both models (with
common random numbers, their shared noise cancels); for the average attack, the paired 0/1
hits over the group's records, se = s(h^r_i − h^u_i)/√n (how much the realised file's rate
could differ by chance, records as the replicates).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from synthgeo.risk.baselines import FORMS
from synthgeo.risk.records import RecordRisk, check_groups

__all__ = ["AttributableSummary", "attributable_summary", "ATTACKS", "SUMMARY_COLUMNS"]

ATTACKS = ("share", "average")
SUMMARY_COLUMNS = (
    "model", "group", "measure", "attack", "n_records", "release", "release_realised",
    "release_form", "baseline_loo", "baseline_public", "baseline_source", "baseline",
    "attributable", "attributable_se", "largest_attributable", "loo_stronger_share",
)


def _per_record(rr: RecordRisk, key: str, attack: str, source: str) -> np.ndarray:
    """Per-record risk (n,) of `source` ("release", "loo", "public", "loo/arithmetic", ...)."""
    ds = rr.per_record.sel(measure=key)
    if attack == "share":
        return ds[source].values.astype(float)
    name, _, form = source.partition("/")
    return ds[f"hit_{name}"].sel(form=form).values.astype(float)


def _candidates(attack: str) -> list[str]:
    if attack == "share":
        return ["loo", "public"]
    return [f"{b}/{f}" for b in ("loo", "public") for f in FORMS]


@dataclass(frozen=True, kw_only=True, eq=False)
class AttributableSummary:
    """Release, baselines and attributable risk by model, group, measure and attack.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per model × group × measure × attack, columns :data:`SUMMARY_COLUMNS`:
        ``release`` (mean r̃ for "share"; for "average" the hit share of the form chosen on
        all records), ``release_realised`` (mean realised share; NaN for "average"),
        ``release_form``, ``baseline_loo`` and ``baseline_public`` (descriptive: for
        "average" each one's stronger form in the group), ``baseline_source`` (b*, the same
        for every group), ``baseline`` (its mean), ``attributable`` (mean a_i),
        ``largest_attributable`` (max a_i in the group: the verdict's a_i, the same b*),
        ``loo_stronger_share`` (share of
        records whose LOO probability ≥ the public one; "share" only). Empty groups: NaN.
    choices : dict
        (measure key, attack) → b*, chosen on all records (one baseline rule).
    records : dict of str to RecordRisk
        The per-record inputs, by model (confidential).
    groups : dict of str to ndarray of bool
    """

    table: pd.DataFrame
    choices: dict[tuple[str, str], str]
    records: dict[str, RecordRisk] = field(repr=False)
    groups: dict[str, np.ndarray] = field(repr=False)

    def to_dataframe(self) -> pd.DataFrame:
        """Return the summary table (a copy)."""
        return self.table.copy()

    def release_form(self, model: str, key: str) -> str:
        """Return the average attack's stronger form for ``model``, chosen on all records."""
        rr = self.records[model]
        shares = [_per_record(rr, key, "average", f"release/{f}").mean() for f in FORMS]
        return FORMS[int(np.argmax(shares))]

    def _release_source(self, model: str, key: str, attack: str) -> str:
        return "release" if attack == "share" else f"release/{self.release_form(model, key)}"

    def record_attributable(self, model: str, key: str, attack: str = "share") -> np.ndarray:
        """Per-record a_i (n_records,) against the one baseline b* of ``key`` and ``attack``.

        Raises
        ------
        KeyError
            For an unknown model, measure key or attack.
        """
        source = self.choices[(key, attack)]
        rr = self.records[model]
        rel = self._release_source(model, key, attack)
        return _per_record(rr, key, attack, rel) - _per_record(rr, key, attack, source)

    def record_attributable_se(self, model: str, key: str, attack: str = "share") -> np.ndarray:
        r"""Monte Carlo se (n_records,) of :meth:`record_attributable` (module docstring).

        √(s²_p/L_p + s²_b/L_b − 2 c_pb/L) for the share attack, with the covariance of the
        release's and b*'s exact probabilities paired by implicate; 0 for the average attack.

        Raises
        ------
        KeyError
            For an unknown model, measure key or attack.

        Examples
        --------
        >>> from synthgeo.risk.measure import Measure
        >>> from synthgeo.risk.predictive import Predictive
        >>> from synthgeo.risk.records import score_records
        >>> rel = Predictive(mean=np.array([[0.0], [2.0]]), sd=np.ones((2, 1)))
        >>> base = Predictive(mean=np.array([[0.5], [2.5]]), sd=np.ones((2, 1)))
        >>> rr = score_records(np.zeros(1), synthetic=np.zeros((2, 1)), release=rel,
        ...                    baseline_loo=base, baseline_public=base,
        ...                    measures=[Measure(kind="abs", tol=1.0)], g="identity")
        >>> s = attributable_summary({"m": rr})
        >>> bool(s.record_attributable_se("m", "abs:1")[0] < rr.se("release", "abs:1")[0])
        True
        """
        source = self.choices[(key, attack)]
        rr = self.records[model]
        if attack != "share":
            return np.zeros(rr.n_records)
        ds = rr.per_record.sel(measure=key)
        L_p, L_b = rr.n_rows("release"), rr.n_rows(source)
        var = ds["var_release"].values / L_p + ds[f"var_{source}"].values / L_b
        if L_p == L_b:
            var = var - 2.0 * ds[f"cov_release_{source}"].values / L_p
        return np.sqrt(np.clip(var, 0.0, None))

    def difference(self, group: str, key: str, attack: str = "share",
                   first: str = "unrestricted", second: str = "restricted"
                   ) -> tuple[float, float]:
        """Group mean attributable risk of ``second`` minus ``first``, and its Monte Carlo se.

        Returns
        -------
        (difference, se) : tuple of float
            In probability units (×100 for percentage points). se is NaN when the group's rows
            were not kept (:func:`~synthgeo.risk.records.score_records` without ``groups``);
            NaN, NaN for an empty group.

        Raises
        ------
        KeyError
            For an unknown group, model, measure key or attack.

        Examples
        --------
        >>> from synthgeo.risk.measure import Measure
        >>> from synthgeo.risk.predictive import Predictive
        >>> from synthgeo.risk.records import score_records
        >>> def score(mean):
        ...     rel = Predictive(mean=np.array(mean), sd=np.ones((2, 1)))
        ...     base = Predictive(mean=np.full((2, 1), 3.0), sd=np.ones((2, 1)))
        ...     return score_records(np.zeros(1), synthetic=np.zeros((2, 1)), release=rel,
        ...                          baseline_loo=base, baseline_public=base,
        ...                          measures=[Measure(kind="abs", tol=1.0)], g="identity",
        ...                          groups={"all": np.ones(1, bool)})
        >>> s = attributable_summary({"u": score([[0.0], [2.0]]), "r": score([[0.0], [2.0]])})
        >>> s.difference("all", "abs:1", first="u", second="r")  # identical models
        (0.0, 0.0)
        """
        mask = self.groups[group]
        if not mask.any():
            return float("nan"), float("nan")
        a = {m: self.record_attributable(m, key, attack)[mask] for m in (first, second)}
        diff = float(a[second].mean() - a[first].mean())
        if attack != "share":
            d = a[second] - a[first]
            return diff, (float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else 0.0)
        rows = {m: _group_rows(self.records[m], group, key, self.choices[(key, attack)])
                for m in (first, second)}
        if any(r is None for r in rows.values()):
            return diff, float("nan")
        (p1, b1), (p2, b2) = rows[first], rows[second]
        if len({p1.size, b1.size, p2.size, b2.size}) == 1:
            return diff, _mean_se((p2 - b2) - (p1 - b1))
        return diff, float(np.sqrt(sum(_mean_se(x) ** 2 for x in (p1, b1, p2, b2))))


def _mean_se(rows: np.ndarray) -> float:
    """Monte Carlo se of the mean of ``rows`` (ddof = 1); 0 for a single row."""
    return float(rows.std(ddof=1) / np.sqrt(rows.size)) if rows.size > 1 else 0.0


def _group_rows(rr: RecordRisk, group: str, key: str, source: str):
    """(release rows, baseline rows) of a group kept by score_records, or None."""
    rel, base = (rr.group_rows.get((group, s, key)) for s in ("release", source))
    return None if rel is None or base is None else (rel, base)


def _attributable_se(rr: RecordRisk, group: str, key: str, source: str) -> float:
    rows = _group_rows(rr, group, key, source)
    if rows is None:
        return float("nan")
    rel, base = rows
    if rel.size == base.size:
        return _mean_se(rel - base)
    return float(np.sqrt(_mean_se(rel) ** 2 + _mean_se(base) ** 2))


def _row(rrs, name, gname, mask, key, attack, source, form) -> dict:
    rr = rrs[name]
    nan = float("nan")
    base = {"model": name, "group": gname, "measure": key, "attack": attack,
            "n_records": int(mask.sum())}
    if not mask.any():
        return base | {c: nan for c in SUMMARY_COLUMNS[5:]} | {"release_form": "",
                                                               "baseline_source": ""}
    if attack == "share":
        rel, form = _per_record(rr, key, attack, "release"), ""
        loo, pub = (_per_record(rr, key, attack, b) for b in ("loo", "public"))
        realised = float(_per_record(rr, key, attack, "share")[mask].mean())
        loo_stronger = float((loo[mask] >= pub[mask]).mean())
        loo_m, pub_m = float(loo[mask].mean()), float(pub[mask].mean())
    else:
        rel = _per_record(rr, key, attack, f"release/{form}")
        realised, loo_stronger = nan, nan
        loo_m, pub_m = (max(_per_record(rr, key, attack, f"{b}/{f}")[mask].mean()
                            for f in FORMS) for b in ("loo", "public"))
    b = _per_record(rr, key, attack, source)
    a = rel[mask] - b[mask]
    return base | {
        "release": float(rel[mask].mean()), "release_realised": realised, "release_form": form,
        "baseline_loo": float(loo_m), "baseline_public": float(pub_m),
        "baseline_source": source, "baseline": float(b[mask].mean()),
        "attributable": float(a.mean()),
        # the average attack's rate is a fact of the file released, not a Monte Carlo
        # estimate: no se (the models' difference gets the records' paired se, `difference`)
        "attributable_se": (_attributable_se(rr, gname, key, source) if attack == "share"
                            else nan),
        # a 0/1 attack reports its rate; the largest of 0/1 hits would read "100 %"
        "largest_attributable": float(a.max()) if attack == "share" else nan,
        "loo_stronger_share": loo_stronger,
    }


def _check_groups(groups: Mapping[str, np.ndarray] | None, n: int) -> dict[str, np.ndarray]:
    return {"all": np.ones(n, bool), **check_groups(groups, n)}


def attributable_summary(records: Mapping[str, RecordRisk],
                         groups: Mapping[str, np.ndarray] | None = None) -> AttributableSummary:
    """Attributable risk by group for one or more models scored on the same records.

    Parameters
    ----------
    records : mapping of str to RecordRisk
        By model (e.g. ``{"unrestricted": ..., "restricted": ...}``), same records, same
        measures, same g.
    groups : mapping of str to ndarray of bool, optional
        Groups besides ``"all"`` (always first), e.g. ``{"at_risk": mask, "other": ~mask}``.

    Returns
    -------
    AttributableSummary

    Raises
    ------
    ValueError
        If ``records`` is empty, the models disagree on records, measures or g, or a group
        mask is not bool of the right length.

    Examples
    --------
    >>> import xarray as xr
    >>> from synthgeo.risk.measure import Measure
    >>> from synthgeo.risk.predictive import Predictive
    >>> from synthgeo.risk.records import score_records
    >>> y = np.zeros(2); m = Measure(kind="abs", tol=0.5)
    >>> rel = Predictive(mean=np.zeros((1, 2)), sd=np.full((1, 2), 1e-9))
    >>> loo = Predictive(mean=np.array([[0.0, 9.0]]), sd=np.full((1, 2), 1e-9))
    >>> pub = Predictive(mean=np.full((1, 2), 9.0), sd=np.ones((1, 2)))
    >>> rr = score_records(y, synthetic=np.zeros((1, 2)), release=rel, baseline_loo=loo,
    ...                    baseline_public=pub, measures=[m], g="identity")
    >>> s = attributable_summary({"unrestricted": rr})
    >>> row = s.table.query("attack == 'share'").iloc[0]
    >>> row["baseline_source"], float(row["attributable"]), float(row["largest_attributable"])
    ('loo', 0.5, 1.0)
    """
    if not records:
        raise ValueError("`records` must hold at least one model's RecordRisk.")
    rrs = dict(records)
    first = next(iter(rrs.values()))
    for name, rr in rrs.items():
        if (rr.n_records, rr.measures, rr.g) != (first.n_records, first.measures, first.g):
            raise ValueError(f"model {name!r} was scored on other records, measures or g than "
                             "the first model; score every model the same way.")
    masks = _check_groups(groups, first.n_records)
    choices = {}
    for key in (m.key for m in first.measures):
        for attack in ATTACKS:  # one baseline rule: b* on all records, mean over the models
            cands = _candidates(attack)
            strength = [np.mean([_per_record(rr, key, attack, c).mean() for rr in rrs.values()])
                        for c in cands]
            choices[(key, attack)] = cands[int(np.argmax(strength))]
    out = AttributableSummary(table=pd.DataFrame(), choices=choices, records=rrs, groups=masks)
    rows = []
    for key in (m.key for m in first.measures):
        for attack in ATTACKS:
            for gname, mask in masks.items():
                for name in rrs:
                    form = "" if attack == "share" else out.release_form(name, key)
                    rows.append(_row(rrs, name, gname, mask, key, attack,
                                     choices[(key, attack)], form))
    table = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    return AttributableSummary(table=table, choices=choices, records=rrs, groups=masks)
