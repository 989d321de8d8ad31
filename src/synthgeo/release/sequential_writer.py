"""Write a sequential release (``[[data.responses]]``): release/, confidential/, record, report.

Same layout and whitelist as :mod:`synthgeo.release.writer`: ``release/`` holds the record id,
the released location, the spec's covariates (text ones unchanged) and one synthetic column per
response (the restricted model's implicates; a yes/no column in its input form, e.g. YES/NO).
Per-record risk, the unrestricted implicates and the posterior summaries go to
``confidential/`` or ``release.json``; records dropped for a missing value are in neither.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import geopandas
import numpy as np
import pandas as pd

from synthgeo._seed import run_seed, seed_sha256, write_seed
from synthgeo.io.atomic import write_folder
from synthgeo.io.jsonable import dumps, jsonable
from synthgeo.io.provenance import provenance
from synthgeo.pipeline.result import MODELS
from synthgeo.pipeline.sequential import SequentialResult, released_values
from synthgeo.release.readme import csv_name, disposal_counts
from synthgeo.release.records import ID_MAP_FILE, ReleasedRecords, released_records
from synthgeo.release.schema import validate_release_record
from synthgeo.release.writer import (
    CLASSIFICATION,
    EMPTY_REVIEW,
    NOT_ASSESSED_RISK,
    _file_list,
    _location_verdict_and_warnings,
    id_map_sha256,
    input_paths,
)

__all__ = ["sequential_frames", "sequential_record", "write_sequential"]


def sequential_frames(result: SequentialResult, records: ReleasedRecords | None = None
                      ) -> dict[str, geopandas.GeoDataFrame]:
    """Long-form implicates per model: implicate, id, location, covariates, every response.

    Parameters
    ----------
    result : SequentialResult
    records : ReleasedRecords, optional
        :func:`~synthgeo.release.records.released_records` of `result`, when the caller has it.

    Returns
    -------
    dict of str to geopandas.GeoDataFrame
        ``"restricted"`` (released) and ``"unrestricted"`` (confidential); rows ordered by
        implicate, then released record (pseudonymous ids 1..n in a random record order
        unless ``[data] release_ids = "original"``: :mod:`synthgeo.release.records`); under
        ``[anonymity] treatment = "apply"`` the published locations, withheld records left out.
    """
    spec = result.spec
    rec = records or released_records(spec, result.data, result.locations, run_seed(result))
    base, geom, rows = rec.base, rec.geometry, rec.rows
    frames = {}
    L = spec.synthesis.n_implicates
    for model in MODELS:
        parts = []
        for ell in range(L):
            f = base.copy()
            f.insert(0, "implicate", ell + 1)
            for r in result.responses:
                vals = released_values(r.config, r.synthetic[model][ell],
                                       result.data.gdf[r.name])
                f[r.name] = np.asarray(vals)[rows]
            parts.append(f)
        long = pd.concat(parts, ignore_index=True)
        frames[model] = geopandas.GeoDataFrame(long, geometry=np.tile(geom.values, L),
                                               crs=geom.crs)
    return frames


def _quantiles(v) -> dict:
    v = np.asarray(v, float).ravel()
    return {"mean": v.mean(), "sd": v.std(ddof=1) if v.size > 1 else 0.0,
            "q05": np.quantile(v, 0.05), "median": np.median(v), "q95": np.quantile(v, 0.95)}


def _fit_summary(fit, family: str) -> dict:
    """Posterior summary of one fit (gaussian: GPFit draws; GLMM: the θ grid and β moments)."""
    if family == "gaussian":
        post = fit.posterior
        out = {var: _quantiles(post[var].values) for var in ("sigma2", "nugget", "range", "phi")}
        for c in post["beta"]["coef"].values:
            out[f"beta[{c}]"] = _quantiles(post["beta"].sel(coef=c).values)
        return {"posterior_summary": out, "convergence": fit.convergence.to_dict(),
                "seconds": fit.seconds, "n_sites_smoothed": int(np.sum(fit.scale < 1))}
    s = fit.summary()
    out = {"range_m": dict(zip(("q025", "median", "q975"), s["range_m"])),
           "sigma2": dict(zip(("q025", "median", "q975"), s["sigma2"]))}
    out.update({f"beta[{k}]": {"mean": m, "sd": sd} for k, (m, sd) in s["beta"].items()})
    return {"posterior_summary": out, "engine": "nested Laplace over a theta grid",
            "n_grid_points": int(len(fit.grid.weights)), "seconds": fit.timings_s}


def sequential_record(result: SequentialResult, *, seconds: dict,
                      release_files: list | None = None) -> dict[str, Any]:
    """Return the release record (``release.json``) of a sequential release (schema-valid).

    Returns
    -------
    dict
        Common keys as :func:`synthgeo.release.writer.release_record`; ``responses`` (one
        entry per response), ``joint_risk``, ``correlations``, ``design``, ``missing``.
    """
    spec, data = result.spec, result.data
    prov = provenance(None, points=data.gdf)
    responses = []
    for r in result.responses:
        ar = r.at_risk
        responses.append({
            "name": r.name, "family": r.family, "coef_names": list(r.coef_names),
            "formula": r.formula,
            "at_risk": {"M_m": ar.radius_m, "n_at_risk": ar.n_at_risk,
                        "n_sites_at_risk": int(ar.site_at_risk.sum()),
                        "sensitivity_to_phi": r.at_risk_sensitivity,
                        "gamma": spec.model.gamma,
                        "at_risk_effect": ("independent" if r.family != "gaussian"
                                           else spec.model.at_risk_effect)},
            "priors": (r.fits["unrestricted"].model.priors.to_dict() if r.family != "gaussian"
                       else r.fits["unrestricted"].priors.to_dict()),
            "fits": {m: _fit_summary(r.fits[m], r.family) for m in MODELS},
            "risk_summary": r.risk_summary.to_dict("records"),
            **({} if r.attributable is None else
               {"risk_attributable": r.attributable.to_dict("records")}),
            "utility": {"method": ("OLS" if r.family == "gaussian" else
                                   {"bernoulli": "logistic GLM", "poisson": "Poisson GLM"}
                                   [r.family]) + " per implicate, Reiter (2003) rules",
                        "ci_overlap": "Karr et al. (2006), unclamped: negative = disjoint",
                        "table": r.utility.to_dict("records")},
            "seconds": r.seconds})
    spec_dict = spec.to_dict()
    spec_dict["sampling"]["seed"] = None  # a key: in confidential/seed.txt only
    seed = run_seed(result)
    rec = {
        "synthgeo_release_record": 1, "classification": CLASSIFICATION,
        "created_at": prov["created_at"], "spec": spec_dict,
        "input": prov["input"], "versions": prov["versions"],
        "seed_sha256": None if seed is None else seed_sha256(seed),
        "release_ids_sha256": None,  # the writer fills it in (confidential/release_ids.csv)
        "crs": prov["crs"], "n_records": data.n_records, "n_sites": data.sites.n_sites,
        "n_implicates": spec.synthesis.n_implicates, "released_model": "restricted",
        "responses": responses,
        "correlations": result.correlations.to_dict("records"),
        "release_files": list(release_files or []), "seconds": seconds,
        "review": dict(EMPTY_REVIEW),
    }
    if result.joint_risk is not None:
        rec["joint_risk"] = result.joint_risk.to_dict("records")
    if data.levels:
        rec["design"] = data.levels
    if data.missing is not None:
        rec["missing"] = data.missing
    if result.locations is not None:
        rec["locations"] = result.locations.summary()
    rec.update(_location_verdict_and_warnings(result))
    # [risk.targets] are refused on this route (pipeline.sequential): nothing is judged
    rec["verdicts"]["risk"] = NOT_ASSESSED_RISK
    return jsonable(rec)


def _readme(result: SequentialResult, rec: ReleasedRecords) -> str:
    spec = result.spec
    id_words = ("a release pseudonym (1 to n in a random order, not the confidential id; the "
                "same in every implicate)" if rec.kind == "pseudonymous" else "the record id")
    counts = disposal_counts(result)
    lines = [
        "# Partially synthetic data (synthgeo)", "",
        f"{spec.synthesis.n_implicates} implicates of {len(rec.rows)} records; each holds "
        f"{id_words}, the location and covariates as collected and **synthetic** values of the "
        "confidential responses:", ""]
    if counts is not None:
        lines[-1:-1] = [f"{counts['n_withheld']} records were withheld to protect "
                        f"their location and {counts['n_moved']} are published at a coarser "
                        "location (group centroid or grid-cell centre; columns "
                        "`location_disposal`, `location_cell_m`); the other locations are "
                        "exact.", ""]
    scale = {"bernoulli": "yes/no, with the column's own two levels",
             "poisson": "a count"}
    for r in result.responses:
        what = scale.get(r.family) or ("on its own scale; the model was fitted to its "
                                       "logarithm" if r.config.transform == "log" else
                                       "on the scale of the confidential column")
        lines.append(f"- `{r.name}` ({r.family}; {what}): drawn from a spatial model fitted with "
                     "the covariates" + (" and the earlier responses (each implicate from the "
                                         "same implicate of the earlier synthetic responses)"
                                         if r is not result.responses[0] else "") + ".")
    L, n = spec.synthesis.n_implicates, len(rec.rows)
    if result.data.missing and result.data.missing["n_dropped"]:
        lines += ["", f"{result.data.missing['n_dropped']} records with a missing value were "
                  "left out of this release; they are in no implicate."]
    lines += [
        "", "## Files",
        f"- `implicates.parquet`: all {L} implicates in one GeoParquet file (long form, "
        f"{n * L} rows), with an `implicate` column numbered 1 to {L}.",
        f"- `csv/{csv_name(1, L)}` … `csv/{csv_name(L, L)}`: one CSV per implicate ({n} rows "
        "each), without geometry.", "",
        "## How to analyse: Reiter's (2003) rules for partially synthetic data",
        "Analyse every implicate as you would the real file, then combine. With q_l the "
        "estimate and u_l its squared standard error from implicate l = 1, …, m:", "",
        "    q_bar = (1/m) Σ q_l                      the point estimate",
        "    b_m   = Σ (q_l − q_bar)² / (m − 1)        between-implicate variance",
        "    u_bar = (1/m) Σ u_l                       mean within-implicate variance",
        "    T_p   = u_bar + b_m / m                   its variance (Reiter 2003)",
        "    df    = (m − 1) (1 + u_bar / (b_m / m))²  degrees of freedom of the t reference", "",
        "This is not Rubin's rule for imputed missing data (T = u_bar + (1 + 1/m) b_m), which "
        "overstates the variance here. One implicate alone understates the uncertainty; "
        "averaging the implicates into one file is wrong too.", ""]
    return "\n".join(lines)


def write_sequential(result: SequentialResult, out: str | os.PathLike, *,
                     overwrite: bool = False, report_html: str | None = None) -> Path:
    """Write all outputs of a sequential release atomically (see the module docstring).

    Returns
    -------
    Path
        The output folder.

    Raises
    ------
    SpecError
        If ``out`` exists without ``overwrite`` or contains the input.
    """
    def write(tmp: Path) -> None:
        t = time.perf_counter()
        rel, conf = tmp / "release", tmp / "confidential"
        (rel / "csv").mkdir(parents=True)
        conf.mkdir()
        rec = released_records(result.spec, result.data, result.locations, run_seed(result))
        frames = sequential_frames(result, rec)
        pub = frames["restricted"]
        pub.to_parquet(rel / "implicates.parquet", index=False)
        L = result.spec.synthesis.n_implicates
        for imp, part in pd.DataFrame(pub.drop(columns="geometry")).groupby("implicate"):
            part.drop(columns="implicate").to_csv(rel / "csv" / csv_name(imp, L), index=False)
        (rel / "README.md").write_text(_readme(result, rec), encoding="utf-8")
        frames["unrestricted"].to_parquet(conf / "implicates_unrestricted.parquet", index=False)
        for r in result.responses:
            r.risk_per_record.to_csv(conf / f"risk_per_record_{r.name}.csv", index=False)
            r.risk_summary.to_csv(conf / f"risk_summary_{r.name}.csv", index=False)
            if r.attributable is not None:
                r.attributable.to_csv(conf / f"risk_attributable_{r.name}.csv", index=False)
            r.utility.to_csv(conf / f"utility_{r.name}.csv", index=False)
        if result.joint_per_record is not None:
            result.joint_per_record.to_csv(conf / "risk_joint_per_record.csv", index=False)
            result.joint_risk.to_csv(conf / "risk_joint_summary.csv", index=False)
        result.correlations.to_csv(conf / "correlations.csv", index=False)
        write_seed(conf, run_seed(result))
        if rec.id_map is not None:  # released -> confidential ids: board only
            rec.id_map.to_csv(conf / ID_MAP_FILE, index=False)
        if result.locations is not None:
            result.locations.per_record().to_csv(conf / "locations_per_record.csv", index=False)
        record = sequential_record(result, seconds={**result.seconds,
                                                    "write_files": time.perf_counter() - t},
                                   release_files=_file_list(rel))
        record["release_ids_sha256"] = id_map_sha256(tmp)
        validate_release_record(record)
        (tmp / "release.json").write_text(dumps(record, indent=2), encoding="utf-8")
        if report_html is not None:
            (tmp / "report.html").write_text(report_html, encoding="utf-8")

    return write_folder(out, write, marker="release.json", overwrite=overwrite,
                        inputs=input_paths(result.spec), what="an earlier synthgeo output")
