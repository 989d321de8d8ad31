"""Write a release: ``release/`` (publishable), ``confidential/``, ``release.json``, report.

docs/release.md. Everything is written into a temporary folder beside the output and moved
into place at the end, so a failure leaves nothing half-written; an existing output folder is
replaced only with ``overwrite=True``, and never when the input file lies inside it.
``release/`` is built from a whitelist: record id, released location, the spec's covariates and
the synthetic response; no other input column can reach it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import geopandas
import numpy as np
import pandas as pd

from synthgeo._errors import SpecError
from synthgeo._seed import run_seed, seed_sha256, write_seed
from synthgeo.inference.stored import SYNTHESISER_FILE, save_synthesiser
from synthgeo.io.atomic import check_output_dir as _check_output_dir
from synthgeo.io.atomic import write_folder
from synthgeo.io.jsonable import dumps, jsonable
from synthgeo.io.provenance import file_sha256, provenance
from synthgeo.pipeline import MODELS, ReleaseResult, risk_per_record
from synthgeo.pipeline.data import response_scale
from synthgeo.pipeline.released import released_label_of
from synthgeo.pipeline.responses import SequentialResult, released_values
from synthgeo.pipeline.result import verdicts
from synthgeo.release.readme import csv_name, data_user_readme, disposal_counts
from synthgeo.release.records import ID_MAP_FILE, ReleasedRecords, released_records
from synthgeo.release.schema import validate_release_record
from synthgeo.risk.verdict import RiskVerdict

__all__ = ["VERIFICATION_STORE", "check_output_dir", "id_map_sha256", "input_paths",
           "write_release", "release_frames",
           "release_record", "sequential_record", "write_result", "signing_text",
           "EMPTY_REVIEW"]

#: ``verdicts.risk`` of a release whose risk was not judged (no risk stage, or a route that
#: applies no ``[risk.targets]``): never PASS.
NOT_ASSESSED_RISK = RiskVerdict(status="NOT ASSESSED", model="restricted", checks=()).to_dict()

#: The review block of a new release record: the board fills it in (see the schema).
EMPTY_REVIEW = {"reviewer": None, "decision": None, "date": None, "conditions": None}

#: release.json's ``classification``: the record is the board's, not the data users'. It holds
#: aggregates of the confidential data (M, at-risk counts, the confidential fit's coefficients
#: in the Reiter table, the outlier policy's group means) and is never written into release/.
CLASSIFICATION = ("confidential: the review board's record of this release (aggregates of the "
                  "confidential data); not for publication: publish release/ only")

#: The analysts' privacy budget store and audit log of ``synthgeo verify``, inside a release
#: folder by default (:mod:`synthgeo.verification`): an ``--overwrite`` must not erase it.
VERIFICATION_STORE = "confidential/verification.sqlite"


def check_output_dir(out: Path, *, overwrite: bool, inputs: list[Path],
                     register=None) -> None:
    """Refuse an existing output folder without ``overwrite``, or one that holds an input.

    An earlier release whose ``confidential/verification.sqlite`` (the analysts' privacy budget
    store, :data:`VERIFICATION_STORE`) exists is refused too: replacing
    the folder would erase the ε they have spent on the same confidential records (new-user
    trial 2026-12-07: a rerun reset "spent ε = 1 of 3"). So is one holding any other SQLite
    file (a register's suffix, :data:`~synthgeo.register.store.SQLITE_SUFFIXES`) or a folder
    named ``*.files`` (a register's files), which the release writer never writes, and a
    `register` that lies inside `out` (break-it trial 2026-12-07: ``run --out o --overwrite``
    deleted ``o/reg.sqlite`` and its ``.files/``).

    Parameters
    ----------
    out : Path
        The output folder.
    overwrite : bool
        ``--overwrite`` was given.
    inputs : list of Path
        Files the folder must not contain (see :func:`input_paths`).
    register : str, os.PathLike or synthgeo.register.Register, optional
        The release register (``--register``, else :data:`~synthgeo.register.REGISTER_ENV`
        when set): its SQLite file and files folder must lie outside `out`.

    Raises
    ------
    SpecError
        With the fix (``--overwrite`` or another ``--out``; moving the budget store or the
        register out); see :func:`synthgeo.io.atomic.check_output_dir`.
    """
    out = _check_output_dir(out, marker="release.json", overwrite=overwrite, inputs=inputs,
                            what="an earlier synthgeo output")
    for kept in _register_paths(register):
        if kept == out or out in kept.parents:
            raise SpecError(f"the register {str(kept)!r} lies inside `--out` {str(out)!r}: "
                            "writing the release there would replace it (the audit ledger of "
                            "every release); move the register out of the folder (and give "
                            "--register its new path) or choose another `--out`")
    if not out.is_dir():
        return
    if (out / VERIFICATION_STORE).exists():
        raise SpecError(f"output folder {str(out)!r} holds {VERIFICATION_STORE}, the "
                        "analysts' spent privacy budget (ε) on these records: `--overwrite` "
                        "would erase it; move it out of the folder (and give `synthgeo verify "
                        "--store` its new path) or choose another `--out`")
    foreign = _foreign_store(out)
    if foreign is not None:
        raise SpecError(f"output folder {str(out)!r} holds {foreign}, a register's "
                        f"{'files folder' if foreign.endswith('/') else 'SQLite file'} that "
                        "synthgeo's release writer did not write: `--overwrite` would erase it; "
                        "move it out of the folder (and give --register its new path) or "
                        "choose another `--out`")


def _register_paths(register) -> list[Path]:
    """Return the SQLite file and files folder of a register, resolved (a server: its files)."""
    from synthgeo.register.store import FILES_ENV, REGISTER_ENV, Register, files_dir_of

    if register is None:
        register = os.environ.get(REGISTER_ENV) or None
    if register is None:
        return []
    if isinstance(register, Register):
        files = [Path(register.files_dir).resolve()]
        return files + ([Path(register.location).resolve()] if register.is_sqlite else [])
    text = os.fspath(register)
    if "://" in text:  # a server: only its files folder is a path here
        return [Path(os.environ[FILES_ENV]).resolve()] if os.environ.get(FILES_ENV) else []
    path = Path(text).expanduser().resolve()
    return [path, files_dir_of(path)]


def _foreign_store(out: Path) -> str | None:
    """Return the first SQLite file or ``*.files`` folder under `out` (relative), else None.

    The release writer writes neither (:func:`write_release`), so either is someone else's: a
    register, its files, a budget store.
    """
    from synthgeo.register.store import SQLITE_SUFFIXES

    for p in sorted(out.rglob("*")):
        if p.is_dir() and p.name.endswith(".files"):
            return p.relative_to(out).as_posix() + "/"
        if p.suffix.lower() in SQLITE_SUFFIXES and not p.is_dir():
            return p.relative_to(out).as_posix()
    return None


def input_paths(spec) -> list[Path]:
    """Files an output folder must never contain: the points file and the spec (when any)."""
    return [p for p in (spec.data_path(), spec.source) if p is not None]


def _release_base(result: ReleaseResult) -> ReleasedRecords:
    """Return the published records of `result` (:mod:`synthgeo.release.records`)."""
    return released_records(result.spec, result.data, result.locations, run_seed(result))


def _implicate_frame(base: pd.DataFrame, implicate: int,
                     columns: dict[str, np.ndarray]) -> pd.DataFrame:
    """``implicate``, the base columns and the synthetic response(s) of one implicate."""
    f = base.copy()
    f.insert(0, "implicate", int(implicate))
    for name, values in columns.items():
        f[name] = values
    return f


def _released_columns(result, model: str, rows: np.ndarray) -> tuple[np.ndarray, dict]:
    """Implicate numbers and each response's released values (L, n_released) of one model.

    On the column's own scale: exp of the model scale under ``transform = "log"``, a yes/no
    column in its input form (:func:`~synthgeo.pipeline.responses.released_values`).
    """
    if isinstance(result, SequentialResult):
        return np.arange(1, result.spec.synthesis.n_implicates + 1), {
            r.name: np.asarray(released_values(r.config, r.synthetic[model],
                                               result.data.gdf[r.name]))[:, rows]
            for r in result.responses}
    ys = result.implicates[model]["y_synthetic"]
    return ys["implicate"].values, {
        result.spec.data.response: response_scale(result.spec).to_released(ys.values[:, rows])}


def release_frames(result, records: ReleasedRecords | None = None
                   ) -> dict[str, geopandas.GeoDataFrame]:
    """Long-form publishable implicates per model (whitelisted columns only), in memory.

    The long frame repeats every record's geometry L times: for small releases and
    analysis; :func:`write_release` writes the same rows implicate by implicate instead.

    Parameters
    ----------
    result : ReleaseResult or SequentialResult
    records : ReleasedRecords, optional
        :func:`_release_base` of `result`, when the caller has it.

    Returns
    -------
    dict of str to geopandas.GeoDataFrame
        Columns ``implicate``, the id column, the location (original coordinate columns for a
        CSV input, and the geometry in the input's CRS), covariates, and the synthetic response
        under the response's name (every response, in order, for several), on the column's
        own scale (exp of the model scale under ``transform = "log"``). Rows ordered by
        implicate, then released record: under ``[data] release_ids = "pseudonymous"``
        (default) the id column holds 1..n in a random record order
        (:mod:`synthgeo.release.records`), else the confidential ids. Under
        ``[anonymity] treatment = "apply"`` the location is the published one (group centroid,
        cell centre; also ``location_disposal``, ``location_cell_m``) and withheld records are
        left out.
    """
    rec = records or _release_base(result)
    frames = {}
    for name in MODELS:
        imps, columns = _released_columns(result, name, rec.rows)
        long = pd.concat([_implicate_frame(rec.base, imp, {c: v[j] for c, v in columns.items()})
                          for j, imp in enumerate(imps)], ignore_index=True)
        frames[name] = geopandas.GeoDataFrame(
            long, geometry=np.tile(rec.geometry.values, len(imps)), crs=rec.geometry.crs)
    return frames


def _write_implicates_parquet(path: Path, base: pd.DataFrame, geom: geopandas.GeoSeries,
                              response: str, imps: np.ndarray, values: np.ndarray) -> None:
    """GeoParquet of all implicates, one row group per implicate, geometry encoded once.

    The first implicate's rows go through :meth:`geopandas.GeoDataFrame.to_parquet` (in
    memory) for the schema and its GeoParquet metadata and the WKB of the geometry; each
    implicate is then that table with its ``implicate`` and response columns replaced.
    Memory: one implicate's rows, whatever L.
    """
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    first = geopandas.GeoDataFrame(_implicate_frame(base, imps[0], {response: values[0]}),
                                   geometry=geom.values, crs=geom.crs)
    buf = io.BytesIO()
    first.to_parquet(buf, index=False)
    table = pq.read_table(io.BytesIO(buf.getvalue()))
    i_imp, i_resp = table.schema.get_field_index("implicate"), \
        table.schema.get_field_index(response)
    n = len(base)
    with pq.ParquetWriter(path, table.schema, compression="snappy") as writer:
        for j, imp in enumerate(imps):
            part = table.set_column(i_imp, "implicate", pa.array(np.full(n, int(imp))))
            part = part.set_column(i_resp, response, pa.array(values[j]))
            writer.write_table(part)


def _write_implicates(folder: Path, result: ReleaseResult, model: str,
                      released_base: ReleasedRecords,
                      *, parquet_name: str, csv_folder: Path | None = None) -> None:
    """Write one model's implicates: GeoParquet (and one CSV per implicate, no geometry).

    ``released_base`` is :func:`_release_base` of `result` (built once for both models).
    """
    base, geom = released_base.base, released_base.geometry
    response = result.spec.data.response
    imps, columns = _released_columns(result, model, released_base.rows)
    values = columns[response]  # on the column's own scale
    _write_implicates_parquet(folder / parquet_name, base, geom, response, imps, values)
    if csv_folder is None:
        return
    n_impl = result.spec.synthesis.n_implicates
    for imp, text in zip(imps, _csv_texts(base, response, values)):
        with open(csv_folder / csv_name(int(imp), n_impl), "w", encoding="utf-8",
                  newline="") as fh:
            fh.write(text)


def _csv_texts(base: pd.DataFrame, response: str, values: np.ndarray) -> Iterator[str]:
    """Yield ``pd.concat([base, response column]).to_csv(index=False)`` for each row of values.

    The base columns are formatted once and only the response column per implicate (the
    same bytes as formatting the whole frame each time, several times faster). A base whose
    text spans extra lines (a quoted newline in an id) is formatted whole each time.
    """
    eol = os.linesep
    lines = base.to_csv(index=False, lineterminator=eol).split(eol)
    if len(lines) != len(base) + 2:  # a field holds a line break: no shortcut
        frame = base.copy()
        for row in values:
            frame[response] = row
            yield frame.to_csv(index=False, lineterminator=eol)
        return
    header = pd.DataFrame(columns=[response]).to_csv(index=False, lineterminator=eol)
    head = f"{lines[0]},{header[:-len(eol)]}{eol}"
    for row in values:
        col = pd.Series(row).to_csv(index=False, header=False, lineterminator=eol)
        yield head + "".join(f"{b},{v}{eol}" for b, v in zip(lines[1:-1], col.split(eol)))


def _file_list(folder: Path) -> list[dict[str, Any]]:
    """List every file under ``folder`` (sorted) as ``{path, bytes, sha256}``.

    Paths are relative to ``folder``'s parent (``release/...``).
    """
    return [{"path": f.relative_to(folder.parent).as_posix(), "bytes": f.stat().st_size,
             "sha256": file_sha256(f)}
            for f in sorted(p for p in folder.rglob("*") if p.is_file())]


def release_record(
    result: ReleaseResult, *, seconds: dict[str, float],
    release_files: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Build the release record (``release.json``) as a dict, valid against the schema.

    Parameters
    ----------
    result : ReleaseResult
    seconds : dict of str to float
        Wall time per stage, seconds.
    release_files : list of dict, optional
        ``{path, bytes, sha256}`` of every file under ``release/`` (written by
        :func:`write_release`); empty when not given.

    Returns
    -------
    dict
        JSON-serialisable; NaN as null, infinities as "inf"/"-inf". Optional keys
        ``locations`` and ``engine`` appear when the result carries them. The ``review`` block
        is all null, for the board (see :data:`EMPTY_REVIEW`).
    """
    spec, data = result.spec, result.data
    fits = {name: _fit_summary(fit, "gaussian", engine=True)
            for name, fit in result.fits.items()}
    rec = {
        **_record_header(result),
        "at_risk": {"rule": _at_risk_rule_text(spec),
                    "rho0": spec.model.rho0, "M_m": result.M_m,
                    "M_source": "spec M_m" if spec.model.M_m else (
                        "-log(rho0)/median(phi), the median of the fit's continuous "
                        "(spline-refined grid) posterior of phi, not of its draws"
                        if result.fits["unrestricted"].engine.get("sampler") == "grid"
                        else "-log(rho0)/median(phi)"),
                    "n_at_risk": result.at_risk.n_at_risk,
                    "n_sites_at_risk": int(result.at_risk.site_at_risk.sum()),
                    "sensitivity_to_phi": result.at_risk_sensitivity,
                    "gamma": spec.model.gamma},
        "priors": result.fits["unrestricted"].priors.to_dict(),
        "fits": fits,
        "risk_summary": result.risk_summary.to_dict("records"),
        "utility": {"formula": spec.formula, "method": "OLS per implicate, Reiter (2003) rules",
                    "ci_overlap": "Karr et al. (2006), unclamped: negative = disjoint",
                    "table": result.utility.to_dict("records"),
                    **({} if getattr(result, "general_utility", None) is None else
                       {"general": result.general_utility.to_record()})},
        "release_files": list(release_files or []),
        "seconds": seconds,
        "review": dict(EMPTY_REVIEW),
    }
    rec["synthesis"] = _synthesis_record(spec, result.implicates.get("restricted"))
    if getattr(result, "detector", None) is not None:  # counts and settings only
        rec["detector"] = result.detector
    if getattr(result, "locations", None) is not None:
        rec["locations"] = result.locations.summary()
    rec["neighbour_check"] = result.neighbour_check.summary()  # aggregates only
    selection = getattr(result, "at_risk_selection", None)
    rec["at_risk_selection"] = None if selection is None else selection.summary()
    if getattr(result, "cumulative", None) is not None:  # repeated release: chain + pooled
        rec["previous_releases"] = result.cumulative.to_record()
    if getattr(result, "protection", None) is not None:  # [risk] protect = "targets"
        rec["protection"] = result.protection
    if getattr(data, "levels", None):  # text covariates: treatment coding
        rec["design"] = data.levels
    if getattr(data, "missing", None) is not None:  # [data] missing = "drop"
        rec["missing"] = data.missing
    rec.update(_location_verdict_and_warnings(result))
    scores = getattr(result, "risk_scores", None)
    if scores is not None:
        rec["risk_attributable"] = {
            "measures": [m.key for m in scores.measures], "g": scores.g,
            "method": "release = Rao-Blackwellised risk (share) or the stronger average guess "
                      "(average); baselines: leave-one-out GP and public OLS; attributable = "
                      "release - the stronger baseline, chosen once per measure and attack "
                      "on all records and used for every group, record and the verdict; "
                      "decisions on Monte Carlo bounds at [risk] confidence; the signal a "
                      "record's value leaves in other records' released values is scored "
                      "separately by the release attacker (risk_release_attacker; "
                      "docs/risk-and-utility.md, 'The release attacker')",
            "table": scores.table.to_dict("records")}
        if scores.loo_units is not None:  # the leave-out unit and the other units' largest a_i
            rec["risk_attributable"]["loo_unit"] = scores.loo_units.to_record()
        rec["risk_attributable"]["loo_posterior"] = (
            scores.loo_posterior or {"method": "full posterior's draws (fitted with the record; "
                                               "[risk] loo_posterior = \"full\")"})
        rec["verdicts"]["risk"] = scores.verdict.to_dict()
        rec["warnings"] = rec["warnings"] + list(scores.warnings)
        attack = getattr(scores, "release_attack", None)
        rec["risk_release_attacker"] = None if attack is None else attack.summary()
    else:
        rec["verdicts"]["risk"] = NOT_ASSESSED_RISK
    return jsonable(rec)


def _synthesis_record(spec, released=None) -> dict[str, Any]:
    """Return how the released implicates were drawn (``[synthesis] predictive``).

    ``released``: the released implicates (their ``attrs["own_value_leak"]`` under a
    calibrated cross-fit: aggregates only).
    """
    if spec.synthesis.predictive == "cross_fit":
        calibration = spec.synthesis.cross_fit_calibration
        leak = None if released is None else released.attrs.get("own_value_leak")
        how = ("; each implicate's means calibrated so that its OLS on the covariates equals "
               "the confidential one in expectation (a record's own value enters its mean "
               "with weight own_value_leak.largest_weight at most)"
               + ("; each record's shift fitted without its own leave-out error (the match "
                  "is then exact up to a term of order p/n)"
                  if calibration == "covariates_loo" else "")
               if calibration != "none" else "; raw (no calibration)")
        return {"predictive": "cross_fit", "restricted_fit": False,
                "leave_out_unit": spec.loo_unit,  # [risk] loo_unit, as for the LOO baseline
                "released": "every record drawn from the unrestricted fit's cross-fitted "
                            "predictive: y_i given every response outside its leave-out unit, "
                            "at the implicate's posterior draw, one record at a time" + how
                            + "; no restricted model is fitted ('restricted' figures and fits "
                            "are the released, cross-fitted implicates of the unrestricted "
                            "fit)",
                "calibration": calibration,
                "own_value_leak": leak if calibration != "none" else None,
                "pseudo_likelihood": None,
                "input_noise": None if released is None else released.attrs.get("input_noise"),
                "mean_noise": None if released is None else released.attrs.get("mean_noise")}
    pseudo = None if released is None else released.attrs.get("pseudo_likelihood")
    if spec.model.at_risk_weight == "pseudo_likelihood":
        return {"predictive": "posterior", "restricted_fit": True, "leave_out_unit": None,
                "released": "the risk-weighted pseudo-posterior's predictive: the GP fitted "
                            "with record i's likelihood raised to alpha_i (nugget tau2/alpha_i, "
                            "no smoothing), each implicate drawn as N(x_i beta + w_i, tau2) at "
                            "its pseudo-posterior draw (Hu, Williams & Savitsky)",
                "calibration": None, "own_value_leak": None, "pseudo_likelihood": pseudo}
    return {"predictive": "posterior", "restricted_fit": True, "leave_out_unit": None,
            "released": "the restricted (differentially smoothed) fit's posterior predictive",
            "calibration": None, "own_value_leak": None, "pseudo_likelihood": None}


def _at_risk_rule_text(spec) -> str:
    """Return the at-risk rule in words (``[model] k`` and ``at_risk``)."""
    spatial = ("no other record within M" if spec.model.k == 2 else
               f"fewer than {spec.model.k - 1} other records within M")
    by_risk = ("Rao-Blackwellised attributable risk under the unrestricted model above a "
               "[risk.targets] record_threshold by its upper Monte Carlo bound")
    return {"spatial": spatial, "risk": by_risk,
            "both": f"{spatial}, or {by_risk}"}[spec.model.at_risk]


def _record_header(result) -> dict[str, Any]:
    """Return the keys every release record opens with: provenance, spec (no seed), counts."""
    spec, data = result.spec, result.data
    prov = provenance(None, points=data.gdf)
    spec_dict = spec.to_dict()
    spec_dict["sampling"]["seed"] = None  # a key: in confidential/seed.txt only
    seed = run_seed(result)  # the seed itself is written to confidential/ only
    return {
        "synthgeo_release_record": 1, "classification": CLASSIFICATION,
        "created_at": prov["created_at"], "spec": spec_dict,
        "input": prov["input"], "versions": prov["versions"],
        "seed_sha256": None if seed is None else seed_sha256(seed),
        "release_ids_sha256": None,  # the writer fills it in (confidential/release_ids.csv)
        "crs": prov["crs"], "n_records": data.n_records, "n_sites": data.sites.n_sites,
        "n_implicates": spec.synthesis.n_implicates, "released_model": "restricted",
        "released_label": released_label_of(result),
    }


def _quantiles(v) -> dict:
    v = np.asarray(v, float).ravel()
    return {"mean": v.mean(), "sd": v.std(ddof=1) if v.size > 1 else 0.0,
            "q05": np.quantile(v, 0.05), "median": np.median(v), "q95": np.quantile(v, 0.95)}


def _fit_summary(fit, family: str, *, engine: bool = False) -> dict:
    """Posterior summary of one fit (gaussian: GPFit draws; GLMM: the θ grid and β moments).

    ``engine``: a gaussian fit's engine record too (the single-response record has it).
    """
    if family == "gaussian":
        post = fit.posterior
        out = {var: _quantiles(post[var].values) for var in ("sigma2", "nugget", "range", "phi")}
        for c in post["beta"]["coef"].values:
            out[f"beta[{c}]"] = _quantiles(post["beta"].sel(coef=c).values)
        return {"posterior_summary": out, "convergence": fit.convergence.to_dict(),
                "seconds": fit.seconds, **({"engine": fit.engine} if engine else {}),
                "n_sites_smoothed": int(np.sum(fit.scale < 1))}
    s = fit.summary()
    out = {"range_m": dict(zip(("q025", "median", "q975"), s["range_m"])),
           "sigma2": dict(zip(("q025", "median", "q975"), s["sigma2"]))}
    out.update({f"beta[{k}]": {"mean": m, "sd": sd} for k, (m, sd) in s["beta"].items()})
    return {"posterior_summary": out, "engine": "nested Laplace over a theta grid",
            "n_grid_points": int(len(fit.grid.weights)), "seconds": fit.timings_s}


def _location_verdict_and_warnings(result: ReleaseResult) -> dict[str, Any]:
    """``verdicts.location`` and the coded ``warnings`` that reach the board (docs/release.md)."""
    from synthgeo.io.notices import collect
    from synthgeo.locations.treatment import location_verdict

    loc = getattr(result, "locations", None)
    verdict = getattr(loc, "verdict", None) or location_verdict(None, None)
    return {"warnings": collect(result.data.gdf.attrs.get("warnings"),
                                getattr(loc, "warnings", None), fit_warnings(result)),
            "verdicts": {"location": verdict.to_dict()}}


def fit_warnings(result) -> list[dict[str, str]]:
    """Coded warnings of the fits (``posterior_at_prior_bound``), every response's, in order.

    A fit records them in its ``engine`` only when they fire
    (:mod:`synthgeo.inference.prior_bound`); a several-response release names the response.
    """
    several = getattr(result, "responses", None)
    groups = ([(r.name, r.fits) for r in several] if several is not None
              else [(None, getattr(result, "fits", None) or {})])
    out = []
    for name, fits in groups:
        for fit in fits.values():
            for item in (getattr(fit, "engine", None) or {}).get("posterior_at_prior_bound", ()):
                where = "" if name is None else f"response `{name}`, "
                out.append({"code": "posterior_at_prior_bound",
                            "message": where + item["message"]})
    return out


def write_release(
    result: ReleaseResult, out: str | os.PathLike, *, overwrite: bool = False,
    report_html: str | None = None, seconds: dict[str, float] | None = None,
    ledger=None,
) -> Path:
    """Write all outputs atomically; sign release.json and register the release.

    Parameters
    ----------
    result : ReleaseResult or SequentialResult
        One gaussian response, or several (``[[data.responses]]``: one long GeoParquet frame,
        a risk table per response, the joint risk; :func:`sequential_record`).
    out : path
        Output folder (created; replaced only when ``overwrite``).
    overwrite : bool, default=False
    report_html : str, optional
        The report page (see :func:`synthgeo.release.report.render_report`).
    seconds : dict, optional
        Stage timings for the release record (default: the run's); ``write_files`` (writing
        ``release/`` and ``confidential/``) is added.
    ledger : synthgeo.register.Ledger, optional
        The register and release key (:func:`synthgeo.register.make_ledger`). With a key,
        release.json carries an HMAC (``signature``) and a keyed seed hash; with a register,
        the release is registered (seed hash, spec, file hashes, the release it was pooled
        with, its predictive summaries written beside the register) in one transaction
        before the folder is moved into place. Default: unsigned, not registered.

    Returns
    -------
    Path
        The output folder.

    Raises
    ------
    SpecError
        If ``out`` exists without ``overwrite`` or contains the input.
    InputError
        If the register refuses the release (its seed registered meanwhile by another run);
        nothing is written then.
    """
    from synthgeo.register import Ledger

    ledger = ledger if ledger is not None else Ledger(None, None)
    several = isinstance(result, SequentialResult)  # [[data.responses]]: its own layout

    def write(tmp: Path) -> None:
        t = time.perf_counter()
        (_write_sequential_files if several else _write_release_files)(result, tmp)
        # the stages, and writing release/ and confidential/ (release.json is written last)
        stages = {**(seconds or result.seconds), "write_files": time.perf_counter() - t}
        record = (sequential_record if several else release_record)(
            result, seconds=stages, release_files=_file_list(tmp / "release"))
        record["release_ids_sha256"] = id_map_sha256(tmp)
        if not several and getattr(result, "synthesiser", None) is not None:
            record["synthesiser"] = synthesiser_record(result.synthesiser,
                                                       tmp / "confidential" / SYNTHESISER_FILE)
        uid = _sign_and_stamp(record, result, ledger)
        validate_release_record(record)
        (tmp / "release.json").write_text(dumps(record, indent=2), encoding="utf-8")
        if report_html is not None:
            (tmp / "report.html").write_text(report_html, encoding="utf-8")
        if ledger.register is not None:  # last: a refusal leaves nothing written
            _register(result, record, tmp, Path(out).resolve(), uid, ledger)

    inputs = input_paths(result.spec)
    if ledger.register is not None:  # the register (and its files beside it) is never replaced
        inputs.append(ledger.register.files_dir)
    check_output_dir(Path(out), overwrite=overwrite, inputs=inputs,
                     register=ledger.register)  # a register or budget store inside: refused
    return write_folder(out, write, marker="release.json", overwrite=overwrite,
                        inputs=inputs, what="an earlier synthgeo output")


def synthesiser_record(state, path: Path) -> dict[str, Any]:
    """release.json's ``synthesiser`` block: the stored synthesiser's file, hash and draws.

    Parameters
    ----------
    state : SynthesiserState
    path : Path
        ``confidential/synthesiser.nc`` as written.

    Returns
    -------
    dict
        ``path`` (relative to the output folder), ``bytes``, ``sha256`` (under the
        record's HMAC when it is signed; ``synthgeo draw`` refuses a file that differs from
        it), ``n_draws``, ``n_used``
        (draws implicates of this release and of the releases it was drawn from came from),
        ``n_unused``, ``drawn_from`` (null for a fitted release).
    """
    from synthgeo.inference.stored import load_synthesiser

    stored = load_synthesiser(path)
    return {"path": f"confidential/{path.name}", "bytes": path.stat().st_size,
            "sha256": file_sha256(path), "n_draws": stored.n_draws,
            "n_used": stored.n_draws - stored.n_unused, "n_unused": stored.n_unused,
            "drawn_from": state.drawn_from}


def _seed_warnings(seed: int | None, key) -> list[tuple[str, str]]:
    """Return the seed's coded warnings: (code, one line), for release.json and the report.

    ``small_unsigned_seed`` (:func:`synthgeo.register.small_seed_warning`: unsigned, below
    2^32, its hash inverts) and ``guessable_seed`` (:func:`synthgeo._seed.
    guessable_seed_warning`: below 2^64, signed or not). Never the seed.
    """
    from synthgeo._seed import guessable_seed_warning
    from synthgeo.register import small_seed_warning

    said = [("small_unsigned_seed", small_seed_warning(seed, key)),
            ("guessable_seed", guessable_seed_warning(seed))]
    return [(code, text) for code, text in said if text is not None]


def _sign_and_stamp(record: dict[str, Any], result, ledger) -> str | None:
    """Add the ``register`` and ``signature`` blocks (and the keyed seed hash); return the uid."""
    from synthgeo.io.notices import note
    from synthgeo.register import seed_hash, sign_record
    from synthgeo.register.store import new_uid

    seed = run_seed(result)
    if seed is not None:
        record["seed_sha256"] = seed_hash(seed, ledger.key)
    for code, text in _seed_warnings(seed, ledger.key):
        note(record.setdefault("warnings", []), code, text)
    uid = None
    if ledger.register is not None:
        uid = new_uid()
        chain = (record.get("previous_releases") or {}).get("chain") or []
        record["register"] = {"location": ledger.register.location, "release_uid": uid,
                              "previous_uid": chain[-1].get("release_uid") if chain else None}
    record["signature"] = sign_record(record, ledger.key, reason=ledger.unsigned_reason)
    return uid


def _register(result, record: dict[str, Any], tmp: Path, out: Path, uid: str, ledger) -> None:
    """Write the predictive summaries beside the register and register the release."""
    from synthgeo import __version__
    from synthgeo.register import NewRelease

    reg = ledger.register
    summary = None
    path = reg.summary_path(uid)
    if not isinstance(result, SequentialResult):  # pooling is single-response only
        summary = _write_predictive_summary(result, path)
        summary["path"] = path.relative_to(reg.files_dir).as_posix()
    chain = (record.get("previous_releases") or {}).get("chain") or []
    sig = record["signature"]
    spec = record["spec"]
    new = NewRelease(
        release_uid=uid, created_at=record.get("created_at"), folder=str(out),
        release_json_sha256=file_sha256(tmp / "release.json"),
        seed_hash=record.get("seed_sha256"),
        seed_hash_kind="hmac-sha256" if ledger.key is not None else "sha256",
        signed=sig["value"] is not None, signature=sig["value"], key_id=sig["key_id"],
        unsigned_reason=sig.get("unsigned_reason"), spec=spec,
        n_records=int(record["n_records"]), n_implicates=int(record["n_implicates"]),
        n_draws=(spec.get("sampling") or {}).get("draws"),
        previous_id=chain[-1].get("register_id") if chain else None,
        synthgeo_version=__version__, files=record.get("release_files") or [],
        noise_fingerprints=_noise_fingerprints(result))
    try:
        reg.add(new, summary=summary)
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def _noise_fingerprints(result) -> list[bytes]:
    """Return one fingerprint per record value that had an input-noise draw (else empty).

    :func:`synthgeo.register.store.value_fingerprints` of each response with input noise: the
    same value at the same place is the same record to the register. The register keys them
    (:class:`synthgeo.register.NewRelease`) and refuses a second draw.
    """
    from synthgeo.pipeline.data import response_scale
    from synthgeo.register.store import value_fingerprints

    if isinstance(result, SequentialResult):
        parts = [(r.y, getattr(r, "input_noise", None), r.config.transform == "log")
                 for r in result.responses]
    else:
        released = (result.implicates or {}).get("restricted")
        parts = [(result.data.y,
                  released.attrs.get("input_noise") if released is not None else None,
                  response_scale(result.spec).g_name == "exp")]
    return value_fingerprints(result.data.gdf, [(y, logged) for y, noise, logged in parts
                                                if (noise or {}).get("sd")])


def _write_predictive_summary(result: ReleaseResult, path: Path) -> dict[str, Any]:
    """Write the released model's predictive N(mean, sd²) per implicate and record (Parquet).

    What a later release needs to pool Rao-Blackwellised risk with this one: columns
    ``record`` (confidential id), ``implicate``, ``mean``, ``sd`` (model scale). Returns the
    register's pointer fields (``bytes``, ``sha256``, counts, scale).

    Written :data:`PARQUET_ROW_GROUP` rows at a time (:func:`write_long_parquet`): the same
    bytes as ``DataFrame.to_parquet`` of the whole long frame, which at 10⁶ records and L = 100
    would be 10⁸ rows (3.2 GB) in memory at once.
    """
    from synthgeo.pipeline.risk_stage import release_predictive_of

    pred = release_predictive_of(result.implicates["restricted"])
    L, n = pred.mean.shape
    record = np.asarray(result.data.record_id)

    def rows(lo: int, hi: int) -> pd.DataFrame:
        imp, rec = np.divmod(np.arange(lo, hi), n)  # row-major over (implicate, record)
        return pd.DataFrame({"record": record[rec], "implicate": imp + 1,
                             "mean": pred.mean[imp, rec], "sd": pred.sd[imp, rec]})

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    write_long_parquet(partial, rows, L * n)
    partial.replace(path)
    g = response_scale(result.spec).g_name
    return {"bytes": path.stat().st_size, "sha256": file_sha256(path), "n_records": int(n),
            "n_implicates": int(L),
            "scale": "model scale (" + ("log of the response; released = exp" if g == "exp"
                                        else "the response's own units") + ")"}


#: Rows per Parquet row group: pyarrow's default (``pyarrow.parquet.write_table`` and
#: ``DataFrame.to_parquet`` without ``row_group_size``), written explicitly.
PARQUET_ROW_GROUP = 1024 * 1024


def write_long_parquet(path: Path, rows, n_rows: int) -> None:
    """Write a long frame to Parquet one row group at a time, as ``to_parquet`` would whole.

    Parameters
    ----------
    path : Path
        The file to create.
    rows : callable
        ``rows(lo, hi) -> pandas.DataFrame``: rows ``lo..hi-1`` of the frame (same columns and
        dtypes for every slice).
    n_rows : int
        Rows in all.

    Notes
    -----
    Each slice is :data:`PARQUET_ROW_GROUP` rows (the last fewer), converted as ``to_parquet``
    converts (``pyarrow.Table.from_pandas``, no index) and written with its writer's defaults
    (snappy), so the file has the same row groups and the same bytes as
    ``rows(0, n_rows).to_parquet(path, index=False)``, with one row group in memory.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    try:
        for lo in range(0, max(n_rows, 1), PARQUET_ROW_GROUP):
            table = pa.Table.from_pandas(rows(lo, min(lo + PARQUET_ROW_GROUP, n_rows)),
                                         preserve_index=False)
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema, compression="snappy")
            writer.write_table(table, row_group_size=PARQUET_ROW_GROUP)
    finally:
        if writer is not None:
            writer.close()


def write_result(result, out: str | os.PathLike, *, overwrite: bool = False,
                 progressbar: bool = False, ledger=None) -> Path:
    """Write exactly what ``synthgeo run`` writes: release/, confidential/, record, report.

    The report (:func:`synthgeo.release.report.render_report`) is drawn after the output
    folder is checked and before anything is written (:func:`write_release`).

    Raises
    ------
    SpecError
        If `out` exists without `overwrite`, is not an earlier output, or holds an input.
    """
    from synthgeo.release.report import render_report

    check_output_dir(Path(out), overwrite=overwrite, inputs=input_paths(result.spec))
    return write_release(result, out, overwrite=overwrite, ledger=ledger,
                         report_html=render_report(result, progressbar=progressbar,
                                                   signing=signing_text(ledger,
                                                                        run_seed(result))))


def signing_text(ledger, seed: int | None = None) -> str:
    """Say whether release.json is signed and where the release is registered (the report).

    Parameters
    ----------
    ledger : Ledger or None
        The run's register and key (None: neither).
    seed : int, optional
        The run's seed: unsigned with a seed below 2^32, the text ends with
        :func:`synthgeo.register.small_seed_warning`, and below 2^64 (signed or not) with
        :func:`synthgeo._seed.guessable_seed_warning` (the seed itself is never shown).

    Returns
    -------
    str

    Examples
    --------
    >>> from synthgeo.register import Ledger
    >>> signing_text(Ledger(None, None))[:40]
    'release.json UNSIGNED (no release key gi'
    >>> signing_text(Ledger(None, None), 20181).split("register. ")[1][:25]
    'Warning: release.json is '
    """
    from synthgeo.register import Ledger

    ledger = ledger if ledger is not None else Ledger(None, None)
    sig = (f"release.json signed (HMAC-SHA256, key id {ledger.key.key_id})" if ledger.key
           else f"release.json UNSIGNED ({ledger.unsigned_reason})")
    reg = ledger.register
    text = sig + (f"; registered in {reg.location}." if reg is not None
                  else "; not in a release register.")
    return " ".join([text, *(f"Warning: {said}." for _, said in _seed_warnings(seed, ledger.key))])


def id_map_sha256(folder: Path) -> str | None:
    """SHA-256 of ``confidential/release_ids.csv`` in an output folder; None when absent."""
    path = folder / "confidential" / ID_MAP_FILE
    return file_sha256(path) if path.is_file() else None


def _write_release_files(result: ReleaseResult, tmp: Path) -> None:
    """``release/`` (publishable) and ``confidential/`` (the board's) into `tmp`."""
    rel = tmp / "release"
    (rel / "csv").mkdir(parents=True)
    conf = tmp / "confidential"
    conf.mkdir()
    # the restricted (differentially smoothed) model's implicates are the release; the
    # unrestricted ones are kept for the board only
    released_base = _release_base(result)
    # the board's copy is encoded in a second thread (Arrow's encoding and compression
    # release the GIL) while the release's Parquet and CSV files are written: separate
    # files, the same bytes
    with ThreadPoolExecutor(max_workers=1) as ex:
        board = ex.submit(_write_implicates, conf, result, "unrestricted", released_base,
                          parquet_name="implicates_unrestricted.parquet")
        _write_implicates(rel, result, "restricted", released_base,
                          parquet_name="implicates.parquet", csv_folder=rel / "csv")
        (rel / "README.md").write_text(data_user_readme(result), encoding="utf-8")
        board.result()
    for name, fit in result.fits.items():
        fit.to_netcdf(conf / f"posterior_{name}.nc")
    state = getattr(result, "synthesiser", None)
    if state is not None:  # what `synthgeo draw` draws more implicates from
        save_synthesiser(conf / SYNTHESISER_FILE, result.fits, used=state.used_draws,
                         of_release=state.new_draws, fit_seed=state.fit_seed,
                         y=result.data.y, X=result.data.X)
    risk_per_record(result).to_csv(conf / "risk_per_record.csv", index=False)
    result.risk_summary.to_csv(conf / "risk_summary.csv", index=False)
    # per-record rises of risk under the restricted model: board only
    result.neighbour_check.to_dataframe().to_csv(conf / "neighbour_check.csv", index=False)
    if getattr(result, "cumulative", None) is not None:
        result.cumulative.per_record(result.data.id_column).to_csv(
            conf / "cumulative_risk_per_record.csv", index=False)
    if getattr(result, "risk_scores", None) is not None:
        result.risk_scores.table.to_csv(conf / "risk_attributable.csv", index=False)
    _write_common_confidential(result, conf, released_base)
    result.utility.to_csv(conf / "utility_reiter.csv", index=False)


def _write_common_confidential(result, conf: Path, rec: ReleasedRecords) -> None:
    """Write the seed, the released → confidential id map and the per-record location labels."""
    write_seed(conf, run_seed(result))
    if rec.id_map is not None:  # released -> confidential ids: board only
        rec.id_map.to_csv(conf / ID_MAP_FILE, index=False)
    if result.locations is not None:  # per-record k and outlier labels: board only
        result.locations.per_record().to_csv(conf / "locations_per_record.csv", index=False)


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
                                           else spec.model.at_risk_effect),
                        **_rule_record(r, spec)},
            "priors": (r.fits["unrestricted"].model.priors.to_dict() if r.family != "gaussian"
                       else r.fits["unrestricted"].priors.to_dict()),
            "fits": {m: _fit_summary(r.fits[m], r.family) for m in MODELS},
            "risk_summary": r.risk_summary.to_dict("records"),
            **({} if r.attributable is None else
               {"risk_attributable": r.attributable.to_dict("records")}),
            **({} if r.risk_scores is None else
               {"risk_verdict": r.risk_scores.verdict.to_dict(),
                "risk_release_attacker": (None if r.risk_scores.release_attack is None
                                          else r.risk_scores.release_attack.summary())}),
            **_response_input_noise(spec, r),
            **_own_value_leak(spec, r),
            **({} if r.neighbour_check is None else
               {"neighbour_check": r.neighbour_check.summary()}),  # aggregates only
            **({} if r.detector is None else {"detector": r.detector}),  # counts, settings
            "utility": {"method": ("OLS" if r.family == "gaussian" else
                                   {"bernoulli": "logistic GLM", "poisson": "Poisson GLM"}
                                   [r.family]) + " per implicate, Reiter (2003) rules",
                        "ci_overlap": "Karr et al. (2006), unclamped: negative = disjoint",
                        "table": r.utility.to_dict("records")},
            "seconds": r.seconds})
    rec = {
        **_record_header(result),
        "responses": responses,
        "correlations": result.correlations.to_dict("records"),
        "release_files": list(release_files or []), "seconds": seconds,
        "review": dict(EMPTY_REVIEW),
    }
    rec["synthesis"] = _synthesis_record(spec)  # own_value_leak: per response, above
    if spec.synthesis.predictive == "cross_fit":
        rec["synthesis"]["released"] += (
            "; several responses: a later response's predictive is computed with the earlier "
            "confidential responses in its design, then moved by (x_syn - x) beta to the "
            "earlier responses' synthetic values of the same implicate; own_value_leak per "
            "response in responses[]")
    if result.protection is not None:  # [risk] protect = "targets"
        rec["protection"] = result.protection
    if result.joint_risk is not None:
        rec["joint_risk"] = result.joint_risk.to_dict("records")
    if getattr(result, "general_utility", None) is not None:
        rec["general_utility"] = result.general_utility.to_record()
    if data.levels:
        rec["design"] = data.levels
    if data.missing is not None:
        rec["missing"] = data.missing
    if result.locations is not None:
        rec["locations"] = result.locations.summary()
    rec.update(_location_verdict_and_warnings(result))
    rec["verdicts"]["risk"] = _several_risk_verdict(result)
    rec["warnings"] = rec["warnings"] + list(result.warnings)
    return jsonable(rec)


def _response_input_noise(spec, r) -> dict[str, Any]:
    """``input_noise`` of one gaussian response under ``[synthesis] input_noise``, else nothing.

    What its released implicates record (:func:`synthgeo.pipeline.synthesis_noise.\
draw_input_noise`: sd, how chosen, the realised figure; aggregates only).
    """
    if spec.synthesis.input_noise == 0 or r.family != "gaussian":
        return {}
    return {"input_noise": r.input_noise}


def _own_value_leak(spec, r) -> dict[str, Any]:
    """``own_value_leak`` of one gaussian response under a calibrated cross-fit, else nothing.

    Aggregates only (:func:`synthgeo.synthesis.cross_fit.own_value_leak`).
    """
    if spec.synthesis.predictive != "cross_fit" or r.family != "gaussian":
        return {}
    if spec.synthesis.cross_fit_calibration == "none":
        return {"own_value_leak": None}
    return {"own_value_leak": r.own_value_leak}


def _rule_record(r, spec) -> dict[str, Any]:
    """One response's at-risk rule (``[model] at_risk``) with its counts, and the nugget.

    ``at_risk_nugget``: the gaussian response's ``[model] at_risk_nugget``; null for a yes/no
    or count response (no nugget; its at-risk sites get an independent effect).
    """
    choice = r.at_risk_choice
    out: dict[str, Any] = {"at_risk_nugget": (spec.model.at_risk_nugget
                                              if r.family == "gaussian" else None)}
    if choice is not None:
        out.update(rule=choice.rule, n_spatial=int(choice.spatial.sum()),
                   n_by_risk=int(choice.by_risk.sum()))
    return out


def _several_risk_verdict(result: SequentialResult) -> dict[str, Any]:
    """``verdicts.risk`` of several responses: the release's status, each response's, joint.

    FAIL if any response FAILs, PASS only if every one PASSes, else NOT ASSESSED; each
    gaussian response's checks are in ``responses[].risk_verdict``; ``joint`` counts the
    records identifiable by location and possibly above the threshold in at least one
    response (:func:`synthgeo.pipeline.responses.joint_over_responses`).
    """
    return {**NOT_ASSESSED_RISK, "status": result.risk_status,
            "joint": None if result.risk_joint is None else result.risk_joint.to_dict(),
            "release_attacker_joint": result.release_attacker_joint,
            "by_response": [{"response": k, "status": v}
                            for k, v in result.risk_statuses.items()]}


def _sequential_readme(result: SequentialResult, rec: ReleasedRecords) -> str:
    """Return the data users' README of several responses (release/README.md)."""
    spec = result.spec
    id_words = ("a release pseudonym (1 to n in a random order, not the confidential id; the "
                "same in every implicate)" if rec.kind == "pseudonymous" else "the record id")
    counts = disposal_counts(result)
    failed = [k for k, v in verdicts(result).items() if v == "FAIL"]
    lines = [
        "# Partially synthetic data (synthgeo)", "",
        *([f"**This file did not pass the releasing agency's review check"
           f"{'s' if len(failed) > 1 else ''} ({' and '.join(failed)}).** It was written for "
           "review (a preview) and is not an approved release; ask the agency before using or "
           "passing it on.", ""] if failed else []),
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


def _write_sequential_files(result: SequentialResult, tmp: Path) -> None:
    """``release/`` and ``confidential/`` of several responses into `tmp` (one long frame)."""
    rel, conf = tmp / "release", tmp / "confidential"
    (rel / "csv").mkdir(parents=True)
    conf.mkdir()
    rec = released_records(result.spec, result.data, result.locations, run_seed(result))
    frames = release_frames(result, rec)
    pub = frames["restricted"]
    pub.to_parquet(rel / "implicates.parquet", index=False)
    L = result.spec.synthesis.n_implicates
    for imp, part in pd.DataFrame(pub.drop(columns="geometry")).groupby("implicate"):
        part.drop(columns="implicate").to_csv(rel / "csv" / csv_name(imp, L), index=False)
    (rel / "README.md").write_text(_sequential_readme(result, rec), encoding="utf-8")
    frames["unrestricted"].to_parquet(conf / "implicates_unrestricted.parquet", index=False)
    for r in result.responses:
        r.risk_per_record.to_csv(conf / f"risk_per_record_{r.name}.csv", index=False)
        if r.neighbour_check is not None:
            r.neighbour_check.to_dataframe().to_csv(conf / f"neighbour_check_{r.name}.csv",
                                                    index=False)
        r.risk_summary.to_csv(conf / f"risk_summary_{r.name}.csv", index=False)
        if r.attributable is not None:
            r.attributable.to_csv(conf / f"risk_attributable_{r.name}.csv", index=False)
        r.utility.to_csv(conf / f"utility_{r.name}.csv", index=False)
    if result.joint_per_record is not None:
        result.joint_per_record.to_csv(conf / "risk_joint_per_record.csv", index=False)
        result.joint_risk.to_csv(conf / "risk_joint_summary.csv", index=False)
    result.correlations.to_csv(conf / "correlations.csv", index=False)
    _write_common_confidential(result, conf, rec)
