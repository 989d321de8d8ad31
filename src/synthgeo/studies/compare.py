"""The methodologist's comparison: unrestricted, restricted and suppressed fits on one data set.

Reproduces the tables of Quick, Holan & Wikle (2018, JRSS-A 181(3), doi:10.1111/rssa.12360):
Table 1/2 analogue (posterior summaries of β, σ², τ², φ per model; Reiter (2003) estimates of
the analyst's model with CI overlap against the confidential OLS fit), the risk table
(within-ε risk by group, reduction against the unrestricted model, implicate-average attack)
and the spatial utility measures of docs/risk-and-utility.md.

The **suppressed** baseline (docs/model.md) drops the at-risk records, fits the
unrestricted model on the rest and synthesises the rest: the at-risk records are not released
at all (their risk is reported as "not released", NaN), its Reiter estimates use the released
records and are compared with the confidential OLS fit on *all* records, as the paper does.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from synthgeo._seed import resolve_seed
from synthgeo.config import ReleaseSpec
from synthgeo.inference.result import GPFit
from synthgeo.io.atomic import write_folder
from synthgeo.io.points import coordinates_m
from synthgeo.io.provenance import provenance
from synthgeo.model.kernels import make_sites
from synthgeo.pipeline import PreparedData, ReleaseResult, as_spec, make_fitter, run_release
from synthgeo.pipeline.run import _warm_start
from synthgeo.risk.within_eps import _label, within_eps_risk
from synthgeo.synthesis.implicates import draw_implicates
from synthgeo.utility.reiter import compare_to_confidential
from synthgeo.utility.spatial import spatial_utility_tables

__all__ = ["ComparisonResult", "compare_models", "posterior_summary", "subset_data",
           "write_comparison"]

log = logging.getLogger(__name__)

MODELS3 = ("unrestricted", "restricted", "suppressed")

#: The record that marks a folder as a comparison (an earlier one may be overwritten).
COMPARISON_RECORD = "comparison.json"


@dataclass(frozen=True, kw_only=True, eq=False)
class ComparisonResult:
    """Three fits on one data set and their tables (see :func:`compare_models`).

    Attributes
    ----------
    release : ReleaseResult
        The unrestricted and restricted fits, at-risk set, implicates, risk and utility.
    suppressed_fit : GPFit
        Unrestricted model fitted to the records that are not at risk.
    suppressed_implicates : xarray.Dataset
        ``y_synthetic`` (implicate, record) over the kept records only.
    kept : ndarray of bool, shape (n_records,)
        Records the suppressed baseline releases.
    posterior : pandas.DataFrame
        Posterior summaries per model and parameter (:func:`posterior_summary`).
    utility : pandas.DataFrame
        Reiter (2003) table: ``model, term, estimate, se, lower, upper, df, ci_overlap,
        std_diff`` (confidential OLS first).
    risk : pandas.DataFrame
        One row per group × measure × model: ``n_records``, ``n_released``, ``mean_risk``,
        ``reduction`` (1 − mean / mean unrestricted over the same records), ``attack_share``.
    at_risk_records : pandas.DataFrame
        Per at-risk record: truth, each model's synthetic mean and sd (model scale), and risk.
    spatial : dict of str to pandas.DataFrame
        ``semivariogram`` and ``morans_i``
        (:func:`synthgeo.utility.spatial.spatial_utility_tables`).
    seconds : dict
        Wall time per stage.
    """

    release: ReleaseResult
    suppressed_fit: GPFit
    suppressed_implicates: xr.Dataset
    kept: np.ndarray
    posterior: pd.DataFrame
    utility: pd.DataFrame
    risk: pd.DataFrame
    at_risk_records: pd.DataFrame
    spatial: dict[str, pd.DataFrame]
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def fits(self) -> dict[str, GPFit]:
        """The three fits by model name."""
        return {**self.release.fits, "suppressed": self.suppressed_fit}

    def tables(self) -> dict[str, pd.DataFrame]:
        """All tables by name (the CLI prints and writes them)."""
        return {"posterior": self.posterior, "utility": self.utility, "risk": self.risk,
                "at_risk_records": self.at_risk_records, **self.spatial}


def subset_data(data: PreparedData, keep: np.ndarray) -> PreparedData:
    """Restrict the prepared data to the records in ``keep`` (sites rebuilt).

    Parameters
    ----------
    data : PreparedData
    keep : ndarray of bool, shape (n_records,)

    Returns
    -------
    PreparedData
    """
    keep = np.asarray(keep, bool)
    gdf = data.gdf.loc[keep]
    return dataclasses.replace(
        data, gdf=gdf, y=data.y[keep], X=data.X[keep],
        sites=make_sites(coordinates_m(gdf)), frame=data.frame.loc[keep].reset_index(drop=True),
        record_id=data.record_id[keep],
    )


def posterior_summary(fits: dict[str, GPFit]) -> pd.DataFrame:
    """Posterior mean, sd and 2.5/50/97.5% quantiles of β, σ², τ², φ and the range per model.

    Parameters
    ----------
    fits : dict of str to GPFit

    Returns
    -------
    pandas.DataFrame
        Columns ``model, parameter, mean, sd, q2.5, q50, q97.5``. Parameters ``beta[<term>]``,
        ``sigma2`` (partial sill), ``tau2`` (nugget), ``phi_per_km`` (decay, 1/km: the paper's
        φ per unit of its unit square), ``range_m`` (effective range 3/φ, metres), and for a
        restricted fit with γ = "auto" ``gamma_auto`` = max(0, σ²/τ² − 1) per draw.
    """
    rows = []
    for model, fit in fits.items():
        post = fit.posterior
        series = {f"beta[{c}]": post["beta"].sel(coef=c).values.ravel()
                  for c in post["coef"].values}
        series.update({"sigma2": post["sigma2"].values.ravel(),
                       "tau2": post["nugget"].values.ravel(),
                       "phi_per_km": post["phi"].values.ravel() * 1000.0,
                       "range_m": post["range"].values.ravel()})
        if fit.smoothing is not None and fit.smoothing.gamma == "auto":
            ratio = (post["sigma2"] / post["nugget"]).values.ravel()
            series["gamma_auto"] = np.maximum(0.0, ratio - 1.0)
        for name, v in series.items():
            q = np.quantile(v, [0.025, 0.5, 0.975])
            rows.append({"model": model, "parameter": name, "mean": float(v.mean()),
                         "sd": float(v.std(ddof=1)), "q2.5": q[0], "q50": q[1], "q97.5": q[2]})
    return pd.DataFrame(rows)


def _risk_table(release: ReleaseResult, supp_risk, kept: np.ndarray) -> pd.DataFrame:
    at = np.asarray(release.at_risk.at_risk, bool)
    groups = {"at_risk": at, "other": ~at, "all": np.ones_like(at)}
    res = {"unrestricted": release.risk["unrestricted"], "restricted": release.risk["restricted"]}
    n = at.size
    rows = []
    measures = [("abs", "eps", e) for e in res["unrestricted"].eps] + \
               [("rel", "p", p) for p in res["unrestricted"].p]
    for kind, dim, tol in measures:
        def per_record(r, kind=kind, dim=dim, tol=tol):
            ds = r.per_record
            return (ds[f"risk_{kind}"].sel({dim: tol}).values,
                    ds[f"attack_{kind}"].sel({dim: tol}).values.astype(float))
        base_r, _ = per_record(res["unrestricted"])
        vals = {m: per_record(r) for m, r in res.items()}
        sr, sa = (np.full(n, np.nan), np.full(n, np.nan))
        r_k, a_k = per_record(supp_risk)
        sr[kept], sa[kept] = r_k, a_k
        vals["suppressed"] = (sr, sa)
        for g, mask in groups.items():
            for model in MODELS3:
                r, a = vals[model]
                released = mask & np.isfinite(r)
                mean = float(r[released].mean()) if released.any() else np.nan
                base = float(base_r[released].mean()) if released.any() else np.nan
                if model == "suppressed" and (mask & ~released).any():
                    # records not released carry no risk: count them as 0 in the reduction
                    mean_all = float(np.nan_to_num(r[mask]).mean())
                    red = 1.0 - mean_all / float(base_r[mask].mean()) if base_r[mask].mean() \
                        > 0 else np.nan
                else:
                    red = 1.0 - mean / base if base and base > 0 else np.nan
                rows.append({
                    "group": g, "measure": _label(kind, tol), "model": model,
                    "n_records": int(mask.sum()), "n_released": int(released.sum()),
                    "mean_risk": mean, "reduction": red,
                    "attack_share": float(a[released].mean()) if released.any() else np.nan,
                })
    return pd.DataFrame(rows)


def _at_risk_records(release: ReleaseResult, supp: xr.Dataset, kept: np.ndarray) -> pd.DataFrame:
    at = np.flatnonzero(release.at_risk.at_risk)
    data = release.data
    out = pd.DataFrame({"record": data.record_id[at], "truth": data.y[at]})
    for model in ("unrestricted", "restricted"):
        ys = release.implicates[model]["y_synthetic"].values[:, at]
        out[f"{model}_mean"] = ys.mean(axis=0)
        out[f"{model}_sd"] = ys.std(axis=0, ddof=1)
        rr = release.risk[model].per_record["risk_rel"].values[at, 0]
        out[f"{model}_risk_rel"] = rr
    out["suppressed"] = "not released"
    return out


def compare_models(spec: ReleaseSpec | str | os.PathLike, *, points=None, fitter=None,
                   progress=None, n_bins: int = 12, moran_k: int = 8) -> ComparisonResult:
    """Fit unrestricted, restricted and suppressed models on the spec's data; build the tables.

    Parameters
    ----------
    spec : ReleaseSpec or path
        A validated spec or its TOML file (its ``[model]`` section defines the restricted model
        and the at-risk rule; the suppressed baseline drops the at-risk records of that rule).
    points : geopandas.GeoDataFrame, optional
        Records already in memory (as :func:`synthgeo.synthesize`); default: the spec's file.
    fitter : callable, optional
        Replaces the spec's inference engine for all three fits (see
        :data:`synthgeo.pipeline.Fitter`).
    progress : callable, optional
        ``progress(message)`` per stage.
    n_bins : int, default=12
        Semivariogram lag bins up to half the largest inter-record distance (metres).
    moran_k : int, default=8
        Neighbours in Moran's I k-NN weights.

    Returns
    -------
    ComparisonResult

    Raises
    ------
    synthgeo.InputError, synthgeo.SpecError, synthgeo.ConvergenceError
        As :func:`synthgeo.pipeline.run_release`; ``SpecError`` also when every record is at
        risk (nothing left for the suppressed baseline).
    """
    say, spec = progress or log.info, as_spec(spec)
    t0 = time.perf_counter()
    # the comparison prints no pMSE: the release's general utility is not computed
    release = run_release(spec, points=points, progress=say, fitter=fitter,
                          general_utility=False)
    seconds = {"release": time.perf_counter() - t0}
    data = release.data
    kept = ~np.asarray(release.at_risk.at_risk, bool)
    if kept.sum() < 3:
        from synthgeo._errors import SpecError

        raise SpecError(f"{int((~kept).sum())} of {kept.size} records are at risk: too few left "
                        "for the suppressed baseline; lower `[model] rho0` or set `M_m`")
    say(f"fitting the suppressed baseline ({int(kept.sum())} records, "
        f"{int((~kept).sum())} at-risk records dropped)")
    t = time.perf_counter()
    sub = subset_data(data, kept)
    seeds = np.random.SeedSequence([resolve_seed(spec.sampling.seed), 3]).spawn(2)
    # the suppressed posterior differs from the unrestricted one by the at-risk records only:
    # its grid starts on the unrestricted fit's final box (its own checks still decide)
    fit = make_fitter(spec, sub, fitter=fitter)(random_seed=int(seeds[0].generate_state(1)[0]),
                                                label="suppressed",
                                                **_warm_start(spec, fitter,
                                                              release.fits["unrestricted"]))
    supp = draw_implicates(fit, sub.X, n_implicates=spec.synthesis.n_implicates,
                           record_id=sub.record_id, random_seed=seeds[1],
                           scheduler=spec.compute.scheduler)
    seconds["fit_suppressed"] = time.perf_counter() - t
    t = time.perf_counter()
    supp_risk = within_eps_risk(supp["y_synthetic"], sub.y, eps=spec.risk.eps, p=spec.risk.p,
                                transform=spec.data.back_transform)
    risk = _risk_table(release, supp_risk, kept)
    util = release.utility.copy()
    conf = util[util["model"] == "confidential"]
    est = compare_to_confidential(spec.formula, {"suppressed": supp["y_synthetic"]}, sub.frame,
                                  response=spec.data.response, truth=sub.y,
                                  alpha=spec.utility.alpha)
    est = est[est["model"] == "suppressed"].copy()
    # compare with the confidential fit on *all* records (the suppressed file is all one has)
    from synthgeo.utility.reiter import ci_overlap

    lo0, hi0 = conf["lower"].to_numpy(), conf["upper"].to_numpy()
    est["ci_overlap"] = ci_overlap(lo0, hi0, est["lower"].to_numpy(), est["upper"].to_numpy())
    est["std_diff"] = (est["estimate"].to_numpy() - conf["estimate"].to_numpy()) / \
        conf["se"].to_numpy()
    util = pd.concat([util, est], ignore_index=True)
    coords = coordinates_m(data.gdf)
    span = float(np.hypot(*np.ptp(coords, axis=0)))
    spatial = spatial_utility_tables(
        spec.formula, data.frame, spec.data.response, coords, data.y,
        {"unrestricted": (np.ones_like(kept), release.implicates["unrestricted"]["y_synthetic"]
                          .values),
         "restricted": (np.ones_like(kept), release.implicates["restricted"]["y_synthetic"]
                        .values),
         "suppressed": (kept, supp["y_synthetic"].values)},
        max_lag_m=span / 2.0, n_bins=n_bins, k=moran_k,
    )
    seconds["tables"] = time.perf_counter() - t
    seconds["total"] = time.perf_counter() - t0
    return ComparisonResult(
        release=release, suppressed_fit=fit, suppressed_implicates=supp, kept=kept,
        posterior=posterior_summary({**release.fits, "suppressed": fit}), utility=util,
        risk=risk, at_risk_records=_at_risk_records(release, supp, kept), spatial=spatial,
        seconds=seconds,
    )


def write_comparison(
    result: ComparisonResult, out, *, overwrite: bool = False, frontier=None,
) -> Path:
    """Write the comparison's tables (CSV), ``comparison.json`` and the frontier, atomically.

    The folder holds confidential figures (risk per at-risk record, the confidential OLS fit):
    it is for the methodologist and the board, never for release.

    Parameters
    ----------
    result : ComparisonResult
    out : path
        Output folder; an existing one is replaced only with ``overwrite`` and only when it
        holds ``comparison.json`` (an earlier comparison).
    overwrite : bool, default=False
    frontier : FrontierResult, optional
        Adds ``frontier.csv`` and ``frontier.png``.

    Returns
    -------
    Path

    Raises
    ------
    SpecError
        If ``out`` exists without ``overwrite``, is not an earlier comparison, or contains an
        input.
    """
    from synthgeo.release.writer import input_paths

    rel = result.release
    record = {
        **provenance("compare", points=rel.data.gdf),
        "what": "synthgeo compare: unrestricted, restricted and suppressed fits "
                "(confidential: not for release)",
        "spec": rel.spec.to_dict(), "M_m": rel.M_m, "n_at_risk": rel.at_risk.n_at_risk,
        "engines": {k: {kk: vv for kk, vv in f.engine.items() if kk != "grid_stages"}
                    for k, f in result.fits.items()},
        "seconds": result.seconds,
    }
    files = {f"{name}.csv": (lambda p, t=table: t.to_csv(p, index=False))
             for name, table in result.tables().items()}
    if frontier is not None:
        files["frontier.csv"] = lambda p: frontier.table.to_csv(p, index=False)
        files["frontier.png"] = frontier.plot
        record["frontier_seconds"] = frontier.seconds
    files[COMPARISON_RECORD] = record
    return write_folder(out, files, marker=COMPARISON_RECORD, overwrite=overwrite,
                        inputs=input_paths(rel.spec), what="an earlier `synthgeo compare` output",
                        empty_ok=False)
