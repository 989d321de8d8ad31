"""The general-utility stage: pMSE of every implicate and pooled, both models.

docs/risk-and-utility.md, "General utility: pMSE". The algorithm is
:mod:`synthgeo.utility.pmse`; this stage builds its inputs from a release (the released
variables: the covariates as released and the responses on the model scale, the record
coordinates in metres), runs it on both models' implicates with the spec's ``[utility]
pmse_*`` keys, and holds the result for release.json (``utility.general``) and the report.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from synthgeo._repr import confidential_repr
from synthgeo.config import ReleaseSpec
from synthgeo.utility.pmse import PMSEResult, grid_regions, pmse_by_variable, pmse_scores

__all__ = ["GeneralUtility", "general_utility", "REGION_CELLS", "BREAKDOWN_IMPLICATES",
           "SEED_KEY"]

#: Cells per axis of the per-region breakdown's grid (equal width over the records' extent).
REGION_CELLS = 6
#: Implicates behind the per-variable breakdown (its first ones): one propensity model per
#: variable each, so all L would multiply the stage's time by the number of variables.
BREAKDOWN_IMPLICATES = 10
#: Spawn key of the stage's random stream under the run's seed (the permutations): apart from
#: the synthesis streams, so adding or changing this stage moves no released value.
SEED_KEY = (0x504D5345,)  # "PMSE"


@dataclass(frozen=True, kw_only=True, eq=False)
class GeneralUtility:
    """pMSE, pMSE ratio, S_pMSE and SPECKS of both models, with the breakdowns.

    Attributes
    ----------
    by_model : dict of str to PMSEResult
        ``"unrestricted"`` and ``"restricted"``: every implicate, and the per-region table.
    by_variable : dict of str to pandas.DataFrame
        Per model, :func:`~synthgeo.utility.pmse.pmse_by_variable` over the first
        ``n_breakdown_implicates`` implicates.
    regions : pandas.DataFrame
        The grid cells of the per-region breakdown (metres, projected CRS): ``region, x_min_m,
        x_max_m, y_min_m, y_max_m, n_records``; cells with fewer than ``min_region_records``
        records are not reported.
    settings : dict
        The propensity model and null as run (``terms, coordinates, spline_df,
        n_permutations, null_max_pairs, n_null_pairs, n_pairs, formula, n_params,
        region_cells, min_region_records, n_breakdown_implicates``).
    seconds : float
        Wall time of the stage.
    """

    by_model: dict[str, PMSEResult]
    by_variable: dict[str, pd.DataFrame]
    regions: pd.DataFrame
    settings: dict
    seconds: float

    def __repr__(self) -> str:
        """Pooled ratios only."""
        return confidential_repr(self, **{f"ratio_{m}": round(r.pooled()["ratio"], 3)
                                          for m, r in self.by_model.items()})

    def pooled(self) -> pd.DataFrame:
        """Return one row per model: the means over its implicates, and ``n_implicates``.

        The columns ``pmse, null_mean, null_sd, ratio, s_pmse, specks`` are means over the
        implicates (the pooled figures).
        """
        return pd.DataFrame([{"model": m, "n_implicates": len(r.by_implicate), **r.pooled()}
                             for m, r in self.by_model.items()])

    def summary_line(self, labels: dict[str, str] | None = None) -> str:
        """Return the console's line: each model's pooled ratio, S_pMSE and SPECKS.

        ``labels`` renames models in the line (e.g. ``{"restricted": "cross_fitted"}``).
        """
        names = labels or {}
        parts = [f"{names.get(m, m)} ratio {r['ratio']:.2f}, S_pMSE {r['s_pmse']:.2f}, "
                 f"SPECKS {r['specks']:.3f}"
                 for m, r in ((m, res.pooled()) for m, res in self.by_model.items())]
        return "general utility (pMSE against the paired null, mean over implicates): " + \
            "; ".join(parts)

    def by_implicate(self) -> pd.DataFrame:
        """Return every implicate of both models (``model`` column first)."""
        return pd.concat([r.by_implicate.assign(model=m)[["model", *r.by_implicate.columns]]
                          for m, r in self.by_model.items()], ignore_index=True)

    def by_region(self) -> pd.DataFrame:
        """Return the per-region table of both models, with each cell's bounds (metres)."""
        cols = [*self.regions.columns, "pmse", "null_mean", "ratio", "model"]
        parts = [self.regions.merge(r.by_region.drop(columns="n_records"), on="region")
                 .assign(model=m) for m, r in self.by_model.items() if r.by_region is not None]
        return pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(columns=cols)

    def to_record(self) -> dict:
        """Return the release.json block ``utility.general`` (aggregates only)."""
        return {
            "method": "logistic propensity model, pMSE (Woo et al. 2009); ratio and S_pMSE "
                      "against the paired permutation null (labels swapped within each "
                      "confidential/synthetic pair; Snoke et al. 2018); SPECKS = KS distance "
                      "of the propensity scores (docs/risk-and-utility.md)",
            **self.settings,
            "pooled": self.pooled().to_dict("records"),
            "by_implicate": self.by_implicate().to_dict("records"),
            "by_variable": pd.concat([t.assign(model=m) for m, t in self.by_variable.items()],
                                     ignore_index=True).to_dict("records"),
            "by_region": self.by_region().to_dict("records"),
            "seconds": self.seconds,
        }


def general_utility(
    spec: ReleaseSpec, covariates: pd.DataFrame, truth: Mapping[str, np.ndarray],
    synthetic: Mapping[str, Mapping[str, np.ndarray]], coords_m: np.ndarray, *, seed,
) -> GeneralUtility:
    """Score both models' implicates by pMSE against the paired null (``[utility] pmse_*``).

    Parameters
    ----------
    spec : ReleaseSpec
        ``[utility] pmse_terms, pmse_coordinates, pmse_spline_df, pmse_permutations,
        pmse_null_max_pairs``; ``[anonymity] k`` (the smallest region reported has
        max(10, k) records).
    covariates : pandas.DataFrame with n_records rows
        The variables released unchanged.
    truth : dict of str to ndarray of shape (n_records,)
        The confidential values of each synthesized response (model scale).
    synthetic : dict of str to dict of str to ndarray of shape (L, n_records)
        Per model, per response, the implicates (model scale).
    coords_m : ndarray of shape (n_records, 2)
        Record coordinates, metres.
    seed : int or None
        The run's seed; the stage's stream is ``SeedSequence(seed, spawn_key=SEED_KEY)``.

    Returns
    -------
    GeneralUtility
    """
    t0 = time.perf_counter()
    u = spec.utility
    names = list(truth)
    conf = pd.concat([pd.DataFrame({k: np.asarray(v, float) for k, v in truth.items()}),
                      covariates.reset_index(drop=True).drop(columns=names, errors="ignore")],
                     axis=1)
    min_records = max(10, int(spec.anonymity.k))
    labels, cells = grid_regions(coords_m, n_cells=REGION_CELLS, min_records=min_records)
    root = np.random.SeedSequence(seed, spawn_key=SEED_KEY)
    options = dict(synthesized=names, coords_m=coords_m, coordinates=u.pmse_coordinates,
                   spline_df=u.pmse_spline_df, n_permutations=u.pmse_permutations,
                   null_max_pairs=u.pmse_null_max_pairs)
    by_model, by_variable = {}, {}
    for model, ss in zip(synthetic, root.spawn(len(synthetic))):
        values = {k: np.atleast_2d(np.asarray(v, float)) for k, v in synthetic[model].items()}
        n_impl = next(iter(values.values())).shape[0]
        frames = [{k: v[i] for k, v in values.items()} for i in range(n_impl)]  # implicate i
        s_all, s_var = ss.spawn(2)
        by_model[model] = pmse_scores(conf, frames, terms=u.pmse_terms, regions=labels,
                                      random_seed=s_all, **options)
        by_variable[model] = pmse_by_variable(conf, frames[:BREAKDOWN_IMPLICATES],
                                              random_seed=s_var, **options)
    first = next(iter(by_model.values()))
    settings = {"terms": u.pmse_terms, "coordinates": u.pmse_coordinates,
                "spline_df": u.pmse_spline_df, "n_permutations": u.pmse_permutations,
                "null_max_pairs": u.pmse_null_max_pairs, "n_pairs": first.n_pairs,
                "n_null_pairs": first.n_null_pairs, "formula": first.formula,
                "n_params": first.n_params, "region_cells": REGION_CELLS,
                "min_region_records": min_records,
                "n_breakdown_implicates": min(BREAKDOWN_IMPLICATES, len(first.by_implicate))}
    return GeneralUtility(by_model=by_model, by_variable=by_variable, regions=cells,
                          settings=settings, seconds=time.perf_counter() - t0)
